"""``python3 -m remote_agent --payload FILE`` (``-``: the payload comes on stdin), or
``python3 -m remote_agent worker ...`` (see gpu_worker.py), or ``python3 -m remote_agent problems check [SLUG ...]``
(the catalog's validator: problem_check.py)."""
import argparse
import ctypes
import json
import os
import signal
import sys

from remote_agent import sandbox, turn
from remote_agent.agent import Agent, Prestarted, Workspace
from remote_agent.events import Emitter
from remote_agent.payload import take_cache_secret, take_event_key

PR_SET_DUMPABLE = 4
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def own_session():
    """Leads a process group of its own, so the service can stop everything it started with one signal."""
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (started by setsid)


def stop_on_signals():
    """dstack stops a run with SIGINT to its command and SIGKILL 10 s later (runner/internal/runner/executor/
    executor.go:504-512; the agent is that command: the run's shell `exec`s it); the service and a worker stop a job
    with TERM to its processes; a lost terminal sends HUP. Each ends the job at once, its room and every process of
    the job's with it (``main``'s ``finally``), with the exit code a shell gives a death by that signal (128 + it)."""
    def stop(signum, frame):
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)  # the clean-up is not cut short by a second signal
        raise SystemExit(128 + signum)

    for sig in STOP_SIGNALS:
        signal.signal(sig, stop)


def not_dumpable():
    """Processes of the same user (the worker running user code) may not read this one's memory (/proc/PID/mem,
    ptrace) nor get a core dump of it: the event key is in it."""
    try:
        failed = ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0
    except (OSError, AttributeError):
        failed = True
    if failed:
        print("agent: could not make itself non-dumpable", file=sys.stderr, flush=True)


def fail(message):
    # Without the key no event can be signed: the service sees the exit code and this line in the log.
    print("agent: " + message, file=sys.stderr, flush=True)
    return 2


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        from remote_agent import gpu_worker
        return gpu_worker.main(argv[1:])
    if argv[:2] == ["problems", "check"]:
        from remote_agent import problem_check
        return problem_check.main(argv[2:])
    own_session()
    stop_on_signals()
    not_dumpable()
    parser = argparse.ArgumentParser(prog="remote_agent")
    parser.add_argument("--payload", required=True, help="the submission's payload JSON file; - for stdin")
    try:
        args = parser.parse_args(argv)
    except SystemExit:
        return fail("usage: python3 -m remote_agent --payload FILE")
    sandbox.claim()
    try:
        workspace = Workspace.open()
    except Exception as e:  # noqa: no room, no job: the service sees the exit code and this line
        sandbox.release()
        return fail("could not make the job's room: " + repr(e))
    try:
        return run(args, workspace)
    finally:
        workspace.close()  # the room, and every process of the job's in it, ends here
        turn.release()  # the device, to the other job of this GPU: it times nothing before the room ends (turn.py)
        sandbox.release()  # what the job's user left elsewhere (no room here), and the user freed


def run(args, workspace):
    print("agent: the job's processes run in a room: " + json.dumps(workspace.room.isolation.as_dict()),
          file=sys.stderr, flush=True)
    prestarted = None
    if args.payload == "-":
        # A warm agent: gpu_worker.py starts it before its job arrives; the solution's process is started now too.
        try:
            prestarted = Prestarted(workspace.work, workspace.room)
        except Exception as e:  # noqa: the job still runs, the cold way, and says why if it cannot
            print("agent: could not start the job's processes ahead: " + repr(e), file=sys.stderr, flush=True)
    try:
        return _run(args, workspace, prestarted)
    finally:
        if prestarted is not None:
            prestarted.discard()  # (again, where the agent did): nothing it started outlives the room


def _run(args, workspace, prestarted):
    if args.payload == "-":
        raw = sys.stdin.buffer.read()
    else:
        try:
            with open(args.payload, "rb") as f:
                raw = f.read()
        except OSError as e:
            return fail("cannot read the payload file: " + str(e))
        try:
            os.remove(args.payload)  # read once: nothing started later (user code) can read the key from it
        except OSError as e:
            print("agent: could not remove the payload file: " + str(e), file=sys.stderr, flush=True)
    cache_secret, raw = take_cache_secret(raw)
    key, raw = take_event_key(raw)
    if key is None:
        return fail("the payload has no valid event_key (base64 of at least 16 bytes)")
    Agent(Emitter(key, sys.stdout), prestarted=prestarted, cache_secret=cache_secret, workspace=workspace).run(raw)
    return 0


def end(code):
    """This process's end. An agent that imported PyTorch (a warm one forks its job's processes from itself:
    forked.py) ends without the interpreter's teardown, which then took 0.5-1 s after each job's result on the H100
    (docs/evidence/replay-h100/run15-*), and a warm worker's next job waited for it: by then the room is closed, the
    job's user released and its events written."""
    if "torch" not in sys.modules:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code if isinstance(code, int) else 1)


if __name__ == "__main__":
    end(main())
