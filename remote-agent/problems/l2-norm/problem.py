"""L2 normalization of each row of an M x N matrix: output[i][j] = input[i][j] / sqrt(sum over k of input[i][k]^2).

From KernelBench level 1, 39_L2Norm_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "3 x 7", "sizes": {"M": 3, "N": 7}},
    {"name": "128 x 4097", "sizes": {"M": 128, "N": 4097}},
    {"name": "4096 x 1000", "sizes": {"M": 4096, "N": 1000}},
    {"name": "8 x 65537", "sizes": {"M": 8, "N": 65537}},
    {"name": "16384 x 4097", "sizes": {"M": 16384, "N": 4097}},
]


def tolerance(sizes, dtype):
    # Outputs are about 1 / sqrt(N) in size. Against the reference in double: float32 (a sum of N squares in any
    # order: 7e-6 relative at worst for one thread's running sum over 65537) passes; float16 (about 5e-4 relative)
    # fails, and so do all-zeros and a copy of the input (its norm is about 3 sqrt(N), not 1).
    return 1e-6 / sizes["N"] ** 0.5, 3e-5


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 3 * torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    x = args["input"]
    return {"output": x / torch.norm(x, p=2, dim=1, keepdim=True)}


def flops(sizes):
    return 3 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
