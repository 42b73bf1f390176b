"""C = A @ B, row-major, A M x K, B K x N, K small.

From KernelBench level 1, 7_Matmul_with_small_K_dimension_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1, K 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "17 x 129, K 7", "sizes": {"M": 17, "N": 129, "K": 7}},
    {"name": "1000 x 1000, K 1", "sizes": {"M": 1000, "N": 1000, "K": 1}},
    {"name": "2049 x 1023, K 33", "sizes": {"M": 2049, "N": 1023, "K": 33}},
    {"name": "4096 x 4096, K 64", "sizes": {"M": 4096, "N": 4096, "K": 64}},
    {"name": "8192 x 8192, K 64", "sizes": {"M": 8192, "N": 8192, "K": 64}},
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
            "B": torch.rand(k, n, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": args["A"] @ args["B"]}


def flops(sizes):
    return 2 * sizes["M"] * sizes["N"] * sizes["K"]


def bytes_moved(sizes, elem):
    m, n, k = sizes["M"], sizes["N"], sizes["K"]
    return (m * k + k * n + m * n) * elem
