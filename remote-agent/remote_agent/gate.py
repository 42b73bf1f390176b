"""The timing gate of one GPU: while a job's benchmark runs there, the next jobs' processes, started ahead by a warm
worker, wait before they touch the device (a context, CUPTI's first session, the common kernels). Made beside a
benchmark, that slowed it by half (docs/evidence/worker-h100/run31: 21 device spans in 0.15-0.41 s instead of 0.06 s).

The gate is a flag file the worker names per GPU (``KR_TIMING_GATE``, in a folder only the worker's user may write):
present while a benchmark runs, and touched every ``REFRESH_SECONDS`` by the process that holds it, so that a long
hold (a baseline job times PyTorch for 10-20 s) is waited out: with a fixed wait of 5 s the next job's processes
made their device contexts in the middle of it, and a 6 us compiled call once timed 1.07 ms
(docs/evidence/baselines-h100/run6-jobs). A flag nobody touched for ``LIMIT_SECONDS`` (an agent killed
mid-benchmark) is left behind and waited for no longer, and no wait is longer than ``MOST_SECONDS``: a flag costs a
bounded delay, never a stall.

The flag stops a process from starting its device work during a benchmark, not from finishing work it began just
before one: a context made beside the timed samples still disturbed them (docs/benchmarks.md, run 20). So the gate
is a readers-writer lock as well: a process started ahead does its device work inside ``starting()``, holding the
flag's lock file (``<flag>.starts``) shared, and a benchmark's ``hold()`` raises the flag, then waits for the lock
exclusively (at most ``DRAIN_SECONDS``): for the starts already under way to end. A start that took the lock after the
flag went up lets it go and waits for the flag. A job's code can open the lock file too (the folder is readable in its
room) and hold it; every wait on it is bounded, so that costs other jobs a bounded delay, never a stall or a timed
sample."""
import contextlib
import fcntl
import os
import select
import threading
import time

VARIABLE = "KR_TIMING_GATE"
LIMIT_SECONDS = 5.0
REFRESH_SECONDS = 1.0
MOST_SECONDS = 900.0  # the service's time limit of a whole job (agent.submission_timeout_seconds)
# The most a benchmark waits for the starts under way: a device context takes 0.8-0.9 s on the H100 (docs/benchmarks.md,
# run 14). 0 turns the wait off (the gate as it was, for comparison).
DRAIN_SECONDS = float(os.environ.get("KR_GATE_DRAIN_SECONDS", "2.0"))
LOCK_SUFFIX = ".starts"
_keeper_lock = threading.Lock()
_keeper = None  # (the flag held by this process, the Event that stops its touching)


def path(env=None):
    return (os.environ if env is None else env).get(VARIABLE) or None


def prepare(flag):
    """The gate's lock file, made by the flag's owner (the worker's user) and readable by the jobs' processes."""
    try:
        fd = os.open(flag + LOCK_SUFFIX, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return
    try:
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)


def hold(flag=None, drain=None):
    """A benchmark starts: the flag made (``flag``: this process's gate by default; nothing without one), then the
    device starts already under way waited for (at most ``drain`` seconds). Returns how long that took."""
    global _keeper
    flag = flag if flag is not None else path()
    if not flag:
        return 0.0
    try:
        with open(flag, "w"):
            pass
    except OSError:
        return 0.0
    with _keeper_lock:
        if _keeper is None or _keeper[0] != flag:
            stop = threading.Event()
            _keeper = (flag, stop)
            threading.Thread(target=_touch, args=(flag, stop), daemon=True).start()
    return _drain(flag, DRAIN_SECONDS if drain is None else drain)


def _drain(flag, most, poll=0.002):
    """Waits (at most ``most`` seconds) until no process holds the gate's lock shared: the lock taken exclusively, and
    let go at once (the flag, already up, keeps new starts out)."""
    began = time.monotonic()
    try:
        fd = os.open(flag + LOCK_SUFFIX, os.O_RDONLY | os.O_CREAT, 0o644)
    except OSError:
        return 0.0
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                break
            except BlockingIOError:
                if time.monotonic() - began >= most:
                    break
                time.sleep(poll)
    finally:
        os.close(fd)
    return time.monotonic() - began


def _touch(flag, stop):
    """Keeps a held flag fresh until it is released (or gone)."""
    while not stop.wait(REFRESH_SECONDS):
        try:
            os.utime(flag)
        except OSError:
            return


def release(flag=None):
    """The benchmark is over (or never ran): the flag gone (``flag`` as for hold)."""
    global _keeper
    flag = flag if flag is not None else path()
    if flag:
        with _keeper_lock:
            if _keeper is not None and _keeper[0] == flag:
                _keeper[1].set()
                _keeper = None
        try:
            os.unlink(flag)
        except OSError:
            pass


def _held(flag, limit):
    """Whether ``flag`` is there and was touched within ``limit`` seconds."""
    try:
        return time.time() - os.stat(flag).st_mtime < limit
    except OSError:
        return False


def wait_released(flag=None, limit=LIMIT_SECONDS, poll=0.02, until=None, most=MOST_SECONDS):
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


@contextlib.contextmanager
def starting(flag=None, limit=LIMIT_SECONDS, poll=0.02, until=None, most=MOST_SECONDS):
    """A process started ahead does its device work inside this: once the flag is down (``wait_released``, whose
    arguments these are), with the gate's lock held shared, so that a benchmark that begins meanwhile waits for it
    (``hold``). Yields how long it waited. No lock is taken without the lock file, once ``until`` is readable (the
    process's own job has come, and its own agent holds the gate for it), or after ``limit`` seconds of finding it
    held exclusively (a benchmark holds it so for an instant: longer is a job's code holding it)."""
    flag = flag if flag is not None else path()
    began = time.monotonic()
    refused = 0  # times the lock was found held exclusively
    fd = None
    try:
        fd = os.open(flag + LOCK_SUFFIX, os.O_RDONLY) if flag else None
    except OSError:
        pass
    try:
        while True:
            wait_released(flag, limit, poll, until, most - (time.monotonic() - began))
            if fd is None or time.monotonic() - began >= most or refused * poll >= limit or (
                    until is not None and select.select([until], [], [], 0)[0]):
                break
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                refused += 1
                time.sleep(poll)
                continue
            if not _held(flag, limit):
                break
            fcntl.flock(fd, fcntl.LOCK_UN)  # a benchmark began between the wait and the lock: its turn first
        yield time.monotonic() - began
    finally:
        if fd is not None:
            os.close(fd)  # the lock, if held, with it
