"""Transposed 1-D convolution, kernel 3, strided, padded and dilated (torch.nn.functional.conv_transpose1d, no bias):
stride 2, padding 1, output_padding 0, dilation 2, groups 1; input N x C_in x L, weight C_in x C_out x 3, output
N x C_out x (2 L + 1).

From KernelBench level 1, 79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

CONVOLUTION = families.TransposedConvolution(spatial=("L",), kernel=(3,), stride=(2,), padding=(1,), dilation=(2,))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 1, 1 output channel", "sizes": {"N": 1, "C_in": 1, "C_out": 1, "L": 1}},
    {"name": "2 x 3 x 11, 5 output channels", "sizes": {"N": 2, "C_in": 3, "C_out": 5, "L": 11}},
    {"name": "3 x 17 x 999, 31 output channels", "sizes": {"N": 3, "C_in": 17, "C_out": 31, "L": 999}},
    {"name": "4 x 32 x 5000, 64 output channels", "sizes": {"N": 4, "C_in": 32, "C_out": 64, "L": 5000}},
    {"name": "8 x 32 x 131072, 64 output channels", "sizes": {"N": 8, "C_in": 32, "C_out": 64, "L": 131072}},
]
