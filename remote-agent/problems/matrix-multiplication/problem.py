"""C = A @ B, row-major."""
CASES = [
    {"name": "1 x 1 x 1", "sizes": {"M": 1, "N": 1, "K": 1}},
    {"name": "64 x 64 x 64", "sizes": {"M": 64, "N": 64, "K": 64}},
    {"name": "127 x 255 x 129", "sizes": {"M": 127, "N": 255, "K": 129}},
    {"name": "1024 x 1024 x 1024", "sizes": {"M": 1024, "N": 1024, "K": 1024}},
    {"name": "4096 x 4096 x 4096", "sizes": {"M": 4096, "N": 4096, "K": 4096}},
]


def tolerance(sizes, dtype):
    # float32 accumulation error grows with the inner dimension.
    return 1e-5 * max(1.0, sizes["K"] ** 0.5), 1e-4


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
