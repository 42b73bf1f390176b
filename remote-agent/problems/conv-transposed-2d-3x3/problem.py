"""Transposed 2-D convolution, 3 x 3 kernel (torch.nn.functional.conv_transpose2d, no bias): stride 1, padding 0,
output_padding 0, dilation 1, groups 1; input N x C_in x H x W, weight C_in x C_out x 3 x 3, output N x C_out x (H +
2) x (W + 2).

From KernelBench level 1, 71_conv_transposed_2D__asymmetric_input__square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("H", "W"), kernel=(3, 3))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 5 x 9, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "H": 5, "W": 9}},
    {"name": "3 x 17 x 31 x 47, 33 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 33, "H": 31, "W": 47}},
    {"name": "4 x 32 x 64 x 130, 15 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 15, "H": 64, "W": 130}},
    {"name": "8 x 32 x 256 x 512, 32 output channels", "sizes": {"N": 8, "C_in": 32, "C_out": 32, "H": 256, "W": 512}},
]
