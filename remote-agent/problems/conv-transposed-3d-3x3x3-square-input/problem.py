"""Transposed 3-D convolution, 3 x 3 x 3 kernel, cubic input (torch.nn.functional.conv_transpose3d, no bias): stride 1,
padding 0, output_padding 0, dilation 1, groups 1; input N x C_in x S x S x S, weight C_in x C_out x 3 x 3 x 3,
output N x C_out x (S + 2) x (S + 2) x (S + 2).

From KernelBench level 1, 61_conv_transposed_3D__square_input__square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("S", "S", "S"), kernel=(3, 3, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "S": 1}},
    {"name": "2 x 3 x 5 x 5 x 5, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "S": 5}},
    {"name": "3 x 16 x 9 x 9 x 9, 17 output channels", "sizes": {"N": 3, "C_in": 16, "C_out": 17, "S": 9}},
    {"name": "2 x 48 x 17 x 17 x 17, 33 output channels", "sizes": {"N": 2, "C_in": 48, "C_out": 33, "S": 17}},
    {"name": "4 x 48 x 36 x 36 x 36, 48 output channels", "sizes": {"N": 4, "C_in": 48, "C_out": 48, "S": 36}},
]
