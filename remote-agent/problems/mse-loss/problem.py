"""Mean squared error of two tensors of N elements: output[0] = mean((predictions - targets)^2). The output is zeroed
(not poisoned) before each call, so atomics may accumulate.

From KernelBench level 1, 94_MSELoss.py (MIT licence: ../KERNELBENCH-LICENSE)."""
OUTPUT_INIT = 0.0
CASES = [
    {"name": "N = 1", "sizes": {"N": 1}},
    {"name": "N = 1000", "sizes": {"N": 1000}},
    {"name": "N = 65537", "sizes": {"N": 65537}},
    {"name": "N = 2^20 + 3", "sizes": {"N": (1 << 20) + 3}},
    {"name": "N = 2^26 + 5", "sizes": {"N": (1 << 26) + 5}},
]
# One value of about 2 (both inputs from N(0, 1)), so tests/test_tolerances.py (100 output elements at least) skips
# it; these are its checks done by hand, in a numpy simulation. Against the reference in double, float32 passes with
# the sum in any tree-like order: pairwise, per-thread partial sums over a grid-stride loop then a block tree, or one
# float atomicAdd per block of 256 (under 4e-6 relative at N = 2^26, 0.4 of the tolerance). One thread's running sum
# over all N drifts (5e-4 relative at N = 2^20) and fails, as in frobenius-norm. float16 is off by its rounding of the
# output (up to 2.4e-4 to 4.9e-4 relative, and below N = 2^16 its rounding of the inputs too): it fails 1e-5 on a
# case with a probability of about 97% (a value that happens to round to within 1e-5 passes), so a float16 solution
# fails one of the five cases with near certainty. All-zeros fails.
TOLERANCE = {"float32": {"atol": 1e-8, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    n = sizes["N"]
    return {"predictions": torch.randn(n, generator=gen, device="cuda", dtype=dtype),
            "targets": torch.randn(n, generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.mean((args["predictions"] - args["targets"]) ** 2).reshape(1)}


def flops(sizes):
    return 3 * sizes["N"]


def bytes_moved(sizes, elem):
    return (2 * sizes["N"] + 1) * elem
