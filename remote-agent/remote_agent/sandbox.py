"""The process that runs user code: what it inherits from the agent and what it may do. Its environment is made
from nothing (the variables a GPU program and Python need, no secret of anyone's); it gets no core dumps, a bound
on processes and open files, and no way to gain privileges (no_new_privs). An agent running as root (a dstack
container) runs it as an unprivileged user instead, so that it can read neither the agent's nor the judge's memory
nor files only root may read."""
import ctypes
import glob
import os
import resource
import stat

from remote_agent import gate

# Variables passed on: names, or prefixes ending in "_"; the last, the GPU's timing gate, is a flag's path.
PASSED = ("PATH", "LANG", "LC_ALL", "TZ", "LD_LIBRARY_PATH", "TMPDIR", "CUDA_", "NVIDIA_", "HIP_", "ROCM_", "ROCR_",
          "HSA_", "HCC_", "GPU_", "OMP_NUM_THREADS", "TRITON_CACHE_DIR", gate.VARIABLE)
UNPRIVILEGED = ("nobody", 65534, 65534)
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


def hand_over(path):
    """Makes a folder the unprivileged user's (when we are root and can drop), so that the process running as it
    can use it."""
    if not can_drop():
        return
    _, uid, gid = UNPRIVILEGED
    for root, dirs, files in os.walk(path):
        for name in [root] + [os.path.join(root, n) for n in dirs + files]:
            os.chown(name, uid, gid)


def confine(drop=True):
    """preexec_fn of the process that runs user code (runs in the child before exec). ``drop``: as root, become
    the unprivileged user too, with the groups that open the GPU (not under a profiler, which must keep the agent's
    user to read the counters; nor where a GPU device is root's alone: then the agent logs that it cannot)."""
    for limit, value in LIMITS.items():
        try:
            soft, hard = resource.getrlimit(limit)
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(limit, (value, value if limit == resource.RLIMIT_CORE else hard))
        except (ValueError, OSError):
            pass
    if drop and runs_as_root():
        _, uid, gid = UNPRIVILEGED
        groups, reachable = device_groups(_gpu_devices())
        if reachable:
            os.setgroups(groups)  # only the groups that open the GPU
            os.setgid(gid)
            os.setuid(uid)
    if PRCTL is not None:
        PRCTL(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
