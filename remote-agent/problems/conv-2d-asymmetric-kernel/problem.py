"""2-D convolution, square input, asymmetric kernel: a B x C_in x S x S input, C_out filters of C_in x 5 x 9, stride
1, padding 0, dilation 1, no bias.

From KernelBench level 1, 62_conv_standard_2D__square_input__asymmetric_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
import contextlib

KERNEL = (5, 9)  # kH, kW
STRIDE = (1, 1)
PADDING = (0, 0)
DILATION = (1, 1)
CASES = [
    {"name": "1 x 1 x 9 x 9, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "S": 9}},
    {"name": "2 x 3 x 20 x 20, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "S": 20}},
    {"name": "3 x 17 x 41 x 41, 31 out", "sizes": {"B": 3, "C_in": 17, "C_out": 31, "S": 41}},
    {"name": "1 x 32 x 100 x 100, 64 out", "sizes": {"B": 1, "C_in": 32, "C_out": 64, "S": 100}},
    {"name": "4 x 32 x 128 x 128, 64 out", "sizes": {"B": 4, "C_in": 32, "C_out": 64, "S": 128}},
]


def _extent(n, axis):
    """The output's extent along a spatial axis of input extent n (PyTorch's formula)."""
    return (n + 2 * PADDING[axis] - DILATION[axis] * (KERNEL[axis] - 1) - 1) // STRIDE[axis] + 1


def _shapes(sizes):
    """(input shape, output shape)."""
    spatial = (sizes["S"], sizes["S"])
    c, o = sizes["C_in"], sizes["C_out"]
    out = tuple(_extent(n, axis) for axis, n in enumerate(spatial))
    return (sizes["B"], c) + spatial, (sizes["B"], o) + out


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _length(sizes):
    """The number of products summed into each output element: C_in x 5 x 9 products."""
    return sizes["C_in"] * KERNEL[0] * KERNEL[1]


def tolerance(sizes, dtype):
    # Against the reference in double, inputs and weights from U(-1, 1): each output sums n products of about
    # 1/3 (a value of about sqrt(n) / 3). float32 in any summation order passes: each addition rounds by at most
    # 6e-8 of a partial sum of about sqrt(k) / 3, a random walk of about 1e-8 n for one thread's running sum
    # (tiles or a tree: less); 1e-7 n covers that with room, 1e-5 sqrt(n) the products' own roundings. float16
    # (inputs and weights rounded to 11 bits: about 3e-4 relative each, 1e-4 sqrt(n) absolute over the sum,
    # then the output rounded) exceeds 1e-5 sqrt(n) + 1e-4 relative (about 4e-5 sqrt(n) on a typical output)
    # on most elements and fails, and so does TF32 (the same input rounding); all-zeros and a copy of the input
    # fail.
    n = _length(sizes)
    return 1e-5 * n ** 0.5 + 1e-7 * n, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    shape = _shapes(sizes)[0]
    weight = (sizes["C_out"], sizes["C_in"]) + KERNEL
    return {"input": torch.rand(shape, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "weight": torch.rand(weight, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


@contextlib.contextmanager
def _full_float32(torch):
    """cuDNN convolves float32 on TF32 tensor cores unless told not to (PyTorch's default for convolutions),
    10-bit mantissas that this tolerance refuses: the reference convolves in full float32 (no effect on float64
    or float16), and the setting is restored after."""
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


def reference(args, torch):
    with _full_float32(torch):
        out = torch.nn.functional.conv2d(args["input"], args["weight"], stride=STRIDE, padding=PADDING,
                                         dilation=DILATION)
    return {"output": out}


def output_shapes(sizes):
    return {"output": _shapes(sizes)[1]}


def flops(sizes):
    return 2 * _length(sizes) * _count(_shapes(sizes)[1])


def bytes_moved(sizes, elem):
    inp, out = _shapes(sizes)
    return (_count(inp) + sizes["C_out"] * _length(sizes) + _count(out)) * elem
