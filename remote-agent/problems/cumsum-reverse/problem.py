"""Reverse (suffix) sum along the rows of a B x N tensor: cumsum of the flipped rows, flipped back.

From KernelBench level 1, 91_cumsum_reverse.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"B": 1, "N": 1}},
    {"name": "17 x 129", "sizes": {"B": 17, "N": 129}},
    {"name": "65537 x 3", "sizes": {"B": 65537, "N": 3}},
    {"name": "1000 x 1025", "sizes": {"B": 1000, "N": 1025}},
    {"name": "8 x 262147", "sizes": {"B": 8, "N": 262147}},
    {"name": "4096 x 16384", "sizes": {"B": 4096, "N": 16384}},
]

# Against the reference in double, inputs from N(0, 1): a prefix of k elements is a random walk of about sqrt(k).
# float32 in any order passes: one thread's running sum rounds each addition by at most 6e-8 of a partial sum of
# about sqrt(k), a random walk of errors of about 1.2e-8 k (a parallel scan: less), inside 1e-7 N for every prefix
# of a row of N (N is the largest k). float16 (each input rounded: 3e-4 relative, adding up to about 2e-4 sqrt(k),
# and each output rounded: 3e-4 relative) exceeds 1e-5 sqrt(N) + 1e-7 N + 1e-5 relative on most elements and
# fails; so do all-zeros and a copy of an input (a prefix sum differs from its last element by the rest of it).


def tolerance(sizes, dtype):
    n = sizes["N"]
    return 1e-5 * n ** 0.5 + 1e-7 * n, 1e-5


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["B"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": torch.cumsum(x.flip(1), dim=1).flip(1)}


def flops(sizes):
    return sizes["B"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["B"] * sizes["N"] * elem
