"""Inclusive prefix product along the rows of a B x N tensor (torch.cumprod(x, dim=1)), inputs near 1.

From KernelBench level 1, 90_cumprod.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"B": 1, "N": 1}},
    {"name": "17 x 129", "sizes": {"B": 17, "N": 129}},
    {"name": "65537 x 3", "sizes": {"B": 65537, "N": 3}},
    {"name": "1000 x 1025", "sizes": {"B": 1000, "N": 1025}},
    {"name": "16 x 65537", "sizes": {"B": 16, "N": 65537}},
    {"name": "4096 x 16384", "sizes": {"B": 4096, "N": 16384}},
]

# Inputs 1 + 0.01 N(0, 1): the log of a prefix product of k is a random walk of about 0.01 sqrt(k) with a drift of
# -5e-5 k, so over rows of at most 65537 the products stay between about e^-19 and e^12 (no overflow, no
# underflow, in float32). Against the reference in double the error is relative: float32 rounds each
# multiplication by at most 6e-8, a random walk of about 3.5e-8 sqrt(k) for one thread's running product (a tree:
# less), inside 1e-5 + 1e-6 sqrt(N) relative. float16 rounds each input near 1 by up to 5e-4 (adding up to about
# 2e-4 sqrt(k)) and each output by up to 5e-4 relative, and fails; so do all-zeros and a copy of an input (off by
# 1% after the first element).


def tolerance(sizes, dtype):
    return 0.0, 1e-5 + 1e-6 * sizes["N"] ** 0.5


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 1 + 0.01 * torch.randn(sizes["B"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": torch.cumprod(x, dim=1)}


def flops(sizes):
    return sizes["B"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["B"] * sizes["N"] * elem
