"""Which part of the job's room (remote_agent/room.py) a GPU program needs: cuInit and a device count in a process
started into rooms with one part left out at a time (run as root on the GPU machine).

    python3 selftest/probes/room_probe.py OUT_FILE"""
import json
import os
import subprocess
import sys

AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import agent, room, sandbox  # noqa: E402

PROBE = ("import ctypes; l = ctypes.CDLL('libcuda.so.1'); r = l.cuInit(0); n = ctypes.c_int(-1); "
         "l.cuDeviceGetCount(ctypes.byref(n)); print('cuInit', r, 'devices', n.value)")
ALL = room.NAMESPACES


def attempt(label, without=(), namespaces=ALL, **layout_changes):
    room.NAMESPACES = namespaces
    work = agent.make_work()
    layout = room.layout_for(work)
    layout = room.Layout(**dict(layout.__dict__, **layout_changes))
    job_room = room.Room.open(layout, without)
    try:
        done = subprocess.run([sys.executable, "-c", PROBE], preexec_fn=agent.solution_preexec(job_room, work),
                              env=agent.worker_command(work)[1], cwd=work, capture_output=True, text=True,
                              timeout=120)
        row = {"label": label, "isolation": job_room.isolation.as_dict(), "rc": done.returncode,
               "out": done.stdout.strip(), "err": done.stderr.strip()[-400:]}
    except (OSError, subprocess.SubprocessError) as e:
        row = {"label": label, "error": repr(e)}
    finally:
        job_room.close()
        room.NAMESPACES = ALL
    print(json.dumps(row), flush=True)
    return row


def main():
    sandbox.claim()
    names = {name: (name, flag, path) for name, flag, path in ALL}
    rows = [attempt("all"), attempt("no seccomp", ("seccomp",)), attempt("no landlock", ("landlock",)),
            attempt("no namespaces", ("namespaces",)), attempt("agent's user", ("user",)),
            attempt("no net namespace", namespaces=tuple(n for n in ALL if n[0] != "net")),
            attempt("no pid namespace", namespaces=tuple(n for n in ALL if n[0] != "pid")),
            attempt("no ipc namespace", namespaces=tuple(n for n in ALL if n[0] != "ipc")),
            attempt("mount namespace only", namespaces=(names["mount"],)),
            attempt("no hidden folders", hidden=()), attempt("no scratch folders", scratch=()),
            attempt("nothing read-only", read_only=False),
            attempt("mount namespace only, nothing read-only, nothing hidden", namespaces=(names["mount"],),
                    read_only=False, hidden=(), scratch=()),
            attempt("no namespaces, no landlock, no seccomp", ("namespaces", "landlock", "seccomp"))]
    with open(sys.argv[1], "w") as f:
        json.dump(rows, f, indent=1)
    sandbox.release()


if __name__ == "__main__":
    main()
