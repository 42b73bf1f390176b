"""output = sum(input @ weight^T / 2, dim=1, keepdim=True) * 1.5: a product with weight N x K (no bias), halved,
summed over each row, times 1.5; the output is M x 1.

From KernelBench level 2, 14_Gemm_Divide_Sum_Scaling.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

DIVISOR = 2.0
SCALING_FACTOR = 1.5
LINEAR = families.LinearFusion(epilogue_flops=2, bias=False, rows=True)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 3, K 5, N 7", "sizes": {"M": 3, "N": 7, "K": 5}},
    {"name": "M 100, K 33, N 65", "sizes": {"M": 100, "N": 65, "K": 33}},
    {"name": "M 129, K 1000, N 257", "sizes": {"M": 129, "N": 257, "K": 1000}},
    {"name": "M 1000, K 127, N 4000", "sizes": {"M": 1000, "N": 4000, "K": 127}},
    {"name": "M 1024, K 4096, N 1024", "sizes": {"M": 1024, "N": 1024, "K": 4096}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Each product value is about N(0, 1) and each output 0.75 times a sum of N of
    # them (about 0.75 sqrt(N)). float32 in any order passes: each value's running sum over K is off by about
    # 2.4e-8 sqrt(K), N of them add up like a random walk, and a running sum over N adds about 2.4e-8 N; a numpy
    # simulation (one thread per row summing the N products in order, each a running fma sum over K; and the
    # weight's column sums first, then one product) stayed within 0.13 of this tolerance in cases like these. TF32
    # inputs (10-bit mantissas: each value about 4e-4 off, the sum about 3e-4 sqrt(N)) and float16 (the same, then
    # the values and the sum rounded) exceed it on about 90% of the outputs and fail; so does all-zeros.
    n, k = sizes["N"], sizes["K"]
    return n ** 0.5 * (1e-5 + 3e-7 * k ** 0.5), 1e-5


def reference(args, torch):
    x = torch.matmul(args["input"], args["weight"].T)
    x = x / DIVISOR
    x = torch.sum(x, dim=1, keepdim=True)
    return {"output": x * SCALING_FACTOR}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
output_shapes = LINEAR.output_shapes
