"""Probe (device machine): which neighbours make Nsight Compute's set-up at the first profiled kernel slow.

    python3 selftest/probes/ncu_neighbours_probe.py OUT_DIR

ncu_setup_probe.py found the set-up 0.73 s for a program alone on the machine; in a warm worker it takes 1.2-1.7 s
(docs/evidence/worker-h100/run29), where the next jobs' processes wait beside it: prestarted solution processes (a device context,
one CUPTI session made), judge pairs (contexts), and serving workers already under Nsight Compute. Here the same
five-call program runs under the agent's verify command line alone, then beside each kind of neighbour, one kind at
a time, waiting (started and ready before the profiled run) or starting at the same moment. Prints each case's first
profiled call and the others' median."""
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

sys.path.insert(0, HERE)
from ncu_setup_probe import TARGET  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ncu-neighbours"

# A neighbour: PyTorch, a device context, a kernel launched (as warm_kernels does), optionally one CUPTI session (as
# a prestarted solution process makes), then READY, and it waits until its stdin closes.
NEIGHBOUR = r"""
import sys, torch
torch.zeros(1, device="cuda").add_(1); torch.cuda.synchronize()
if sys.argv[1:] == ["cupti"]:
    with torch.autograd.profiler.profile(use_device="cuda", use_kineto=True, use_cpu=False) as prof:
        torch.zeros(1, device="cuda").add_(1); torch.cuda.synchronize()
    prof.function_events
print("READY", flush=True)
sys.stdin.read()
"""
CPU_ONLY = r"""
import sys, time, torch
print("READY", flush=True)
end = time.monotonic() + 6
while time.monotonic() < end:
    sum(range(10000))
sys.stdin.read()
"""


def neighbours(kind, count, ncu):
    procs = []
    for i in range(count):
        if kind == "context":
            argv = [sys.executable, "-c", NEIGHBOUR]
        elif kind == "cupti":
            argv = [sys.executable, "-c", NEIGHBOUR, "cupti"]
        elif kind == "under-ncu":
            argv = profiler.verify_command(ncu, [sys.executable, "-c", NEIGHBOUR],
                                           os.path.join(OUT, "neighbour-%d.log" % i))
        else:
            argv = [sys.executable, "-c", CPU_ONLY]
        procs.append(subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
    return procs


def wait_ready(procs):
    for p in procs:
        while True:
            line = p.stdout.readline()
            if not line or line.startswith("READY"):
                break


def stop(procs):
    for p in procs:
        try:
            p.stdin.close()
        except OSError:
            pass
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def profiled_run(ncu):
    log = os.path.join(OUT, "log.csv")
    argv = profiler.verify_command(ncu, [sys.executable, "-c", TARGET], log)
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - began
    line = next((l for l in done.stdout.splitlines() if l.startswith("TIMES ")), None)
    times = json.loads(line[6:]) if line else None
    return {"wall_s": round(wall, 3), "returncode": done.returncode,
            "first_call_s": round(times[0], 3) if times else None,
            "later_calls_median_s": round(statistics.median(times[1:]), 4) if times else None,
            "stderr_tail": done.stderr.splitlines()[-2:]}


def main():
    os.makedirs(OUT, exist_ok=True)
    ncu = profiler.find_tool("nvcc")
    cases = [("alone", None, 0, True), ("alone again", None, 0, True),
             ("5 waiting, a context each", "context", 5, True),
             ("3 waiting, a CUPTI session made", "cupti", 3, True),
             ("3 waiting under Nsight Compute", "under-ncu", 3, True),
             ("5 starting (PyTorch, a context) at the same moment", "context", 5, False),
             ("5 busy on the CPU only", "cpu", 5, True),
             ("alone, last", None, 0, True)]
    rows = {}
    for name, kind, count, ready_first in cases:
        procs = neighbours(kind, count, ncu) if kind else []
        if ready_first:
            wait_ready(procs)
        rows[name] = profiled_run(ncu)
        stop(procs)
        print("%-52s %s" % (name, json.dumps(rows[name])), flush=True)
    with open(os.path.join(OUT, "ncu-neighbours.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
