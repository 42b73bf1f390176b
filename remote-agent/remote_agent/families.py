"""Families of catalog problems: the convolutions of KernelBench level 1 (standard, depthwise, pointwise,
transposed; 1-D to 3-D) and the level-2 fusions of a convolution or a Linear layer with its epilogue.

A family's problem.py keeps its own facts (docstring and source, CASES, the family's parameters, whatever of
``reference`` and ``tolerance`` is its own) and binds the functions the catalog reads from the family object, e.g.
``make_inputs = CONVOLUTION.make_inputs``. Standard library only: torch comes in as an argument, as to every
problem, so that the catalog loads without PyTorch."""
import contextlib
from dataclasses import dataclass
from typing import Optional, Tuple


def count(shape):
    """The number of elements of a tensor of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n


def uniform(torch, gen, dtype, *size):
    """Values from U(-1, 1) (both signs: KernelBench's U(0, 1) lets float16 and TF32 pass a relative check on a
    sum), ``size`` as torch.rand takes it."""
    return torch.rand(*size, generator=gen, device="cuda", dtype=dtype) * 2 - 1


def normal(torch, gen, dtype, *size):
    """Values from N(0, 1), ``size`` as torch.randn takes it."""
    return torch.randn(*size, generator=gen, device="cuda", dtype=dtype)


def sum_tolerance(n):
    """(atol, rtol) for outputs that each sum ``n`` products of inputs and weights from U(-1, 1)."""
    # Against the reference in double: each output sums n products of about 1/3 (a value of about sqrt(n) / 3).
    # float32 in any summation order passes: each addition rounds by at most 6e-8 of a partial sum of about
    # sqrt(k) / 3, a random walk of about 1e-8 n for one thread's running sum (tiles or a tree: less); 1e-7 n covers
    # that with room, 1e-5 sqrt(n) the products' own roundings. float16 (inputs and weights rounded to 11 bits:
    # about 3e-4 relative each, 1e-4 sqrt(n) absolute over the sum, then the output rounded) exceeds
    # 1e-5 sqrt(n) + 1e-4 relative (about 4e-5 sqrt(n) on a typical output) on most elements and fails, and so does
    # TF32 (the same input rounding); all-zeros and a copy of the input (where it has the output's shape) fail.
    return 1e-5 * n ** 0.5 + 1e-7 * n, 1e-4


@contextlib.contextmanager
def full_float32(torch):
    """cuDNN convolves float32 on TF32 tensor cores unless told not to (PyTorch's default for convolutions),
    10-bit mantissas that these tolerances refuse: the reference convolves in full float32 (no effect on float64
    or float16), and the setting is restored after. By assignment (cudnn.conv.fp32_precision from PyTorch 2.9,
    else cudnn.allow_tf32); the transposed convolutions use ``full_float32_flags``."""
    conv = getattr(torch.backends.cudnn, "conv", None)
    if conv is not None and hasattr(conv, "fp32_precision"):  # PyTorch 2.9 and later
        before = conv.fp32_precision
        conv.fp32_precision = "ieee"
        try:
            yield
        finally:
            conv.fp32_precision = before
    else:
        before = torch.backends.cudnn.allow_tf32
        torch.backends.cudnn.allow_tf32 = False
        try:
            yield
        finally:
            torch.backends.cudnn.allow_tf32 = before


def full_float32_flags(torch):
    """cuDNN may compute a float32 convolution on TF32 tensor cores (torch.backends.cudnn.allow_tf32 is True by
    default): inputs rounded to 11 bits, as coarse as float16 and refused by the tolerance (on the H100 it failed
    most elements). The reference is float32 proper, as a solution must be: TF32 off for the call, cuDNN's other
    flags as they are. Through cuDNN's own context manager, which torch.compile keeps (a plain assignment to
    allow_tf32 was traced away, and the compiled convolution ran on TF32)."""
    cudnn = torch.backends.cudnn
    return cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic,
                       allow_tf32=False)


@dataclass(frozen=True)
class _Geometry:
    """A convolution's spatial parameters, one per axis. Stride, padding and dilation left out are PyTorch's
    defaults (1, 0, 1 along every axis)."""
    spatial: Tuple[str, ...]  # the sizes that give the input's spatial extents, in order: ("S", "S"), ("H", "W")
    kernel: Tuple[int, ...]
    stride: Optional[Tuple[int, ...]] = None
    padding: Optional[Tuple[int, ...]] = None
    dilation: Optional[Tuple[int, ...]] = None

    def __post_init__(self):
        axes = len(self.kernel)
        for name, default in (("stride", 1), ("padding", 0), ("dilation", 1)):
            if getattr(self, name) is None:
                object.__setattr__(self, name, (default,) * axes)

    def extents(self, sizes):
        """The input's spatial extents."""
        return tuple(sizes[name] for name in self.spatial)

    def tolerance(self, sizes, dtype):
        """sum_tolerance of the most products an output element sums (each family's ``length``)."""
        return sum_tolerance(self.length(sizes))


