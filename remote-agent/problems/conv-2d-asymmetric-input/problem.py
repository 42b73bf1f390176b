"""2-D convolution, asymmetric input, square kernel: a B x C_in x H x W input, C_out filters of C_in x 3 x 3, stride
1, padding 0, dilation 1, no bias.

From KernelBench level 1, 55_conv_standard_2D__asymmetric_input__square_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("H", "W"), kernel=(3, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 3 x 5, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 3, "W": 5}},
    {"name": "2 x 3 x 17 x 40, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "H": 17, "W": 40}},
    {"name": "3 x 17 x 64 x 33, 32 out", "sizes": {"B": 3, "C_in": 17, "C_out": 32, "H": 64, "W": 33}},
    {"name": "1 x 64 x 37 x 130, 128 out", "sizes": {"B": 1, "C_in": 64, "C_out": 128, "H": 37, "W": 130}},
    {"name": "4 x 64 x 128 x 256, 128 out", "sizes": {"B": 4, "C_in": 64, "C_out": 128, "H": 128, "W": 256}},
]
