"""Group normalization of a B x C x H x W tensor: the C channels in G groups of C / G consecutive channels, each group
of each sample normalized over its C / G x H x W elements (biased variance, eps = 1e-5), then channel c scaled by
gamma[c] and shifted by beta[c] (PyTorch's GroupNorm with affine weights).

From KernelBench level 1, 35_GroupNorm_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
EPS = 1e-5
CASES = [
    {"name": "1 x 1 x 1 x 3, 1 group", "sizes": {"B": 1, "C": 1, "G": 1, "H": 1, "W": 3}},
    {"name": "2 x 6 x 5 x 7, 3 groups", "sizes": {"B": 2, "C": 6, "G": 3, "H": 5, "W": 7}},
    {"name": "4 x 64 x 33 x 33, 8 groups", "sizes": {"B": 4, "C": 64, "G": 8, "H": 33, "W": 33}},
    {"name": "3 x 32 x 15 x 17, 32 groups", "sizes": {"B": 3, "C": 32, "G": 32, "H": 15, "W": 17}},
    {"name": "2 x 8 x 128 x 257, 1 group", "sizes": {"B": 2, "C": 8, "G": 1, "H": 128, "W": 257}},
    {"name": "128 x 64 x 91 x 91, 8 groups", "sizes": {"B": 128, "C": 64, "G": 8, "H": 91, "W": 91}},
]
# As layer-norm's: against the reference in double, outputs of about 1: float32 (mean and variance summed in any
# order, one or two passes: under 4e-5 for one thread's running sums over a group of 263168) passes; float16
# (inputs, weights and outputs rounded: about 5e-4 relative) fails, and so do all-zeros and a copy of the input.
TOLERANCE = {"float32": {"atol": 1e-4, "rtol": 1e-4}}


def make_inputs(sizes, dtype, gen, torch):
    b, c, g = sizes["B"], sizes["C"], sizes["G"]
    # gamma and beta are C values each; they are shaped G x C / G only so that the reference knows G.
    return {"input": 3 * torch.randn(b, c, sizes["H"], sizes["W"], generator=gen, device="cuda", dtype=dtype) + 1,
            "gamma": torch.rand(g, c // g, generator=gen, device="cuda", dtype=dtype) + 0.5,
            "beta": torch.rand(g, c // g, generator=gen, device="cuda", dtype=dtype) - 0.5}


def reference(args, torch):
    gamma, beta = args["gamma"], args["beta"]
    out = torch.nn.functional.group_norm(args["input"], gamma.shape[0], gamma.reshape(-1), beta.reshape(-1), EPS)
    return {"output": out}


def flops(sizes):
    return 9 * sizes["B"] * sizes["C"] * sizes["H"] * sizes["W"]


def bytes_moved(sizes, elem):
    return (2 * sizes["B"] * sizes["C"] * sizes["H"] * sizes["W"] + 2 * sizes["C"]) * elem
