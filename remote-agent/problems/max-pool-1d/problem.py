"""1-D max pooling of an N x C x L tensor: kernel size 8, stride 1, padding 4, dilation 3 (KernelBench's), so the
output is N x C x (L - 13) and output[n][c][o] = max over k < 8 of input[n][c][o - 4 + 3k], positions inside 0..L-1.

From KernelBench level 1, 41_Max_Pooling_1D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL, STRIDE, PADDING, DILATION = 8, 1, 4, 3
CASES = [
    {"name": "1 x 1 x 14", "sizes": {"N": 1, "C": 1, "L": 14}},
    {"name": "2 x 3 x 100", "sizes": {"N": 2, "C": 3, "L": 100}},
    {"name": "3 x 17 x 1025", "sizes": {"N": 3, "C": 17, "L": 1025}},
    {"name": "8 x 32 x 16387", "sizes": {"N": 8, "C": 32, "L": 16387}},
    {"name": "16 x 64 x 65536", "sizes": {"N": 16, "C": 64, "L": 65536}},
]
# The maximum of float32 values is one of them, exactly: no tolerance. float16 rounds it (fails); inputs from N(0, 1)
# make all-zeros fail, and make some maxima negative where a window holds few positions inside the row (a kernel
# that starts from 0, or lets the padding win as 0, fails). The output is shorter than the input: no copy fits it.
TOLERANCE = {"float32": {"atol": 0.0, "rtol": 0.0}}


def out_length(sizes):
    return (sizes["L"] + 2 * PADDING - DILATION * (KERNEL - 1) - 1) // STRIDE + 1  # L - 13


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["N"], sizes["C"], sizes["L"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.nn.functional.max_pool1d(args["input"], KERNEL, stride=STRIDE, padding=PADDING,
                                                     dilation=DILATION)}


def flops(sizes):
    return KERNEL * sizes["N"] * sizes["C"] * out_length(sizes)


def bytes_moved(sizes, elem):
    return sizes["N"] * sizes["C"] * (sizes["L"] + out_length(sizes)) * elem
