"""Baselines on a GPU machine: every problem's PyTorch reference, eager and under torch.compile (inductor, default
mode), timed per test case by the agent's own timer (remote_agent/worker.py Timer.measure: the same fresh inputs,
read-flush, spin, event window and throttle rule as a submission's samples), in the problem's dtypes.

    python3 selftest/baselines.py OUT [SLUG ...]

Writes OUT/baselines.json: {gpu_type, hardware, driver, torch, triton, cuda, measured_at, problems: {slug: {dtype:
{method: {test name: {median, mean, std, min, max, samples}}}}}} (ms; samples: how many) with methods "eager" and
"torch_compile" (remote_agent/baseline.py measures). The service loads the files of its BASELINES_DIR at each start;
a running service measures them anew through its workers: POST /api/admin/baselines."""
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from remote_agent import baseline, catalog, worker  # noqa: E402


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/baselines"
    only = sys.argv[2:]
    os.makedirs(out_dir, exist_ok=True)
    import torch
    worker.full_float32(torch)  # as the worker times the reference: float32, not TF32
    driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                            capture_output=True, text=True).stdout.strip()
    result = dict(baseline.versions(torch), gpu_type=os.environ.get("KR_GPU_TYPE", "H100"), driver=driver,
                  measured_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  method=baseline.METHOD_TEXT, problems={})
    for slug in catalog.slugs():
        if only and slug not in only:
            continue
        problem = catalog.load(slug)
        result["problems"][slug] = {dtype: baseline.measure(worker.Timer({"problem": slug, "dtype": dtype}, torch),
                                                            torch, log=lambda line: print(line, flush=True))
                                    for dtype in problem.dtypes}
        with open(os.path.join(out_dir, "baselines.json"), "w") as f:
            json.dump(result, f, indent=1)
    print("wrote", os.path.join(out_dir, "baselines.json"))


if __name__ == "__main__":
    main()
