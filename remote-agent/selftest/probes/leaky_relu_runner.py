"""What the probes that time leaky-relu in this process share: its library built as the agent builds it, and the
worker's own Runner over it, warmed as a prestarted worker is and checked once."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import catalog, compiler, worker  # noqa: E402
from remote_agent.agent import build_plan  # noqa: E402


def build(out):
    """selftest/kernels/leaky-relu.cu built into OUT/lib.so as the agent builds it; its entry symbol."""
    os.makedirs(out, exist_ok=True)
    problem = catalog.load("leaky-relu")
    toolchain = compiler.detect("cuda")
    with open(os.path.join(AGENT_ROOT, "selftest", "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    sources, entry, symbol, _ = build_plan(code, "cuda", problem, toolchain)
    for name, text in sources.items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    subprocess.run(toolchain.command("cuda", entry, "lib.so"), cwd=out, check=True)
    return symbol


def warm_runner(out, cupti=True):
    """(torch, a checked Runner over the built library): the protocol lines to the real stdout as in a job, the
    process warmed as a prestarted worker is (``cupti``: its first profiler session too; else the kernels only)."""
    import torch
    symbol = build(out)
    worker._redirect_stdout()
    if cupti:
        worker._prepare()
    else:
        worker.warm_kernels(torch)
    job = {"library": os.path.join(out, "lib.so"), "symbol": symbol, "problem": "leaky-relu", "dtype": "float32",
           "problems_dir": catalog.PROBLEMS_DIR, "benchmark": {}, "mode": "benchmark"}
    runner = worker.Runner(job, torch)
    return torch, runner


def write(out, name, result):
    """The probe's figures into OUT/NAME, and on stderr."""
    text = json.dumps(result, indent=1)
    with open(os.path.join(out, name), "w") as f:
        f.write(text)
    print(text, file=sys.stderr)
