"""Landlock (Linux 5.13+, no privilege needed): what a job's process may write, and which processes it may reach.

A process restricted here may read and execute anywhere its user may, write only beneath the folders it is given
(and use the GPU's device files), and, as Landlock rules for every restricted process, trace, read the memory or
the descriptors of (``/proc/<pid>/mem``, ``/proc/<pid>/fd``) only processes restricted at least as much as it is
itself: each process of a job gets a restriction of its own, so the solution's process cannot reach the judge, the
profiler that runs it, nor another of the job's processes, although they all run as one user
(``security/landlock/task.c``, ``hook_ptrace_access_check``). From ABI 6 it may not signal them either
(``LANDLOCK_SCOPE_SIGNAL``).

The rights and structures are the kernel's ``include/uapi/linux/landlock.h``; the calls' numbers are the same on
every architecture (444-446)."""
from __future__ import annotations

import ctypes
import os
import struct

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
DEVICE = READ_FILE | WRITE_FILE | READ_DIR | TRUNCATE | IOCTL_DEV  # the GPU's device files, /dev/null
# CUDA's start opens something of /proc with O_TRUNC: without TRUNCATE there, cuInit fails with 304 (the H100,
# selftest/probes/landlock_probe.py)
PROC = READ_FILE | WRITE_FILE | READ_DIR | TRUNCATE

# Loaded here, once: restrict() may run in a child forked from a process with threads (see seccomp.LIBC).
LIBC = ctypes.CDLL(None, use_errno=True)


def handled(abi: int) -> int:
    """The file-system rights an ABI knows (all of which a ruleset then handles)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


def abi() -> int:
    """The kernel's Landlock ABI version, 0 where it has none (or it is switched off)."""
    version = LIBC.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(version, 0)


def restrict(writable=(), read_only=("/",), devices=("/dev",), proc=("/proc",), scope_signal=True,
             version: int | None = None) -> int:
    """Restricts this process (and all it starts) for good: reading and executing beneath ``read_only``,
    everything beneath ``writable``, the device files beneath ``devices``, reading and writing ``/proc`` (its own
    entries; other processes' stay out of reach, see above); from ABI 6, no signal to a process outside. Returns
    the ABI applied (0: none here). Needs no_new_privs first. Raises OSError when a call fails."""
    version = abi() if version is None else version
    if version <= 0:
        return 0
    rights = handled(version)
    scoped = SCOPE_SIGNAL if scope_signal and version >= 6 else 0
    attr = struct.pack("<QQQ", rights, 0, scoped) if version >= 6 else struct.pack("<Q", rights)
    ruleset = LIBC.syscall(CREATE_RULESET, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset: " + os.strerror(ctypes.get_errno()))
    try:
        for paths, allowed in ((read_only, READ), (devices, DEVICE), (proc, PROC), (writable, rights)):
            for path in paths:
                _allow(ruleset, path, allowed & rights)
        if LIBC.syscall(RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self: " + os.strerror(ctypes.get_errno()))
    finally:
        os.close(ruleset)
    return version


def _allow(ruleset: int, path: str, allowed: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # not on this machine (no /dev/shm, say): nothing to allow
    try:
        if not os.path.isdir(path):
            allowed &= EXECUTE | READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV  # a file takes no folder rights
        attr = struct.pack("<Qi", allowed, fd)  # landlock_path_beneath_attr is packed: 12 bytes
        if LIBC.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, attr, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_add_rule %s: %s" % (path, os.strerror(ctypes.get_errno())))
    finally:
        os.close(fd)
