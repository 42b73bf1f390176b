"""1-D convolution over channels, dilated and strided: a B x C_in x L input, C_out filters of C_in x 3, stride 3,
padding 0, dilation 4, no bias.

From KernelBench level 1, 76_conv_standard_1D_dilated_strided__.py (MIT licence: ../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("L",), kernel=(3,), stride=(3,), dilation=(4,))
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 1 x 9, 1 out", "sizes": {"B": 1, "C_in": 1, "C_out": 1, "L": 9}},
    {"name": "2 x 3 x 100, 5 out", "sizes": {"B": 2, "C_in": 3, "C_out": 5, "L": 100}},
    {"name": "3 x 17 x 1001, 33 out", "sizes": {"B": 3, "C_in": 17, "C_out": 33, "L": 1001}},
    {"name": "1 x 64 x 65537, 128 out", "sizes": {"B": 1, "C_in": 64, "C_out": 128, "L": 65537}},
    {"name": "8 x 64 x 131072, 128 out", "sizes": {"B": 8, "C_in": 64, "C_out": 128, "L": 131072}},
]
