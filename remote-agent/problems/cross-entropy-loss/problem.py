"""Mean cross-entropy of B rows of C class scores against 64-bit class indices: output[0] = mean over rows of
logsumexp(predictions[b]) - predictions[b][targets[b]]. The output is zeroed (not poisoned) before each call, so
atomics may accumulate.

From KernelBench level 1, 95_CrossEntropyLoss.py (MIT licence: ../KERNELBENCH-LICENSE)."""
OUTPUT_INIT = 0.0
CASES = [
    {"name": "1 x 2", "sizes": {"B": 1, "C": 2}},
    {"name": "17 x 10", "sizes": {"B": 17, "C": 10}},
    {"name": "1000 x 1000", "sizes": {"B": 1000, "C": 1000}},
    {"name": "4096 x 4097", "sizes": {"B": 4096, "C": 4097}},
    {"name": "32768 x 4096", "sizes": {"B": 32768, "C": 4096}},
]
# One value of a few units (scores 3 x N(0, 1): the loss is about log C + 4.5 less the target's score), which the
# validator's per-case checks of 100 values or more skip; over the problem, float16's rounding of that value (about
# 5e-4 relative near 8) fails 1e-5, and all-zeros fails (no row's loss is 0 with two classes or more). A row's loss
# is a difference of values near |score| (up to ~10): in float32 it is off by ~1e-6 absolute however small it is
# (1 x 2 can be 3.5e-4, where 1e-8 + 1e-5 relative failed the known kernel on the H100: docs/evidence/catalog-h100/);
# atol 2e-6 allows that, and the rows' mean only shrinks it.
TOLERANCE = {"float32": {"atol": 2e-6, "rtol": 1e-5}}


def make_inputs(sizes, dtype, gen, torch):
    b, c = sizes["B"], sizes["C"]
    return {"predictions": torch.randn(b, c, generator=gen, device="cuda", dtype=dtype) * 3,
            "targets": torch.randint(0, c, (b,), generator=gen, device="cuda", dtype=torch.int64)}


def reference(args, torch):
    # The judge passes every input tensor in float64 (the targets too): back to indices.
    return {"output": torch.nn.functional.cross_entropy(args["predictions"], args["targets"].long()).reshape(1)}


def flops(sizes):
    return 4 * sizes["B"] * sizes["C"]


def bytes_moved(sizes, elem):
    return sizes["B"] * sizes["C"] * elem + sizes["B"] * 8 + elem
