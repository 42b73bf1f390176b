"""Row-wise layer normalization with gamma and beta (eps = 1e-5, biased variance)."""
EPS = 1e-5
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "3 x 1000", "sizes": {"M": 3, "N": 1000}},
    {"name": "128 x 4097", "sizes": {"M": 128, "N": 4097}},
    {"name": "4096 x 1024", "sizes": {"M": 4096, "N": 1024}},
    {"name": "1024 x 32768", "sizes": {"M": 1024, "N": 32768}},
]
TOLERANCE = {"float32": {"atol": 1e-4, "rtol": 1e-4}}


def make_inputs(sizes, dtype, gen, torch):
    m, n = sizes["M"], sizes["N"]
    return {"input": torch.randn(m, n, generator=gen, device="cuda", dtype=dtype) * 3 + 1,
            "gamma": torch.rand(n, generator=gen, device="cuda", dtype=dtype) + 0.5,
            "beta": torch.rand(n, generator=gen, device="cuda", dtype=dtype) - 0.5}


def reference(args, torch):
    x = args["input"]
    out = torch.nn.functional.layer_norm(x, (x.shape[1],), args["gamma"], args["beta"], EPS)
    return {"output": out}


def flops(sizes):
    return 8 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return (2 * sizes["M"] * sizes["N"] + 2 * sizes["N"]) * elem
