"""Row-wise log-softmax of an M x N tensor: output[m][n] = input[m][n] - log(sum over j of exp(input[m][j])).

From KernelBench level 1, 24_LogSoftmax.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1", "sizes": {"M": 1, "N": 1}},
    {"name": "3 x 1000", "sizes": {"M": 3, "N": 1000}},
    {"name": "128 x 4097", "sizes": {"M": 128, "N": 4097}},
    {"name": "4096 x 1024", "sizes": {"M": 4096, "N": 1024}},
    {"name": "1024 x 32768", "sizes": {"M": 1024, "N": 32768}},
]


def tolerance(sizes, dtype):
    # Against the reference in double, inputs from 2 x N(0, 1): outputs of about -log(N) - 2 (-9 to -13), each row off
    # by the error of its log-sum-exp. float32 passes: a tree of partial sums is off by about 4e-6 at N = 32768; one
    # thread's running sum of exp(x - max) over a row, which adds small terms to a large partial sum, by up to 1e-5
    # there, growing about linearly in N (a numpy simulation of 256 rows; 4 x N(0, 1) would make it 9e-5), inside
    # 1e-5 + 5e-9 N. float16 (each input rounded: 2e-3 absolute at 4, each output rounded: 4e-3 at 10) is off by
    # about 100 times the tolerance on more than 90% of the elements and fails; so do all-zeros (every output is
    # negative once N > 1) and a copy of the input.
    return 1e-5 + 5e-9 * sizes["N"], 1e-5


def make_inputs(sizes, dtype, gen, torch):
    return {"input": 2 * torch.randn(sizes["M"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.log_softmax(args["input"], dim=1)}


def flops(sizes):
    return 5 * sizes["M"] * sizes["N"]


def bytes_moved(sizes, elem):
    return 2 * sizes["M"] * sizes["N"] * elem
