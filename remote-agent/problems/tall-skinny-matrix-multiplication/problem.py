"""C = A @ B, row-major, A M x N (tall, skinny), B N x M, C M x M.

From KernelBench level 1, 9_Tall_skinny_matrix_multiplication_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "M 1, N 1", "sizes": {"M": 1, "N": 1}},
    {"name": "M 17, N 3", "sizes": {"M": 17, "N": 3}},
    {"name": "M 129, N 17", "sizes": {"M": 129, "N": 17}},
    {"name": "M 1000, N 7", "sizes": {"M": 1000, "N": 7}},
    {"name": "M 4097, N 32", "sizes": {"M": 4097, "N": 32}},
    {"name": "M 8192, N 32", "sizes": {"M": 8192, "N": 32}},
]


def tolerance(sizes, dtype):
    # Against the reference in double, inputs from U(-1, 1): each output is a sum of N products of about 1/3
    # (a value of about sqrt(N) / 3). float32 in any summation order passes: the rounding of each addition is at
    # most 6e-8 of the partial sum (about sqrt(k) / 3), and these errors add up like a random walk, so one thread's
    # running sum is off by about 1e-8 N (a tree or tiles: less); 1e-7 N covers that with room, 1e-5 sqrt(N)
    # the products' own roundings. TF32 tensor cores (inputs rounded to 10 mantissa bits: 3e-4 relative each)
    # are off by about 1.3e-4 sqrt(N) absolute, 4e-4 of a typical output, and float16 (the same rounding of the
    # inputs, then of the output) by more: both exceed 1e-4 relative + 1e-5 sqrt(N) (1.3e-4 of a typical output)
    # on most elements, and fail; all-zeros (off by sqrt(N) / 3) and a copy of an input fail.
    k = sizes["N"]
    return 1e-5 * k ** 0.5 + 1e-7 * k, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    m, n = sizes["M"], sizes["N"]
    return {"A": torch.rand(m, n, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(n, m, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": args["A"] @ args["B"]}


def flops(sizes):
    return 2 * sizes["M"] * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    m, n = sizes["M"], sizes["N"]
    return (2 * m * n + m * m) * elem
