"""Frobenius-norm normalization of N elements: output[i] = input[i] / sqrt(sum over j of input[j]^2).

From KernelBench level 1, 37_FrobeniusNorm_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "N = 1", "sizes": {"N": 1}},
    {"name": "N = 1000", "sizes": {"N": 1000}},
    {"name": "N = 65537", "sizes": {"N": 65537}},
    {"name": "N = 2^20 + 3", "sizes": {"N": (1 << 20) + 3}},
    {"name": "N = 2^26 + 5", "sizes": {"N": (1 << 26) + 5}},
]


def tolerance(sizes, dtype):
    # Outputs are about 1 / sqrt(N) in size. Against the reference in double: float32 passes with the sum of squares
    # in any tree-like order (warp or block partial sums added by atomics: under 1e-5 relative at N = 2^26; one
    # thread's running sum over all the squares drifts, 3e-4 at N = 2^20, 0.1 at 2^26, and fails); float16 (5e-4
    # relative, and subnormal below 6e-5) fails, and so do all-zeros and a copy of the input.
    return 1e-6 / sizes["N"] ** 0.5, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 3 * torch.randn(sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": x / torch.norm(x, p="fro")}


def flops(sizes):
    return 3 * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["N"] * elem
