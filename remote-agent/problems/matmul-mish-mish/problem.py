"""output = mish(mish(input @ weight^T + bias)): a Linear layer (weight N x K, as PyTorch stores it), then Mish
(v * tanh(softplus(v))) twice.

From KernelBench level 2, 29_Matmul_Mish_Mish.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

LINEAR = families.LinearFusion(epilogue_flops=10)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 5, K 3, N 7", "sizes": {"M": 5, "N": 7, "K": 3}},
    {"name": "M 100, K 64, N 33", "sizes": {"M": 100, "N": 33, "K": 64}},
    {"name": "M 1, K 4096, N 4097", "sizes": {"M": 1, "N": 4097, "K": 4096}},
    {"name": "M 500, K 1500, N 999", "sizes": {"M": 500, "N": 999, "K": 1500}},
    {"name": "M 1024, K 4096, N 4096", "sizes": {"M": 1024, "N": 4096, "K": 4096}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. input @ weight^T + bias is about N(0, 1.3); mish's slope is at most 1.1, so
    # the outputs carry the product's error. float32 in any summation order passes: one thread's running sum over K
    # is off by about 2.4e-8 sqrt(K) (a random walk of roundings of partial sums of about 1); a numpy simulation of
    # the plain kernel (a running fma sum per output, mish in float) stayed within 0.23 of this tolerance on
    # 64 x 1024 outputs at K = 1 to 8192. TF32 inputs (10-bit mantissas: the sum about 4e-4 off) and float16 exceed
    # it on about half of the outputs or more and fail; so do all-zeros and a copy of the input.
    return 1e-5 + 5e-7 * sizes["K"] ** 0.5, 1e-5


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = torch.nn.functional.mish(x)
    return {"output": torch.nn.functional.mish(x)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
