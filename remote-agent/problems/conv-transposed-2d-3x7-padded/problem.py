"""Transposed 2-D convolution, 3 x 7 kernel, padded (torch.nn.functional.conv_transpose2d, no bias): stride 1, padding
(1, 3), output_padding 0, dilation 1, groups 1; input N x C_in x H x W, weight C_in x C_out x 3 x 7, output
N x C_out x H x W.

From KernelBench level 1, 78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("H", "W"), kernel=(3, 7), padding=(1, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 5 x 8, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "H": 5, "W": 8}},
    {"name": "3 x 17 x 31 x 65, 33 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 33, "H": 31, "W": 65}},
    {"name": "2 x 32 x 100 x 201, 16 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 16, "H": 100, "W": 201}},
    {"name": "2 x 32 x 256 x 512, 32 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 32, "H": 256, "W": 512}},
]
