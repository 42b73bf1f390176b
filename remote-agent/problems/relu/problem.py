"""output = max(input, 0), element-wise."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "33 x 257", "sizes": {"M": 33, "N": 257}},
    {"name": "1000 x 1000", "sizes": {"M": 1000, "N": 1000}},
    {"name": "4096 x 4097", "sizes": {"M": 4096, "N": 4097}},
    {"name": "8192 x 8192", "sizes": {"M": 8192, "N": 8192}},
]
TOLERANCE = {"float32": {"atol": 0.0, "rtol": 0.0}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.relu(args["input"])}


def flops(sizes):
    return sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
