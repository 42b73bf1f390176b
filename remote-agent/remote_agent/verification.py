"""The agent's side of the judge (``remote_agent/judge.py``): it starts the judge and a fresh worker in ``serve``
mode (the latter under a profiler when the times are to be cross-checked), the two joined by a channel of their
own (``Channel``: the judge's calls to the worker and its answers), and reads the judge's verdict. It trusts only
the judge's lines: the worker runs user code, which may write anything to the worker's output and channel."""
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


PEER = "KR_PEER_FDS"  # "<read fd>,<write fd>" per channel, ";" between: a judge's or its worker's ends (Channel)
LINE_LIMIT = 4 << 20  # the longest line either end of a channel reads (a timed call's figures are ~10 KiB)


class Channel:
    """The line channel between a judge and its worker: two pipes, each process holding its reading end of one and
    its writing end of the other, and nobody else (the agent closes its copies once both are started). Their
    round trips (a timed call's ~101 a test: ``NEXT``, the judge's check and refill, ``FRESH``) went through the
    agent before, two threads and a queue each way: about 0.9 ms of a 2.2 ms sample's wait on the H100
    (docs/evidence/worker-check-h100/run2-worker-bench.txt). The worker's end of it is no more trusted than its
    output was: the judge reads it as it read the agent's relay, a line at a time, bounded."""

    def __init__(self):
        to_judge, to_worker = os.pipe(), os.pipe()
        self.judge = (to_judge[0], to_worker[1])
        self.worker = (to_worker[0], to_judge[1])

    def close(self):
        """This process's copies, once both ends are started (or failed to)."""
        for fd in self.judge + self.worker:
            try:
                os.close(fd)
            except OSError:
                pass


def peers():
    """In a judge or a worker: (reader, writer) of each of its ends of channels (text, line-buffered), from
    ``PEER``: a worker has one, a judge one per worker it judges (a warm agent's: the verdict's, then the
    replay's)."""
    ends = []
    for pair in os.environ[PEER].split(";"):
        read_fd, write_fd = (int(fd) for fd in pair.split(","))
        ends.append((os.fdopen(read_fd, "r", encoding="utf-8", errors="replace"),
                     os.fdopen(write_fd, "w", buffering=1)))
    return ends


def peer():
    """A worker's one end of its channel: (reader, writer)."""
    return peers()[0]


def start(argv, env, cwd, preexec, pass_fds=(), stdout=subprocess.PIPE, end=None, popen=subprocess.Popen):
    """A judge or serving-worker process as a verification talks to it (pipes, a session of its own); ``end``: its
    end of a Channel, or a list of them (a judge of several workers); ``popen``: how it is started (forked.Forked:
    a fork of a warm agent)."""
    if end is not None:
        ends = end if isinstance(end, list) else [end]
        env = dict(env, **{PEER: ";".join("%d,%d" % one for one in ends)})
        pass_fds = tuple(pass_fds) + tuple(fd for one in ends for fd in one)
    return popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.PIPE, text=True,
                 start_new_session=True, preexec_fn=preexec, pass_fds=pass_fds)


def start_judged(start_judge, *start_workers):
    """A judge and its workers, each worker joined to the judge by a new Channel: (judge, [workers]).
    ``start_judge`` is given the judge's ends in the workers' order, each ``start_workers`` function its own end."""
    channels = [Channel() for _ in start_workers]
    workers = []
    try:
        judge = start_judge([channel.judge for channel in channels])
        try:
            for start_worker, channel in zip(start_workers, channels):
                workers.append(start_worker(channel.worker))
            return judge, workers
        except BaseException:
            _kill(judge, *workers)
            raise
    finally:
        for channel in channels:
            channel.close()


