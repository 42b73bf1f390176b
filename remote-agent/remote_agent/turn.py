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
forked (agent.Prestarted). The holder writes its rooms' first processes into the file (``note``), and a taker, before
anything of its job's touches the device (``settle``), waits until every other process of those rooms has exited:
the lock is given back when its holder dies, or once it KILLed its rooms, whose processes release their memory and
device contexts a moment later. A room is named by its first process's pid and start time: the inode of a PID
namespace that ended is given to the next one made, and a spare's new room once held a taker for 10 s
(docs/evidence/replay-h100/run50-*).
Without the variable (a cold agent, one job per GPU) there is no turn and nothing waits.
"""
import fcntl
import os
import sys
import time

VARIABLE = "KR_DEVICE_TURN"
POLL_SECONDS = 0.005
ROOMS_GONE_SECONDS = 10.0  # the most a taker waits for the last holder's rooms to end
_held = None  # the descriptor of the turn this process holds
_rooms = []  # this process's rooms' first processes, "pid:start" (note), written into the turn while held
_last = []  # the last holder's rooms' first processes, (pid, start), until settle() has waited for them


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
            _last[:] = _read_rooms(fd)
            _write_rooms()
            return True
        except BlockingIOError:
            if not wait or time.monotonic() - began >= most:
                os.close(fd)
                return False
            time.sleep(poll)


def note(first):
    """A room this process opened (its first process, (pid, start): room.identity): written into the turn while
    this process holds it, so that the next taker waits for the room's end, however this one ends (a cancel KILLs
    the agent with its room, whose processes end a moment later)."""
    _rooms.append("%d:%d" % first)
    if _held is not None:
        _write_rooms()


def _write_rooms():
    """This process's rooms, and the last holder's while they are not known to have ended (a holder killed before
    it settled passes them on), written over the file (never empty meanwhile: written, then cut to length)."""
    text = "\n".join(_rooms + ["%d:%d" % first for first in _last]).encode()
    os.pwrite(_held, text.ljust(max(len(text), 1), b"\n"), 0)
    os.ftruncate(_held, max(len(text), 1))


def _read_rooms(fd):
    """The rooms the turn's last holder wrote, (pid, start) each."""
    found = []
    for line in os.pread(fd, 1 << 16, 0).decode("ascii", "replace").split():
        try:
            pid, start = (int(part) for part in line.split(":"))
            found.append((pid, start))
        except ValueError:
            continue
    return found


def settle():
    """Once this process has the turn, before anything of its job's touches the device: waits (ROOMS_GONE_SECONDS
    at most) until the rooms of the turn's last holder have ended (room.wait_ended), every process of theirs with
    its device context. Whether they had: a job that goes on without (it is logged) ranks nothing."""
    from remote_agent import room  # here: room.py is the agent's, this module the worker's too
    if not _last:
        return True
    began = time.monotonic()
    ended = room.wait_ended(list(_last), ROOMS_GONE_SECONDS)
    if not ended:
        print("agent: the last job's rooms had not ended %.0f s after this job's turn came" % ROOMS_GONE_SECONDS,
              file=sys.stderr, flush=True)
    elif time.monotonic() - began > 0.05:
        print("agent: the last job's rooms ended %.3f s after this job's turn came" % (time.monotonic() - began),
              file=sys.stderr, flush=True)
    _last.clear()
    if _held is not None:
        _write_rooms()
    return ended


def held():
    return _held is not None


def release():
    """The turn given back (closing the descriptor unlocks it): the job's processes have all ended."""
    global _held
    fd, _held = _held, None
    if fd is not None:
        os.close(fd)

