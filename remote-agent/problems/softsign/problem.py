"""Softsign: output = input / (1 + |input|).

From KernelBench level 1, 30_Softsign.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "33 x 257", "sizes": {"M": 33, "N": 257}},
    {"name": "1000 x 1000", "sizes": {"M": 1000, "N": 1000}},
    {"name": "4096 x 4097", "sizes": {"M": 4096, "N": 4097}},
    {"name": "8192 x 8192", "sizes": {"M": 8192, "N": 8192}},
]
# Against the reference in double: float32 arithmetic (a few ulp) passes; float16 (about 5e-4 relative) fails.
TOLERANCE = {"float32": {"atol": 1e-5, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 3 * torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": x / (1 + torch.abs(x))}


def flops(sizes):
    return 3 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
