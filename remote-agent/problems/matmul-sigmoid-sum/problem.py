"""output = sum(sigmoid(input @ weight^T + bias), dim=1, keepdim=True): a Linear layer (weight N x K, as PyTorch
stores it), a sigmoid, and the sum of each row; the output is M x 1.

From KernelBench level 2, 56_Matmul_Sigmoid_Sum.py (MIT licence: ../KERNELBENCH-LICENSE)."""
from remote_agent import families

# weight = 2 N(0, 1) / sqrt(K): the sigmoid's inputs are about N(0, 4.3), spread over its curve.
LINEAR = families.LinearFusion(weight_scale=2.0, epilogue_flops=6, rows=True)
CASES = [
    {"name": "M 1, K 1, N 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 3, K 7, N 5", "sizes": {"M": 3, "N": 5, "K": 7}},
    {"name": "M 100, K 129, N 33", "sizes": {"M": 100, "N": 33, "K": 129}},
    {"name": "M 257, K 1000, N 1000", "sizes": {"M": 257, "N": 1000, "K": 1000}},
    {"name": "M 1, K 16384, N 1000", "sizes": {"M": 1, "N": 1000, "K": 16384}},
    {"name": "M 256, K 8192, N 1024", "sizes": {"M": 256, "N": 1024, "K": 8192}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Each output sums N sigmoids of about 0.5: about N / 2, so the float32 sum
    # itself is the largest error: one thread's running sum of N values rounds each addition by at most 6e-8 of a
    # partial sum of up to N / 2, a random walk of about 1.5e-7 N at N = 1024 (a tree: far less); the sigmoids' own
    # errors (each value's running sum over K off by about 2.4e-8 x 2 sqrt(K), times a slope of at most 0.25) add
    # up to about 1e-8 sqrt(N K). A numpy simulation (one thread per row summing the sigmoids in order, each value a
    # running fma sum over K) stayed within 0.26 of this tolerance in cases like these; N stays at most 1024, since
    # that running sum's error grows as N^1.5 and TF32's as sqrt(N). TF32 inputs (10-bit mantissas: each sigmoid
    # off by up to about 1e-4, the sum by about 5e-5 sqrt(N)) exceed it on 35% to 90% of the outputs and fail;
    # float16 (the sum of about N / 2 rounded to 11 bits) on nearly all; so does all-zeros.
    n, k = sizes["N"], sizes["K"]
    return 2e-6 * n + 1e-7 * (n * k) ** 0.5, 1e-6


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight"], args["bias"])
    x = torch.sigmoid(x)
    return {"output": torch.sum(x, dim=1, keepdim=True)}


make_inputs, flops, bytes_moved = LINEAR.make_inputs, LINEAR.flops, LINEAR.bytes_moved
output_shapes = LINEAR.output_shapes
