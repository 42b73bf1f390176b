"""2-D average pooling of an N x C x H x W tensor: kernel size 11 x 11, stride 11 (the kernel size, PyTorch's default
that KernelBench keeps), no padding, so the output is N x C x (H / 11) x (W / 11) and output[n][c][y][x] =
(sum over 0 <= i, j < 11 of input[n][c][11y + i][11x + j]) / 121.

From KernelBench level 1, 45_Average_Pooling_2D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL = 11
CASES = [
    {"name": "1 x 1 x 11 x 11", "sizes": {"N": 1, "C": 1, "H": 11, "W": 11}},
    {"name": "2 x 3 x 23 x 34", "sizes": {"N": 2, "C": 3, "H": 23, "W": 34}},
    {"name": "3 x 17 x 100 x 129", "sizes": {"N": 3, "C": 17, "H": 100, "W": 129}},
    {"name": "4 x 16 x 250 x 333", "sizes": {"N": 4, "C": 16, "H": 250, "W": 333}},
    {"name": "2 x 8 x 2048 x 2048", "sizes": {"N": 2, "C": 8, "H": 2048, "W": 2048}},
]
# Against the reference in double, inputs from N(0, 1): outputs of about 0.09 (a mean of 121 values). float32 (the
# 121 values added in any order, then divided by 121 or multiplied by 1/121) is off by under 1e-7 and passes; float16
# (each input rounded: 1e-4 absolute, averaging to 1e-5; each output rounded: 3e-5) exceeds 1e-6 + 1e-5 relative on
# more than 90% of the elements in a numpy simulation and fails, and so does all-zeros. The output is smaller than
# the input: no copy fits it.
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["N"], sizes["C"], sizes["H"], sizes["W"], generator=gen, device="cuda",
                                 dtype=dtype)}


def reference(args, torch):
    return {"output": torch.nn.functional.avg_pool2d(args["input"], KERNEL)}


def flops(sizes):
    return KERNEL ** 2 * sizes["N"] * sizes["C"] * (sizes["H"] // KERNEL) * (sizes["W"] // KERNEL)


def bytes_moved(sizes, elem):
    planes = sizes["N"] * sizes["C"]
    return planes * (sizes["H"] * sizes["W"] + (sizes["H"] // KERNEL) * (sizes["W"] // KERNEL)) * elem
