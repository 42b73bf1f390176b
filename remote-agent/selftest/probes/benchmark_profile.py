"""Probe (device machine): where the worker's benchmark phase spends its time, function by function.

    python3 selftest/probes/benchmark_profile.py OUT_DIR

Builds selftest/kernels/leaky-relu.cu as the agent does, then runs the worker's own check and benchmark
(remote_agent.worker.Runner, in this process, its kernels warmed first as a prestarted worker's are) under
cProfile, and prints the 30 functions with the most time of their own and the 30 with the most time in all."""
import cProfile
import io
import os
import pstats
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import catalog, compiler, worker  # noqa: E402
from remote_agent.agent import build_plan  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/benchmark-profile"


def main():
    os.makedirs(OUT, exist_ok=True)
    import torch
    problem = catalog.load("leaky-relu")
    toolchain = compiler.detect("cuda")
    with open(os.path.join(AGENT_ROOT, "selftest", "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    sources, entry, symbol, _ = build_plan(code, "cuda", problem, toolchain)
    for name, text in sources.items():
        with open(os.path.join(OUT, name), "w") as f:
            f.write(text)
    subprocess.run(toolchain.command("cuda", entry, "lib.so"), cwd=OUT, check=True)
    worker._redirect_stdout()  # the worker's protocol lines go to the real stdout, as in a job
    worker.warm_kernels(torch)
    job = {"library": os.path.join(OUT, "lib.so"), "symbol": symbol, "problem": "leaky-relu", "dtype": "float32",
           "problems_dir": catalog.PROBLEMS_DIR, "benchmark": {}, "mode": "benchmark"}
    runner = worker.Runner(job, torch)
    profile = cProfile.Profile()
    began = time.monotonic()
    profile.enable()
    runner.check()
    checked = time.monotonic()
    runner.benchmark(runner.references())
    profile.disable()
    print("check %.3f s, benchmark %.3f s" % (checked - began, time.monotonic() - checked), file=sys.stderr)
    for order in ("tottime", "cumulative"):
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats(order).print_stats(30)
        print(text.getvalue(), file=sys.stderr)


if __name__ == "__main__":
    main()
