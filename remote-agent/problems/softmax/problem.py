"""Row-wise softmax."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "3 x 1000", "sizes": {"M": 3, "N": 1000}},
    {"name": "128 x 4097", "sizes": {"M": 128, "N": 4097}},
    {"name": "4096 x 1024", "sizes": {"M": 4096, "N": 1024}},
    {"name": "1024 x 32768", "sizes": {"M": 1024, "N": 32768}},
]
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 1e-4}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype) * 4}


def reference(args, torch):
    return {"output": torch.softmax(args["input"], dim=1)}


def flops(sizes):
    return 5 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
