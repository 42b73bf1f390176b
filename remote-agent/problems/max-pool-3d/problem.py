"""3-D max pooling of an N x C x D x H x W tensor: kernel size 3 x 3 x 3, stride 2, padding 1, dilation 3
(KernelBench's; ceil_mode off), so each output extent is (n - 5) / 2 + 1 and output[n][c][z][y][x] = max over
0 <= a, b, e < 3 of input[n][c][2z - 1 + 3a][2y - 1 + 3b][2x - 1 + 3e], positions inside the volume.

From KernelBench level 1, 43_Max_Pooling_3D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL, STRIDE, PADDING, DILATION = 3, 2, 1, 3
CASES = [
    {"name": "1 x 1 x 5 x 5 x 5", "sizes": {"N": 1, "C": 1, "D": 5, "H": 5, "W": 5}},
    {"name": "2 x 3 x 6 x 9 x 12", "sizes": {"N": 2, "C": 3, "D": 6, "H": 9, "W": 12}},
    {"name": "2 x 5 x 17 x 33 x 20", "sizes": {"N": 2, "C": 5, "D": 17, "H": 33, "W": 20}},
    {"name": "3 x 7 x 31 x 64 x 65", "sizes": {"N": 3, "C": 7, "D": 31, "H": 64, "W": 65}},
    {"name": "2 x 16 x 128 x 128 x 128", "sizes": {"N": 2, "C": 16, "D": 128, "H": 128, "W": 128}},
]
# The maximum of float32 values is one of them, exactly: no tolerance. float16 rounds it (fails); inputs from N(0, 1)
# make all-zeros fail, and make some maxima negative where a window holds few positions inside the volume (a kernel
# that lets the padding win as 0 fails). The output is smaller than the input: no copy fits it.
TOLERANCE = {"float32": {"atol": 0.0, "rtol": 0.0}}


def out_size(n):
    return (n + 2 * PADDING - DILATION * (KERNEL - 1) - 1) // STRIDE + 1  # (n - 5) / 2 + 1


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["N"], sizes["C"], sizes["D"], sizes["H"], sizes["W"], generator=gen,
                                 device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.nn.functional.max_pool3d(args["input"], KERNEL, stride=STRIDE, padding=PADDING,
                                                     dilation=DILATION)}


def outputs(sizes):
    return sizes["N"] * sizes["C"] * out_size(sizes["D"]) * out_size(sizes["H"]) * out_size(sizes["W"])


def flops(sizes):
    return KERNEL ** 3 * outputs(sizes)


def bytes_moved(sizes, elem):
    return (sizes["N"] * sizes["C"] * sizes["D"] * sizes["H"] * sizes["W"] + outputs(sizes)) * elem
