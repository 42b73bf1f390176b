"""Depthwise 2-D convolution, square input and kernel: a B x C x S x S input, one 3 x 3 filter per channel, stride 1,
padding 0, dilation 1, no bias.

From KernelBench level 1, 82_conv_depthwise_2D_square_input_square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("S", "S"), kernel=(3, 3), depthwise=True)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 3 x 3", "sizes": {"B": 1, "C": 1, "S": 3}},
    {"name": "2 x 3 x 17 x 17", "sizes": {"B": 2, "C": 3, "S": 17}},
    {"name": "3 x 17 x 64 x 64", "sizes": {"B": 3, "C": 17, "S": 64}},
    {"name": "1 x 64 x 257 x 257", "sizes": {"B": 1, "C": 64, "S": 257}},
    {"name": "8 x 64 x 256 x 256", "sizes": {"B": 8, "C": 64, "S": 256}},
]
