"""A job's locked room: every process that compiles, loads or runs a submission's code (the compiler, the solution's
process, the judge and its serving worker, the profiler and all they start) is started into it.

The room is a set of namespaces made for one job (one agent) and held by a keeper, their first process
(``python3 -m remote_agent.room``): its own mount namespace, where the whole file system is read-only, ``/tmp``,
``/var/tmp``, ``/dev/shm`` and ``/run/lock`` are fresh and empty, the job's work folder is bound in writable,
``/root`` and ``/home`` are empty but for what the job must read (the agent's code and its Python, read-only), the
folder of the GPU's turn (turn.py, quiet.py) is empty wherever it lies, and ``/proc`` shows the room's processes
alone; its own IPC namespace (no System V or POSIX IPC shared with anything
outside); its own PID namespace (no process outside can be seen, signalled or traced); its own network namespace
(loopback only); its own host name. When the keeper ends (the job is over, or the agent died: it goes with its
parent), the kernel kills every process left in the room, and the room's IPC objects and temporary files go with
its namespaces.

A process enters the room between its fork and its exec (``Room.preexec``): it joins the namespaces, forks once
more so that its child is inside the PID namespace (the first process stays outside, waits and ends as its child
ends, so the caller's ``Popen`` sees the child's exit), and the child then becomes the job's user (a user of its own
when the agent is root: ``sandbox.claim``), keeps no capability, gets ``no_new_privs``, Landlock (it may write only
its own folders, and cannot reach a process less restricted than itself: ``landlock.py``) and the system-call
filter (``seccomp.py``), then execs.

Where the host allows less, the room is what it allows, and ``Isolation`` says what that is: without root, the
namespaces come from a user namespace of the agent's own, and the job's processes run as the agent's user (with no
capability); where no namespace can be made (a container without CAP_SYS_ADMIN, say), the job's processes are
confined by user, Landlock and seccomp alone; an architecture without a filter table gets none. A result from a
room that is not ``full`` never ranks."""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass

from remote_agent import gate, landlock, sandbox, seccomp, turn, verification

LIBC = ctypes.CDLL(None, use_errno=True)  # loaded once, before any fork (see seccomp.LIBC)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME = 1 << 18, 1 << 21
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_SECUREBITS = 1, 24, 38, 28
SECBIT_ALL_LOCKED = 0x3F  # noroot, no_setuid_fixup, keep_caps_locked and their locks: no way back to privilege

# The namespaces a full room has, by the names Isolation reports, in the order a process joins them (the PID
# namespace's entry only for its children), and their files under /proc/<pid>/ns of the keeper's parent.
NAMESPACES = (("pid", CLONE_NEWPID, "pid_for_children"), ("ipc", CLONE_NEWIPC, "ipc"), ("net", CLONE_NEWNET, "net"),
              ("uts", CLONE_NEWUTS, "uts"), ("mount", CLONE_NEWNS, "mnt"))
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # fresh and writable in the room
HIDDEN = ("/root", "/home")  # empty in the room, but for what it must read
READY = "room: ready"
MOUNT_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
               "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
LIMITS = {resource.RLIMIT_CORE: 0, resource.RLIMIT_NPROC: 4096, resource.RLIMIT_NOFILE: 4096}


@dataclass(frozen=True)
class Isolation:
    """What a job's processes get here. ``user``: "job" (a user of its own), "agent" (the agent's user, without
    capabilities), "nobody" (shared by every job), "root" (a GPU device only root may open)."""
    user: str
    uid: int
    namespaces: tuple = ()
    landlock: int = 0
    seccomp: bool = False
    reason: str = ""  # why the host allows less, where it does

    def missing(self) -> list[str]:
        missing = [] if self.user == "job" else ["a user of the job's own (runs as %s)" % self.user]
        missing += ["%s namespace" % name for name, _, _ in NAMESPACES if name not in self.namespaces]
        missing += [] if self.landlock else ["Landlock"]
        missing += [] if self.seccomp else ["a system-call filter"]
        return missing

    @property
    def full(self) -> bool:
        return not self.missing()

    def as_dict(self) -> dict:
        found = {"full": self.full, "user": self.user, "uid": self.uid, "namespaces": list(self.namespaces),
                 "landlock_abi": self.landlock, "seccomp": self.seccomp, "no_new_privs": True}
        if not self.full:
            found["missing"] = self.missing()
            if self.reason:
                found["reason"] = self.reason
        return found


