"""Transposed 3-D convolution, 3 x 5 x 7 kernel, strided, padded and grouped (torch.nn.functional.conv_transpose3d, no
bias): stride 2, padding (1, 2, 3), output_padding 1, dilation 1, groups 4; input N x C_in x D x H x W, weight
C_in x C_out / 4 x 3 x 5 x 7, output N x C_out x (2 D) x (2 H) x (2 W).

From KernelBench level 1, 72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("D", "H", "W"), kernel=(3, 5, 7), stride=(2, 2, 2),
                                             padding=(1, 2, 3), output_padding=(1, 1, 1), groups=4)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 4 x 1 x 1 x 1, 4 output channels", "sizes": {"N": 1, "C_in": 4, "C_out": 4, "D": 1, "H": 1, "W": 1}},
    {"name": "2 x 12 x 3 x 5 x 7, 20 output channels", "sizes": {"N": 2, "C_in": 12, "C_out": 20, "D": 3, "H": 5, "W": 7}},
    {"name": "3 x 20 x 5 x 9 x 17, 36 output channels", "sizes": {"N": 3, "C_in": 20, "C_out": 36, "D": 5, "H": 9, "W": 17}},
    {"name": "4 x 32 x 8 x 12 x 25, 32 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 32, "D": 8, "H": 12, "W": 25}},
    {"name": "4 x 32 x 12 x 24 x 48, 32 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 32, "D": 12, "H": 24, "W": 48}},
]
