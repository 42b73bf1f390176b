"""Batched C[b] = A[b] @ B[b], row-major: A batch x M x K, B batch x K x N, C batch x M x N.

From KernelBench level 1, 3_Batched_matrix_multiplication.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x (1 x 1 times 1 x 1)", "sizes": {"batch": 1, "M": 1, "N": 1, "K": 1}},
    {"name": "3 x (5 x 9 times 9 x 7)", "sizes": {"batch": 3, "M": 5, "N": 7, "K": 9}},
    {"name": "7 x (129 x 65 times 65 x 257)", "sizes": {"batch": 7, "M": 129, "N": 257, "K": 65}},
    {"name": "5 x (1000 x 513 times 513 x 33)", "sizes": {"batch": 5, "M": 1000, "N": 33, "K": 513}},
    {"name": "128 x (64 x 100 times 100 x 64)", "sizes": {"batch": 128, "M": 64, "N": 64, "K": 100}},
    {"name": "32 x (512 x 1024 times 1024 x 1024)", "sizes": {"batch": 32, "M": 512, "N": 1024, "K": 1024}},
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
    b, m, n, k = sizes["batch"], sizes["M"], sizes["N"], sizes["K"]
    return {"A": torch.rand(b, m, k, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(b, k, n, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": torch.bmm(args["A"], args["B"])}


def flops(sizes):
    return 2 * sizes["batch"] * sizes["M"] * sizes["N"] * sizes["K"]


def bytes_moved(sizes, elem):
    b, m, n, k = sizes["batch"], sizes["M"], sizes["N"], sizes["K"]
    return b * (m * k + k * n + m * n) * elem
