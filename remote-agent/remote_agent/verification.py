"""The agent's side of the judge (``remote_agent/judge.py``): it starts the judge and a fresh worker in ``serve``
mode (the latter under a profiler when the times are to be cross-checked), passes the judge's calls to the worker
and the worker's answers back, and reads the judge's verdict. It trusts only the judge's lines: the worker runs
user code, which may write anything to the worker's output."""
import json
import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field


@dataclass
class Outcome:
    """``status``: PASSED (every test), FAILED (``failure`` says where), CRASHED (the worker died or stopped
    answering; ``exit_code``), TIMEOUT, or BROKEN (the judge itself failed; ``message``). ``calls``: what the
    worker said as it answered each test's call (its ``CALLED`` message: a timed call's figures, or why it could
    not make the call), by test id: the worker's word, to be trusted only as far as the worker is."""
    status: str
    results: list = field(default_factory=list)
    failure: dict = None
    exit_code: int = None
    message: str = ""
    worker_log: str = ""
    calls: dict = field(default_factory=dict)


def start(argv, env, cwd, preexec, pass_fds=(), stdout=subprocess.PIPE):
    """A judge or serving-worker process as a verification talks to it (pipes, a session of its own)."""
    return subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=stdout,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=preexec,
                            pass_fds=pass_fds)


def run(start_pair, job, timeout, log=None, started=None, on_passed=None, await_worker=True, on_start=None,
        linger=False):
    """Runs one verification (the judge draws the secret its inputs derive from itself). ``start_pair()``
    starts the judge and its serving worker into the job's room, each confined on its own: CUDA IPC
    needs them to be the same user, and the judge keeps the worker out of its memory by being non-dumpable and
    restricted apart (Landlock). ``started``: (judge, worker, worker's job file) already started that way before
    the job (a warm agent's), the worker waiting for its job file's path.
    ``on_passed(outcome)`` is called as soon as the judge has passed every test, before the worker ends; with
    ``await_worker`` a worker that then does not end in time makes the outcome TIMEOUT (a profiler around it writes
    its figures as it ends), else it is killed at once. ``on_start([judge, worker])`` is told the processes; when it
    answers False the run is not needed (BROKEN). With ``linger`` a passed run leaves both processes as they are,
    idle (the judge waiting for its stdin to close, the worker for its next line), for the caller to end with the
    list ``on_start`` was told: each takes 0.1-0.15 s to release its device context, which is then off the path to
    what the caller does next (a benchmark), yet not beside it."""
    log = log or (lambda *parts: print(*parts, file=sys.stderr, flush=True))
    lines = queue.Queue()
    if started is not None:
        judge, worker, job_file = started
        send(worker, job_file)
    else:
        judge, worker = start_pair()
    if on_start is not None and not on_start([judge, worker]):
        _kill(worker, judge)
        return Outcome("BROKEN", message="not needed")
    worker_err = []

    def pump(name, stream, sink):
        for line in stream:
            sink(name, line)
        sink(name, None)

    def keep(name, line):
        if line is None:
            return
        if name == "worker":
            worker_err.append(line)
            del worker_err[:-200]
        log(name + ":", line.rstrip())

    for name, proc in (("judge", judge), ("worker", worker)):
        threading.Thread(target=pump, args=(name, proc.stdout, lambda n, l: lines.put((n, l))), daemon=True).start()
        threading.Thread(target=pump, args=(name, proc.stderr, keep), daemon=True).start()
    outcome = None
    try:
        send(judge, json.dumps(job))
        deadline = time.monotonic() + timeout
        waiting = None
        worker_gone = False
        results, calls = [], {}
        while outcome is None:
            try:
                source, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                outcome = Outcome("TIMEOUT", results)
                break
            if source == "judge":
                outcome, waiting = _from_judge(line, judge, worker, results, waiting)
                if waiting is not None and worker_gone:
                    send(judge, "GONE")  # asked of a worker that already ended: the judge answers NOT_RUN
                    waiting = None
            elif line is None:
                worker_gone = True
                if waiting is not None:
                    send(judge, "GONE")  # the judge answers with NOT_RUN: the worker died before answering
                    waiting = None
            else:
                waiting = _from_worker(line, judge, waiting, log, calls)
        if outcome.status == "PASSED":
            if not linger:
                _close(worker.stdin)
            if on_passed is not None:
                on_passed(outcome)
            try:
                if await_worker and not linger:
                    worker.wait(timeout=max(5.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                outcome = Outcome("TIMEOUT", outcome.results)
    finally:
        if not (linger and outcome is not None and outcome.status == "PASSED"):
            _kill(worker, judge)  # else the caller's to end
    if outcome.status == "NOT_RUN":
        outcome = Outcome("CRASHED", outcome.results, exit_code=worker.returncode)
    outcome.worker_log = "".join(worker_err)
    outcome.calls = calls
    return outcome


def _from_judge(line, judge, worker, results, waiting):
    """What a judge line means: (the outcome if it is over, the test the worker is now asked to call)."""
    if line is None:
        return Outcome("BROKEN", results, message="the judge ended early (exit code %s)" % judge.poll()), None
    kind, _, rest = line.rstrip("\n").partition(" ")
    if kind == "CALL":
        send(worker, line.rstrip("\n"))
        return None, int(rest.split(" ", 1)[0])
    if kind == "FRESH":
        send(worker, line.rstrip("\n"))  # a timed sample's inputs are ready
        return None, waiting
    if kind == "RESULT":
        result = json.loads(rest)
        results.append(result)
        if result["status"] == "FAILED":
            return Outcome("FAILED", results, failure=result), None
        if result["status"] == "NOT_RUN":
            return Outcome("NOT_RUN", results, failure=result), None
        return None, waiting
    if kind == "DONE":
        return Outcome("PASSED", results), None
    if kind == "BROKEN":
        return Outcome("BROKEN", results, message=rest), None
    return None, waiting


def _from_worker(line, judge, waiting, log, calls):
    """A worker line: ``{"event": "NEXT" | "CALLED", "test_id": <the test asked for>}`` is passed on (CALLED once,
    kept in ``calls``); anything else is logged."""
    try:
        message = json.loads(line)
    except ValueError:
        log("worker:", line.rstrip())
        return waiting
    if isinstance(message, dict) and message.get("event") in ("ERROR", "RUNTIME_ERROR"):
        # Why the worker failed (its own words): kept for the caller's log and reasons, never passed on.
        calls["error"] = str(message.get("message"))[:500]
        log("worker:", message.get("event"), calls["error"])
        return waiting
    if not isinstance(message, dict) or waiting is None or message.get("test_id") != waiting:
        return waiting
    if message.get("event") == "NEXT":
        send(judge, "NEXT %d" % waiting)
        return waiting
    if message.get("event") == "CALLED":
        calls[waiting] = message
        send(judge, "CALLED %d" % waiting)
        return None
    return waiting


def send(proc, text):
    """A line to a process's stdin; nothing if it is gone."""
    try:
        proc.stdin.write(text + "\n")
        proc.stdin.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _close(stream):
    try:
        stream.close()
    except (BrokenPipeError, OSError):
        pass


def _kill(*procs, close=True):
    """KILL to each process's group, then their ends, waited for together: a process with a device context takes
    0.1-0.15 s to end, and one after the other that was most of the plain judge's time (docs/evidence/worker-h100/run23). Their
    pipes are closed after (``close``) unless a run may still be reading them."""
    for proc in procs:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                proc.kill()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout, proc.stderr) if close else ():
            _close(stream)
