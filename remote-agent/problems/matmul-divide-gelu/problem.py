"""output = gelu((input @ weight^T + bias) / 10): a Linear layer (weight N x K, as PyTorch stores it), divided by
10, then the exact (erf) GELU.

From KernelBench level 2, 86_Matmul_Divide_GELU.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

DIVISOR = 10.0
# weight = 10 N(0, 1) / sqrt(K): the divided values are about N(0, 1), so that GELU's negative side is used
# (with N(0, 1) weights / sqrt(K) they would be about 0.1, where GELU is nearly linear).
LINEAR = families.LinearFusion(weight_scale=10.0, epilogue_flops=9)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 4, K 9, N 3", "sizes": {"M": 4, "N": 3, "K": 9}},
    {"name": "M 129, K 1, N 65", "sizes": {"M": 129, "N": 65, "K": 1}},
    {"name": "M 200, K 1111, N 333", "sizes": {"M": 200, "N": 333, "K": 1111}},
    {"name": "M 1, K 8192, N 8192", "sizes": {"M": 1, "N": 8192, "K": 8192}},
    {"name": "M 1024, K 8192, N 2048", "sizes": {"M": 1024, "N": 2048, "K": 8192}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. The divided values are about N(0, 1): the sum input @ weight^T + bias (about
    # N(0, 100)) over 10; GELU's slope is at most 1.13. float32 in any summation order passes: one thread's running
    # sum over K is off by about 2.4e-8 x 10 sqrt(K) (a random walk of roundings of partial sums of up to about 10),
    # divided by 10; a numpy simulation of the plain kernel (a running fma sum per output) stayed within 0.22 of
    # this tolerance on 64 x 1024 outputs at K = 1 to 8192. TF32 inputs (10-bit mantissas: the divided sum about 4e-4
    # off) and float16 exceed it on about half of the outputs or more and fail; so do all-zeros and a copy of the
    # input.
    return 1e-5 + 5e-7 * sizes["K"] ** 0.5, 1e-5


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = x / DIVISOR
    return {"output": torch.nn.functional.gelu(x)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
