"""The maximum over the middle dimension of a B x D x N tensor: output[b][n] = max over d of input[b][d][n].

From KernelBench level 1, 49_Max_reduction_over_a_dimension.py (MIT licence: ../KERNELBENCH-LICENSE)."""
CASES = [
    {"name": "1 x 1 x 1", "sizes": {"B": 1, "D": 1, "N": 1}},
    {"name": "17 x 3 x 129", "sizes": {"B": 17, "D": 3, "N": 129}},
    {"name": "8 x 1000 x 257", "sizes": {"B": 8, "D": 1000, "N": 257}},
    {"name": "1024 x 1025 x 1", "sizes": {"B": 1024, "D": 1025, "N": 1}},
    {"name": "4 x 65537 x 33", "sizes": {"B": 4, "D": 65537, "N": 33}},
    {"name": "32 x 4096 x 513", "sizes": {"B": 32, "D": 4096, "N": 513}},
]
# The maximum of float32 values is one of them, exactly: no tolerance. float16 rounds it (fails), all-zeros fails, and
# inputs from N(0, 1) make some maxima negative when D is small (a kernel that starts from 0 fails).
TOLERANCE = {"float32": {"atol": 0.0, "rtol": 0.0}}


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.randn(sizes["B"], sizes["D"], sizes["N"], generator=gen, device="cuda", dtype=dtype)}


def reference(args, torch):
    return {"output": torch.amax(args["input"], dim=1)}


def flops(sizes):
    return sizes["B"] * sizes["D"] * sizes["N"]


def bytes_moved(sizes, elem):
    return (sizes["B"] * sizes["D"] * sizes["N"] + sizes["B"] * sizes["N"]) * elem
