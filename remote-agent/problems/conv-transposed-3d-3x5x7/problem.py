"""Transposed 3-D convolution, 3 x 5 x 7 kernel (torch.nn.functional.conv_transpose3d, no bias): stride 1, padding 0,
output_padding 0, dilation 1, groups 1; input N x C_in x D x H x W, weight C_in x C_out x 3 x 5 x 7, output
N x C_out x (D + 2) x (H + 4) x (W + 6).

From KernelBench level 1, 58_conv_transposed_3D__asymmetric_input__asymmetric_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL = (3, 5, 7)
STRIDE = (1, 1, 1)
PADDING = (0, 0, 0)
OUTPUT_PADDING = (0, 0, 0)
DILATION = (1, 1, 1)
GROUPS = 1
SPATIAL = ("D", "H", "W")  # the sizes that give the input's spatial dimensions, in order
CASES = [
    {"name": "1 x 1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "D": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 2 x 5 x 7, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "D": 2, "H": 5, "W": 7}},
    {"name": "3 x 17 x 5 x 9 x 17, 7 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 7, "D": 5, "H": 9, "W": 17}},
    {"name": "2 x 32 x 8 x 16 x 33, 16 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 16, "D": 8, "H": 16, "W": 33}},
    {"name": "2 x 32 x 16 x 32 x 64, 16 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 16, "D": 16, "H": 32, "W": 64}},
]


def _input_spatial(sizes):
    return tuple(sizes[name] for name in SPATIAL)


def _output_spatial(sizes):
    return tuple((n - 1) * s - 2 * p + d * (k - 1) + o + 1
                 for n, k, s, p, o, d in zip(_input_spatial(sizes), KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION))


def _taps(sizes):
    """The most kernel taps that reach one output element (105 for inputs of at least 3 x 5 x 7): along each
    dimension, those whose offset tap * dilation is congruent to (output position + padding) modulo the stride, and
    no more than the input has positions there (a 1 x 1 x 1 input reaches each output with one tap)."""
    count = 1
    for k, s, d, n in zip(KERNEL, STRIDE, DILATION, _input_spatial(sizes)):
        residues = [t * d % s for t in range(k)]
        count *= min(max(residues.count(r) for r in residues), n)
    return count


def tolerance(sizes, dtype):
    # Against the reference in double, inputs and weights from U(-1, 1): an output element sums up to
    # C_in / GROUPS x _taps(sizes) products of about 1/3 (a value of about sqrt(length) / 3), as a matrix product's
    # element sums K. The same reasoning as matrix-multiplication's: float32 in any summation order passes (its
    # roundings add up to about 1e-8 length; 1e-7 length covers that, 1e-5 sqrt(length) the products' own);
    # float16 (inputs and weights rounded to 11 bits: about 1.3e-4 sqrt(length) absolute, then the output rounded)
    # exceeds 1e-4 relative + 1e-5 sqrt(length) on most elements and fails, and so would TF32 tensor cores (the
    # same rounding of the inputs; see reference()); all-zeros fails. Outputs reached by fewer taps (borders,
    # strides) only get more room.
    length = sizes["C_in"] // GROUPS * _taps(sizes)
    return 1e-5 * length ** 0.5 + 1e-7 * length, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    n, c_in, c_out = sizes["N"], sizes["C_in"], sizes["C_out"]
    return {"input": torch.rand(n, c_in, *_input_spatial(sizes), generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "weight": torch.rand(c_in, c_out // GROUPS, *KERNEL, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    # cuDNN may compute a float32 convolution on TF32 tensor cores (torch.backends.cudnn.allow_tf32 is True by
    # default): inputs rounded to 11 bits, as coarse as float16 and refused by this tolerance (on the H100 it failed
    # most elements). The reference is float32 proper, as a solution must be: TF32 off for this call, cuDNN's other
    # flags as they are. Through cuDNN's own context manager, which torch.compile keeps (a plain assignment to
    # allow_tf32 was traced away, and the compiled convolution ran on TF32).
    cudnn = torch.backends.cudnn
    with cudnn.flags(enabled=cudnn.enabled, benchmark=cudnn.benchmark, deterministic=cudnn.deterministic,
                     allow_tf32=False):
        out = torch.nn.functional.conv_transpose3d(args["input"], args["weight"], stride=STRIDE, padding=PADDING,
                                                   output_padding=OUTPUT_PADDING, groups=GROUPS, dilation=DILATION)
    return {"output": out}


def output_shapes(sizes):
    return {"output": (sizes["N"], sizes["C_out"]) + _output_spatial(sizes)}


def _product(values):
    result = 1
    for v in values:
        result *= v
    return result


def flops(sizes):
    # torch.utils.flop_counter's count for a transposed convolution: every input element times every weight of its
    # group (products that land in the padding, outside the output, included), a multiply and an add each.
    return (2 * sizes["N"] * sizes["C_in"] * (sizes["C_out"] // GROUPS) * _product(_input_spatial(sizes))
            * _product(KERNEL))


def bytes_moved(sizes, elem):
    n, c_in, c_out = sizes["N"], sizes["C_in"], sizes["C_out"]
    return (n * c_in * _product(_input_spatial(sizes)) + c_in * (c_out // GROUPS) * _product(KERNEL)
            + n * c_out * _product(_output_spatial(sizes))) * elem
