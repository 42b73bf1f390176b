"""2-D convolution as AlexNet's first layer: a B x 3 x S x S input, 96 filters of 3 x 11 x 11, stride 4, padding 2,
dilation 1, with a bias.

From KernelBench level 1, 50_conv_standard_2D__square_input__square_kernel.py (MIT licence: ../KERNELBENCH-LICENSE).
"""
from remote_agent import families

CONVOLUTION = families.Convolution(spatial=("S", "S"), kernel=(11, 11), stride=(4, 4), padding=(2, 2), channels=(3, 96),
                                   bias=True)
tolerance, make_inputs, reference = CONVOLUTION.tolerance, CONVOLUTION.make_inputs, CONVOLUTION.reference
output_shapes, flops, bytes_moved = CONVOLUTION.output_shapes, CONVOLUTION.flops, CONVOLUTION.bytes_moved
CASES = [
    {"name": "1 x 3 x 7 x 7", "sizes": {"B": 1, "S": 7}},
    {"name": "1 x 3 x 30 x 30", "sizes": {"B": 1, "S": 30}},
    {"name": "2 x 3 x 67 x 67", "sizes": {"B": 2, "S": 67}},
    {"name": "3 x 3 x 127 x 127", "sizes": {"B": 3, "S": 127}},
    {"name": "16 x 3 x 224 x 224", "sizes": {"B": 16, "S": 224}},
    {"name": "64 x 3 x 224 x 224", "sizes": {"B": 64, "S": 224}},
]