@dataclass(frozen=True)
class Layout:
    """The room's file system: ``writable`` folders bound read-write (the job's work folder), ``exposed`` ones
    bound read-only where they would be hidden (the agent's code, its Python), ``hidden`` folders empty, and
    ``masked`` ones empty wherever they are."""
    writable: tuple = ()
    exposed: tuple = ()
    hidden: tuple = HIDDEN
    scratch: tuple = SCRATCH
    masked: tuple = ()  # made empty last, over whatever the folders above showed
    read_only: bool = True  # every other mount read-only


def layout_for(work: str) -> Layout:
    """A job's room: its work folder writable; the agent's code, the Python that runs it (and what it imports:
    PyTorch) and the timing gate's folder readable; the folder of the GPU's turn empty."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exposed = [package_root, sys.prefix, sys.base_prefix, sys.exec_prefix,
               os.path.dirname(os.path.realpath(sys.executable))]
    exposed += [p for p in sys.path if p and os.path.isdir(p)]
    flag = gate.path()
    if flag:
        exposed.append(os.path.dirname(flag))
    covered = HIDDEN + SCRATCH  # anything else is in the room as it is, read-only
    exposed = [os.path.realpath(p) for p in exposed]
    writable = (os.path.realpath(work),)
    masked = ()
    turns = turn.path()
    if turns:  # the GPU's turn and its windows' history (quiet.py): empty in the room wherever the worker keeps them,
        folder = os.path.realpath(os.path.dirname(turns))  # but over a folder the room shows (it stays, read-only)
        if folder != "/" and not any(p == folder or p.startswith(folder + "/") for p in writable + tuple(exposed)):
            masked = (folder,)
    return Layout(writable=writable, exposed=tuple(_outermost(
        p for p in exposed if any(p.startswith(c + "/") for c in covered))), masked=masked)


def scratch(folders=SCRATCH) -> list[str]:
    """The room's fresh temporary folders that this machine has."""
    return [p for p in folders if os.path.isdir(p)]


def _outermost(paths) -> list[str]:
    """The paths that are not beneath another of them, shallowest first."""
    kept = []
    for path in sorted(set(paths), key=lambda p: (p.count("/"), p)):
        if path != "/" and not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return kept


