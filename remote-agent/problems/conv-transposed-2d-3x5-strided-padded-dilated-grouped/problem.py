"""Transposed 2-D convolution, 3 x 5 kernel, strided, padded, dilated and grouped (torch.nn.functional.conv_transpose2d,
no bias): stride (2, 3), padding (1, 2), output_padding 0, dilation (2, 1), groups 4; input N x C_in x H x W, weight
C_in x C_out / 4 x 3 x 5, output N x C_out x (2 H + 1) x (3 W - 2).

From KernelBench level 1, 75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("H", "W"), kernel=(3, 5), stride=(2, 3), padding=(1, 2),
                                             dilation=(2, 1), groups=4)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 4 x 1 x 1, 4 output channels", "sizes": {"N": 1, "C_in": 4, "C_out": 4, "H": 1, "W": 1}},
    {"name": "2 x 12 x 5 x 7, 20 output channels", "sizes": {"N": 2, "C_in": 12, "C_out": 20, "H": 5, "W": 7}},
    {"name": "3 x 20 x 17 x 33, 36 output channels", "sizes": {"N": 3, "C_in": 20, "C_out": 36, "H": 17, "W": 33}},
    {"name": "4 x 32 x 64 x 129, 64 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 64, "H": 64, "W": 129}},
    {"name": "16 x 32 x 128 x 256, 64 output channels", "sizes": {"N": 16, "C_in": 32, "C_out": 64, "H": 128, "W": 256}},
]
