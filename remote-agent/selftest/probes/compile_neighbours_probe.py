"""Probe (device machine): what slows nvcc in a warm worker (1.35-1.6 s there, 1.16 s alone: compile_probe.py).

    python3 selftest/probes/compile_neighbours_probe.py OUT_DIR

Builds leaky-relu as the agent does (a fresh comment each time), five times alone, then five times beside each kind
of work a warm worker runs meanwhile: five Python processes importing PyTorch (a spare agent's processes starting),
one timing a kernel in a loop on the GPU (the reference being timed), and five importing PyTorch at nice 10.
Prints each case's median and range (OUT_DIR/compile-neighbours.json)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import compiler  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/compile-neighbours"
IMPORT = "import torch, torch.cuda"
TIMING = ("import time, torch\nx = torch.ones(1 << 20, device='cuda')\nend = time.monotonic() + 4\n"
          "while time.monotonic() < end:\n    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\n"
          "    s.record(); x.add_(1); e.record(); torch.cuda.synchronize(); s.elapsed_time(e)\n")


def build(toolchain, code, folder):
    with open(os.path.join(folder, "solution.cu"), "w") as f:
        f.write("// %s\n%s" % (uuid.uuid4().hex, code))
    began = time.monotonic()
    subprocess.run(toolchain.command("cuda", "solution.cu", "lib.so"), cwd=folder, check=True, capture_output=True)
    return time.monotonic() - began


def neighbours(kind):
    if kind == "imports":
        return [subprocess.Popen([sys.executable, "-c", IMPORT]) for _ in range(5)]
    if kind == "imports at nice 10":
        return [subprocess.Popen([sys.executable, "-c", IMPORT], preexec_fn=lambda: os.nice(10)) for _ in range(5)]
    if kind == "a timing loop":
        proc = subprocess.Popen([sys.executable, "-c", TIMING])
        time.sleep(2.0)  # past its import
        return [proc]
    return []


def main():
    os.makedirs(OUT, exist_ok=True)
    toolchain = compiler.detect("cuda")
    with open(os.path.join(AGENT_ROOT, "selftest", "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    folder = tempfile.mkdtemp()
    build(toolchain, code, folder)  # nvcc's files into the page cache
    rows = {}
    for kind in ("alone", "imports", "imports at nice 10", "a timing loop", "alone, again"):
        times = []
        for _ in range(5):
            procs = neighbours(kind)
            times.append(build(toolchain, code, folder))
            for p in procs:
                p.kill()
                p.wait()
        rows[kind] = {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
                      "max_s": round(max(times), 3)}
        print("%-22s %s" % (kind, rows[kind]), flush=True)
    with open(os.path.join(OUT, "compile-neighbours.json"), "w") as f:
        json.dump(dict(rows, cpus=os.cpu_count()), f, indent=1)


if __name__ == "__main__":
    main()