class Room:
    """One job's room (see the module's docstring). ``open()`` makes it; ``preexec(...)`` starts a process into
    it; ``close()`` ends it and everything in it."""

    def __init__(self, layout: Layout, isolation: Isolation, keeper=None, ns_fds=(), user_namespace=False,
                 pid_namespace=None, first=None):
        self.layout = layout
        self.isolation = isolation
        self.keeper = keeper
        self.ns_fds = list(ns_fds)  # [(fd, CLONE_NEW*)] in the order a process joins them
        self.user_namespace = user_namespace
        self.pid_namespace = pid_namespace  # (dev, inode) of the room's PID namespace: its processes are in it
        self.first = first  # the room's first process (1 in its namespace), as identity() names it: see close

    # ---- making and ending it

    @classmethod
    def open(cls, layout: Layout, without=()) -> "Room":
        """The strongest room this host allows for ``layout``; what it is, in ``isolation``. ``without``: parts
        left out ("namespaces", "landlock", "seccomp", "user": the agent's own), for tests that show what each
        part stops."""
        root = os.geteuid() == 0
        uid = sandbox.unprivileged()[0] if root else os.geteuid()
        user = ("job" if sandbox.has_claimed() else "nobody") if root and sandbox.can_drop() else (
            "root" if root else "agent")
        if "user" in without:
            user, uid = ("root" if root else "agent"), os.geteuid()
        base = dict(user=user, uid=uid, landlock=0 if "landlock" in without else landlock.abi(),
                    seccomp="seccomp" not in without and seccomp.available())
        reasons = []
        room = None
        if "namespaces" not in without:
            try:
                room = cls._with_keeper(layout, base, user_namespace=not root)
            except (OSError, subprocess.SubprocessError, ValueError) as e:
                reasons.append("no namespaces: %s" % (e,))
        if room is None:
            room = cls(layout, Isolation(**base, reason="; ".join(reasons)))
        return room._probed(reasons)

    @classmethod
    def _with_keeper(cls, layout, base, user_namespace):
        flags = sum(flag for _, flag, _ in NAMESPACES) | (CLONE_NEWUSER if user_namespace else 0)
        ids = (os.geteuid(), os.getegid())
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.path.dirname(
            os.path.dirname(os.path.abspath(__file__))), "PYTHONDONTWRITEBYTECODE": "1"}
        # Its stdin is a pipe the agent holds and never writes: its end (the agent's, however it ends) ends the room.
        keeper = subprocess.Popen([sys.executable, "-m", "remote_agent.room", json.dumps(layout.__dict__)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, cwd="/", start_new_session=True, text=True,
                                  preexec_fn=lambda: _make_namespaces(flags, ids if user_namespace else None))
        line = keeper.stdout.readline().strip()
        if line != READY:
            error = keeper.stderr.read() if keeper.poll() is not None or _ended(keeper, 5) else ""
            verification._kill(keeper)
            raise OSError("the room's keeper did not start: %s" % (line or error.strip().splitlines()[-1:] or "?"))
        names = (["user"] if user_namespace else []) + [name for _, _, name in NAMESPACES]
        kinds = ([CLONE_NEWUSER] if user_namespace else []) + [flag for _, flag, _ in NAMESPACES]
        fds = [(os.open("/proc/%d/ns/%s" % (keeper.pid, name), os.O_RDONLY | os.O_CLOEXEC), kind)
               for name, kind in zip(names, kinds)]
        isolation = Isolation(**dict(base, namespaces=tuple(name for name, _, _ in NAMESPACES)))
        found = os.fstat(fds[names.index("pid_for_children")][0])
        first = next((identity(pid) for pid in _children(keeper.pid)), None)
        if first is not None:
            turn.note(first)  # the GPU's next job waits for the room's end before anything of its own is on the device
        return cls(layout, isolation, keeper, fds, user_namespace, (found.st_dev, found.st_ino), first)

    def _probed(self, reasons) -> "Room":
        """The room as a process started into it finds it: where a confinement fails here (a kernel without the
        system-call filter, say), the room goes on without it, and says so."""
        for attempt in ("all", "no seccomp", "no landlock", "no namespaces"):
            try:
                done = subprocess.run(["/bin/true"], preexec_fn=self.preexec("probe", "/"), timeout=30,
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                if done.returncode == 0:
                    break
                failure = "exit code %d" % done.returncode
            except (OSError, subprocess.SubprocessError) as e:
                failure = repr(e)
            reasons.append("a process could not enter the room with %s (%s)" % (attempt, failure))
            if attempt == "all":
                self.isolation = _replace(self.isolation, seccomp=False)
            elif attempt == "no seccomp":
                self.isolation = _replace(self.isolation, landlock=0)
            else:
                self.close()
                self.isolation = _replace(self.isolation, namespaces=())
        if reasons:
            self.isolation = _replace(self.isolation, reason="; ".join(reasons))
        return self

    def close(self) -> None:
        """Ends the room: the keeper, and with it every process in the room; the namespaces go with the last. It
        does not wait for them (the room's first process exited 1.0-1.95 s after its KILL on the H100, the kernel's
        zap_pid_ns_processes waiting for the rest: docs/evidence/replay-h100/run50-*).
        ``wait_ended([room.first], ...)`` waits until every other process of it has exited; the GPU's next job does,
        once its turn has come (turn.settle)."""
        for fd, _ in self.ns_fds:
            os.close(fd)
        self.ns_fds = []
        if self.keeper is not None:
            verification._kill(self.keeper)
            self.keeper = None

    def end_strays(self, kept=(), most=5.0) -> "tuple[list[int], bool]":
        """Ends every process of the room but ``kept`` (processes the agent started into it, by the pids its Popen
        objects have) and what they started, and the room's first process (1 in its PID namespace, which reaps
        its orphans): whatever the job's code left running (a double fork, the child of a process that ended) or
        runs in (a process of the agent's it no longer needs). Each is stopped (SIGSTOP: a process that forks in a
        loop is outrun no longer) until none of them runs (every thread: one whose first thread ended reads as a
        zombie), then KILLed, and waited for until every thread of it is exiting: it runs no code of the job's
        and sends the device nothing more. Its context goes as it exits, a moment later (0.13 s here in run 53), not
        waited for: work it queued and that still runs then lengthens the replay's windows, which quiet.py bounds.
        Returns (their pids in the host's numbering, whether the room is known to hold nothing else now): not where
        a process could not be told in or out of the room (no right to its namespace), nor after ``most`` seconds.
        A room without a PID namespace of its own cannot tell its processes from others: nothing is ended, and it
        is not known clean (its results never rank anyway)."""
        inside = self.pid_namespace
        if not self.ns_fds or self.keeper is None or inside is None:
            return [], False
        stopped, known, began, quiet = [], True, time.monotonic(), 0
        while True:
            ours = set(kept) | set(sandbox.descendants(*kept))
            running, known, leaders = [], True, []
            for pid in (int(name) for name in os.listdir("/proc") if name.isdigit()):
                if pid in ours:
                    continue
                member = _in_namespace(pid, inside, self.isolation.uid)
                if member is None:
                    known = False
                elif member and _leads_namespace(pid):
                    leaders.append(pid)
                elif member and _live(pid):  # a zombie whose threads run (its first thread ended) included
                    if pid not in stopped:
                        stopped.append(pid)  # stopped by now, or by itself: its queued device work still runs
                    if _running(pid):
                        running.append(pid)
            # An orphan is the room's first process's child: those are walked at once, each stopped as it is
            # found (one that forks and ends every few ms is gone before a look through all of /proc reaches it).
            todo = [child for leader in leaders for child in _children(leader)]
            while todo:
                pid = todo.pop()
                if pid in ours or not _tasks(pid):
                    continue
                todo.extend(_children(pid))  # an ending one's too: they are the first process's a moment later
                if not _live(pid):
                    continue
                if _running(pid):
                    _signal(pid, signal.SIGSTOP)
                    running.append(pid)
                if pid not in stopped:
                    stopped.append(pid)
            quiet = quiet + 1 if not running else 0
            if quiet == 2 or time.monotonic() - began > most:  # twice nothing running: no fork was under way
                break
            for pid in running:
                _signal(pid, signal.SIGSTOP)
        for pid in stopped:
            _signal(pid, signal.SIGKILL)
        while any(_live(pid) for pid in stopped) and time.monotonic() - began < most:
            time.sleep(0.005)
        gone = not any(_live(pid) for pid in stopped)
        return stopped, known and quiet == 2 and gone

    # ---- starting a process into it

    def writable(self, own=()) -> list[str]:
        """What a process of the room may write: the fresh temporary folders and its own ``own`` folders."""
        return scratch(self.layout.scratch) + list(own)

    def preexec(self, role: str, cwd: str, own=(), nice: int = 0):
        """The ``preexec_fn`` that starts a process into the room, in ``cwd``, writing only beneath ``own``
        (and the temporary folders); ``role`` names it in errors. Runs in the child, before exec."""
        ns_fds = list(self.ns_fds)
        isolation = self.isolation
        writable = self.writable(own)
        user_namespace = self.user_namespace
        uid = isolation.uid

        def enter():
            for fd, kind in ns_fds:
                if LIBC.setns(fd, kind) != 0:
                    raise OSError(ctypes.get_errno(), "setns (%s): %s" % (role, os.strerror(ctypes.get_errno())))
            if ns_fds:
                os.chdir(cwd)  # joining a mount namespace leaves the process at its root
                _split()  # from here on, the child: inside the room's PID namespace
            if nice:
                os.nice(nice)
            _limits()
            if user_namespace or (os.geteuid() == 0 and isolation.user == "root"):
                _drop_capabilities()  # uid 0 (of a user namespace, or a GPU open to root alone), with no power
            elif os.geteuid() == 0:
                _drop_capabilities(keep_for_setuid=True)
                sandbox.become(uid, uid)
            if ns_fds:  # its parent: the process that waits for it (_split), which has one thread
                LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # after the change of user, which clears it
            if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "no_new_privs")
            if isolation.landlock:
                landlock.restrict(writable=writable, version=isolation.landlock)
            if isolation.seccomp:
                seccomp.install()

        return enter


def identity(pid) -> "tuple[int, int] | None":
    """(pid, its start time in clock ticks since boot): a process named so that a later one given its pid is not it;
    None where it is gone."""
    start = sandbox.started(pid)
    return None if start is None else (pid, start)


def wait_ended(firsts, most) -> bool:
    """Waits until the rooms whose first processes are ``firsts`` (as identity() names them) have ended, ``most``
    seconds at most; whether they have. A room has ended once its first process has exited, or once every other
    process of its PID namespace has, every thread of it (a zombie: its memory and files, its device context with
    them, released; a process KILLed with a kernel spinning or 8 GiB held was reaped 0.07 s later:
    docs/evidence/replay-h100/run53-*). Its first process, the room's keeper, which runs nothing of the job's, can
    take a second or more more to exit (the kernel's zap_pid_ns_processes): that is not waited for."""
    began = time.monotonic()
    while not all(_room_ended(first) for first in firsts):
        if time.monotonic() - began > most:
            return False
        time.sleep(0.005)
    return True


def _room_ended(first) -> bool:
    pid, start = first
    if identity(pid) != (pid, start) or _state(pid) in ("Z", None):
        return True  # exited: the kernel lets it once nothing else is left in its room
    try:
        inside = _pid_namespace(pid)  # the room's: 1 there (its namespace cannot be another's while it lives)
    except OSError:
        return True
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) != pid:
            try:
                member = _pid_namespace(int(name)) == inside
            except OSError:
                continue
            if member and not _exited(int(name)):
                return False
    return True


