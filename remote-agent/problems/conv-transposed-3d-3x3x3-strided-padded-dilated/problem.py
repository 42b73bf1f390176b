"""Transposed 3-D convolution, 3 x 3 x 3 kernel, strided, padded and dilated (torch.nn.functional.conv_transpose3d, no
bias): stride 2, padding 1, output_padding 0, dilation 2, groups 1; input N x C_in x D x H x W, weight
C_in x C_out x 3 x 3 x 3, output N x C_out x (2 D + 1) x (2 H + 1) x (2 W + 1).

From KernelBench level 1, 77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("D", "H", "W"), kernel=(3, 3, 3), stride=(2, 2, 2),
                                             padding=(1, 1, 1), dilation=(2, 2, 2))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "D": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 3 x 4 x 5, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "D": 3, "H": 4, "W": 5}},
    {"name": "3 x 17 x 5 x 9 x 11, 9 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 9, "D": 5, "H": 9, "W": 11}},
    {"name": "4 x 32 x 8 x 15 x 17, 64 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 64, "D": 8, "H": 15, "W": 17}},
    {"name": "8 x 32 x 16 x 32 x 32, 64 output channels", "sizes": {"N": 8, "C_in": 32, "C_out": 64, "D": 16, "H": 32, "W": 32}},
]
