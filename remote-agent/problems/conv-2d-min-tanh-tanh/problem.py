"""output = tanh(tanh(min(conv2d(input, weight, conv_bias), dim=1, keepdim=True))): a 3 x 3 convolution (stride 1,
no padding) with its bias, the minimum over the output channels, then tanh twice; NCHW, one output channel.

From KernelBench level 2, 25_Conv2d_Min_Tanh_Tanh.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

# weight = 0.5 N(0, 1) / sqrt(9 C_in), conv_bias = 0.5 U(-1, 1): the convolution's values are about N(0, 0.33), their
# minimum over 64 channels about -1.3, where tanh(tanh(.)) still has a slope of about 0.15 (with N(0, 1) weights /
# sqrt(9 C_in) it would be about -2.6 and the slope 0.01, flattening every error).
CONVOLUTION = families.ConvolutionFusion(kernel=3, weight_scale=0.5, bias_scale=0.5, out_channels=1,
                                         value_flops=2, output_flops=20)
CASES = [
    {"name": "1 x 1 x 3 x 3, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 3, "W": 3}},
    {"name": "2 x 3 x 9 x 17, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "H": 9, "W": 17}},
    {"name": "3 x 16 x 33 x 31, 1 out", "sizes": {"B": 3, "C_in": 16, "C_out": 1, "H": 33, "W": 31}},
    {"name": "4 x 5 x 64 x 100, 64 out", "sizes": {"B": 4, "C_in": 5, "C_out": 64, "H": 64, "W": 100}},
    {"name": "1 x 16 x 256 x 256, 64 out", "sizes": {"B": 1, "C_in": 16, "C_out": 64, "H": 256, "W": 256}},
    {"name": "8 x 16 x 256 x 256, 64 out", "sizes": {"B": 8, "C_in": 16, "C_out": 64, "H": 256, "W": 256}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Outputs of about -0.5 to -0.76 (tanh(tanh(.)) of minimums near -1.3 with
    # 64 channels; of either sign with one). float32 passes: each convolution value's running sum over n = 9 C_in
    # products is off by about 2.4e-8 x 0.5 sqrt(n), the minimum picks one of them, and tanh twice has a slope of at
    # most 1; a numpy simulation of the plain kernel (running fma sums, the minimum, tanhf twice) stayed within 0.11
    # of this tolerance. TF32 inputs (10-bit mantissas: each value about 2e-4 off, the output about 5e-5) exceed it
    # on about 60% of the outputs with 64 channels and 90% with fewer, float16 (the same, then every result
    # rounded) on nearly all; both fail, and so does all-zeros.
    return 1e-6 + 1e-7 * CONVOLUTION.length(sizes) ** 0.5, 1e-5


def reference(args, torch):
    x = CONVOLUTION.convolve(args, torch)
    x = torch.min(x, dim=1, keepdim=True)[0]
    x = torch.tanh(x)
    return {"output": torch.tanh(x)}


make_inputs, output_shapes = CONVOLUTION.make_inputs, CONVOLUTION.output_shapes
flops, bytes_moved = CONVOLUTION.flops, CONVOLUTION.bytes_moved
