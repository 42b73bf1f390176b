"""Instance normalization of a B x C x H x W tensor (PyTorch's InstanceNorm2d: no affine weights, no running
statistics): each H x W plane to zero mean and unit variance, output = (input - mean) / sqrt(var + 1e-5), with the
biased variance.

From KernelBench level 1, 34_InstanceNorm.py (MIT licence: ../KERNELBENCH-LICENSE)."""
EPS = 1e-5
CASES = [
    {"name": "1 x 1 x 1 x 3", "sizes": {"B": 1, "C": 1, "H": 1, "W": 3}},
    {"name": "2 x 6 x 5 x 7", "sizes": {"B": 2, "C": 6, "H": 5, "W": 7}},
    {"name": "4 x 64 x 33 x 33", "sizes": {"B": 4, "C": 64, "H": 33, "W": 33}},
    {"name": "2 x 8 x 128 x 257", "sizes": {"B": 2, "C": 8, "H": 128, "W": 257}},
    {"name": "128 x 64 x 91 x 91", "sizes": {"B": 128, "C": 64, "H": 91, "W": 91}},
]
# As layer-norm's: against the reference in double, outputs of about 1: float32 (mean and variance summed in any
# order, one or two passes: under 4e-6 for planes of 32896) passes; float16 (inputs and outputs rounded: about 5e-4
# relative) fails, and so do all-zeros and a copy of the input (drawn from 3 N(0, 1) + 1: not normalized).
TOLERANCE = {"float32": {"atol": 1e-4, "rtol": 1e-4}}


def make_inputs(sizes, dtype, gen, torch):
    shape = (sizes["B"], sizes["C"], sizes["H"], sizes["W"])
    return {"input": 3 * torch.randn(*shape, generator=gen, device="cuda", dtype=dtype) + 1}


def reference(args, torch):
    return {"output": torch.nn.functional.instance_norm(args["input"], eps=EPS)}


def flops(sizes):
    return 7 * sizes["B"] * sizes["C"] * sizes["H"] * sizes["W"]


def bytes_moved(sizes, elem):
    return 2 * sizes["B"] * sizes["C"] * sizes["H"] * sizes["W"] * elem
