"""The process that runs user code: what it inherits from the agent and what it may do. Its environment is made
from nothing (the variables a GPU program and Python need, no secret of anyone's); it gets no core dumps, a bound
on processes and open files, and no way to gain privileges (no_new_privs). An agent running as root (a dstack
container, a worker's machine) runs it as an unprivileged user instead, so that it can read neither the agent's nor
the judge's memory nor files only root may read; and each agent as a user of its own (claim()), so that one job's
code cannot signal, trace or read another's: a worker runs one job per GPU side by side, and keeps the next jobs'
processes waiting beside the current one."""
import ctypes
import fcntl
import glob
import os
import pwd
import resource
import shutil
import signal
import stat
import tempfile

from remote_agent import gate

# Variables passed on: names, or prefixes ending in "_"; the last, the GPU's timing gate, is a flag's path.
PASSED = ("PATH", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "TMPDIR", "CUDA_", "NVIDIA_", "HIP_", "ROCM_", "ROCR_",
          "HSA_", "HCC_", "GPU_", "OMP_NUM_THREADS", "TRITON_CACHE_DIR", gate.VARIABLE)
UNPRIVILEGED = ("nobody", 65534, 65534)
# The users an agent claims (first uid, how many): ids no account has (Debian leaves ids past 65535 to no one),
# with a lock each in a folder only root may write; gid = uid. Where they cannot be used (no root, or a user
# namespace that maps only 65536 ids) user code runs as nobody, every job's alike.
JOB_USERS = (2_000_000_000, 256)
LOCKS = "/run/kernel-runner-sandbox"
SHARED_TEMP = (tempfile.gettempdir(), "/var/tmp", "/dev/shm")
_claimed = None  # (uid, the lock's descriptor) while this process holds a job user
LIMITS = {resource.RLIMIT_CORE: 0, resource.RLIMIT_NPROC: 4096, resource.RLIMIT_NOFILE: 4096}
PR_SET_NO_NEW_PRIVS = 38


def _prctl():
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Looked up here, once: confine() runs in a child forked from a process with threads, where loading a library
# (the loader's lock) could deadlock.
PRCTL = _prctl()


def environment(source, home, extra):
    """The environment of a process that runs user code: PASSED from ``source``, HOME, then ``extra``."""
    env = {k: v for k, v in source.items()
           if k in PASSED or any(p.endswith("_") and k.startswith(p) for p in PASSED)}
    env["HOME"] = home
    # A job user has no account: getpass.getuser(), which importing PyTorch calls (its compile cache's folder),
    # reads these before it asks for the account, which would raise.
    env["USER"] = env["LOGNAME"] = "kernel-runner-job"
    env.update(extra)
    return env


# The GPU's device files: the unprivileged user must reach them (ROCm gives /dev/kfd and the render nodes to the
# "render" or "video" group, NVIDIA's are usually open to all).
GPU_DEVICES = ("/dev/kfd", "/dev/dri/renderD*", "/dev/nvidia*")


def runs_as_root():
    return hasattr(os, "geteuid") and os.geteuid() == 0


def device_groups(devices):
    """(the groups that open the GPU devices to the unprivileged user, whether it can reach them all) for
    ``devices``: (mode, gid) of each device file. A device that only root or root's group may use cannot be given."""
    groups, reachable = set(), True
    for mode, gid in devices:
        if mode & stat.S_IROTH and mode & stat.S_IWOTH:
            continue
        if gid != 0 and mode & stat.S_IRGRP and mode & stat.S_IWGRP:
            groups.add(gid)
        else:
            reachable = False
    return sorted(groups), reachable


def _gpu_devices():
    found = []
    for pattern in GPU_DEVICES:
        for path in glob.glob(pattern):
            try:
                info = os.stat(path)
            except OSError:
                continue
            if stat.S_ISCHR(info.st_mode):
                found.append((info.st_mode, info.st_gid))
    return found


def can_drop():
    """Whether, as root, the process that runs user code can become the unprivileged user and still use the GPU."""
    return runs_as_root() and device_groups(_gpu_devices())[1]


def unprivileged():
    """(uid, gid) that user code runs as when the agent is root: the job user this process claimed, else nobody."""
    return (_claimed[0], _claimed[0]) if _claimed else UNPRIVILEGED[1:]


def claim(locks=LOCKS, users=JOB_USERS):
    """As root (and able to drop): takes a job user for this process's life, the first whose lock is free, and ends
    whatever that user left (sweep). Returns the uid, or None (user code then runs as nobody)."""
    global _claimed
    if _claimed is not None or not can_drop():
        return _claimed[0] if _claimed else None
    try:
        os.makedirs(locks, 0o700, exist_ok=True)
        info = os.lstat(locks)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        return None  # not a folder only root may write: a lock there would prove nothing
    first, count = users
    for uid in range(first, first + count):
        fd = take_lock(locks, uid)
        if fd is None:
            continue
        if has_account(uid) or foreign(uid):
            os.close(fd)
            continue
        if not can_become(uid):
            os.close(fd)
            return None  # the range cannot be used here (a user namespace): the next ids will not do better
        sweep(uid)
        _claimed = (uid, fd)
        return uid
    return None


