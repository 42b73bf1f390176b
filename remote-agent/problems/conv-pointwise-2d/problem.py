"""Pointwise (1 x 1) 2-D convolution: a B x C_in x H x W input, C_out filters of C_in x 1 x 1, stride 1, padding 0,
dilation 1, no bias.

From KernelBench level 1, 87_conv_pointwise_2D.py (MIT licence: ../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("H", "W"), kernel=(1, 1))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 17 x 20, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "H": 17, "W": 20}},
    {"name": "3 x 17 x 33 x 64, 33 out", "sizes": {"B": 3, "C_in": 17, "C_out": 33, "H": 33, "W": 64}},
    {"name": "1 x 64 x 100 x 257, 128 out", "sizes": {"B": 1, "C_in": 64, "C_out": 128, "H": 100, "W": 257}},
    {"name": "8 x 64 x 256 x 256, 128 out", "sizes": {"B": 8, "C_in": 64, "C_out": 128, "H": 256, "W": 256}},
]
