"""Transposed 1-D convolution, kernel 3 (torch.nn.functional.conv_transpose1d, no bias): stride 1, padding 0,
output_padding 0, dilation 1, groups 1; input N x C_in x L, weight C_in x C_out x 3, output N x C_out x (L + 2).

From KernelBench level 1, 64_conv_transposed_1D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("L",), kernel=(3,))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "L": 1}},
    {"name": "2 x 3 x 37, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "L": 37}},
    {"name": "3 x 17 x 1000, 31 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 31, "L": 1000}},
    {"name": "16 x 33 x 8191, 65 output channels", "sizes": {"N": 16, "C_in": 33, "C_out": 65, "L": 8191}},
    {"name": "4 x 128 x 65536, 128 output channels", "sizes": {"N": 4, "C_in": 128, "C_out": 128, "L": 65536}},
]
