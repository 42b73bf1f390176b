"""Huber (smooth L1) loss of two tensors of N elements, beta = 1: output[0] = mean(h(predictions - targets)),
h(d) = 0.5 d^2 where |d| < 1, else |d| - 0.5. The output is zeroed (not poisoned) before each call, so atomics may
accumulate.

From KernelBench level 1, 96_HuberLoss.py (MIT licence: ../KERNELBENCH-LICENSE)."""
OUTPUT_INIT = 0.0
CASES = [
    {"name": "N = 1", "sizes": {"N": 1}},
    {"name": "N = 1000", "sizes": {"N": 1000}},
    {"name": "N = 65537", "sizes": {"N": 65537}},
    {"name": "N = 2^20 + 3", "sizes": {"N": (1 << 20) + 3}},
    {"name": "N = 2^26 + 5", "sizes": {"N": (1 << 26) + 5}},
]
# One value of about 0.72 (both inputs from N(0, 1): the differences, N(0, 2), take both branches), so
# tests/test_tolerances.py (100 output elements at least) skips it; these are its checks done by hand, in a numpy
# simulation. Against the reference in double, float32 passes with the sum in any tree-like order (under 4e-7
# relative at N = 2^26 for per-thread partial sums over a grid-stride loop, a block tree and float atomics). One
# thread's running sum over all N drifts (5e-4 relative at N = 2^20) and fails, as in frobenius-norm. float16 is off
# by its rounding of the output (2.4e-4 to 4.9e-4 relative at most, and below N = 2^16 its rounding of the inputs
# too): it fails 1e-5 on a case with a probability of about 97%, so a float16 solution fails one of the five cases
# with near certainty. All-zeros fails.
TOLERANCE = {"float32": {"atol": 1e-8, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    n = sizes["N"]
    return {"predictions": torch.randn(n, generator=gen, device="cuda", dtype=dtype),
            "targets": torch.randn(n, generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    loss = torch.nn.functional.smooth_l1_loss(args["predictions"], args["targets"], beta=1.0)
    return {"output": loss.reshape(1)}


def flops(sizes):
    return 5 * sizes["N"]


def bytes_moved(sizes, elem):
    return (2 * sizes["N"] + 1) * elem
