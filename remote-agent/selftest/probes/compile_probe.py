"""Probe (device machine): where a solution's build time goes, and what other nvcc flags would save.

    python3 selftest/probes/compile_probe.py OUT_DIR

Builds selftest/kernels/leaky-relu.cu (with a fresh comment each time: no cache anywhere) the way the agent does
(remote_agent/compiler.py), and with variants, five times each; prints each one's median and nvcc's own per-phase
times (``--time``) for the agent's command; also times the readings the agent takes around a job (nvidia-smi)."""
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
from remote_agent import compiler, device  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/compile-probe"


def timed(argv, cwd):
    began = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(" ".join(argv) + "\n" + done.stdout + done.stderr)
    return time.monotonic() - began


def main():
    os.makedirs(OUT, exist_ok=True)
    toolchain = compiler.detect("cuda")
    with open(os.path.join(AGENT_ROOT, "selftest", "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    base = toolchain.command("cuda", "solution.cu", "lib.so")
    variants = {
        "agent": base,
        "no -lineinfo": [a for a in base if a != "-lineinfo"],
        "SASS only (no PTX)": [a for a in base if not a.startswith("-arch=")]
        + ["-gencode", "arch=compute_%s,code=%s" % (toolchain.arch[3:], toolchain.arch)],
        "host -O0": base[:1] + ["-Xcompiler", "-O0"] + base[1:],
        "-Xptxas -O1": base[:1] + ["-Xptxas", "-O1"] + base[1:],
    }
    for name, argv in variants.items():
        times = []
        for _ in range(5):
            with tempfile.TemporaryDirectory() as work:
                with open(os.path.join(work, "solution.cu"), "w") as f:
                    f.write(code + "\n// %s\n" % uuid.uuid4().hex)
                times.append(timed(argv, work))
        print("%-22s median %.3f s  (%s)" % (name, statistics.median(times), ", ".join("%.3f" % t for t in times)),
              flush=True)
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "solution.cu"), "w") as f:
            f.write(code + "\n// %s\n" % uuid.uuid4().hex)
        phases = os.path.join(OUT, "nvcc-time.csv")
        timed(base[:1] + ["--time", phases] + base[1:], work)
        print(open(phases).read())
    for what, call in (("nvidia-smi reading (device.info)", device.info),
                       ("toolchain detection (compiler.detect)", lambda: compiler.detect("cuda"))):
        times = []
        for _ in range(5):
            began = time.monotonic()
            call()
            times.append(time.monotonic() - began)
        print("%-40s median %.3f s (%s)" % (what, statistics.median(times), ", ".join("%.3f" % t for t in times)))


if __name__ == "__main__":
    main()
