"""output = logsumexp(linear2(sigmoid(linear1(input))), dim=1): two Linear layers (weight1 H x K, weight2 N x H, as
PyTorch stores them) with a sigmoid between them, then the log-sum-exp of each row; the output has M values.

From KernelBench level 2, 45_Gemm_Sigmoid_LogSumExp.py (MIT licence: ../KERNELBENCH-LICENSE)."""
# weight1 = 2 N(0, 1) / sqrt(K): the sigmoid's inputs are about N(0, 4.3); weight2 = 4 N(0, 1) / sqrt(H): the
# log-sum-exp's inputs spread over a few units, so that a few of them dominate each row.
WEIGHT1_SCALE = 2.0
WEIGHT2_SCALE = 4.0
CASES = [
    {"name": "M 1, K 1, H 1, N 1", "sizes": {"M": 1, "K": 1, "H": 1, "N": 1}},
    {"name": "M 3, K 7, H 5, N 2", "sizes": {"M": 3, "K": 7, "H": 5, "N": 2}},
    {"name": "M 128, K 33, H 65, N 17", "sizes": {"M": 128, "K": 33, "H": 65, "N": 17}},
    {"name": "M 257, K 100, H 300, N 1000", "sizes": {"M": 257, "K": 100, "H": 300, "N": 1000}},
    {"name": "M 1000, K 512, H 1025, N 129", "sizes": {"M": 1000, "K": 512, "H": 1025, "N": 129}},
    {"name": "M 1024, K 1024, H 2048, N 1024", "sizes": {"M": 1024, "K": 1024, "H": 2048, "N": 1024}},
]


def tolerance(sizes, dtype):
    # Against the reference in double. Outputs of about 5 to 10; the log-sum-exp is a softmax-weighted mean of its
    # inputs' errors. float32 passes: the second product's running sums over H (and the first's over K, through the
    # sigmoid) are off by a few 1e-6 at most, the output's own rounding is 5e-7; a numpy simulation of the plain
    # kernel (running fma sums, a running sum of exp(z - max) in order) stayed within 0.3 of this tolerance in cases
    # like these. TF32 inputs (10-bit mantissas: the output about 1e-4 off) and float16 (the same, then every
    # intermediate and the output of about 10 rounded to 11 bits) exceed it on 80% to 99% of the outputs and fail;
    # so does all-zeros.
    return 1e-5 + 3e-7 * (sizes["K"] + sizes["H"]) ** 0.5, 1e-6


def make_inputs(sizes, dtype, gen, torch):
    m, k, h, n = sizes["M"], sizes["K"], sizes["H"], sizes["N"]
    return {"input": torch.randn(m, k, generator=gen, device="cuda", dtype=dtype),
            "weight1": torch.randn(h, k, generator=gen, device="cuda", dtype=dtype) * (WEIGHT1_SCALE / k ** 0.5),
            "bias1": torch.rand(h, generator=gen, device="cuda", dtype=dtype) * 2 - 1,
            "weight2": torch.randn(n, h, generator=gen, device="cuda", dtype=dtype) * (WEIGHT2_SCALE / h ** 0.5),
            "bias2": torch.rand(n, generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    x = torch.nn.functional.linear(args["input"], args["weight1"], args["bias1"])
    x = torch.sigmoid(x)
    x = torch.nn.functional.linear(x, args["weight2"], args["bias2"])
    return {"output": torch.logsumexp(x, dim=1)}


def output_shapes(sizes):
    return {"output": (sizes["M"],)}


def flops(sizes):
    m, k, h, n = sizes["M"], sizes["K"], sizes["H"], sizes["N"]
    return 2 * m * h * k + 2 * m * n * h + 5 * m * h + 4 * m * n


def bytes_moved(sizes, elem):
    m, k, h, n = sizes["M"], sizes["K"], sizes["H"], sizes["N"]
    return (m * k + h * k + h + n * h + n + m) * elem
