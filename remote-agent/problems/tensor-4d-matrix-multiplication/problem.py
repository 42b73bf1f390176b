"""C = A @ B over the last dimension of A: A N x I x J x L, B L x K, C N x I x J x K, row-major
(KernelBench's einsum "bijl,lk->bijk").

From KernelBench level 1, 11_4D_tensor_matrix_multiplication.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1 x 1 x 1 times 1 x 1", "sizes": {"N": 1, "I": 1, "J": 1, "L": 1, "K": 1}},
    {"name": "2 x 3 x 5 x 7 times 7 x 9", "sizes": {"N": 2, "I": 3, "J": 5, "L": 7, "K": 9}},
    {"name": "3 x 5 x 33 x 65 times 65 x 129", "sizes": {"N": 3, "I": 5, "J": 33, "L": 65, "K": 129}},
    {"name": "2 x 7 x 100 x 257 times 257 x 31", "sizes": {"N": 2, "I": 7, "J": 100, "L": 257, "K": 31}},
    {"name": "4 x 16 x 129 x 513 times 513 x 100", "sizes": {"N": 4, "I": 16, "J": 129, "L": 513, "K": 100}},
    {"name": "8 x 16 x 512 x 256 times 256 x 768", "sizes": {"N": 8, "I": 16, "J": 512, "L": 256, "K": 768}},
]


def tolerance(sizes, dtype):
    # As tensor-3d-matrix-multiplication's, with the summed length L: against the reference in double, inputs from
    # U(-1, 1), each output a sum of L products of about 1/3 (a value of about sqrt(L) / 3). float32 in any summation
    # order passes: one thread's running sum is off by about 1e-8 L (a tree or tiles: less), inside 1e-7 L, and
    # 1e-5 sqrt(L) covers the products' own roundings. TF32 tensor cores (inputs rounded to 10 mantissa bits) are off
    # by about 1.3e-4 sqrt(L) absolute, 4e-4 of a typical output, and float16 by more: both exceed 1e-4 relative +
    # 1e-5 sqrt(L) on most elements and fail; all-zeros (off by sqrt(L) / 3) and a copy of an input fail.
    l = sizes["L"]
    return 1e-5 * l ** 0.5 + 1e-7 * l, 1e-4


def make_inputs(sizes, dtype, gen, torch):
    n, i, j, l, k = sizes["N"], sizes["I"], sizes["J"], sizes["L"], sizes["K"]
    return {"A": torch.rand(n, i, j, l, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(l, k, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": torch.einsum("bijl,lk->bijk", args["A"], args["B"])}


def flops(sizes):
    return 2 * sizes["N"] * sizes["I"] * sizes["J"] * sizes["L"] * sizes["K"]


def bytes_moved(sizes, elem):
    rows = sizes["N"] * sizes["I"] * sizes["J"]
    l, k = sizes["L"], sizes["K"]
    return (rows * l + l * k + rows * k) * elem
