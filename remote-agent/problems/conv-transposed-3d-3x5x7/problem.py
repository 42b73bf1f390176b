"""Transposed 3-D convolution, 3 x 5 x 7 kernel (torch.nn.functional.conv_transpose3d, no bias): stride 1, padding 0,
output_padding 0, dilation 1, groups 1; input N x C_in x D x H x W, weight C_in x C_out x 3 x 5 x 7, output
N x C_out x (D + 2) x (H + 4) x (W + 6).

From KernelBench level 1, 58_conv_transposed_3D__asymmetric_input__asymmetric_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("D", "H", "W"), kernel=(3, 5, 7), taps_within_input=True)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "D": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 2 x 5 x 7, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "D": 2, "H": 5, "W": 7}},
    {"name": "3 x 17 x 5 x 9 x 17, 7 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 7, "D": 5, "H": 9, "W": 17}},
    {"name": "2 x 32 x 8 x 16 x 33, 16 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 16, "D": 8, "H": 16, "W": 33}},
    {"name": "2 x 32 x 16 x 32 x 64, 16 output channels", "sizes": {"N": 2, "C_in": 32, "C_out": 16, "D": 16, "H": 32, "W": 64}},
]
