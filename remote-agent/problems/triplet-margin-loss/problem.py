"""Triplet margin loss of B triplets of D-vectors: output[0] = mean over b of max(0, |a_b - p_b + eps| -
|a_b - n_b + eps| + 1), |.| the Euclidean norm, eps = 1e-6 (PyTorch's TripletMarginLoss: margin 1, p = 2, no swap).
The output is zeroed (not poisoned) before each call, so atomics may accumulate.

From KernelBench level 1, 99_TripletMarginLoss.py (MIT licence: ../KERNELBENCH-LICENSE)."""
OUTPUT_INIT = 0.0
MARGIN = 1.0
CASES = [
    {"name": "7 x 1", "sizes": {"B": 7, "D": 1}},
    {"name": "9 x 33", "sizes": {"B": 9, "D": 33}},
    {"name": "64 x 1000", "sizes": {"B": 64, "D": 1000}},
    {"name": "17 x 8192", "sizes": {"B": 17, "D": 8192}},
    {"name": "4096 x 8192", "sizes": {"B": 4096, "D": 8192}},
]


def tolerance(sizes, dtype):
    # One value of about 1.1 (all inputs from N(0, 1): the two distances are about sqrt(2 D) each, their difference
    # has a standard deviation of about 1, and the clamp zeroes 16% to 21% of the rows; seven rows at least, so the
    # loss is never 0 in practice), so tests/test_tolerances.py (100 output elements at least) skips it; these are
    # its checks done by hand, in a numpy simulation. Against the reference in double, float32 passes with one
    # thread's running sum of squares along each row (the plain one-thread-per-row kernel): a distance of about
    # sqrt(2 D) is off by about 1e-8 D, and the mean of B rows by at most 5e-8 D / sqrt(B) in 60 trials, inside
    # 1e-6 + 2e-7 D / sqrt(B) + 1e-5 relative (the 1e-6 for a mean made small by the clamp); a tree is closer.
    # float16 fails: its rounding of each distance (up to 0.06 at sqrt(2 D) = 128) and of the output left it 2 to 60
    # times the tolerance off in every case simulated (at D = 1 mostly the output's rounding, 2.4e-4 to 4.9e-4
    # relative, which a case escapes with a probability of a few per cent). Leaving eps out moves a distance by about
    # 1e-6, inside the tolerance. All-zeros fails.
    return 1e-6 + 2e-7 * sizes["D"] / sizes["B"] ** 0.5, 1e-5


def make_inputs(sizes, dtype, gen, torch):
    b, d = sizes["B"], sizes["D"]
    return {name: torch.randn(b, d, generator=gen, device="cuda", dtype=dtype)
            for name in ("anchor", "positive", "negative")}


def reference(args, torch):
    loss = torch.nn.functional.triplet_margin_loss(args["anchor"], args["positive"], args["negative"], margin=MARGIN)
    return {"output": loss.reshape(1)}


def flops(sizes):
    return 6 * sizes["B"] * sizes["D"]


def bytes_moved(sizes, elem):
    return (3 * sizes["B"] * sizes["D"] + 1) * elem
