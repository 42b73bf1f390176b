"""1-D average pooling of an N x C x L tensor: kernel size 8, stride 1, padding 4 (KernelBench's), the padding
counted in every window (count_include_pad, PyTorch's default), so the output is N x C x (L + 1) and
output[n][c][o] = (sum over k < 8 of input[n][c][o - 4 + k], positions outside the row as 0) / 8.

From KernelBench level 1, 44_Average_Pooling_1D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL, STRIDE, PADDING = 8, 1, 4
CASES = [
    {"name": "1 x 1 x 1", "sizes": {"N": 1, "C": 1, "L": 1}},
    {"name": "2 x 3 x 100", "sizes": {"N": 2, "C": 3, "L": 100}},
    {"name": "3 x 17 x 1025", "sizes": {"N": 3, "C": 17, "L": 1025}},
    {"name": "8 x 32 x 16387", "sizes": {"N": 8, "C": 32, "L": 16387}},
    {"name": "16 x 64 x 65536", "sizes": {"N": 16, "C": 64, "L": 65536}},
]
# Against the reference in double, inputs from N(0, 1): outputs of about 0.35. float32 (the 8 values added in any
# order, then divided by 8 or multiplied by 1/8) is off by under 1e-7 and passes; float16 (each input rounded: 1e-4
# absolute, each output rounded: 1e-4) exceeds 1e-6 + 1e-5 relative on more than 90% of the elements in a numpy
# simulation and fails, and so does all-zeros. The output is longer than the input: no copy fits it.
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 1e-5}}


def out_length(sizes):
    return (sizes["L"] + 2 * PADDING - KERNEL) // STRIDE + 1  # L + 1


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["N"], sizes["C"], sizes["L"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.nn.functional.avg_pool1d(args["input"], KERNEL, stride=STRIDE, padding=PADDING)}


def flops(sizes):
    return KERNEL * sizes["N"] * sizes["C"] * out_length(sizes)


def bytes_moved(sizes, elem):
    return sizes["N"] * sizes["C"] * (sizes["L"] + out_length(sizes)) * elem