PF_EXITING = 0x4  # a task's flags (/proc/PID/task/TID/stat, field 9): in do_exit, linux/sched.h


def _tasks(pid) -> "list[tuple[str, int]]":
    """(state, flags) of each of a process's threads; [] once it is gone. Its first thread may have ended (a
    zombie) while others run: the process is each of them."""
    found = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return found
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            found.append((fields[0], int(fields[6])))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _live(pid) -> bool:
    """Whether a thread of ``pid`` may still run its code: one neither ended nor exiting (a KILLed one is)."""
    return any(state not in ("Z", "X") and not flags & PF_EXITING for state, flags in _tasks(pid))


def _running(pid) -> bool:
    """Whether a live thread of ``pid`` is not stopped."""
    return any(state not in ("Z", "X", "T", "t") and not flags & PF_EXITING for state, flags in _tasks(pid))


def _exited(pid) -> bool:
    """Whether every thread of ``pid`` has ended (or it is gone): its memory and its files are released."""
    return all(state in ("Z", "X") for state, _ in _tasks(pid))


def _state(pid) -> "str | None":
    """A process's state letter (Z: a zombie), None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _leads_namespace(pid) -> bool:
    """Whether ``pid`` is its PID namespace's first process (1 there: the room's, which reaps its orphans; its end
    would end the room)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return line.split()[-1] == "1"
    except OSError:
        pass
    return False


