"""Baselines on a GPU machine: every problem's PyTorch reference, eager and under torch.compile (inductor, default
mode), timed per test case by the agent's own timer (remote_agent/worker.py Timer.measure: the same fresh inputs,
read-flush, spin, event window and throttle rule as a submission's samples), in the problem's dtypes.

    python3 selftest/baselines.py OUT [SLUG ...]

Writes OUT/baselines.json: {gpu_type, hardware, driver, torch, triton, cuda, measured_at, problems: {slug: {dtype:
{method: {test name: {median, mean, std, min, max, samples}}}}}} (ms; samples: how many) with methods "eager" and
"torch_compile". The service loads the file it ships (src/main/resources/baselines/) at its first start."""
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from remote_agent import catalog, worker  # noqa: E402


def figures(summary):
    """What is kept of a test's timing (ms): the samples' count, not the samples."""
    samples = summary["samples"]
    return {"median": summary["median"], "mean": summary["mean"],
            "std": statistics.stdev(samples) if len(samples) > 1 else 0.0, "min": summary["min"],
            "max": summary["max"], "samples": len(samples)}


def measure(slug, dtype, torch):
    timer = worker.Timer({"problem": slug, "dtype": dtype}, torch)
    reference = timer.problem.module.reference
    # torch.compile (dynamo) imports a function's module by name: the catalog loads problem.py under a name of its
    # own without registering it.
    sys.modules.setdefault(timer.problem.module.__name__, timer.problem.module)
    out = {"eager": {}, "torch_compile": {}}
    for case in timer.problem.cases:
        inputs = timer.input_set(case)
        eager = timer.measure(lambda: (lambda: reference(inputs.inputs, torch)), guard=False)
        compiled = torch.compile(lambda args: reference(args, torch), dynamic=False)
        began = time.monotonic()
        compiled(inputs.inputs)  # the compile itself, outside the timing
        torch.cuda.synchronize()
        compile_s = time.monotonic() - began
        timed = timer.measure(lambda: (lambda: compiled(inputs.inputs)), guard=False)
        out["eager"][case["name"]] = figures(eager)
        out["torch_compile"][case["name"]] = dict(figures(timed), compile_seconds=round(compile_s, 2))
        print("%-28s %-9s %-14s eager %.4f ms  compile %.4f ms  (compiled in %.1f s)" % (
            slug, dtype, case["name"], eager["median"], timed["median"], compile_s), flush=True)
        del inputs, compiled
        torch._dynamo.reset()
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/baselines"
    only = sys.argv[2:]
    os.makedirs(out_dir, exist_ok=True)
    import torch
    import triton
    worker.full_float32(torch)  # as the worker times the reference: float32, not TF32
    props = torch.cuda.get_device_properties(0)
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    result = {"gpu_type": os.environ.get("KR_GPU_TYPE", "H100"), "hardware": props.name, "driver": driver,
              "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
              "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "method": "the agent's timer (remote_agent/worker.py Timer.measure), each sample on a fresh input set "
                        "after a read-flush, median of the unthrottled samples less the empty event window",
              "problems": {}}
    for slug in catalog.slugs():
        if only and slug not in only:
            continue
        problem = catalog.load(slug)
        result["problems"][slug] = {dtype: measure(slug, dtype, torch) for dtype in problem.dtypes}
        with open(os.path.join(out_dir, "baselines.json"), "w") as f:
            json.dump(result, f, indent=1)
    print("wrote", os.path.join(out_dir, "baselines.json"))


if __name__ == "__main__":
    main()
