"""What a process KILLed with work on the device leaves to the next job (device machine), to decide whether the GPU's
next job must wait for the last job's processes to be gone, device contexts and all, before it times anything
(turn.settle):
    python3 selftest/probes/killed_work_probe.py OUT.json
Two victims, each a child process with a device context, KILLed 0.3 s after it says it is ready:
  - "spinning": its last act a kernel that spins for 3 s (torch.cuda._sleep);
  - "holding": 8 GiB allocated through PyTorch and touched, no work queued.
Meanwhile this process times empty event windows (two events around nothing, as worker.Timer does) every 5 ms from
0.1 s before the kill to 4 s after it, and notes when the victim was reaped (its pid gone: every thread ended, its
context released). Prints, per victim, the windows' medians in 250 ms bins from the kill on."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import torch

VICTIMS = {
    "spinning": "import sys, torch\n"
                "torch.cuda.init(); torch.zeros(1, device='cuda'); torch.cuda.synchronize()\n"
                "for _ in range(6): torch.cuda._sleep(990_000_000)  # 0.5 s each at 1.98 GHz (an int32 of cycles)\n"
                "print('ready', flush=True)\n"
                "import time; time.sleep(60)\n",
    "holding": "import sys, torch\n"
               "x = torch.ones(8 << 28, dtype=torch.float32, device='cuda'); torch.cuda.synchronize()\n"
               "print('ready', flush=True)\n"
               "import time; time.sleep(60)\n",
}


def window():
    """As worker.Timer times one: a spin queued ahead (the device busy as the events are recorded), then two events
    around nothing."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(200_000)
    start.record()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0  # us


def run(name, code):
    victim = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert victim.stdout.readline().strip() == "ready"
    began = time.monotonic()
    samples, killed_at, reaped_at = [], None, None
    while time.monotonic() - began < 4.4:
        now = time.monotonic() - began
        if killed_at is None and now >= 0.3:
            os.kill(victim.pid, signal.SIGKILL)
            killed_at = now
        if killed_at is not None and reaped_at is None and victim.poll() is not None:
            reaped_at = time.monotonic() - began
        samples.append((now, window()))
        time.sleep(0.005)
    if reaped_at is None:
        victim.wait()
        reaped_at = time.monotonic() - began
    bins = {}
    for at, w in samples:
        bins.setdefault(int((at - killed_at) // 0.25), []).append(w)
    rows = {"%+.2f s" % (k * 0.25): {"median_us": round(statistics.median(v), 3), "max_us": round(max(v), 1),
                                     "n": len(v)} for k, v in sorted(bins.items())}
    print("%s: killed at %.3f s, reaped %.3f s after the kill" % (name, killed_at, reaped_at - killed_at))
    for label, row in rows.items():
        print("   %s  median %8.3f us  max %10.1f us  (%d)" % (label, row["median_us"], row["max_us"], row["n"]))
    return {"killed_at_s": killed_at, "reaped_after_kill_s": reaped_at - killed_at, "bins": rows}


def main():
    torch.zeros(1, device="cuda")
    for _ in range(50):
        window()
    print("alone: median %.3f us" % statistics.median(window() for _ in range(200)))
    out = {name: run(name, code) for name, code in VICTIMS.items()}
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
