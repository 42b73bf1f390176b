"""Transposed 3-D convolution, 3 x 3 x 3 kernel (torch.nn.functional.conv_transpose3d, no bias): stride 1, padding 0,
output_padding 0, dilation 1, groups 1; input N x C_in x D x H x W, weight C_in x C_out x 3 x 3 x 3, output
N x C_out x (D + 2) x (H + 2) x (W + 2).

From KernelBench level 1, 70_conv_transposed_3D__asymmetric_input__square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("D", "H", "W"), kernel=(3, 3, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "D": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 3 x 5 x 7, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "D": 3, "H": 5, "W": 7}},
    {"name": "3 x 17 x 9 x 10 x 17, 9 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 9, "D": 9, "H": 10, "W": 17}},
    {"name": "2 x 48 x 16 x 24 x 33, 24 output channels", "sizes": {"N": 2, "C_in": 48, "C_out": 24, "D": 16, "H": 24, "W": 33}},
    {"name": "4 x 48 x 32 x 48 x 64, 24 output channels", "sizes": {"N": 4, "C_in": 48, "C_out": 24, "D": 32, "H": 48, "W": 64}},
]
