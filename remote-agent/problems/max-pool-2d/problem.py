"""2-D max pooling of an N x C x H x W tensor: kernel size 4 x 4, stride 1, padding 1, dilation 1 (KernelBench's), so
the output is N x C x (H - 1) x (W - 1) and output[n][c][y][x] = max over 0 <= i, j < 4 of
input[n][c][y - 1 + i][x - 1 + j], positions inside the plane.

From KernelBench level 1, 42_Max_Pooling_2D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL, STRIDE, PADDING, DILATION = 4, 1, 1, 1
CASES = [
    {"name": "1 x 1 x 2 x 2", "sizes": {"N": 1, "C": 1, "H": 2, "W": 2}},
    {"name": "2 x 3 x 7 x 10", "sizes": {"N": 2, "C": 3, "H": 7, "W": 10}},
    {"name": "4 x 17 x 33 x 65", "sizes": {"N": 4, "C": 17, "H": 33, "W": 65}},
    {"name": "3 x 5 x 129 x 100", "sizes": {"N": 3, "C": 5, "H": 129, "W": 100}},
    {"name": "8 x 32 x 512 x 512", "sizes": {"N": 8, "C": 32, "H": 512, "W": 512}},
]
# The maximum of float32 values is one of them, exactly: no tolerance. float16 rounds it (fails); inputs from N(0, 1)
# make all-zeros fail. The output is smaller than the input: no copy fits it.
TOLERANCE = {"float32": {"atol": 0.0, "rtol": 0.0}}


def out_size(n):
    return (n + 2 * PADDING - DILATION * (KERNEL - 1) - 1) // STRIDE + 1  # n - 1


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["N"], sizes["C"], sizes["H"], sizes["W"], generator=gen, device="cuda",
                                 dtype=dtype)}


def reference(args, torch):
    return {"output": torch.nn.functional.max_pool2d(args["input"], KERNEL, stride=STRIDE, padding=PADDING,
                                                     dilation=DILATION)}


def flops(sizes):
    return KERNEL ** 2 * sizes["N"] * sizes["C"] * out_size(sizes["H"]) * out_size(sizes["W"])


def bytes_moved(sizes, elem):
    planes = sizes["N"] * sizes["C"]
    return planes * (sizes["H"] * sizes["W"] + out_size(sizes["H"]) * out_size(sizes["W"])) * elem
