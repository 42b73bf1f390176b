"""RMS normalization over the features (the middle dimension) of a B x D x N tensor, no weight:
output[b][d][n] = input[b][d][n] / sqrt(mean over d' of input[b][d'][n]^2 + 1e-5).

From KernelBench level 1, 36_RMSNorm_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
EPS = 1e-5
CASES = [
    {"name": "1 x 1 x 1", "sizes": {"B": 1, "D": 1, "N": 1}},
    {"name": "2 x 5 x 7", "sizes": {"B": 2, "D": 5, "N": 7}},
    {"name": "128 x 3 x 1000", "sizes": {"B": 128, "D": 3, "N": 1000}},
    {"name": "16 x 64 x 1025", "sizes": {"B": 16, "D": 64, "N": 1025}},
    {"name": "2 x 4097 x 129", "sizes": {"B": 2, "D": 4097, "N": 129}},
    {"name": "16 x 64 x 65537", "sizes": {"B": 16, "D": 64, "N": 65537}},
]
# Against the reference in double, outputs of about 1: float32 (a sum of D squares in any order: 2e-6 relative at
# D = 4097 for one thread's running sum, then a few roundings) passes; float16 (about 5e-4 relative) fails, and so
# do all-zeros and a copy of the input (its RMS is about 3, not 1).
TOLERANCE = {"float32": {"atol": 1e-5, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 3 * torch.randn(sizes["B"], sizes["D"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + EPS)}


def flops(sizes):
    return 3 * sizes["B"] * sizes["D"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["B"] * sizes["D"] * sizes["N"] * elem
