"""Transposed 2-D convolution, 3 x 3 kernel, strided, padded and dilated (torch.nn.functional.conv_transpose2d, no
bias): stride 5, padding 1, output_padding 0, dilation 2, groups 1; input N x C_in x H x W, weight
C_in x C_out x 3 x 3, output N x C_out x (5 H - 2) x (5 W - 2).

From KernelBench level 1, 81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("H", "W"), kernel=(3, 3), stride=(5, 5), padding=(1, 1),
                                             dilation=(2, 2))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 4 x 7, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "H": 4, "W": 7}},
    {"name": "3 x 17 x 13 x 30, 33 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 33, "H": 13, "W": 30}},
    {"name": "4 x 32 x 32 x 65, 64 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 64, "H": 32, "W": 65}},
    {"name": "16 x 32 x 64 x 128, 64 output channels", "sizes": {"N": 16, "C_in": 32, "C_out": 64, "H": 64, "W": 128}},
]
