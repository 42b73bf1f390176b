"""output = relu(conv2d(input, weight, conv_bias)) + bias: a 3 x 3 convolution (stride 1, no padding) with its bias,
ReLU, then a per-channel bias added; NCHW.

From KernelBench level 2, 1_Conv2D_ReLU_BiasAdd.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.ConvolutionFusion(kernel=3, extra_bias=True, value_flops=3)
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
    return 1e-5 + 5e-7 * CONVOLUTION.length(sizes) ** 0.5, 1e-5


def reference(args, torch):
    x = CONVOLUTION.convolve(args, torch)
    x = torch.relu(x)
    return {"output": x + args["bias"].reshape(-1, 1, 1)}


make_inputs, output_shapes = CONVOLUTION.make_inputs, CONVOLUTION.output_shapes
flops, bytes_moved = CONVOLUTION.flops, CONVOLUTION.bytes_moved
