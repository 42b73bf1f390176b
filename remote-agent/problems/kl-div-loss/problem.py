"""KL divergence, as KernelBench computes it: kl_div(log(predictions), targets, reduction='batchmean'), that is
output[0] = sum over b, d of targets[b][d] * (log(targets[b][d]) - log(predictions[b][d])), divided by B. predictions
and targets are B x D, each row a softmax (every element > 0). The output is zeroed (not poisoned) before each call,
so atomics may accumulate.

From KernelBench level 1, 98_KLDivLoss.py (MIT licence: ../KERNELBENCH-LICENSE)."""
OUTPUT_INIT = 0.0
CASES = [
    {"name": "1 x 3", "sizes": {"B": 1, "D": 3}},
    {"name": "5 x 1000", "sizes": {"B": 5, "D": 1000}},
    {"name": "1000 x 33", "sizes": {"B": 1000, "D": 33}},
    {"name": "3 x 16384", "sizes": {"B": 3, "D": 16384}},
    {"name": "4096 x 16384", "sizes": {"B": 4096, "D": 16384}},
]


def tolerance(sizes, dtype):
    # One value, so tests/test_tolerances.py (100 output elements at least) skips it; these are its checks done by
    # hand, in a numpy simulation. A row's divergence between the softmaxes of two N(0, 1) rows is about 1 once D is
    # large; at D = 3 it is 0.37 in the median and under 4e-3 one time in a hundred, so the absolute error matters
    # too. Against the reference in double, float32 passes: each term's logs are off by about 1e-7 relative (1e-7
    # absolute over a row whose terms sum to about 1 in magnitude, inside 1e-6), and the sum in any order, even one
    # thread's running sum along a row of 16384 (off by up to 2e-6), stays inside 1e-5 relative. float16 fails: the
    # softmaxes of 16384 values are about 6e-5, where float16 is subnormal, and its rounding of the output alone is
    # 2.4e-4 to 4.9e-4 relative (a case passes with a probability of a few per cent, all five never). All-zeros fails.
    return 1e-6, 1e-5


def make_inputs(sizes, dtype, gen, torch):
    b, d = sizes["B"], sizes["D"]
    return {"predictions": torch.softmax(torch.randn(b, d, generator=gen, device="cuda", dtype=dtype), dim=-1),
            "targets": torch.softmax(torch.randn(b, d, generator=gen, device="cuda", dtype=dtype), dim=-1)}


def reference(args, torch):
    loss = torch.nn.functional.kl_div(torch.log(args["predictions"]), args["targets"], reduction="batchmean")
    return {"output": loss.reshape(1)}


def flops(sizes):
    return 5 * sizes["B"] * sizes["D"]


def bytes_moved(sizes, elem):
    return (2 * sizes["B"] * sizes["D"] + 1) * elem
