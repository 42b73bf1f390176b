"""Transposed 1-D convolution, kernel 5, dilated (torch.nn.functional.conv_transpose1d, no bias): stride 1, padding 0,
output_padding 0, dilation 3, groups 1; input N x C_in x L, weight C_in x C_out x 5, output N x C_out x (L + 12).

From KernelBench level 1, 74_conv_transposed_1D_dilated.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("L",), kernel=(5,), dilation=(3,))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "L": 1}},
    {"name": "2 x 3 x 10, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "L": 10}},
    {"name": "3 x 16 x 1001, 33 output channels", "sizes": {"N": 3, "C_in": 16, "C_out": 33, "L": 1001}},
    {"name": "5 x 32 x 4097, 64 output channels", "sizes": {"N": 5, "C_in": 32, "C_out": 64, "L": 4097}},
    {"name": "8 x 32 x 131072, 64 output channels", "sizes": {"N": 8, "C_in": 32, "C_out": 64, "L": 131072}},
]
