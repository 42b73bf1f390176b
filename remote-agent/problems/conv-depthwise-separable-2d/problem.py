"""Depthwise-separable 2-D convolution: a depthwise 3 x 3 convolution of a B x C_in x H x W input (stride 1, padding
1, dilation 1, groups = C_in), then a pointwise (1 x 1) one to C_out channels, no biases.

From KernelBench level 1, 86_conv_depthwise_separable_2D.py (MIT licence: ../KERNELBENCH-LICENSE).
"""
from remote_agent import families

KERNEL = (3, 3)  # the depthwise filters' kH, kW
PADDING = (1, 1)  # the depthwise convolution's (stride 1, dilation 1): mid has the input's H x W
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 17 x 20, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "H": 17, "W": 20}},
    {"name": "3 x 17 x 33 x 64, 33 out", "sizes": {"B": 3, "C_in": 17, "C_out": 33, "H": 33, "W": 64}},
    {"name": "1 x 64 x 100 x 257, 128 out", "sizes": {"B": 1, "C_in": 64, "C_out": 128, "H": 100, "W": 257}},
    {"name": "2 x 64 x 256 x 256, 128 out", "sizes": {"B": 2, "C_in": 64, "C_out": 128, "H": 256, "W": 256}},
]


def tolerance(sizes, dtype):
    # Each mid value sums 9 products (about 1), each output C_in products of a weight and a mid value (about
    # sqrt(C_in / 3)): float32 in any order passes, as a plain convolution's n = 9 C_in products. float16 (inputs,
    # weights and mid rounded: about 3e-4 relative each, about 2.6e-4 sqrt(C_in) absolute on an output) exceeds
    # 1e-5 sqrt(n) + 1e-4 relative (about 9e-5 sqrt(C_in) on a typical output) on most elements and fails, and so
    # does TF32; all-zeros and a copy of the input fail.
    return families.sum_tolerance(sizes["C_in"] * KERNEL[0] * KERNEL[1])


def make_inputs(sizes, dtype, gen, torch):
    b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
    return {"input": families.uniform(torch, gen, dtype, b, c, h, w),
            "depthwise_weight": families.uniform(torch, gen, dtype, (c, 1) + KERNEL),
            "pointwise_weight": families.uniform(torch, gen, dtype, o, c, 1, 1)}


def reference(args, torch):
    x = args["input"]
    with families.full_float32(torch):
        mid = torch.nn.functional.conv2d(x, args["depthwise_weight"], padding=PADDING, groups=x.shape[1])
        out = torch.nn.functional.conv2d(mid, args["pointwise_weight"])
    return {"output": out}


def output_shapes(sizes):
    return {"output": (sizes["B"], sizes["C_out"], sizes["H"], sizes["W"])}


def flops(sizes):
    pixels = sizes["B"] * sizes["H"] * sizes["W"]
    return 2 * pixels * sizes["C_in"] * (KERNEL[0] * KERNEL[1] + sizes["C_out"])


def bytes_moved(sizes, elem):
    b, c, o, h, w = sizes["B"], sizes["C_in"], sizes["C_out"], sizes["H"], sizes["W"]
    return (b * c * h * w + c * KERNEL[0] * KERNEL[1] + o * c + b * o * h * w) * elem
