"""Centered 1-D convolution (cross-correlation, as in deep learning) with zero padding; K odd."""
CASES = [
    {"name": "N = 1, K = 1", "sizes": {"N": 1, "K": 1}},
    {"name": "N = 1000, K = 3", "sizes": {"N": 1000, "K": 3}},
    {"name": "N = 65537, K = 7", "sizes": {"N": 65537, "K": 7}},
    {"name": "N = 2^20, K = 31", "sizes": {"N": 1 << 20, "K": 31}},
    {"name": "N = 2^24 + 5, K = 63", "sizes": {"N": (1 << 24) + 5, "K": 63}},
]
TOLERANCE = {"float32": {"atol": 1e-5, "rtol": 1e-4}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.rand(sizes["N"], generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "kernel": torch.rand(sizes["K"], generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    x, w = args["input"], args["kernel"]
    k = w.shape[0]
    out = torch.nn.functional.conv1d(x.reshape(1, 1, -1), w.reshape(1, 1, -1), padding=(k - 1) // 2)
    return {"output": out.reshape(-1)}


def flops(sizes):
    return 2 * sizes["N"] * sizes["K"]


def bytes_moved(sizes, elem):
    return (2 * sizes["N"] + sizes["K"]) * elem
