"""output = softmax(gelu(input @ weight^T + bias), dim=1): a Linear layer (weight N x K, as PyTorch stores it), the
exact (erf) GELU, then a softmax over each row.

From KernelBench level 2, 99_Matmul_GELU_Softmax.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

LINEAR = families.LinearFusion(epilogue_flops=14)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 3, K 7, N 5", "sizes": {"M": 3, "N": 5, "K": 7}},
    {"name": "M 100, K 33, N 129", "sizes": {"M": 100, "N": 129, "K": 33}},
    {"name": "M 255, K 1000, N 1000", "sizes": {"M": 255, "N": 1000, "K": 1000}},
    {"name": "M 1, K 8192, N 8192", "sizes": {"M": 1, "N": 8192, "K": 8192}},
    {"name": "M 1024, K 4096, N 4096", "sizes": {"M": 1024, "N": 4096, "K": 4096}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Outputs of about 1 / N, each off relatively by its GELU value's absolute error
    # (less the row's weighted mean of those). float32 passes: each value's running sum over K is off by about
    # 2.4e-8 sqrt(K) (GELU's slope is at most 1.13), and a running sum of N exponentials by about 2e-8 sqrt(N)
    # relatively; a numpy simulation of the plain kernel (running fma sums, a running sum of exp(g - max) in order)
    # stayed within 0.26 of this tolerance in cases like these. TF32 inputs (10-bit mantissas: each value about
    # 4e-4 off) and float16 (the same, then every intermediate and output rounded) exceed it on 50% to 97% of the
    # outputs and fail; so does all-zeros (every output is above 0.1 / N here) and a copy of the input.
    return 1e-9, 1e-5 + 5e-7 * sizes["K"] ** 0.5


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = torch.nn.functional.gelu(x)
    return {"output": torch.nn.functional.softmax(x, dim=1)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
