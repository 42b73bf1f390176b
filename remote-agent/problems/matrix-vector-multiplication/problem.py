"""C = A @ B, row-major A M x K, B a K x 1 column, C M x 1.

From KernelBench level 1, 4_Matrix_vector_multiplication_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "K": 1}},
    {"name": "3 x 1000", "sizes": {"M": 3, "K": 1000}},
    {"name": "129 x 257", "sizes": {"M": 129, "K": 257}},
    {"name": "1000 x 1025", "sizes": {"M": 1000, "K": 1025}},
    {"name": "17 x 100003", "sizes": {"M": 17, "K": 100003}},
    {"name": "65537 x 31", "sizes": {"M": 65537, "K": 31}},
    {"name": "4096 x 65536", "sizes": {"M": 4096, "K": 65536}},
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
    m, k = sizes["M"], sizes["K"]
    return {"A": torch.rand(m, k, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(k, 1, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": args["A"] @ args["B"]}


def flops(sizes):
    return 2 * sizes["M"] * sizes["K"]


def bytes_moved(sizes, elem):
    m, k = sizes["M"], sizes["K"]
    return (m * k + k + m) * elem
