"""Scaled dot-product attention: output = softmax(Q K^T / sqrt(E)) V for each (batch, head), Q, K, V and output
B x H x S x E row-major; no mask, no dropout, not causal (PyTorch's scaled_dot_product_attention).

From KernelBench level 1, 97_ScaledDotProductAttention.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1 x 1 x 1", "sizes": {"B": 1, "H": 1, "S": 1, "E": 1}},
    {"name": "1 x 2 x 3 x 5", "sizes": {"B": 1, "H": 2, "S": 3, "E": 5}},
    {"name": "2 x 3 x 17 x 33", "sizes": {"B": 2, "H": 3, "S": 17, "E": 33}},
    {"name": "2 x 4 x 129 x 100", "sizes": {"B": 2, "H": 4, "S": 129, "E": 100}},
    {"name": "1 x 2 x 64 x 1024", "sizes": {"B": 1, "H": 2, "S": 64, "E": 1024}},
    {"name": "4 x 8 x 512 x 64", "sizes": {"B": 4, "H": 8, "S": 512, "E": 64}},
]


def tolerance(sizes, dtype):
    # Against the reference in double, inputs from N(0, 1): scores of about N(0, 1), outputs weighted means of V rows,
    # about 0.05 at S = 512 to 0.2 at S = 17 (V itself at S = 1). float32 passes: a numpy simulation of the plain
    # kernel (one thread per output element: running sums over E for each score, an online softmax, a running sum
    # over S) is off by at most 1.1e-6 at E = 1024 (a score off by about 2.4e-8 E / sqrt(E)) and 6e-7 elsewhere, and
    # a batched one by less, inside 1e-6 + 1.5e-7 sqrt(E) + 1e-5 relative (at most 0.2 of it). float16 (inputs,
    # scores, weights and output rounded) and TF32 products (Q, K and V rounded to 10 mantissa bits) are off by 5e-4
    # to 1.6e-3 at most and exceed the tolerance on 95% of the elements or more: both fail, and so do all-zeros and a
    # copy of an input (the case S = 1, whose output is V, has a single element).
    return 1e-6 + 1.5e-7 * sizes["E"] ** 0.5, 1e-5


def make_inputs(sizes, dtype, gen, torch):
    shape = (sizes["B"], sizes["H"], sizes["S"], sizes["E"])
    return {name: torch.randn(*shape, generator=gen, device="cuda", dtype=dtype) for name in ("Q", "K", "V")}


def reference(args, torch):
    return {"output": torch.nn.functional.scaled_dot_product_attention(args["Q"], args["K"], args["V"])}


def flops(sizes):
    # Q K^T and the weights times V (2 S^2 E each per head), and the softmax (about 5 S^2).
    b, h, s, e = sizes["B"], sizes["H"], sizes["S"], sizes["E"]
    return b * h * s * s * (4 * e + 5)


def bytes_moved(sizes, elem):
    return 4 * sizes["B"] * sizes["H"] * sizes["S"] * sizes["E"] * elem
