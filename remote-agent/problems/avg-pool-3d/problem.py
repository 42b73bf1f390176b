"""3-D average pooling of an N x C x D x H x W tensor: kernel size 3 x 3 x 3, stride 2, padding 1 (KernelBench's), the
padding counted in every window (count_include_pad, PyTorch's default), so each output extent is (n - 1) / 2 + 1 and
output[n][c][z][y][x] = (sum over 0 <= a, b, e < 3 of input[n][c][2z - 1 + a][2y - 1 + b][2x - 1 + e], positions
outside the volume as 0) / 27.

From KernelBench level 1, 46_Average_Pooling_3D.py (MIT licence: ../KERNELBENCH-LICENSE)."""
KERNEL, STRIDE, PADDING = 3, 2, 1
CASES = [
    {"name": "1 x 1 x 3 x 3 x 3", "sizes": {"N": 1, "C": 1, "D": 3, "H": 3, "W": 3}},
    {"name": "2 x 3 x 5 x 8 x 13", "sizes": {"N": 2, "C": 3, "D": 5, "H": 8, "W": 13}},
    {"name": "2 x 5 x 17 x 33 x 20", "sizes": {"N": 2, "C": 5, "D": 17, "H": 33, "W": 20}},
    {"name": "3 x 7 x 31 x 64 x 65", "sizes": {"N": 3, "C": 7, "D": 31, "H": 64, "W": 65}},
    {"name": "2 x 8 x 128 x 128 x 256", "sizes": {"N": 2, "C": 8, "D": 128, "H": 128, "W": 256}},
]
# Against the reference in double, inputs from N(0, 1): outputs of about 0.19 (27 values over 27; fewer inside the
# volume at its faces). float32 (the values added in any order, then divided by 27 or multiplied by 1/27) is off by
# under 1e-7 and passes; float16 (each input rounded: 1e-4 absolute, averaging to 2e-5; each output rounded: 5e-5)
# exceeds 1e-6 + 1e-5 relative on more than 90% of the elements in a numpy simulation and fails, and so does
# all-zeros. (PyTorch refuses a 1 x 1 x 1 volume for a 3 x 3 x 3 window, padding or not: the smallest case is 3 x 3 x 3.)
TOLERANCE = {"float32": {"atol": 1e-6, "rtol": 1e-5}}


def out_size(n):
    return (n + 2 * PADDING - KERNEL) // STRIDE + 1  # (n - 1) / 2 + 1


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["N"], sizes["C"], sizes["D"], sizes["H"], sizes["W"], generator=gen,
                                 device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.nn.functional.avg_pool3d(args["input"], KERNEL, stride=STRIDE, padding=PADDING)}


def outputs(sizes):
    return sizes["N"] * sizes["C"] * out_size(sizes["D"]) * out_size(sizes["H"]) * out_size(sizes["W"])


def flops(sizes):
    return KERNEL ** 3 * outputs(sizes)


def bytes_moved(sizes, elem):
    return (sizes["N"] * sizes["C"] * sizes["D"] * sizes["H"] * sizes["W"] + outputs(sizes)) * elem
