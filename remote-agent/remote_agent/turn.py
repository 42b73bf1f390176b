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
forked (agent.Prestarted). The holder writes its rooms' PID namespaces into the file (``note``), and a taker first
waits until no process is left in the last holder's: the lock is given back when its holder dies, its rooms' processes
a moment later. Without the variable (a cold agent, one job per GPU) there is no turn and nothing waits.
"""
import fcntl
import os
import sys
import time

VARIABLE = "KR_DEVICE_TURN"
POLL_SECONDS = 0.005
ROOMS_GONE_SECONDS = 10.0  # the most a taker waits for the last holder's rooms to be empty
_held = None  # the descriptor of the turn this process holds
_rooms = []  # the PID namespaces of this process's rooms, "dev:inode" (note), written into the turn while held


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
            _last_rooms_gone(fd)
            _write_rooms()
            return True
        except BlockingIOError:
            if not wait or time.monotonic() - began >= most:
                os.close(fd)
                return False
            time.sleep(poll)


def note(namespace):
    """A room this process opened (its PID namespace, (dev, inode)): written into the turn while this process holds
    it, so that the next taker waits until none of its processes is left, however this one ends (a cancel KILLs the
    agent with its room, whose processes end a moment later)."""
    _rooms.append("%d:%d" % namespace)
    if _held is not None:
        _write_rooms()


def _write_rooms():
    os.ftruncate(_held, 0)
    os.pwrite(_held, "\n".join(_rooms).encode(), 0)


def _last_rooms_gone(fd):
    """Waits (ROOMS_GONE_SECONDS at most) until no process is left in the rooms the turn's last holder wrote."""
    from remote_agent import room  # here: room.py is the agent's, this module the worker's too
    text = os.pread(fd, 1 << 16, 0).decode("ascii", "replace")
    namespaces = []
    for line in text.split():
        try:
            dev, ino = (int(part) for part in line.split(":"))
            namespaces.append((dev, ino))
        except ValueError:
            continue
    began = time.monotonic()
    if namespaces and not room.wait_empty(namespaces, ROOMS_GONE_SECONDS):
        print("agent: the last holder's rooms still held processes after %.0f s: %s" % (
            ROOMS_GONE_SECONDS, ", ".join(room.left_in(namespaces))), file=sys.stderr, flush=True)
    elif time.monotonic() - began > 0.1:
        print("agent: the last holder's rooms emptied %.3f s after the turn came" % (time.monotonic() - began),
              file=sys.stderr, flush=True)


def held():
    return _held is not None


def release():
    """The turn given back (closing the descriptor unlocks it): the job's processes have all ended."""
    global _held
    fd, _held = _held, None
    if fd is not None:
        os.close(fd)

