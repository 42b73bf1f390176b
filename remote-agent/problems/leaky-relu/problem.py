"""output = input if input > 0 else alpha * input, element-wise; alpha differs per test."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "33 x 257", "sizes": {"M": 33, "N": 257}},
    {"name": "1000 x 1000", "sizes": {"M": 1000, "N": 1000}},
    {"name": "4096 x 4097", "sizes": {"M": 4096, "N": 4097}},
    {"name": "8192 x 8192", "sizes": {"M": 8192, "N": 8192}},
]
TOLERANCE = {"float32": {"atol": 1e-7, "rtol": 1e-6}}


def make_inputs(sizes, dtype, gen, torch):
    alpha = 0.01 + 0.29 * torch.rand(1, generator=gen, device="cuda").item()
    return {"input": torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype),
            "alpha": alpha}


def reference(args, torch):
    x = args["input"]
    return {"output": torch.where(x > 0, x, x * args["alpha"])}


def flops(sizes):
    return 2 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
