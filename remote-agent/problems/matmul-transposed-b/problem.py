"""C = A @ B.T, row-major, A M x K, B stored N x K, C M x N.

From KernelBench level 1, 17_Matmul_with_transposed_B.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1 x 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "M 5, K 7, N 3", "sizes": {"M": 5, "N": 3, "K": 7}},
    {"name": "M 33, K 129, N 65", "sizes": {"M": 33, "N": 65, "K": 129}},
    {"name": "M 255, K 100, N 511", "sizes": {"M": 255, "N": 511, "K": 100}},
    {"name": "M 1000, K 1025, N 700", "sizes": {"M": 1000, "N": 700, "K": 1025}},
    {"name": "M 1024, K 4096, N 2048", "sizes": {"M": 1024, "N": 2048, "K": 4096}},
]


def tolerance(sizes, dtype):
    # Against the reference in double, inputs from U(-1, 1): each output is a sum of K products of about 1/3
    # (a value of about sqrt(K) / 3). float32 in any summation order passes: the rounding of each addition is at
    # most 6e-8 of the partial sum (about sqrt(k) / 3), and these errors add up like a random walk, so one thread's
    # running sum is off by about 1e-8 K (a tree or tiles: less); 1e-7 K covers that with room, 1e-5 sqrt(K)
    # the products' own roundings. TF32 tensor cores (inputs rounded to 10 mantissa bits: 3e-4 relative each)
    # are off by about 1.3e-4 sqrt(K) absolute, 4e-4 of a typical output, and float16 (the same rounding of the
    # inputs, then of the output) by more: both exceed 1e-4 relative + 1e-5 sqrt(K) (1.3e-4 of a typical output)
    # on most elements, and fail; all-zeros (off by sqrt(K) / 3) and a copy of an input fail.
    k = sizes["K"]
    return 1e-5 * k ** 0.5 + 1e-7 * k, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    return {"A": torch.rand(m, k, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(n, k, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": args["A"] @ args["B"].T}


def flops(sizes):
    return 2 * sizes["M"] * sizes["N"] * sizes["K"]


def bytes_moved(sizes, elem):
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    return (m * k + k * n + m * n) * elem
