"""output[0] = sum(input). The output is zeroed (not poisoned) before each call, so atomics may accumulate."""
OUTPUT_INIT = 0.0
CASES = [
    {"name": "N = 1", "sizes": {"N": 1}},
    {"name": "N = 1000", "sizes": {"N": 1000}},
    {"name": "N = 65537", "sizes": {"N": 65537}},
    {"name": "N = 2^20", "sizes": {"N": 1 << 20}},
    {"name": "N = 2^25 + 3", "sizes": {"N": (1 << 25) + 3}},
]


def tolerance(sizes, dtype):
    # Summation order differs between kernels; float32 error grows with sqrt(N).
    return 1e-5 * max(1.0, sizes["N"] ** 0.5), 1e-5


def make_inputs(sizes, dtype, gen, torch):
    return {"input": torch.rand(sizes["N"], generator=gen, device="cuda", dtype=dtype) * 2 - 1}


def reference(args, torch):
    return {"output": args["input"].sum().reshape(1)}


def flops(sizes):
    return sizes["N"]


def bytes_moved(sizes, elem):
    return (sizes["N"] + 1) * elem