def run(start_pair, job, timeout, log=None, started=None, on_passed=None, await_worker=True, on_start=None,
        linger=False):
    """Runs one verification (the judge draws the secret its inputs derive from itself). ``start_pair()``
    starts the judge and its serving worker into the job's room, each confined on its own: CUDA IPC
    needs them to be the same user, and the judge keeps the worker out of its memory by being non-dumpable and
    restricted apart (Landlock). ``started``: (judge, worker, worker's job file) already started that way before
    the job (a warm agent's), the worker waiting for its job file's path; such a judge is its starter's, which reads
    its log and ends it: it may judge another worker after this one (it has a channel to each), so a run that
    passes leaves it waiting for its next job.
    ``on_passed(outcome)`` is called as soon as the judge has passed every test, before the worker ends; with
    ``await_worker`` a worker that then does not end in time makes the outcome TIMEOUT (a profiler around it writes
    its figures as it ends), else it is killed at once. ``on_start(processes)`` is told the processes the run
    started or was given to end (the worker, and the judge unless ``started``); when it answers False the run is
    not needed (BROKEN). With ``linger`` a passed run leaves them as they are, idle (each waiting for its stdin to
    close), for the caller to end with the list ``on_start`` was told: each takes 0.1-0.15 s to release its device
    context, which is then off the path to what the caller does next (a benchmark), yet not beside it."""
    log = log or (lambda *parts: print(*parts, file=sys.stderr, flush=True))
    lines = queue.Queue()
    if started is not None:
        judge, worker, job_file = started
        send(worker, job_file)
        owned = [worker]
    else:
        judge, worker = start_pair()
        owned = [worker, judge]
    if on_start is not None and not on_start(list(owned)):
        _kill(*owned)
        return Outcome("BROKEN", message="not needed")
    worker_err = []

    def pump(name, stream, sink, last=lambda line: False):
        for line in stream:
            sink(name, line)
            if last(line):
                return  # a judge's last line for this job: the stream is the next run's to read
        sink(name, None)

    def keep(name, line):
        if line is None:
            return
        if name == "worker":
            worker_err.append(line)
            del worker_err[:-200]
        log(name + ":", line.rstrip())

    def put(name, line):
        lines.put((name, line))

    threading.Thread(target=pump, args=("judge", judge.stdout, put, ends_a_job), daemon=True).start()
    threading.Thread(target=pump, args=("worker", worker.stdout, put), daemon=True).start()
    for name, proc in (("judge", judge), ("worker", worker)) if started is None else (("worker", worker),):
        threading.Thread(target=pump, args=(name, proc.stderr, keep), daemon=True).start()
    outcome = None
    try:
        send(judge, json.dumps(job))
        deadline = time.monotonic() + timeout
        results, calls = [], {}
        while outcome is None:
            try:
                source, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                outcome = Outcome("TIMEOUT", results)
                break
            if source == "judge":
                outcome = _from_judge(line, judge, results, calls)
            elif line is not None:
                _from_worker(line, log, calls)
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
        passed = outcome is not None and outcome.status == "PASSED"
        if not (linger and passed):
            # A judge that did not pass its job has nothing more to judge, whoever started it.
            _kill(*(owned if passed or judge in owned else owned + [judge]))  # else the caller's to end
    if outcome.status == "NOT_RUN":
        outcome = Outcome("CRASHED", outcome.results, exit_code=worker.returncode)
    outcome.worker_log = "".join(worker_err)
    outcome.calls = calls
    return outcome


def ends_a_job(line):
    """Whether a judge's output line is its last for the job it was given: ``DONE``, ``BROKEN``, or a test's
    result other than a pass (it is then silent until its next job, if any)."""
    kind, _, rest = line.strip().partition(" ")
    if kind in ("DONE", "BROKEN"):
        return True
    if kind != "RESULT":
        return False
    try:
        return json.loads(rest).get("status") != "PASSED"
    except (ValueError, AttributeError):
        return True


def _from_judge(line, judge, results, calls):
    """What a judge line means: the outcome if it is over, else None (a worker's answer to a call, which the judge
    passes on as ``CALLED <id> <json>``, is kept in ``calls``)."""
    if line is None:
        return Outcome("BROKEN", results, message="the judge ended early (exit code %s)" % judge.poll())
    kind, _, rest = line.rstrip("\n").partition(" ")
    if kind == "CALLED":
        test_id, _, message = rest.partition(" ")
        try:
            calls[int(test_id)] = json.loads(message)
        except ValueError:
            pass
        return None
    if kind == "RESULT":
        result = json.loads(rest)
        results.append(result)
        if result["status"] == "FAILED":
            return Outcome("FAILED", results, failure=result)
        if result["status"] == "NOT_RUN":
            return Outcome("NOT_RUN", results, failure=result)
        return None
    if kind == "DONE":
        return Outcome("PASSED", results)
    if kind == "BROKEN":
        return Outcome("BROKEN", results, message=rest)
    return None


def _from_worker(line, log, calls):
    """A line of the worker's own output: why it failed (an ``ERROR`` or ``RUNTIME_ERROR`` event, kept in
    ``calls["error"]`` for the caller's log and reasons), or anything else, logged. Its answers to the judge's calls
    go to the judge alone (Channel)."""
    try:
        message = json.loads(line)
    except ValueError:
        log("worker:", line.rstrip())
        return
    if isinstance(message, dict) and message.get("event") in ("ERROR", "RUNTIME_ERROR"):
        calls["error"] = str(message.get("message"))[:500]
        log("worker:", message.get("event"), calls["error"])
    else:
        log("worker:", line.rstrip()[:2000])


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
