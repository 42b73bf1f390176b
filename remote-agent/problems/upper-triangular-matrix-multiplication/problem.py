"""C = triu(A @ B) for upper triangular A and B (N x N, row-major), as KernelBench computes it.

From KernelBench level 1, 14_Matmul_for_upper_triangular_matrices.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"N": 1}},
    {"name": "7 x 7", "sizes": {"N": 7}},
    {"name": "65 x 65", "sizes": {"N": 65}},
    {"name": "255 x 255", "sizes": {"N": 255}},
    {"name": "1025 x 1025", "sizes": {"N": 1025}},
    {"name": "2048 x 2048", "sizes": {"N": 2048}},
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
    # Entry (i, j) sums only |i - j| + 1 products: N bounds every entry's error.
    k = sizes["N"]
    return 1e-5 * k ** 0.5 + 1e-7 * k, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    n = sizes["N"]
    return {"A": torch.triu(torch.rand(n, n, generator=gen, device="cuda", dtype=dtype) * 2 - 1),
            "B": torch.triu(torch.rand(n, n, generator=gen, device="cuda", dtype=dtype) * 2 - 1)}


def reference(args, torch):
    return {"C": torch.triu(args["A"] @ args["B"])}


def flops(sizes):
    n = sizes["N"]
    return n * (n + 1) * (n + 2) // 3  # a multiply and an add for each i <= k <= j


def bytes_moved(sizes, elem):
    n = sizes["N"]
    return (n * (n + 1) + n * n) * elem  # the two triangles read, all of C written