def release():
    """The job is over: whatever its user still runs is ended, what it left in the shared temporary folders
    removed, and the user freed for another agent."""
    global _claimed
    if _claimed is not None:
        uid, fd = _claimed
        sweep(uid)
        _claimed = None
        os.close(fd)


def take_lock(locks, uid):
    """The lock of job user ``uid`` (a descriptor holding it), or None when another process holds it."""
    try:
        fd = os.open(os.path.join(locks, str(uid)), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return fd
    except OSError:
        os.close(fd)
        return None


def has_account(uid):
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def foreign(uid):
    """Whether a process of another user namespace runs as ``uid`` (the id is someone else's: never ours to sweep)."""
    return any(not ours for _, _, ours, _ in _processes({uid}))


def can_become(uid):
    """Whether this process (root) can become ``uid`` (a child tries)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


def sweep(uid, folders=SHARED_TEMP):
    """Ends every process of ``uid`` and removes what that user left at the top of ``folders``."""
    sweep_all([uid], folders)


def processes_of(uids):
    """(pid, uid) of the live processes that run as one of ``uids`` in this process's user namespace: one of
    another (a container's, whose ids the host maps onto the same numbers) is not ours."""
    return [(pid, uid) for pid, uid, ours, live in _processes(uids) if ours and live]


def _processes(uids):
    """(pid, uid, whether in this user namespace, whether not yet ended) of each process that runs as one of
    ``uids`` (real, effective or saved); an ended one (a zombie) waits for its parent to reap it."""
    own = os.readlink("/proc/self/ns/user")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            uid = next((int(i) for i in fields["Uid"].split()[:3] if int(i) in uids), None)
            if uid is not None:
                yield (int(name), uid, os.readlink("/proc/%s/ns/user" % name) == own,
                       fields["State"].split()[0] != "Z")
        except (OSError, KeyError, IndexError, ValueError):
            continue


def sweep_all(uids, folders=SHARED_TEMP):
    """Ends every process of each of ``uids`` (in the job's session or out of it; one forked meanwhile is found by
    the next look) and removes what they left at the top of ``folders``."""
    uids = set(uids)
    for _ in range(100):
        found = processes_of(uids)
        if not found:
            break
        for pid, _uid in found:
            try:
                os.kill(pid, signal.SIGKILL)  # a process being killed cannot fork
            except OSError:
                pass
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
                if info.st_uid not in uids:
                    continue
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(path)  # follows no link (shutil.rmtree.avoids_symlink_attacks on Linux)
                else:
                    os.unlink(path)
            except OSError:
                pass


def sweep_unclaimed(locks=LOCKS, folders=SHARED_TEMP):
    """Sweeps the job users that no live agent holds: a worker does after each job (an agent killed by a cancel
    could not) and when it starts or stops."""
    try:
        names = [int(n) for n in os.listdir(locks) if n.isdigit()]
    except OSError:
        return
    held = {}
    try:
        for uid in names:
            fd = take_lock(locks, uid)
            if fd is not None:
                held[uid] = fd
        if held:
            sweep_all(sorted(held), folders)
    finally:
        for fd in held.values():
            os.close(fd)


def work_folder(path):
    """A job's work folder: the agent's, entered and read by the job's user alone (its group), or by every user
    where there is no job user of its own to give it to."""
    if _claimed is not None:
        os.chown(path, 0, _claimed[0])
        os.chmod(path, 0o750)
    else:
        os.chmod(path, 0o755)


def hand_over(path):
    """Makes a folder the unprivileged user's (when we are root and can drop), so that the process running as it
    can use it."""
    if not can_drop():
        return
    uid, gid = unprivileged()
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, uid, gid)


def confine(drop=True):
    """preexec_fn of the process that runs user code (runs in the child before exec). ``drop``: as root, become
    the unprivileged user too (unprivileged()), with the groups that open the GPU (not under a profiler, which must
    keep the agent's user to read the counters; nor where a GPU device is root's alone: then the agent logs that it
    cannot)."""
    for limit, value in LIMITS.items():
        try:
            soft, hard = resource.getrlimit(limit)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (value, value if limit == resource.RLIMIT_CORE else hard))
        except (ValueError, OSError):
            pass
    if drop and runs_as_root():
        become(*unprivileged())
    if PRCTL is not None:
        PRCTL(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def become(uid, gid):
    """(In a child, as root) the unprivileged user, with just the groups that open the GPU; none where a GPU device
    is root's alone (then it stays root, and the agent says so)."""
    groups, reachable = device_groups(_gpu_devices())
    if reachable:
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
