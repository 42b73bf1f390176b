"""Batch normalization of an N x C x H x W tensor in training mode: each channel normalized over its N x H x W
elements with the batch's own mean and biased variance (eps = 1e-5), then scaled by gamma[c] and shifted by beta[c]
(PyTorch's BatchNorm2d in training mode, its running statistics left out).

From KernelBench level 1, 33_BatchNorm.py (MIT licence: ../KERNELBENCH-LICENSE)."""
EPS = 1e-5
CASES = [
    {"name": "1 x 1 x 1 x 2", "sizes": {"N": 1, "C": 1, "H": 1, "W": 2}},
    {"name": "2 x 3 x 5 x 7", "sizes": {"N": 2, "C": 3, "H": 5, "W": 7}},
    {"name": "4 x 17 x 33 x 33", "sizes": {"N": 4, "C": 17, "H": 33, "W": 33}},
    {"name": "3 x 64 x 15 x 17", "sizes": {"N": 3, "C": 64, "H": 15, "W": 17}},
    {"name": "2 x 8 x 128 x 257", "sizes": {"N": 2, "C": 8, "H": 128, "W": 257}},
    {"name": "16 x 128 x 128 x 128", "sizes": {"N": 16, "C": 128, "H": 128, "W": 128}},
]
# As group-norm's: against the reference in double, outputs of about 1: float32 (mean and variance summed in any
# order, one pass or two: one thread's running sums over a channel of 262144 elements are off by under 5e-5 in a
# numpy simulation) passes; float16 (inputs, weights and outputs rounded: about 5e-4 relative) fails on about half the
# elements, and so do all-zeros and a copy of the input. At most 263168 elements a channel (the largest case's 262144),
# as group-norm's groups.
TOLERANCE = {"float32": {"atol": 1e-4, "rtol": 1e-4}}


def make_inputs(sizes, dtype, gen, torch):
    c = sizes["C"]
    return {"input": 3 * torch.randn(sizes["N"], c, sizes["H"], sizes["W"], generator=gen, device="cuda",
                                     dtype=dtype) + 1,
            "gamma": torch.rand(c, generator=gen, device="cuda", dtype=dtype) + 0.5,
            "beta": torch.rand(c, generator=gen, device="cuda", dtype=dtype) - 0.5}


def reference(args, torch):
    out = torch.nn.functional.batch_norm(args["input"], None, None, args["gamma"], args["beta"], training=True,
                                         eps=EPS)
    return {"output": out}


def flops(sizes):
    return 9 * sizes["N"] * sizes["C"] * sizes["H"] * sizes["W"]


def bytes_moved(sizes, elem):
    return (2 * sizes["N"] * sizes["C"] * sizes["H"] * sizes["W"] + 2 * sizes["C"]) * elem
