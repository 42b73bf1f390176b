"""3-D convolution, cubic input, asymmetric kernel: a B x C_in x S x S x S input, C_out filters of C_in x 3 x 5 x 7,
stride 1, padding 0, dilation 1, no bias.

From KernelBench level 1, 60_conv_standard_3D__square_input__asymmetric_kernel.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("S", "S", "S"), kernel=(3, 5, 7))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 7 x 7 x 7, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "S": 7}},
    {"name": "2 x 3 x 10 x 10 x 10, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "S": 10}},
    {"name": "3 x 5 x 20 x 20 x 20, 17 out", "sizes": {"B": 3, "C_in": 5, "C_out": 17, "S": 20}},
    {"name": "1 x 3 x 33 x 33 x 33, 64 out", "sizes": {"B": 1, "C_in": 3, "C_out": 64, "S": 33}},
    {"name": "2 x 3 x 64 x 64 x 64, 64 out", "sizes": {"B": 2, "C_in": 3, "C_out": 64, "S": 64}},
]
