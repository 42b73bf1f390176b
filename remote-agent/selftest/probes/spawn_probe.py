"""Probe (device machine): what starting a build's step costs from a warm agent, and from its builder.

    python3 selftest/probes/spawn_probe.py OUT_DIR

A warm agent imports PyTorch (forked.py) and starts each step of a build with a ``preexec_fn`` (Room.preexec), for
which Python forks the whole process. This forks a builder first (remote_agent/builder.py, with a room whose
preexec does nothing), then imports PyTorch as the agent does, and times, from each process: a step that does
nothing (``/bin/true`` with a preexec, 30 times) and the build of selftest/kernels/leaky-relu.cu in nvcc's steps
(a fresh comment each time, 5 times). Prints OUT_DIR/spawn.json: the agent's memory and each median."""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import builder, compiler, nvcc_steps  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/spawn-probe"
ROOM = SimpleNamespace(preexec=lambda role, cwd, own: (lambda: None), ns_fds=[])


def median_ms(values):
    return round(1000 * statistics.median(values), 2)


def builds(build, count=5):
    """``build(steps, argv, folder)`` timed on fresh copies of leaky-relu; seconds each."""
    toolchain = compiler.detect("cuda") or compiler.Toolchain("nvcc", compiler.find_nvcc(), "?", "sm_90")
    with open(os.path.join(AGENT_ROOT, "selftest", "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    times = []
    for _ in range(count):
        folder = tempfile.mkdtemp()
        with open(os.path.join(folder, "solution.cu"), "w") as f:
            f.write(code + "\n// %s\n" % uuid.uuid4().hex)
        argv = toolchain.command("cuda", "solution.cu", "lib.so")
        steps = nvcc_steps.plan(argv, folder)
        began = time.monotonic()
        code_, output = build(steps, argv, folder)
        times.append(time.monotonic() - began)
        shutil.rmtree(folder, ignore_errors=True)
        if code_ != 0:
            raise SystemExit(output)
    return times


def main():
    os.makedirs(OUT, exist_ok=True)
    made = builder.Builder.start(ROOM)
    if made is None:
        raise SystemExit("no builder: another thread runs")
    small_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import torch  # noqa: F401  (as a warm agent does: forked.available)
    result = {"agent_max_rss_mib": {"before PyTorch": round(small_rss / 1024), "after": round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}}
    trues = {"agent": [], "builder": []}
    for _ in range(30):
        began = time.monotonic()
        subprocess.run(["/bin/true"], preexec_fn=lambda: None)
        trues["agent"].append(time.monotonic() - began)
        began = time.monotonic()
        made.build(None, ["/bin/true"], "/", 30, None)
        trues["builder"].append(time.monotonic() - began)
    result["a step that does nothing, ms"] = {k: median_ms(v) for k, v in trues.items()}
    agent = builds(lambda steps, argv, folder: nvcc_steps.run(steps, folder, 120, preexec=lambda: None))
    by_builder = builds(lambda steps, argv, folder: made.build(steps, argv, folder, 120, None))
    agent_again = builds(lambda steps, argv, folder: nvcc_steps.run(steps, folder, 120, preexec=lambda: None))
    result["leaky-relu's build in nvcc's steps, ms"] = {"agent": median_ms(agent), "builder": median_ms(by_builder),
                                                       "agent, again": median_ms(agent_again)}
    made.close()
    with open(os.path.join(OUT, "spawn.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
