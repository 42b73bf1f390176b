"""Probe (device machine): what Nsight Compute's set-up at the first profiled kernel (1.2-1.5 s of a profiled
verification, docs/evidence/worker-h100/run23) depends on.

    python3 selftest/probes/ncu_setup_probe.py OUT_DIR

A small PyTorch program calls one kernel five times, each in an NVTX range kr-test-<i> as the serving worker does,
and times each call from the host; it runs under the agent's own verify command line (profiler.verify_command)
and under variants of it, each changing one thing. Prints each variant's first call and the median of the others,
and the gpu__time_duration ncu reported for the calls."""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import profiler  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ncu-setup"
TARGET = r"""
import json, time, torch
x = torch.zeros(1 << 20, device="cuda"); torch.cuda.synchronize()
times = []
for i in range(1, 6):
    began = time.monotonic()
    torch.cuda.nvtx.range_push("kr-test-%d" % i)
    x.add_(1)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    times.append(time.monotonic() - began)
print("TIMES " + json.dumps(times), flush=True)
"""


def variants(ncu, log):
    base = profiler.verify_command(ncu, [sys.executable, "-c", TARGET], log)
    def option(flag, value):  # the agent's line with ``flag``'s value changed (None: the flag dropped)
        at = base.index(flag)
        return base[:at] + ([flag, value] if value is not None else []) + base[at + 2:]

    return {
        "the agent's": base,
        "--cache-control none": option("--cache-control", "none"),
        "no --target-processes all": option("--target-processes", None),
        "--metrics sm__cycles_elapsed.max": option("--metrics", "sm__cycles_elapsed.max"),
        "--replay-mode application": base[:1] + ["--replay-mode", "application"] + base[1:],
        "the agent's, again": base,  # the first run on a machine also reads ncu's own files from disk
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    ncu = profiler.find_tool("nvcc")
    rows = {}
    for name, argv in variants(ncu, os.path.join(OUT, "log.csv")).items():
        began = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        wall = time.monotonic() - began
        line = next((l for l in done.stdout.splitlines() if l.startswith("TIMES ")), None)
        times = json.loads(line[6:]) if line else None
        with open(os.path.join(OUT, "log.csv")) as f:
            tests = profiler.read_verify_text(f.read())
        ns = {k: [kern.get("duration_ms") for kern in v] for k, v in tests.items()}
        rows[name] = {"argv": argv[:-2], "wall_s": wall, "returncode": done.returncode,
                      "first_call_s": times[0] if times else None,
                      "later_calls_median_s": statistics.median(times[1:]) if times else None,
                      "profiled_ms": ns, "stderr_tail": done.stderr.splitlines()[-3:]}
        print("%-36s wall %5.1f s  first call %s  later %s  profiled %s" % (
            name, wall, "%.3f s" % times[0] if times else "-",
            "%.3f s" % statistics.median(times[1:]) if times else "-", ns), flush=True)
    with open(os.path.join(OUT, "ncu-setup.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