@dataclass(frozen=True)
class Convolution(_Geometry):
    """PyTorch's conv1d, conv2d or conv3d (a cross-correlation) of a B x C_in x <spatial> input with C_out filters of
    C_in x <kernel>: ``depthwise``, one filter per channel of a B x C x <spatial> input (groups = C); ``channels``,
    a layer's own fixed (C_in, C_out) in place of the sizes; ``bias``, one per output channel. Input, weight and
    bias from U(-1, 1), the reference in full float32."""
    depthwise: bool = False
    channels: Optional[Tuple[int, int]] = None
    bias: bool = False

    def _channels(self, sizes):
        """(input channels, output channels)."""
        if self.channels is not None:
            return self.channels
        if self.depthwise:
            return sizes["C"], sizes["C"]
        return sizes["C_in"], sizes["C_out"]

    def _extent(self, n, axis):
        """The output's extent along a spatial axis of input extent n (PyTorch's formula)."""
        return (n + 2 * self.padding[axis] - self.dilation[axis] * (self.kernel[axis] - 1) - 1) // self.stride[axis] + 1

    def shapes(self, sizes):
        """(input shape, output shape)."""
        spatial = self.extents(sizes)
        c, o = self._channels(sizes)
        out = tuple(self._extent(n, axis) for axis, n in enumerate(spatial))
        return (sizes["B"], c) + spatial, (sizes["B"], o) + out

    def length(self, sizes):
        """The number of products summed into each output element (the bias apart): C_in x <kernel>, or <kernel>
        depthwise."""
        return count(self.kernel) * (1 if self.depthwise else self._channels(sizes)[0])

    def make_inputs(self, sizes, dtype, gen, torch):
        c, o = self._channels(sizes)
        weight = (o, 1 if self.depthwise else c) + self.kernel
        inputs = {"input": uniform(torch, gen, dtype, self.shapes(sizes)[0]),
                  "weight": uniform(torch, gen, dtype, weight)}
        if self.bias:
            inputs["bias"] = uniform(torch, gen, dtype, o)
        return inputs

    def reference(self, args, torch):
        with full_float32(torch):
            conv = getattr(torch.nn.functional, "conv%dd" % len(self.kernel))
            bias = (args["bias"],) if self.bias else ()
            groups = {"groups": args["input"].shape[1]} if self.depthwise else {}
            out = conv(args["input"], args["weight"], *bias, stride=self.stride, padding=self.padding,
                       dilation=self.dilation, **groups)
        return {"output": out}

    def output_shapes(self, sizes):
        return {"output": self.shapes(sizes)[1]}

    def flops(self, sizes):
        return (2 * self.length(sizes) + (1 if self.bias else 0)) * count(self.shapes(sizes)[1])

    def bytes_moved(self, sizes, elem):
        inp, out = self.shapes(sizes)
        o = self._channels(sizes)[1]
        return (count(inp) + o * self.length(sizes) + (o if self.bias else 0) + count(out)) * elem


