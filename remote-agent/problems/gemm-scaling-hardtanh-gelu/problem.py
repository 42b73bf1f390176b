"""output = gelu(hardtanh((input @ weight^T + bias) * 0.5, -2, 2)): a Linear layer (weight N x K, as PyTorch stores
it), times 0.5, clamped to [-2, 2], then the exact (erf) GELU.

From KernelBench level 2, 53_Gemm_Scaling_Hardtanh_GELU.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

SCALING_FACTOR = 0.5
HARDTANH_MIN = -2.0
HARDTANH_MAX = 2.0
# weight = 3 N(0, 1) / sqrt(K): the scaled values are about N(0, 2.3), so that about a fifth of them are clamped and
# GELU sees both signs.
LINEAR = families.LinearFusion(weight_scale=3.0, epilogue_flops=10)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 7, K 1, N 300", "sizes": {"M": 7, "N": 300, "K": 1}},
    {"name": "M 63, K 257, N 127", "sizes": {"M": 63, "N": 127, "K": 257}},
    {"name": "M 333, K 2000, N 100", "sizes": {"M": 333, "N": 100, "K": 2000}},
    {"name": "M 2048, K 4096, N 2048", "sizes": {"M": 2048, "N": 2048, "K": 4096}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. The scaled values are about N(0, 2.3): the sum input @ weight^T + bias (about
    # N(0, 9.3)) halved; GELU's slope is at most 1.13 and the clamped values are exact. float32 in any summation
    # order passes: one thread's running sum over K is off by about 2.4e-8 x 3 sqrt(K) (a random walk of roundings
    # of partial sums of up to about 3), halved; a numpy simulation of the plain kernel (a running fma sum per
    # output) stayed within 0.27 of this tolerance on 64 x 1024 outputs at K = 1 to 8192. TF32 inputs (10-bit
    # mantissas: the sum about 4e-4 x 3 off) and float16 exceed it on about half of the outputs (not the clamped
    # ones) or more and fail; so do all-zeros and a copy of the input.
    return 1e-5 + 5e-7 * sizes["K"] ** 0.5, 1e-5


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = x * SCALING_FACTOR
    x = torch.nn.functional.hardtanh(x, min_val=HARDTANH_MIN, max_val=HARDTANH_MAX)
    return {"output": torch.nn.functional.gelu(x)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
