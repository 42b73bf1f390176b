"""2-D convolution, square input, asymmetric kernel: a B x C_in x S x S input, C_out filters of C_in x 5 x 9, stride
1, padding 0, dilation 1, no bias.

From KernelBench level 1, 62_conv_standard_2D__square_input__asymmetric_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("S", "S"), kernel=(5, 9))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 9 x 9, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "S": 9}},
    {"name": "2 x 3 x 20 x 20, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "S": 20}},
    {"name": "3 x 17 x 41 x 41, 31 out", "sizes": {"B": 3, "C_in": 17, "C_out": 31, "S": 41}},
    {"name": "1 x 32 x 100 x 100, 64 out", "sizes": {"B": 1, "C_in": 32, "C_out": 64, "S": 100}},
    {"name": "4 x 32 x 128 x 128, 64 out", "sizes": {"B": 4, "C_in": 32, "C_out": 64, "S": 128}},
]