@dataclass(frozen=True)
class TransposedConvolution(_Geometry):
    """PyTorch's conv_transpose1d, 2d or 3d, no bias: input N x C_in x <spatial>, weight
    C_in x C_out / groups x <kernel>, both from U(-1, 1); the reference with TF32 off through cuDNN's flags."""
    output_padding: Optional[Tuple[int, ...]] = None  # left out: 0 along every axis
    groups: int = 1
    # Count no more taps along an axis than the input has positions there (else a 1 x 1 x 1 input's outputs, each
    # reached by one tap, get a tolerance that float16 passes).
    taps_within_input: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.output_padding is None:
            object.__setattr__(self, "output_padding", (0,) * len(self.kernel))

    def output_extents(self, sizes):
        return tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1
                     for n, k, s, p, o, d in zip(self.extents(sizes), self.kernel, self.stride, self.padding,
                                                 self.output_padding, self.dilation))

    def taps(self, sizes):
        """The most kernel taps that reach one output element: along each axis, those whose offset tap * dilation
        is congruent to (output position + padding) modulo the stride."""
        taps = 1
        for k, s, d, n in zip(self.kernel, self.stride, self.dilation, self.extents(sizes)):
            residues = [t * d % s for t in range(k)]
            most = max(residues.count(r) for r in residues)
            taps *= min(most, n) if self.taps_within_input else most
        return taps

    def length(self, sizes):
        """The most products an output element sums, C_in / groups x taps, as a matrix product's element sums K
        (outputs reached by fewer taps, at borders and between strides, only get more room)."""
        return sizes["C_in"] // self.groups * self.taps(sizes)

    def make_inputs(self, sizes, dtype, gen, torch):
        n, c_in, c_out = sizes["N"], sizes["C_in"], sizes["C_out"]
        return {"input": uniform(torch, gen, dtype, n, c_in, *self.extents(sizes)),
                "weight": uniform(torch, gen, dtype, c_in, c_out // self.groups, *self.kernel)}

    def reference(self, args, torch):
        with full_float32_flags(torch):
            conv = getattr(torch.nn.functional, "conv_transpose%dd" % len(self.kernel))
            out = conv(args["input"], args["weight"], stride=self.stride, padding=self.padding,
                       output_padding=self.output_padding, groups=self.groups, dilation=self.dilation)
        return {"output": out}

    def output_shapes(self, sizes):
        return {"output": (sizes["N"], sizes["C_out"]) + self.output_extents(sizes)}

    def flops(self, sizes):
        # torch.utils.flop_counter's count for a transposed convolution: every input element times every weight of
        # its group (products that land in the padding, outside the output, included), a multiply and an add each.
        return (2 * sizes["N"] * sizes["C_in"] * (sizes["C_out"] // self.groups) * count(self.extents(sizes))
                * count(self.kernel))

    def bytes_moved(self, sizes, elem):
        n, c_in, c_out = sizes["N"], sizes["C_in"], sizes["C_out"]
        return (n * c_in * count(self.extents(sizes)) + c_in * (c_out // self.groups) * count(self.kernel)
                + n * c_out * count(self.output_extents(sizes))) * elem


@dataclass(frozen=True)
class ConvolutionFusion:
    """A level-2 fusion's convolution: conv2d of a B x C_in x H x W input from N(0, 1) with C_out filters of
    C_in x kernel x kernel (stride 1, no padding) from weight_scale x N(0, 1) / sqrt(C_in x kernel^2) and conv_bias
    from U(-1, 1) (times bias_scale where given), in full float32; the problem's epilogue follows (``reference``).
    ``extra_bias``: a further per-channel input "bias" from U(-1, 1); ``out_channels``: the output's channels where
    the epilogue reduces them (else C_out). ``value_flops``: the epilogue's FLOPs per convolution value (its bias
    add included), ``output_flops``: per output value after such a reduction."""
    kernel: int
    value_flops: int
    weight_scale: float = 1.0
    bias_scale: Optional[float] = None
    extra_bias: bool = False
    out_channels: Optional[int] = None
    output_flops: int = 0

    def length(self, sizes):
        """The number of products summed into each convolution value: C_in x kernel x kernel."""
        return sizes["C_in"] * self.kernel * self.kernel

    def make_inputs(self, sizes, dtype, gen, torch):
        b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
        inputs = {"input": normal(torch, gen, dtype, b, c, h, w),
                  "weight": normal(torch, gen, dtype, o, c, self.kernel, self.kernel)
                  * (self.weight_scale / self.length(sizes) ** 0.5)}
        conv_bias = uniform(torch, gen, dtype, o)
        inputs["conv_bias"] = conv_bias if self.bias_scale is None else conv_bias * self.bias_scale
        if self.extra_bias:
            inputs["bias"] = uniform(torch, gen, dtype, o)
        return inputs

    def convolve(self, args, torch):
        """conv2d(input, weight, conv_bias) in full float32."""
        with full_float32(torch):
            return torch.nn.functional.conv2d(args["input"], args["weight"], args["conv_bias"])

    def _out(self, sizes):
        """(output channels, output pixels per channel)."""
        channels = sizes["C_out"] if self.out_channels is None else self.out_channels
        return channels, sizes["B"] * (sizes["H"] - self.kernel + 1) * (sizes["W"] - self.kernel + 1)

    def output_shapes(self, sizes):
        trim = self.kernel - 1
        return {"output": (sizes["B"], self._out(sizes)[0], sizes["H"] - trim, sizes["W"] - trim)}

    def flops(self, sizes):
        channels, pixels = self._out(sizes)
        values = sizes["C_out"] * pixels
        return values * (2 * self.length(sizes) + self.value_flops) + channels * pixels * self.output_flops

    def bytes_moved(self, sizes, elem):
        b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
        channels, pixels = self._out(sizes)
        biases = 2 * o if self.extra_bias else o
        return (b * c * h * w + o * self.length(sizes) + biases + channels * pixels) * elem


@dataclass(frozen=True)
class LinearFusion:
    """A level-2 fusion's matrix product: input M x K from N(0, 1), weight N x K (as PyTorch's Linear stores it)
    from weight_scale x N(0, 1) / sqrt(K), and where ``bias`` a bias of N from U(-1, 1); the problem's epilogue
    follows (``reference``). ``rows``: the epilogue reduces each row to one value (an M x 1 output, else M x N).
    ``epilogue_flops``: FLOPs per product value after its sum over K (the bias add included)."""
    epilogue_flops: int
    weight_scale: float = 1.0
    bias: bool = True
    rows: bool = False

    def make_inputs(self, sizes, dtype, gen, torch):
        m, n, k = sizes["M"], sizes["N"], sizes["K"]
        inputs = {"input": normal(torch, gen, dtype, m, k),
                  "weight": normal(torch, gen, dtype, n, k) * (self.weight_scale / k ** 0.5)}
        if self.bias:
            inputs["bias"] = uniform(torch, gen, dtype, n)
        return inputs

    def output_shapes(self, sizes):
        return {"output": (sizes["M"], 1) if self.rows else (sizes["M"], sizes["N"])}

    def flops(self, sizes):
        m, n, k = sizes["M"], sizes["N"], sizes["K"]
        return 2 * m * n * k + self.epilogue_flops * m * n

    def bytes_moved(self, sizes, elem):
        m, n, k = sizes["M"], sizes["N"], sizes["K"]
        return (m * k + n * k + (n if self.bias else 0) + (m if self.rows else m * n)) * elem
