"""2-D convolution, dilated and padded, asymmetric kernel: a B x C_in x S x S input, C_out filters of C_in x 5 x 9,
stride 1, padding (2, 4), dilation (2, 3), no bias.

From KernelBench level 1, 80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py (MIT licence:
../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("S", "S"), kernel=(5, 9), padding=(2, 4), dilation=(2, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 17 x 17, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "S": 17}},
    {"name": "2 x 3 x 24 x 24, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "S": 24}},
    {"name": "3 x 17 x 50 x 50, 31 out", "sizes": {"B": 3, "C_in": 17, "C_out": 31, "S": 50}},
    {"name": "1 x 32 x 100 x 100, 64 out", "sizes": {"B": 1, "C_in": 32, "C_out": 64, "S": 100}},
    {"name": "4 x 32 x 128 x 128, 64 out", "sizes": {"B": 4, "C_in": 32, "C_out": 64, "S": 128}},
]
