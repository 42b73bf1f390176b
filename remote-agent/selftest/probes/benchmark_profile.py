"""Probe (device machine): where the worker's benchmark phase spends its time, function by function.

    python3 selftest/probes/benchmark_profile.py OUT_DIR

Builds selftest/kernels/leaky-relu.cu as the agent does, then runs the worker's own check and benchmark
(remote_agent.worker.Runner, in this process, its kernels warmed first as a prestarted worker's are) under
cProfile, and prints the 30 functions with the most time of their own and the 30 with the most time in all."""
import cProfile
import io
import os
import pstats
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from leaky_relu_runner import warm_runner  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/benchmark-profile"


def main():
    torch, runner = warm_runner(OUT, cupti=False)
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
