"""The device's turn of one GPU: which job's processes may use it now, where a warm worker runs two jobs on it at
once (gpu_worker.py, ``--jobs-per-gpu``) so that the next job compiles while the last one is checked, replayed and
audited.

A job's agent takes the turn before anything of its job's touches the device (the reference's timing, the
solution's process, the judge, the replay, Nsight Compute, a baseline) and keeps it until its process ends, after
its room closed: every process of the job's, the submission's included, has ended by then. So no code of one
submission's ever runs beside another job's timed samples or profiled calls, and what a job left running cannot
reach the next. Compiling needs no turn: nvcc runs no code of the submission's, and not on the device.

The turn is an exclusive ``flock`` on a file the worker names per GPU (``KR_DEVICE_TURN``), in a folder that no
job's room has (its /tmp is its own; room.layout_for binds only the timing gate's folder). The kernel gives the lock
back when its holder's descriptor closes, the holder killed included, so a job killed mid-way holds up nothing. The
descriptor is never inherited past an exec (close-on-exec), and the agent takes the turn after its processes were
forked (agent.Prestarted). Without the variable (a cold agent, one job per GPU) there is no turn and nothing waits.
"""
import fcntl
import os
import time

VARIABLE = "KR_DEVICE_TURN"
POLL_SECONDS = 0.005
_held = None  # the descriptor of the turn this process holds


def path(env=None):
    return (os.environ if env is None else env).get(VARIABLE) or None


def take(wait=True, most=900.0, poll=POLL_SECONDS, flag=None):
    """This process's turn on its GPU: True once held (at once, where there is no turn), False if another job has it
    and ``wait`` is False, or still has it after ``most`` seconds."""
    global _held
    flag = flag if flag is not None else path()
    if not flag or _held is not None:
        return True
    fd = os.open(flag, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    began = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _held = fd
            return True
        except BlockingIOError:
            if not wait or time.monotonic() - began >= most:
                os.close(fd)
                return False
            time.sleep(poll)


def held():
    return _held is not None


def release():
    """The turn given back (closing the descriptor unlocks it): the job's processes have all ended."""
    global _held
    fd, _held = _held, None
    if fd is not None:
        os.close(fd)


def idle(flag):
    """Whether no job holds the turn ``flag`` now (the worker asks before it clears a timing gate's flag that a
    killed agent may have left: the turn's holder is the only job that holds the gate)."""
    if not flag:
        return True
    fd = os.open(flag, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True  # unlocked as the descriptor closes
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
