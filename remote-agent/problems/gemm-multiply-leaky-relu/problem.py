"""output = leaky_relu((input @ weight^T + bias) * 2.0, 0.1): a Linear layer (weight N x K, as PyTorch stores it),
times 2.0, then LeakyReLU with negative slope 0.1.

From KernelBench level 2, 12_Gemm_Multiply_LeakyReLU.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

MULTIPLIER = 2.0
NEGATIVE_SLOPE = 0.1
LINEAR = families.LinearFusion(epilogue_flops=3)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 2, K 33, N 17", "sizes": {"M": 2, "N": 17, "K": 33}},
    {"name": "M 65, K 100, N 129", "sizes": {"M": 65, "N": 129, "K": 100}},
    {"name": "M 257, K 511, N 300", "sizes": {"M": 257, "N": 300, "K": 511}},
    {"name": "M 1, K 8192, N 1000", "sizes": {"M": 1, "N": 1000, "K": 8192}},
    {"name": "M 1024, K 8192, N 2048", "sizes": {"M": 1024, "N": 2048, "K": 8192}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. input @ weight^T + bias is about N(0, 1.3), the outputs twice that on the
    # positive side. float32 in any summation order passes: one thread's running sum over K is off by about
    # 2.4e-8 sqrt(K) (a random walk of roundings of partial sums of about 1), times 2; a numpy simulation of the
    # plain kernel (a running fma sum per output) stayed within 0.2 of this tolerance on 64 x 1024 outputs at K = 1
    # to 8192. TF32 inputs (10-bit mantissas: the sum about 4e-4 off, 8e-4 after the multiplier) and float16 exceed
    # it on 45% to 80% of the outputs (fewer on the negative side, where the slope divides errors by 10) and fail;
    # so do all-zeros and a copy of the input.
    return 2e-5 + 1e-6 * sizes["K"] ** 0.5, 1e-5


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = x * MULTIPLIER
    return {"output": torch.nn.functional.leaky_relu(x, NEGATIVE_SLOPE)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
