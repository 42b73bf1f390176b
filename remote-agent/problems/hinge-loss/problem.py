"""Hinge loss: output[0] = mean over a B x D tensor of max(0, 1 - predictions[b][d] * targets[d]), the targets (+1 or
-1, D of them) broadcast along the rows as KernelBench's torch.mean(torch.clamp(1 - predictions * targets, min=0))
broadcasts them. The output is zeroed (not poisoned) before each call, so atomics may accumulate.

From KernelBench level 1, 100_HingeLoss.py (MIT licence: ../KERNELBENCH-LICENSE)."""
OUTPUT_INIT = 0.0
CASES = [
    {"name": "1 x 7", "sizes": {"B": 1, "D": 7}},
    {"name": "3 x 1000", "sizes": {"B": 3, "D": 1000}},
    {"name": "1000 x 33", "sizes": {"B": 1000, "D": 33}},
    {"name": "100 x 10007", "sizes": {"B": 100, "D": 10007}},
    {"name": "4096 x 16384", "sizes": {"B": 4096, "D": 16384}},
]
# One value of about 1.08 (predictions from N(0, 1), so predictions * targets is N(0, 1) and the clamp cuts about 16%
# of the terms; seven terms at least, so the loss is never 0 in practice), so tests/test_tolerances.py (100 output
# elements at least) skips it; these are its checks done by hand. As mse-loss's: float32 passes with the sum in any
# tree-like order (per-thread partial sums, a block tree, float atomics per block: under 4e-6 relative at 2^26
# terms); one thread's running sum over all B x D terms drifts and fails; float16 is off by its rounding of the
# output (2.4e-4 to 4.9e-4 relative at most) and of 1 - p t, and fails 1e-5 on a case with a probability of about
# 97%; all-zeros fails.
TOLERANCE = {"float32": {"atol": 1e-8, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    b, d = sizes["B"], sizes["D"]
    return {"predictions": torch.randn(b, d, generator=gen, device="cuda", dtype=dtype),
            "targets": (torch.rand(d, generator=gen, device="cuda") < 0.5).to(dtype) * 2 - 1}


def reference(args, torch):
    loss = torch.mean(torch.clamp(1 - args["predictions"] * args["targets"], min=0))
    return {"output": loss.reshape(1)}


def flops(sizes):
    return 3 * sizes["B"] * sizes["D"]


def bytes_moved(sizes, elem):
    return (sizes["B"] * sizes["D"] + sizes["D"] + 1) * elem
