"""The system-call filter of every process in a job's room: the calls a kernel benchmark never needs are refused
with EPERM (tracing and reading other processes, namespaces, mounts, keys, BPF, io_uring, kernel modules, ...),
``clone`` with a namespace flag too, and ``clone3`` answers ENOSYS, so that the C library falls back to ``clone``,
whose flags the filter can read (Docker's default profile does the same). Every other call is allowed.

Standard library only: the filter is classic BPF, assembled here (``seccomp_data``: the call's number at offset 0,
the architecture at 4, the arguments from 16, ``include/uapi/linux/seccomp.h``). The numbers are the kernel's
(``asm/unistd_64.h`` for x86-64, ``asm-generic/unistd.h`` for arm64); any other architecture gets no filter, and the
agent says so. A call made through another ABI (x86-64's x32 or i386 ``int 0x80``) is refused whole."""
from __future__ import annotations

import ctypes
import errno
import os
import struct
from dataclasses import dataclass

# The calls refused, by name (EPERM), per architecture: (number, ...).
REFUSED = ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp", "process_madvise", "unshare",
           "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
           "fsmount", "fspick", "mount_setattr", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
           "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load", "kexec_file_load",
           "init_module", "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl",
           "syslog", "open_by_handle_at", "name_to_handle_at", "fanotify_init", "lookup_dcookie", "vhangup",
           "iopl", "ioperm")
NUMBERS = {
    "x86_64": {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
               "process_madvise": 440, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
               "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429, "fsopen": 430,
               "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "keyctl": 250, "add_key": 248,
               "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
               "io_uring_enter": 426, "io_uring_register": 427, "kexec_load": 246, "kexec_file_load": 320,
               "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169, "swapon": 167,
               "swapoff": 168, "acct": 163, "quotactl": 179, "syslog": 103, "open_by_handle_at": 304,
               "name_to_handle_at": 303, "fanotify_init": 300, "lookup_dcookie": 212, "vhangup": 153, "iopl": 172,
               "ioperm": 173, "clone": 56, "clone3": 435},
    "aarch64": {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272,
                "process_madvise": 440, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41,
                "chroot": 51, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
                "fspick": 433, "mount_setattr": 442, "keyctl": 219, "add_key": 217, "request_key": 218, "bpf": 280,
                "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425, "io_uring_enter": 426,
                "io_uring_register": 427, "kexec_load": 104, "kexec_file_load": 294, "init_module": 105,
                "finit_module": 273, "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89,
                "quotactl": 60, "syslog": 116, "open_by_handle_at": 265, "name_to_handle_at": 264,
                "fanotify_init": 262, "lookup_dcookie": 18, "vhangup": 58, "clone": 220, "clone3": 435},
}
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_BIT = 0x40000000  # x86-64's x32 ABI: the same architecture, numbers with this bit
# clone's flags (its first argument on both architectures) that make a namespace.
NAMESPACE_FLAGS = 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00020000

# Classic BPF (include/uapi/linux/filter.h, bpf_common.h) and seccomp's answers.
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2


@dataclass(frozen=True)
class Insn:
    code: int
    k: int = 0
    jt: object = 0  # an offset, or a label resolved by assemble()
    jf: object = 0


def program(arch: str) -> list[Insn] | None:
    """The filter for ``arch`` (os.uname().machine) as labelled instructions, or None where none is known."""
    numbers = NUMBERS.get(arch)
    if numbers is None:
        return None
    insns = [Insn(LD_W_ABS, 4), Insn(JEQ_K, AUDIT_ARCH[arch], 0, "eperm"), Insn(LD_W_ABS, 0)]
    if arch == "x86_64":
        insns.append(Insn(JGE_K, X32_BIT, "eperm", 0))
    for name in REFUSED:
        if name in numbers:
            insns.append(Insn(JEQ_K, numbers[name], "eperm", 0))
    insns += [Insn(JEQ_K, numbers["clone3"], "enosys", 0),
              Insn(JEQ_K, numbers["clone"], 0, "allow"),
              Insn(LD_W_ABS, 16),  # clone's flags, the low word of its first argument
              Insn(JSET_K, NAMESPACE_FLAGS, "eperm", "allow")]
    return insns + [("allow", Insn(RET_K, RET_ALLOW)), ("eperm", Insn(RET_K, RET_ERRNO | errno.EPERM)),
                    ("enosys", Insn(RET_K, RET_ERRNO | errno.ENOSYS))]


def assemble(insns) -> bytes:
    """``sock_filter`` records of a program: labels ("allow", ...) become forward offsets."""
    flat, labels = [], {}
    for item in insns:
        if isinstance(item, tuple):
            labels[item[0]] = len(flat)
            item = item[1]
        flat.append(item)
    out = b""
    for at, insn in enumerate(flat):
        jumps = [labels[j] - at - 1 if isinstance(j, str) else j for j in (insn.jt, insn.jf)]
        if not all(0 <= j < 256 for j in jumps):
            raise ValueError("a jump out of reach at instruction %d" % at)
        out += struct.pack("<HBBI", insn.code, jumps[0], jumps[1], insn.k)
    return out


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


# Loaded here, once: install() runs in a child forked from a process with threads, where loading a library (the
# loader's lock) could deadlock.
LIBC = ctypes.CDLL(None, use_errno=True)


def available(arch: str | None = None) -> bool:
    return (arch or os.uname().machine) in NUMBERS


def install(arch: str | None = None) -> bool:
    """Installs the filter on this process (and all it starts); needs no_new_privs (or CAP_SYS_ADMIN) first.
    False where this architecture has none. Raises OSError where the kernel refuses it."""
    insns = program(arch or os.uname().machine)
    if insns is None:
        return False
    code = assemble(insns)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if LIBC.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp: " + os.strerror(ctypes.get_errno()))
    return True
