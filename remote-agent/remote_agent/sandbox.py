"""The job's user and what it leaves behind; the environment of the job's processes. Their confinement (the room)
is room.py.

An environment made from nothing (the variables a GPU program and Python need, no secret of anyone's). An agent
running as root (a dstack container, a worker's machine) runs the job's processes as a user of the job's own
(claim()): an id no account has, taken with a lock only root can take, so that one job's code can neither signal,
trace nor read another's (a worker runs one job per GPU side by side, and keeps the next jobs' processes waiting
beside the current one). When the job ends, whatever that user still has (processes, files in the shared temporary
folders, System V IPC objects) is removed; a user that cannot be cleaned is not handed to another job until it
can be. Where the room has namespaces of its own, nothing of the job's outlives it anyway; this is what holds where
it has none."""
import ctypes
import fcntl
import glob
import os
import pwd
import shutil
import signal
import stat
import struct
import sys
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
# Where any user may leave files; a job's room has its own of each (room.py), so these matter where it has none.
# /tmp whatever TMPDIR says: code that writes there by name writes there.
SHARED_TEMP = tuple(dict.fromkeys((tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/dev/mqueue")))
_claimed = None  # (uid, the lock's descriptor) while this process holds a job user
_LIBC = ctypes.CDLL(None, use_errno=True)


def passing(source, names=PASSED):
    """The variables of ``source`` that ``names`` lets through: each a name, or a prefix ending in ``_``."""
    return {k: v for k, v in source.items() if k in names or any(p.endswith("_") and k.startswith(p) for p in names)}


def environment(source, home, extra):
    """The environment of a process that runs user code: PASSED from ``source``, HOME, then ``extra``."""
    env = passing(source)
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


def has_claimed():
    """Whether this process holds a job user (claim())."""
    return _claimed is not None


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
        left = leftovers(uid)
        if left:
            # Retired while anything of it is left (looked at again by the next claim): never handed to a job.
            print("sandbox: job user %d is retired for now, it cannot be cleaned: %s" % (uid, "; ".join(left)),
                  file=sys.stderr, flush=True)
            os.close(fd)
            continue
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


def descendants(*roots):
    """Every live process under ``roots`` (from /proc: each one's parent), the roots left out."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(name))
    found, todo = [], list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _processes(uids):
    """(pid, uid, whether ours, whether not yet ended) of each process that runs as one of ``uids`` (real,
    effective or saved); an ended one (a zombie) waits for its parent to reap it. Ours: in this user namespace, or
    in one that a job user made (a job's child that entered a namespace of its own is still the job's); one of
    another namespace (a container's, whose ids the host maps onto the same numbers) is not."""
    own = os.readlink("/proc/self/ns/user")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/status" % name) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            uid = next((int(i) for i in fields["Uid"].split()[:3] if int(i) in uids), None)
            if uid is not None:
                namespace = "/proc/%s/ns/user" % name
                yield (int(name), uid, os.readlink(namespace) == own or _namespace_owner(namespace) in uids,
                       fields["State"].split()[0] != "Z")
        except (OSError, KeyError, IndexError, ValueError):
            continue


NS_GET_OWNER_UID = 0xB704  # _IO(0xb7, 0x4), linux/nsfs.h: the uid that made a user namespace


def _namespace_owner(path):
    """The uid that made the user namespace at ``path``, or None."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return struct.unpack("I", fcntl.ioctl(fd, NS_GET_OWNER_UID, bytes(4)))[0]
    except OSError:
        return None
    finally:
        os.close(fd)


def sweep_all(uids, folders=SHARED_TEMP):
    """Ends every process of each of ``uids`` (in the job's session or out of it; one forked meanwhile is found by
    the next look), removes what they own anywhere beneath ``folders`` and their System V IPC objects (POSIX
    queues are files of /dev/mqueue)."""
    uids = set(uids)
    killed = set()  # (pid, start time): a process given the pid of one KILLed is not it
    for _ in range(100):
        found = {(pid, started(pid)) for pid, _uid in processes_of(uids)}
        if found <= killed:
            break  # each one KILLed already, and ending: a process being killed cannot fork (its device context
            # can take a second or more to go: a closed room's processes, say)
        for pid, _ in found - killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        killed |= found
    for path in _files_of(uids, folders):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)  # follows no link (shutil.rmtree.avoids_symlink_attacks on Linux)
            else:
                os.unlink(path)
        except OSError:
            pass
    for kind, ident in _ipc_of(uids):
        _remove_ipc(kind, ident)


def started(pid):
    """A process's start time (clock ticks since boot), or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def leftovers(uid, folders=SHARED_TEMP):
    """What ``uid`` still has here (processes, files beneath ``folders``, IPC objects), in words; [] when none."""
    found = ["process %d" % pid for pid, _ in processes_of({uid})]
    found += ["file %s" % path for path in _files_of({uid}, folders)]
    found += ["System V %s %d" % (kind, ident) for kind, ident in _ipc_of({uid})]
    return found


def _files_of(uids, folders):
    """The paths beneath ``folders`` that one of ``uids`` owns (the outermost of each tree), following no link. A
    job's user can have written only where it could write: into folders writable by others or a group (the
    shared ones, a world-writable one below them) or its own; only those are entered."""
    found = []
    for folder in folders:
        for root, dirs, files in os.walk(folder, followlinks=False):
            entered = []
            for is_dir, names in ((True, dirs), (False, files)):
                for name in names:
                    path = os.path.join(root, name)
                    try:
                        info = os.lstat(path)
                    except OSError:
                        continue
                    if info.st_uid in uids:
                        found.append(path)  # removed whole: nothing to look at inside
                    elif is_dir and info.st_mode & (stat.S_IWOTH | stat.S_IWGRP):
                        entered.append(name)
            dirs[:] = entered
    return found


IPC_TABLES = {"shm": ("shmctl", 7, 9), "msg": ("msgctl", 7, 9), "sem": ("semctl", 4, 6)}  # its call; uid, cuid columns
IPC_RMID = 0


def _ipc_of(uids):
    """(kind, id) of the System V IPC objects of this IPC namespace that one of ``uids`` owns or made."""
    found = []
    for kind, (_, uid_column, cuid_column) in IPC_TABLES.items():
        try:
            with open("/proc/sysvipc/" + kind) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for row in rows:
            try:
                if int(row[uid_column]) in uids or int(row[cuid_column]) in uids:
                    found.append((kind, int(row[1])))
            except (IndexError, ValueError):
                continue
    return found


def _remove_ipc(kind, ident):
    call = getattr(_LIBC, IPC_TABLES[kind][0])
    if kind == "sem":
        call(ident, 0, IPC_RMID)
    else:
        call(ident, IPC_RMID, None)


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


def remove_orphans(parent, pattern):
    """Removes the folders in ``parent`` whose names ``pattern`` (a compiled regular expression) matches with the pid
    of their maker (its group 1), where that process is gone, and only this user's (a folder another user made there
    is none of ours to remove): a process killed (SIGKILL) leaves its folders behind."""
    for name in os.listdir(parent):
        found = pattern.match(name)
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path) if found else None
            if info is None or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            os.kill(int(found.group(1)), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)  # follows no link (shutil.rmtree.avoids_symlink_attacks)
        except OSError:
            pass  # gone meanwhile, or alive as another user


def work_folder(path):
    """A job's work folder: the agent's, entered and read by the job's user alone (its group), or by every user
    where there is no job user of its own to give it to."""
    if _claimed is not None:
        os.chown(path, 0, _claimed[0])
        os.chmod(path, 0o750)
    else:
        os.chmod(path, 0o755)


def open_plain(path, mode="rb", **kwargs):
    """A file the job's user could write, opened by the agent: never through a link (to a file only the agent may
    read, which it would then pass on), never anything but a plain file (a FIFO would block). OSError otherwise."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError("not a plain file: " + path)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, mode, **kwargs)


def hand_over(path):
    """Makes a folder the unprivileged user's (when we are root and can drop), so that the process running as it
    can use it."""
    if not can_drop():
        return
    uid, gid = unprivileged()
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, uid, gid)


def become(uid, gid):
    """(In a child, as root) the unprivileged user, with just the groups that open the GPU; none where a GPU device
    is root's alone (then it stays root, and the agent says so)."""
    groups, reachable = device_groups(_gpu_devices())
    if reachable:
        os.setgroups(groups)
        os.setgid(gid)
        os.setuid(uid)
