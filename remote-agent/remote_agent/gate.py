"""The timing gate of one GPU: while a job's benchmark runs there, the next jobs' processes, started ahead by a warm
worker, wait before they touch the device (a context, CUPTI's first session, the common kernels). Made beside a
benchmark, that slowed it by half (docs/evidence/worker-h100/run31: 21 device spans in 0.15-0.41 s instead of 0.06 s).

The gate is a flag file the worker names per GPU (``KR_TIMING_GATE``, in a folder only the worker's user may write):
present while a benchmark runs, and touched every ``REFRESH_SECONDS`` by the process that holds it, so that a long
hold (a baseline job times PyTorch for 10-20 s) is waited out: with a fixed wait of 5 s the next job's processes
made their device contexts in the middle of it, and a 6 us compiled call once timed 1.07 ms
(docs/evidence/baselines-h100/run6-jobs). A flag nobody touched for ``LIMIT_SECONDS`` (an agent killed
mid-benchmark) is left behind and waited for no longer, and no wait is longer than ``MOST_SECONDS``: a flag costs a
bounded delay, never a stall."""
import os
import select
import threading
import time

VARIABLE = "KR_TIMING_GATE"
LIMIT_SECONDS = 5.0
REFRESH_SECONDS = 1.0
POLL_SECONDS = 0.02  # how often a wait looks at the flag again
MOST_SECONDS = 900.0  # the service's time limit of a whole job (agent.submission_timeout_seconds)
_keeper_lock = threading.Lock()
_keeper = None  # (the flag held by this process, the Event that stops its touching)


def path(env=None):
    return (os.environ if env is None else env).get(VARIABLE) or None


def hold(flag=None):
    """A benchmark starts: the flag made (``flag``: this process's gate by default; nothing without one)."""
    global _keeper
    flag = flag if flag is not None else path()
    if not flag:
        return
    try:
        with open(flag, "w"):
            pass
    except OSError:
        return
    with _keeper_lock:
        if _keeper is not None and _keeper[0] == flag:
            return
        stop = threading.Event()
        _keeper = (flag, stop)
    threading.Thread(target=_touch, args=(flag, stop), daemon=True).start()


def _touch(flag, stop):
    """Keeps a held flag fresh until it is released (or gone)."""
    while not stop.wait(REFRESH_SECONDS):
        try:
            os.utime(flag)
        except OSError:
            return


def release(flag=None):
    """The benchmark is over (or never ran): the flag gone, if this process holds it (``flag`` as for hold). A flag
    another process holds is left: where a GPU holds two jobs, the one that ends (a compile error, say) while the
    other is timed must not open the gate under it."""
    global _keeper
    flag = flag if flag is not None else path()
    if flag:
        with _keeper_lock:
            if _keeper is None or _keeper[0] != flag:
                return
            _keeper[1].set()
            _keeper = None
        clear(flag)


def clear(flag=None):
    """A flag left behind (its agent killed mid-benchmark) gone, whoever made it: only where nothing can be timing
    (the GPU's turn is this process's, or its worker runs one job a GPU and launches the next)."""
    flag = flag if flag is not None else path()
    if flag:
        try:
            os.unlink(flag)
        except OSError:
            pass


def held(flag=None, limit=LIMIT_SECONDS):
    """Whether a benchmark runs on this GPU now: its flag there, touched within ``limit`` seconds."""
    flag = flag if flag is not None else path()
    return bool(flag) and _held(flag, limit)


def _held(flag, limit):
    """Whether ``flag`` is there and was touched within ``limit`` seconds."""
    try:
        return time.time() - os.stat(flag).st_mtime < limit
    except OSError:
        return False


def wait_released(flag=None, limit=LIMIT_SECONDS, poll=POLL_SECONDS, until=None, most=MOST_SECONDS):
    """Returns once no benchmark runs on this GPU (or its flag went ``limit`` seconds untouched, or after ``most``
    seconds); how long it waited. ``until``: a stream (a prestarted process's stdin) whose first readable byte ends
    the wait too: its job has come, and a job comes only from its own agent, which holds the gate for that job's own
    timing (a prestarted pair that waited out the limit at its own job's gate cost each job 5 s:
    docs/evidence/replay-h100/run2-bench.txt)."""
    flag = flag if flag is not None else path()
    began = time.monotonic()
    while flag and _held(flag, limit) and time.monotonic() - began < most:
        if until is None:
            time.sleep(poll)
        elif select.select([until], [], [], poll)[0]:
            break
    return time.monotonic() - began
