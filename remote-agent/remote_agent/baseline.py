"""PyTorch's own times for a problem, its baselines: the problem's reference run eager and under torch.compile
(inductor, default mode), each test case timed by the worker's Timer exactly as the reference's times of a
submission are (worker.py ``Timer.references``: the same inputs, read-flush, spin, event window and throttle rule),
in full float32 (``worker.full_float32``).

Measured by a worker process in a baseline job (agent.py, mode ``baseline``: no user's code is in that job) and by
``selftest/baselines.py`` on a GPU machine. Figures are milliseconds: {median, mean, std, min, max, samples} where
samples is how many were kept; torch.compile's also carry compile_seconds (the compile, outside the timing)."""
from __future__ import annotations

import math
import os
import statistics
import sys
import time
from typing import Callable

METHODS = ("eager", "torch_compile")
FIGURES = ("median", "mean", "std", "min", "max")
METHOD_TEXT = ("the agent's timer (remote_agent/worker.py Timer.measure), each sample after a read-flush, median "
               "of the unthrottled samples less the empty event window; torch.compile: inductor, default mode, "
               "compiled per test case outside the timing")


def figures(summary: dict) -> dict:
    """What is kept of a test's timing (ms): the samples' count, not the samples."""
    samples = summary["samples"]
    return {"median": summary["median"], "mean": summary["mean"],
            "std": statistics.stdev(samples) if len(samples) > 1 else 0.0, "min": summary["min"],
            "max": summary["max"], "samples": len(samples)}


def versions(torch) -> dict:
    """The device and the software that made the figures."""
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    found = {"hardware": torch.cuda.get_device_properties(0).name, "torch": torch.__version__,
             "triton": triton_version}
    hip = getattr(torch.version, "hip", None)
    found.update({"hip": hip} if hip else {"cuda": torch.version.cuda})
    return found


def compile_here(home: str) -> None:
    """Inductor and Triton write their caches under ``home`` (a job's room has a private /tmp and a home of its
    own; a process of it may write nothing else), and inductor compiles in this process, not in a pool of
    processes of its own."""
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(home, "torchinductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(home, "triton"))
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


def measure(timer, torch, on_case: Callable[[dict, dict], None] | None = None,
            log: Callable[[str], None] | None = None) -> dict:
    """{method: {test name: figures}} for every test case of ``timer``'s problem (a worker.Timer); ``on_case(case,
    {method: figures})`` is told each case as it is done."""
    module = timer.problem.module
    reference = module.reference
    # torch.compile (dynamo) imports a function's module by name: the catalog loads problem.py under a name of its
    # own without registering it.
    sys.modules.setdefault(module.__name__, module)
    out: dict = {method: {} for method in METHODS}
    for case in timer.problem.cases:
        inputs = timer.input_set(case)
        eager = figures(timer.measure(lambda: (lambda: reference(inputs.inputs, torch)), guard=False))
        compiled = torch.compile(lambda args: reference(args, torch), dynamic=False)
        began = time.monotonic()
        compiled(inputs.inputs)  # the compile itself, outside the timing
        torch.cuda.synchronize()
        compile_s = time.monotonic() - began
        timed = dict(figures(timer.measure(lambda: (lambda: compiled(inputs.inputs)), guard=False)),
                     compile_seconds=round(compile_s, 2))
        out["eager"][case["name"]] = eager
        out["torch_compile"][case["name"]] = timed
        if on_case is not None:
            on_case(case, {"eager": eager, "torch_compile": timed})
        if log is not None:
            log("%-28s %-9s %-14s eager %.4f ms  compile %.4f ms  (compiled in %.1f s)" % (
                timer.problem.slug, timer.job["dtype"], case["name"], eager["median"], timed["median"], compile_s))
        del inputs, compiled
        torch._dynamo.reset()
    return out


def valid_figures(value, method: str) -> bool:
    """Whether ``value`` is a test's figures as ``figures`` makes them (what a worker's message must hold)."""
    if not isinstance(value, dict):
        return False
    numbers = [value.get(name) for name in FIGURES]
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) and math.isfinite(n) and n >= 0
               for n in numbers):
        return False
    samples = value.get("samples")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        return False
    if method == "torch_compile":
        compile_s = value.get("compile_seconds")
        return isinstance(compile_s, (int, float)) and not isinstance(compile_s, bool) and compile_s >= 0
    return True
