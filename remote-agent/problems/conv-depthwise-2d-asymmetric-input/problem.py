"""Depthwise 2-D convolution, asymmetric input, square kernel: a B x C x H x W input, one 3 x 3 filter per channel,
stride 1, padding 0, dilation 1, no bias.

From KernelBench level 1, 84_conv_depthwise_2D_asymmetric_input_square_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("H", "W"), kernel=(3, 3), depthwise=True)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 3 x 4", "sizes": {"B": 1, "C": 1, "H": 3, "W": 4}},
    {"name": "2 x 3 x 17 x 40", "sizes": {"B": 2, "C": 3, "H": 17, "W": 40}},
    {"name": "3 x 17 x 64 x 33", "sizes": {"B": 3, "C": 17, "H": 64, "W": 33}},
    {"name": "1 x 128 x 100 x 257", "sizes": {"B": 1, "C": 128, "H": 100, "W": 257}},
    {"name": "8 x 128 x 128 x 256", "sizes": {"B": 8, "C": 128, "H": 128, "W": 256}},
]
