"""output = leaky_relu(conv2d(input, weight, conv_bias) / 2, 0.01): a 3 x 3 convolution (stride 1, no padding) with
its bias, halved, then LeakyReLU with negative slope 0.01; NCHW.

From KernelBench level 2, 71_Conv2d_Divide_LeakyReLU.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

DIVISOR = 2.0
NEGATIVE_SLOPE = 0.01
# weight = 2 N(0, 1) / sqrt(9 C_in): the halved values are about N(0, 1.1).
CONVOLUTION = families.ConvolutionFusion(kernel=3, weight_scale=2.0, value_flops=3)
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
    return 1e-5 + 5e-7 * CONVOLUTION.length(sizes) ** 0.5, 1e-5


def reference(args, torch):
    x = CONVOLUTION.convolve(args, torch)
    x = x / DIVISOR
    return {"output": torch.nn.functional.leaky_relu(x, negative_slope=NEGATIVE_SLOPE)}


make_inputs, output_shapes = CONVOLUTION.make_inputs, CONVOLUTION.output_shapes
flops, bytes_moved = CONVOLUTION.flops, CONVOLUTION.bytes_moved
