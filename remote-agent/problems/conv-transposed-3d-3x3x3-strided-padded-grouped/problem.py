"""Transposed 3-D convolution, 3 x 3 x 3 kernel, strided, padded and grouped (torch.nn.functional.conv_transpose3d, no
bias): stride 2, padding 1, output_padding 0, dilation 1, groups 4; input N x C_in x D x H x W, weight C_in x C_out /
4 x 3 x 3 x 3, output N x C_out x (2 D - 1) x (2 H - 1) x (2 W - 1).

From KernelBench level 1, 73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("D", "H", "W"), kernel=(3, 3, 3), stride=(2, 2, 2),
                                             padding=(1, 1, 1), groups=4)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 4 x 1 x 1 x 1, 4 output channels", "sizes": {"N": 1, "C_in": 4, "C_out": 4, "D": 1, "H": 1, "W": 1}},
    {"name": "2 x 12 x 3 x 5 x 7, 20 output channels", "sizes": {"N": 2, "C_in": 12, "C_out": 20, "D": 3, "H": 5, "W": 7}},
    {"name": "3 x 20 x 7 x 9 x 17, 12 output channels", "sizes": {"N": 3, "C_in": 20, "C_out": 12, "D": 7, "H": 9, "W": 17}},
    {"name": "2 x 32 x 16 x 20 x 33, 32 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 32, "D": 16, "H": 20, "W": 33}},
    {"name": "2 x 32 x 32 x 64 x 128, 32 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 32, "D": 32, "H": 64, "W": 128}},
]
