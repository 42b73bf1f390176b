"""Which Landlock setting (remote_agent/landlock.py) CUDA's start needs: cuInit in a child restricted each way, as
the job's user would be (run as root on the GPU machine). ``python3 selftest/probes/landlock_probe.py OUT_FILE``"""
import ctypes
import json
import os
import subprocess
import sys

AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import landlock  # noqa: E402

PROBE = ("import ctypes; l = ctypes.CDLL('libcuda.so.1'); r = l.cuInit(0); n = ctypes.c_int(-1); "
         "l.cuDeviceGetCount(ctypes.byref(n)); print('cuInit', r, 'devices', n.value)")
TMP = ["/tmp", "/dev/shm", "/var/tmp"]
VARIANTS = {
    "as the room does": dict(writable=TMP),
    "no signal scope": dict(writable=TMP, scope_signal=False),
    "ABI 4 (no device ioctl right, no scope)": dict(writable=TMP, version=4),
    "ABI 1": dict(writable=TMP, version=1),
    "everything writable": dict(writable=["/"]),
    "everything writable, no scope": dict(writable=["/"], scope_signal=False),
    "everything writable, ABI 4": dict(writable=["/"], version=4),
    "everything writable, ABI 5": dict(writable=["/"], version=5, scope_signal=False),
    "ABI 5 rules, no scope": dict(writable=TMP, version=5, scope_signal=False),
    "/dev and /sys and /proc writable, ABI 7": dict(writable=TMP + ["/dev", "/sys", "/proc"]),
    "/proc writable, ABI 7": dict(writable=TMP + ["/proc"]),
}


def run(options):
    def preexec():
        ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)
        landlock.restrict(**options)
    done = subprocess.run([sys.executable, "-c", PROBE], preexec_fn=preexec, capture_output=True, text=True,
                          timeout=60)
    return {"rc": done.returncode, "out": done.stdout.strip(), "err": done.stderr.strip()[-300:]}


def main():
    rows = {name: run(options) for name, options in VARIANTS.items()}
    for name, row in rows.items():
        print("%-45s %s %s" % (name, row["out"], row["err"][-120:]), flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
