"""L1 normalization of each row of an M x N matrix by the mean of its absolute values (KernelBench's mean, not
the sum): output[i][j] = input[i][j] / (sum over k of |input[i][k]| / N).

From KernelBench level 1, 38_L1Norm_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "3 x 7", "sizes": {"M": 3, "N": 7}},
    {"name": "128 x 4097", "sizes": {"M": 128, "N": 4097}},
    {"name": "4096 x 1000", "sizes": {"M": 4096, "N": 1000}},
    {"name": "8 x 65537", "sizes": {"M": 8, "N": 65537}},
    {"name": "16384 x 4097", "sizes": {"M": 16384, "N": 4097}},
]
# Against the reference in double, outputs of about 1: float32 (a sum of N absolute values in any order: 1.2e-5
# relative at worst for one thread's running sum over 65537) passes; float16 (about 5e-4 relative) fails, and so do
# all-zeros and a copy of the input (its mean absolute value is about 2.4, not 1).
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 3e-5}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 3 * torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": x / torch.mean(torch.abs(x), dim=1, keepdim=True)}


def flops(sizes):
    return 3 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
