"""output = relu((input @ weight^T + bias - 2.0) * 1.5): a Linear layer (weight N x K, as PyTorch stores it), minus
2.0, times 1.5, then ReLU.

From KernelBench level 2, 9_Matmul_Subtract_Multiply_ReLU.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

SUBTRACT = 2.0
MULTIPLY = 1.5
# weight = 3 N(0, 1) / sqrt(K): input @ weight^T + bias is about N(0, 9.3), so that about a quarter of the values are
# above 2.0 and pass the ReLU (with N(0, 1) outputs nearly all of them would be cut to zero).
LINEAR = families.LinearFusion(weight_scale=3.0, epilogue_flops=4)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 3, K 7, N 5", "sizes": {"M": 3, "N": 5, "K": 7}},
    {"name": "M 33, K 129, N 65", "sizes": {"M": 33, "N": 65, "K": 129}},
    {"name": "M 127, K 1000, N 255", "sizes": {"M": 127, "N": 255, "K": 1000}},
    {"name": "M 1000, K 1025, N 700", "sizes": {"M": 1000, "N": 700, "K": 1025}},
    {"name": "M 1024, K 4096, N 4096", "sizes": {"M": 1024, "N": 4096, "K": 4096}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. The product input @ weight^T + bias is about N(0, 9.3); the outputs the ReLU
    # passes are up to about 20. float32 in any summation order passes: one thread's running sum over K rounds each
    # addition by at most 6e-8 of a partial sum of up to about 3, a random walk of about 2.4e-8 x 3 sqrt(K), times
    # 1.5; a numpy simulation of the plain kernel (a running fma sum per output) stayed within 0.26 of this
    # tolerance on 64 x 1024 outputs at K = 1 to 8192 (a tree or tiles: less). TF32 inputs (10-bit mantissas: each
    # product about 4e-4 relative off, 4e-4 x 3 absolute over the sum) and float16 (the same, then each result
    # rounded) exceed it on about 23% of the outputs, all those the ReLU passes but a few (the rest are exact zeros),
    # and fail; so does all-zeros (on the same quarter) and a copy of the input.
    return 4e-5 + 2e-6 * sizes["K"] ** 0.5, 1e-5


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = x - SUBTRACT
    x = x * MULTIPLY
    return {"output": torch.relu(x)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
