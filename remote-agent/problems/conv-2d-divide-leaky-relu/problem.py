"""output = leaky_relu(conv2d(input, weight, conv_bias) / 2, 0.01): a 3 x 3 convolution (stride 1, no padding) with
its bias, halved, then LeakyReLU with negative slope 0.01; NCHW.

From KernelBench level 2, 71_Conv2d_Divide_LeakyReLU.py (MIT licence: ../KERNELBENCH-LICENSE)."""
import contextlib

KERNEL = 3  # 3 x 3 filters, stride 1, no padding, dilation 1


def _length(sizes):
    """The number of products summed into each convolution value: C_in x 3 x 3."""
    return sizes["C_in"] * KERNEL * KERNEL


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
DIVISOR = 2.0
NEGATIVE_SLOPE = 0.01
# weight = 2 N(0, 1) / sqrt(9 C_in): the halved values are about N(0, 1.1).
WEIGHT_SCALE = 2.0
CASES = [
    {"name": "1 x 1 x 3 x 3, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 3, "W": 3}},
    {"name": "2 x 3 x 5 x 7, 4 out", "sizes": {"B": 2, "C_in": 3, "C_out": 4, "H": 5, "W": 7}},
    {"name": "4 x 8 x 31 x 33, 17 out", "sizes": {"B": 4, "C_in": 8, "C_out": 17, "H": 31, "W": 33}},
    {"name": "1 x 1 x 128 x 128, 64 out", "sizes": {"B": 1, "C_in": 1, "C_out": 64, "H": 128, "W": 128}},
    {"name": "8 x 8 x 128 x 130, 64 out", "sizes": {"B": 8, "C_in": 8, "C_out": 64, "H": 128, "W": 130}},
    {"name": "32 x 8 x 128 x 128, 64 out", "sizes": {"B": 32, "C_in": 8, "C_out": 64, "H": 128, "W": 128}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Each convolution value sums n = 9 C_in products of N(0, 1) inputs and
    # 2 N(0, 1) / sqrt(n) weights, plus conv_bias: about N(0, 4.3), halved. float32 in any summation order passes:
    # one thread's running sum is off by about 2.4e-8 x 2 sqrt(n), halved; a numpy simulation of the plain kernel (a
    # running fma sum per output) stayed within 0.04 of this tolerance at n = 9 to 72. TF32 inputs (10-bit
    # mantissas: the halved sum about 4e-4 off) and float16 exceed it on about 47% of the outputs (the slope of 0.01
    # shrinks the negative side's errors below it) and fail; so does all-zeros.
    return 1e-5 + 5e-7 * _length(sizes) ** 0.5, 1e-5


def make_inputs(sizes, dtype, gen, torch):
    b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
    return {"input": torch.randn(b, c, h, w, generator=gen, device="cuda", dtype=dtype),
            "weight": torch.randn(o, c, KERNEL, KERNEL, generator=gen, device="cuda", dtype=dtype)
            * (WEIGHT_SCALE / _length(sizes) ** 0.5),
            "conv_bias": torch.rand(o, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    with _full_float32(torch):
        x = torch.nn.functional.conv2d(args["input"], args["weight"], args["conv_bias"])
    x = x / DIVISOR
    return {"output": torch.nn.functional.leaky_relu(x, negative_slope=NEGATIVE_SLOPE)}


def output_shapes(sizes):
    return {"output": (sizes["B"], sizes["C_out"], sizes["H"] - 2, sizes["W"] - 2)}


def flops(sizes):
    count = sizes["B"] * sizes["C_out"] * (sizes["H"] - 2) * (sizes["W"] - 2)
    return count * (2 * _length(sizes) + 3)


def bytes_moved(sizes, elem):
    b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
    return (b * c * h * w + o * _length(sizes) + o + b * o * (h - 2) * (w - 2)) * elem
