"""Transposed 2-D convolution, 3 x 5 kernel (torch.nn.functional.conv_transpose2d, no bias): stride 1, padding 0,
output_padding 0, dilation 1, groups 1; input N x C_in x H x W, weight C_in x C_out x 3 x 5, output N x C_out x (H +
2) x (W + 4).

From KernelBench level 1, 69_conv_transposed_2D__asymmetric_input__asymmetric_kernel.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("H", "W"), kernel=(3, 5))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "H": 1, "W": 1}},
    {"name": "2 x 3 x 4 x 9, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "H": 4, "W": 9}},
    {"name": "3 x 17 x 33 x 20, 35 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 35, "H": 33, "W": 20}},
    {"name": "2 x 64 x 64 x 100, 128 output channels", "sizes": {"N": 2, "C_in": 64, "C_out": 128, "H": 64, "W": 100}},
    {"name": "3 x 64 x 128 x 256, 128 output channels", "sizes": {"N": 3, "C_in": 64, "C_out": 128, "H": 128, "W": 256}},
]
