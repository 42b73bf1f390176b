"""Transposed 2-D convolution, 3 x 3 kernel, square input (torch.nn.functional.conv_transpose2d, no bias): stride 1,
padding 0, output_padding 0, dilation 1, groups 1; input N x C_in x S x S, weight C_in x C_out x 3 x 3, output
N x C_out x (S + 2) x (S + 2).

From KernelBench level 1, 57_conv_transposed_2D__square_input__square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("S", "S"), kernel=(3, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "S": 1}},
    {"name": "2 x 3 x 7 x 7, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "S": 7}},
    {"name": "3 x 16 x 33 x 33, 17 output channels", "sizes": {"N": 3, "C_in": 16, "C_out": 17, "S": 33}},
    {"name": "4 x 65 x 64 x 64, 31 output channels", "sizes": {"N": 4, "C_in": 65, "C_out": 31, "S": 64}},
    {"name": "8 x 64 x 192 x 192, 64 output channels", "sizes": {"N": 8, "C_in": 64, "C_out": 64, "S": 192}},
]
