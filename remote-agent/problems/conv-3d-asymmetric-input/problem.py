"""3-D convolution, asymmetric input, 3 x 3 x 1 kernel: a B x C_in x D x H x W input, C_out filters of C_in x 3 x 3 x
1, stride 1, padding 0, dilation 1, no bias.

From KernelBench level 1, 59_conv_standard_3D__asymmetric_input__square_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("D", "H", "W"), kernel=(3, 3, 1))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 3 x 3 x 1, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "D": 3, "H": 3, "W": 1}},
    {"name": "2 x 3 x 9 x 12 x 5, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "D": 9, "H": 12, "W": 5}},
    {"name": "3 x 5 x 33 x 20 x 10, 17 out", "sizes": {"B": 3, "C_in": 5, "C_out": 17, "D": 33, "H": 20, "W": 10}},
    {"name": "1 x 16 x 64 x 31 x 3, 64 out", "sizes": {"B": 1, "C_in": 16, "C_out": 64, "D": 64, "H": 31, "W": 3}},
    {"name": "8 x 3 x 128 x 128 x 10, 64 out", "sizes": {"B": 8, "C_in": 3, "C_out": 64, "D": 128, "H": 128, "W": 10}},
]
