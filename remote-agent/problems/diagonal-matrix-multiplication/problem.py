"""C = diag(A) @ B, i.e. C[i][j] = A[i] * B[i][j]: A has N values, B and C are N x M, row-major.

From KernelBench level 1, 12_Matmul_with_diagonal_matrices_.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"N": 1, "M": 1}},
    {"name": "3 x 7", "sizes": {"N": 3, "M": 7}},
    {"name": "129 x 33", "sizes": {"N": 129, "M": 33}},
    {"name": "1000 x 1000", "sizes": {"N": 1000, "M": 1000}},
    {"name": "4097 x 8191", "sizes": {"N": 4097, "M": 8191}},
    {"name": "8192 x 8192", "sizes": {"N": 8192, "M": 8192}},
]
# Against the reference in double: one float32 multiplication (rounded by at most 6e-8 relative) passes; float16
# (each input and the output rounded: about 5e-4 relative) fails, and so do all-zeros and a copy of B (A[i] is
# from U(-1, 1), not 1).
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    n, m = sizes["N"], sizes["M"]
    return {"A": torch.rand(n, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(n, m, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": args["A"].unsqueeze(1) * args["B"]}


def flops(sizes):
    return sizes["N"] * sizes["M"]


def bytes_moved(sizes, elem):
    n, m = sizes["N"], sizes["M"]
    return (n + 2 * n * m) * elem
