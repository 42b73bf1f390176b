"""C = A @ B over the last dimension of A: A N x M x K, B K x L, C N x M x L, row-major.

From KernelBench level 1, 10_3D_tensor_matrix_multiplication.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1 x 1 times 1 x 1", "sizes": {"N": 1, "M": 1, "K": 1, "L": 1}},
    {"name": "2 x 3 x 5 times 5 x 7", "sizes": {"N": 2, "M": 3, "K": 5, "L": 7}},
    {"name": "3 x 33 x 129 times 129 x 65", "sizes": {"N": 3, "M": 33, "K": 129, "L": 65}},
    {"name": "16 x 100 x 257 times 257 x 31", "sizes": {"N": 16, "M": 100, "K": 257, "L": 31}},
    {"name": "5 x 1000 x 513 times 513 x 100", "sizes": {"N": 5, "M": 1000, "K": 513, "L": 100}},
    {"name": "8 x 1024 x 2048 times 2048 x 768", "sizes": {"N": 8, "M": 1024, "K": 2048, "L": 768}},
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
    n, m, k, l = sizes["N"], sizes["M"], sizes["K"], sizes["L"]
    return {"A": torch.rand(n, m, k, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(k, l, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": torch.matmul(args["A"], args["B"])}


def flops(sizes):
    return 2 * sizes["N"] * sizes["M"] * sizes["K"] * sizes["L"]


def bytes_moved(sizes, elem):
    n, m, k, l = sizes["N"], sizes["M"], sizes["K"], sizes["L"]
    return (n * m * k + k * l + n * m * l) * elem
