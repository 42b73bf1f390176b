"""2-D convolution, asymmetric input and kernel: a B x C_in x H x W input, C_out filters of C_in x 5 x 7, stride 1,
padding 0, dilation 1, no bias.

From KernelBench level 1, 56_conv_standard_2D__asymmetric_input__asymmetric_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("H", "W"), kernel=(5, 7))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 5 x 7, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "H": 5, "W": 7}},
    {"name": "2 x 3 x 19 x 12, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "H": 19, "W": 12}},
    {"name": "3 x 16 x 40 x 70, 33 out", "sizes": {"B": 3, "C_in": 16, "C_out": 33, "H": 40, "W": 70}},
    {"name": "1 x 64 x 100 x 31, 128 out", "sizes": {"B": 1, "C_in": 64, "C_out": 128, "H": 100, "W": 31}},
    {"name": "4 x 64 x 128 x 64, 128 out", "sizes": {"B": 4, "C_in": 64, "C_out": 128, "H": 128, "W": 64}},
]
