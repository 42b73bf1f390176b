"""C = A + B."""
CASES = [
    {"name": "N = 1", "sizes": {"N": 1}},
    {"name": "N = 1000", "sizes": {"N": 1000}},
    {"name": "N = 65537", "sizes": {"N": 65537}},
    {"name": "N = 2^20", "sizes": {"N": 1 << 20}},
    {"name": "N = 2^25 + 3", "sizes": {"N": (1 << 25) + 3}},
]
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 1e-6},
             # One rounding of the sum: half an ulp of the result.
             "float16": {"atol": 1e-3, "rtol": 1e-3},
             "bfloat16": {"atol": 1e-2, "rtol": 8e-3}}


def make_inputs(sizes, dtype, gen, torch):
    n = sizes["N"]
    return {"A": torch.rand(n, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "B": torch.rand(n, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"C": args["A"] + args["B"]}


def flops(sizes):
    return sizes["N"]


def bytes_moved(sizes, elem):
    return 3 * sizes["N"] * elem