def _pid_namespace(pid) -> "tuple[int, int]":
    """(dev, inode) of the PID namespace ``pid`` is in (OSError where it is gone, or not this process's to know):
    read through a thread that runs where its first one has ended (a zombie's own link is gone)."""
    try:
        found = os.stat("/proc/%d/ns/pid" % pid)
    except FileNotFoundError:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                found = os.stat("/proc/%d/task/%s/ns/pid" % (pid, tid))
                break
            except FileNotFoundError:
                continue
        else:
            raise
    return found.st_dev, found.st_ino


def _in_namespace(pid, namespace, uid=None) -> "bool | None":
    """Whether ``pid`` is in the PID namespace ``namespace`` ((dev, inode)); None where this process may not know (no
    right to trace it: a root without CAP_SYS_PTRACE, say) and it runs as ``uid`` (the room's processes' user;
    given, a process of another user is not the room's)."""
    try:
        return _pid_namespace(pid) == namespace
    except PermissionError:
        if uid is not None and _uid(pid) != uid:
            return False
        return None if _state(pid) is not None else False
    except OSError:
        return False


def _children(pid) -> list[int]:
    """A process's children, from the kernel's list of each of its threads' (/proc/PID/task/TID/children)."""
    found = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                found.extend(int(child) for child in f.read().split())
    except (OSError, ValueError):
        pass
    return found


