"""2-D convolution, square input and kernel: a B x C_in x S x S input, C_out filters of C_in x 3 x 3, stride 1,
padding 0, dilation 1, no bias.

From KernelBench level 1, 63_conv_standard_2D__square_input__square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("S", "S"), kernel=(3, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 3 x 3, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "S": 3}},
    {"name": "2 x 3 x 17 x 17, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "S": 17}},
    {"name": "3 x 16 x 33 x 33, 33 out", "sizes": {"B": 3, "C_in": 16, "C_out": 33, "S": 33}},
    {"name": "1 x 64 x 66 x 66, 64 out", "sizes": {"B": 1, "C_in": 64, "C_out": 64, "S": 66}},
    {"name": "5 x 7 x 100 x 100, 128 out", "sizes": {"B": 5, "C_in": 7, "C_out": 128, "S": 100}},
    {"name": "8 x 16 x 256 x 256, 128 out", "sizes": {"B": 8, "C_in": 16, "C_out": 128, "S": 256}},
]
