"""output = relu(conv2d(input, weight, conv_bias)) + bias: a 3 x 3 convolution (stride 1, no padding) with its bias,
ReLU, then a per-channel bias added; NCHW.

From KernelBench level 2, 1_Conv2D_ReLU_BiasAdd.py (MIT licence: ../KERNELBENCH-LICENSE)."""
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

CASES = [
    {"name": "1 x 1 x 3 x 3, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 3, "W": 3}},
    {"name": "2 x 3 x 17 x 9, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "H": 17, "W": 9}},
    {"name": "3 x 16 x 33 x 35, 33 out", "sizes": {"B": 3, "C_in": 16, "C_out": 33, "H": 33, "W": 35}},
    {"name": "1 x 64 x 66 x 66, 64 out", "sizes": {"B": 1, "C_in": 64, "C_out": 64, "H": 66, "W": 66}},
    {"name": "5 x 7 x 100 x 100, 128 out", "sizes": {"B": 5, "C_in": 7, "C_out": 128, "H": 100, "W": 100}},
    {"name": "8 x 64 x 128 x 128, 128 out", "sizes": {"B": 8, "C_in": 64, "C_out": 128, "H": 128, "W": 128}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Each convolution value sums n = 9 C_in products of N(0, 1) inputs and
    # N(0, 1) / sqrt(n) weights, plus conv_bias: about N(0, 1.3). float32 in any summation order passes: one
    # thread's running sum is off by about 2.4e-8 sqrt(n) (a random walk of roundings of partial sums of about 1);
    # a numpy simulation of the plain kernel (a running fma sum per output) stayed within 0.09 of this tolerance at
    # n = 9 to 576. TF32 inputs (10-bit mantissas: the sum about 4e-4 off) exceed it on about 45% of the outputs
    # (the ReLU's zeros leave only bias, exact), float16 (the same, then every result rounded) on nearly all, and
    # both fail; so does all-zeros.
    return 1e-5 + 5e-7 * _length(sizes) ** 0.5, 1e-5


def make_inputs(sizes, dtype, gen, torch):
    b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
    return {"input": torch.randn(b, c, h, w, generator=gen, device="cuda", dtype=dtype),
            "weight": torch.randn(o, c, KERNEL, KERNEL, generator=gen, device="cuda", dtype=dtype)
            * (1.0 / _length(sizes) ** 0.5),
            "conv_bias": torch.rand(o, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "bias": torch.rand(o, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    with _full_float32(torch):
        x = torch.nn.functional.conv2d(args["input"], args["weight"], args["conv_bias"])
    x = torch.relu(x)
    return {"output": x + args["bias"].reshape(-1, 1, 1)}


def output_shapes(sizes):
    return {"output": (sizes["B"], sizes["C_out"], sizes["H"] - 2, sizes["W"] - 2)}


def flops(sizes):
    count = sizes["B"] * sizes["C_out"] * (sizes["H"] - 2) * (sizes["W"] - 2)
    return count * (2 * _length(sizes) + 3)


def bytes_moved(sizes, elem):
    b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
    return (b * c * h * w + o * _length(sizes) + 2 * o + b * o * (h - 2) * (w - 2)) * elem