def _uid(pid) -> "int | None":
    """A process's real user id (from /proc: readable by anyone), None once it is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _signal(pid, sig) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _replace(isolation: Isolation, **changes) -> Isolation:
    return Isolation(**dict(isolation.__dict__, **changes))


def _ended(process, seconds) -> bool:
    try:
        process.wait(timeout=seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def _limits() -> None:
    for limit, value in LIMITS.items():
        try:
            soft, hard = resource.getrlimit(limit)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (value, value if limit == resource.RLIMIT_CORE else hard))
        except (ValueError, OSError):
            pass


def _drop_capabilities(keep_for_setuid=False) -> None:
    """No capability can come back: the bounding set emptied (but CAP_SETUID/SETGID/SETPCAP while root still
    changes user, which then clears the rest), and, where the process stays uid 0 (a user namespace), its own sets
    emptied and root's special treatment switched off for good."""
    for cap in range(64):
        if keep_for_setuid and cap in (6, 7, 8):  # CAP_SETGID, CAP_SETUID, CAP_SETPCAP
            continue
        LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last capability the kernel knows
    if keep_for_setuid:
        return
    LIBC.prctl(PR_SET_SECUREBITS, SECBIT_ALL_LOCKED, 0, 0, 0)
    header = struct.pack("<Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = bytes(24)  # effective, permitted, inheritable: none (two 32-bit words each)
    if LIBC.capset(header, data) != 0:
        raise OSError(ctypes.get_errno(), "capset: " + os.strerror(ctypes.get_errno()))


def _make_namespaces(flags, ids) -> None:
    """The keeper's preexec: new namespaces (and a user namespace mapping this process's ids, when ``ids``), then
    the split that puts the keeper inside the new PID namespace as its first process."""
    if LIBC.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), "unshare: " + os.strerror(ctypes.get_errno()))
    if ids is not None:
        for name, text in (("setgroups", "deny"), ("uid_map", "0 %d 1" % ids[0]), ("gid_map", "0 %d 1" % ids[1])):
            with open("/proc/self/" + name, "w") as f:
                f.write(text)
    _split()


