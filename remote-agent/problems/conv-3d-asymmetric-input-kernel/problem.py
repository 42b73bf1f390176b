"""3-D convolution, asymmetric input and kernel: a B x C_in x D x H x W input, C_out filters of C_in x 3 x 5 x 7,
stride 1, padding 0, dilation 1, no bias.

From KernelBench level 1, 66_conv_standard_3D__asymmetric_input__asymmetric_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("D", "H", "W"), kernel=(3, 5, 7))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 3 x 5 x 7, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "D": 3, "H": 5, "W": 7}},
    {"name": "2 x 3 x 5 x 12 x 20, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "D": 5, "H": 12, "W": 20}},
    {"name": "3 x 5 x 8 x 33 x 17, 17 out", "sizes": {"B": 3, "C_in": 5, "C_out": 17, "D": 8, "H": 33, "W": 17}},
    {"name": "1 x 3 x 16 x 64 x 100, 64 out", "sizes": {"B": 1, "C_in": 3, "C_out": 64, "D": 16, "H": 64, "W": 100}},
    {"name": "2 x 3 x 16 x 128 x 128, 64 out", "sizes": {"B": 2, "C_in": 3, "C_out": 64, "D": 16, "H": 128, "W": 128}},
]
