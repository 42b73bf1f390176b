"""The timing gate of one GPU: while a job's benchmark runs there, the next jobs' processes, started ahead by a warm
worker, wait before they touch the device (a context, CUPTI's first session, the common kernels). Made beside a
benchmark, that slowed it by half (docs/evidence/worker-h100/run31: 21 device spans in 0.15-0.41 s instead of 0.06 s).

The gate is a flag file the worker names per GPU (``KR_TIMING_GATE``, in a folder only the worker's user may write):
present while a benchmark runs. A process waits at most ``LIMIT_SECONDS`` for it, so a flag left behind (an agent
killed mid-benchmark) or made by anyone else costs a bounded delay, never a stall."""
import os
import select
import time

VARIABLE = "KR_TIMING_GATE"
LIMIT_SECONDS = 5.0


def path(env=None):
    return (os.environ if env is None else env).get(VARIABLE) or None


def hold(flag=None):
    """A benchmark starts: the flag made (``flag``: this process's gate by default; nothing without one)."""
    flag = flag if flag is not None else path()
    if flag:
        try:
            with open(flag, "w"):
                pass
        except OSError:
            pass


def release(flag=None):
    """The benchmark is over (or never ran): the flag gone (``flag`` as for hold)."""
    flag = flag if flag is not None else path()
    if flag:
        try:
            os.unlink(flag)
        except OSError:
            pass


def wait_released(flag=None, limit=LIMIT_SECONDS, poll=0.02, until=None):
    """Returns once no benchmark runs on this GPU (or after ``limit`` seconds); how long it waited. ``until``: a
    stream (a prestarted process's stdin) whose first readable byte ends the wait too: its job has come, and a job
    comes only from its own agent, which holds the gate for that job's own timing (a prestarted pair that waited
    out the limit at its own job's gate cost each job 5 s: docs/evidence/replay-h100/run2-bench.txt)."""
    flag = flag if flag is not None else path()
    began = time.monotonic()
    while flag and os.path.exists(flag) and time.monotonic() - began < limit:
        if until is None:
            time.sleep(poll)
        elif select.select([until], [], [], poll)[0]:
            break
    return time.monotonic() - began