def _split() -> None:
    """(In a preexec_fn.) Forks: the child returns, to exec; this process stays outside the PID namespace the child
    was born into, waits for it, and ends as it ended (its exit code, or the same signal), so that the Popen that
    started this process sees the child's end. Signals this process gets (TERM, INT, HUP) are passed on; if it is
    killed, the child is too (its parent-death signal)."""
    child = os.fork()
    if child == 0:
        return
    try:
        os.closerange(3, 65536)  # Popen's error pipe among them: its parent hears of the exec from the child's copy
        null = os.open("/dev/null", os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda number, _frame: os.kill(child, number))
        # No parent-death signal here: it fires when the thread that started this process ends (the agent starts
        # the profiler's pair from a thread that ends at once), not the agent. The child ends with the room.
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            if number not in (signal.SIGKILL, signal.SIGSTOP):  # whose handling cannot be set (nor needs to be)
                signal.signal(number, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
            os.kill(os.getpid(), number)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 255)
    finally:
        os._exit(255)


# ---- the keeper: the room's first process


def _mounts() -> list[tuple[str, set]]:
    """(mount point, its per-mount options) of every mount this process sees (/proc/self/mountinfo)."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")  # spaces and the like come as \040
            found.append((point, set(fields[5].split(","))))
    return found


def _mount(source, target, fstype, flags, data=None) -> None:
    if LIBC.mount(source and source.encode(), target.encode(), fstype and fstype.encode(), ctypes.c_ulong(flags),
                  data and data.encode()) != 0:
        raise OSError(ctypes.get_errno(), "mount %s on %s: %s" % (source or fstype, target,
                                                                  os.strerror(ctypes.get_errno())))


def _read_only(point, options) -> None:
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY
    for name, bit in MOUNT_FLAGS.items():
        if name in options:
            flags |= bit
    try:
        _mount(None, point, None, flags)
    except OSError:
        pass  # a mount that cannot be remounted (a file system of the kernel's own): left as it is


def build(layout: Layout) -> None:
    """The room's file system (in the keeper, in the room's new mount namespace; see the module's docstring)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = {}
    for path in layout.writable + layout.exposed:
        try:
            keep[path] = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            pass  # not there: nothing to show
    for point, options in _mounts() if layout.read_only else ():
        if point != "/proc" and not point.startswith("/proc/"):
            _read_only(point, options)
    for folder in layout.scratch:
        if os.path.isdir(folder):
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for folder in layout.hidden:
        if os.path.isdir(folder):
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    for path, fd in keep.items():
        os.makedirs(path, exist_ok=True)  # within a fresh folder, where it was hidden
        _mount("/proc/self/fd/%d" % fd, path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV
               | (0 if path in layout.writable else MS_RDONLY))
        os.close(fd)
    for folder in layout.hidden:
        if os.path.isdir(folder):
            _mount(None, folder, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    for folder in layout.masked:
        if os.path.isdir(folder):
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "mode=755")
    if os.path.isdir("/dev/mqueue"):
        try:
            _mount("mqueue", "/dev/mqueue", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # the room's own queues
        except OSError:
            pass
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def loopback_up() -> None:
    """The room's network namespace has a loopback device, down: up, for tools that talk to themselves over it."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, siocgifflags, request)[:18])[1]
        fcntl.ioctl(s, siocsifflags, struct.pack("16sh14x", b"lo", flags | iff_up))


def keep(layout: Layout) -> int:
    """The keeper: builds the room, says it is ready, then reaps what the room's orphans leave until it is killed or
    its stdin ends (the agent, which holds the other end, has ended): the room ends with it."""
    try:
        build(layout)
        loopback_up()
        socket.sethostname("kernel-runner-room")
    except OSError as e:
        print("room: " + str(e), file=sys.stderr, flush=True)
        return 1
    print(READY, flush=True)
    sys.stdout.close()
    os.dup2(os.open("/dev/null", os.O_WRONLY), 1)
    while not select.select([0], [], [], 0.5)[0] or os.read(0, 1):
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(keep(Layout(**{k: tuple(v) if isinstance(v, list) else v for k, v in json.loads(sys.argv[1]).items()})))
