"""The judge: checks a solution on inputs it alone knows, from a process the solution never runs in.
``python3 -m remote_agent.judge``; each job (problem, dtype, ``timed``) is a line of its standard input, the n-th
for the worker at its n-th channel (``judge_jobs``: a warm agent's judge serves the verdict, then the replay). The
secret a job's inputs derive from is drawn here, in this process, and never leaves it: not in the payload, not
through the agent or the worker, not in a file (the worker that runs user code runs as the same user and could
read one).

The worker reports its own checks and times, and user code in it can write anything to any descriptor it has,
those reports included. So the agent asks the judge: per test, the judge makes a fresh input set from the secret
in buffers of its own, poisons the outputs, and hands the solution's process (a fresh worker in ``serve`` mode,
through the agent) CUDA IPC handles to them; once that process says it has called the solution, the judge checks
that the inputs are as they were and the outputs match the reference it computes itself. Nothing the solution
does in its own process can change what the judge sees but the contents of the buffers it was given.

A ``timed`` job (the benchmark) goes on per test: the worker (a replay of the call, or the solution's own process)
asks for each timed sample's inputs with ``NEXT <id>``; the judge checks the outputs of the sample before (if any),
writes a fresh input set into the same buffers and answers ``FRESH <id>``; at ``CALLED <id>`` it checks the last.
Every output of every timed sample is checked here, against inputs nobody else knew before the sample.

The judge and its worker speak over a channel of their own (verification.Channel), the agent not between them.
To the worker: ``CALL <id> <base64 pickle>`` (the call: IPC handles and values, and ``timed``), ``FRESH <id>``.
From the worker (user code may write anything there: read a bounded line at a time, never unpickled):
``NEXT <id>``, ``CALLED <id> <json object>`` (its figures, or why it could not make the call). To the agent
(stdout): ``CALLED <id> <json>`` (the worker's answer, passed on as the worker's word), ``RESULT <json>`` per test
({test_id, name, status, debug_info, samples}); ``DONE`` at the end (``BROKEN <why>`` instead where it cannot
judge) per job."""
import base64
import ctypes
import fcntl
import hashlib
import hmac
import json
import pickle
import secrets
import select
import struct
import sys
import termios
import time

from remote_agent import gate, verification, worker

PR_SET_DUMPABLE = 4


def _seed(secret, label):
    """HMAC-SHA256 of ``label`` under the judge's secret, as a 63-bit seed: inputs nobody outside the judge
    can know."""
    return int.from_bytes(hmac.new(secret, label, hashlib.sha256).digest()[:8], "big") >> 1


def seed_for(secret, test_id):
    """A test's input seed."""
    return _seed(secret, b"verify:" + str(test_id).encode())


def sample_seed(secret, test_id, sample):
    """A timed sample's input seed."""
    return _seed(secret, b"time:%d:%d" % (test_id, sample))


def call_spec(problem, case, data):
    """The call in parameter order: ("tensor", name) for a buffer, ("value", v) for a size or a scalar."""
    spec = []
    for p in problem.parameters:
        name = p["name"]
        if p["pointer"]:
            spec.append(("tensor", name))
        elif name in case["sizes"]:
            spec.append(("value", case["sizes"][name]))
        else:
            spec.append(("value", data.inputs[name]))
    return spec


def shared_pool(torch):
    """A memory pool of the judge's for the buffers it shares with the solution's process, or None where PyTorch
    has none. A CUDA IPC handle maps the whole allocation a buffer lies in (the caching allocator's segment), and
    the default pool also held the judge's private copies of the inputs: a kernel wrote over copy and input alike
    and passed. The pool's allocations hold shared buffers alone."""
    if not torch.cuda.is_available() or not hasattr(torch.cuda, "MemPool") or not hasattr(torch.cuda,
                                                                                          "use_mem_pool"):
        return None
    return torch.cuda.MemPool()


def tell(to_worker, line):
    """A line to the worker; False when it is gone (its end of the channel closed)."""
    try:
        to_worker.write(line + "\n")
        to_worker.flush()
        return True
    except (BrokenPipeError, OSError, ValueError):
        return False


def answer_of(line, test_id):
    """A worker's line as the judge takes it: ("NEXT", None), ("CALLED", the message: a JSON object) for
    ``test_id``, or (None, the line, cut short) for anything else."""
    words = line.rstrip("\n").split(" ", 2)
    if words[:2] == ["NEXT", str(test_id)] and len(words) == 2:
        return "NEXT", None
    if words[:2] == ["CALLED", str(test_id)]:
        try:
            message = json.loads(words[2]) if len(words) == 3 else {}
        except ValueError:
            message = None
        if isinstance(message, dict):
            return "CALLED", message
    return None, line[:200]


def main():
    try:
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the worker may not read this process's memory
    except (OSError, AttributeError):
        pass
    out = sys.stdout
    began = time.monotonic()
    import torch  # before the job: a warm agent starts the judge before its payload arrives
    from torch.multiprocessing.reductions import reduce_tensor
    imported = time.monotonic()
    if worker.LAZY in sys.argv[1:] and not job_comes(sys.stdin):
        return 0  # an audit's (agent.Audit), whose agent ended: no device context for nothing
    waited = gate.wait_released(until=sys.stdin)  # not beside another job's benchmark on this device
    if torch.cuda.is_available():
        worker.warm_kernels(torch)
    print("judge: " + worker.prestarted_in(began, imported, waited), file=sys.stderr, flush=True)
    if not judge_jobs(sys.stdin, verification.peers(),
                      lambda job, channel: judge(job, channel, torch, reduce_tensor, out)):
        return 0
    # Idle until the agent ends it: its end releases a device context (0.1-0.15 s of driver work), which the agent
    # keeps out of the benchmark that follows a pass by ending this process only once that is over.
    sys.stdin.read()
    return 0


def job_comes(stream):
    """Waits until ``stream`` (a pipe) has a line or has ended; whether it has one. Reads nothing: a forked
    judge's stdin has no buffer to peek into (forked.py), so the kernel is asked how much the pipe holds."""
    select.select([stream], [], [])
    held = fcntl.ioctl(stream.fileno(), termios.FIONREAD, struct.pack("i", 0))
    return struct.unpack("i", held)[0] > 0


def judge_jobs(jobs, channels, judge_one):
    """The n-th job line (``jobs``: the judge's stdin) judged against the worker at the n-th channel: a warm agent's
    judge has two, the verdict's worker and the replay's (one context fewer a job than a judge each: every context
    a next job makes is made beside some job's timed samples). Until a job fails (``judge_one`` answers False) or
    no job comes (an empty line, or none: not needed after all). Each job's worker has its channel closed after."""
    for reader, writer in channels:
        line = jobs.readline()
        passed = bool(line.strip()) and judge_one(json.loads(line), (reader, writer))
        for end in (writer, reader):
            try:
                end.close()  # the worker's serving ends; nothing it says later reaches this process
            except OSError:
                pass
        if not passed:
            return False
    return True


# Every buffer this process ever shared, its memory pool with them: kept to its end, so that no memory a worker
# mapped (an earlier job's, whose worker may linger, running the solution's code) is ever a later job's buffer or
# anything of the judge's own.
EXPORTED = []


def judge(job, channel, torch, reduce_tensor, out):
    """One job: every test on inputs from a secret drawn for it alone, in buffers of a memory pool of its own,
    called by the worker at ``channel`` and checked here (and with ``timed``, every timed sample). Prints each test's
    ``RESULT``, then ``DONE``; True when every test passed."""
    from_worker, to_worker = channel
    secret = secrets.token_bytes(32)
    harness = worker.Harness(job, torch)
    pool = shared_pool(torch)
    if pool is None:
        out.write("BROKEN this PyTorch has no torch.cuda.MemPool (2.6 or later): the judge cannot keep the buffers "
                  "it shares apart from its own copies\n")
        out.flush()
        return False
    EXPORTED.append(pool)
    for case in harness.problem.cases:
        began = time.monotonic()
        data = harness.input_set(case, seed_for(secret, case["test_id"]), shared=lambda: torch.cuda.use_mem_pool(pool))
        EXPORTED.append(data.inputs)
        EXPORTED.append(data.outputs)
        torch.cuda.synchronize()
        made = time.monotonic()
        buffers = dict(data.inputs, **data.outputs)
        tensors = {name: reduce_tensor(buffers[name]) for kind, name in call_spec(harness.problem, case, data)
                   if kind == "tensor"}
        request = {"test_id": case["test_id"], "tensors": tensors, "timed": bool(job.get("timed")),
                   "spec": call_spec(harness.problem, case, data)}
        told = tell(to_worker, "CALL %d %s" % (case["test_id"],
                                               base64.b64encode(pickle.dumps(request)).decode("ascii")))
        samples, debug = 0, None
        spent = {"waiting": 0.0, "checks": 0.0, "refills": 0.0}  # where a timed call's time goes (the log)
        while True:
            at = time.monotonic()
            kind, said = answer_of(from_worker.readline(verification.LINE_LIMIT) if told else "", case["test_id"])
            spent["waiting"] += time.monotonic() - at
            if kind == "NEXT" and request["timed"]:
                at = time.monotonic()
                if samples and not harness.passes(case, data):  # the worker's device work is done by NEXT
                    debug = harness.verify(case, data, sample=samples - 1)
                    if debug:
                        break
                checked = time.monotonic()
                harness.refill(case, data, sample_seed(secret, case["test_id"], samples))
                torch.cuda.synchronize()
                spent["checks"] += checked - at
                spent["refills"] += time.monotonic() - checked
                samples += 1
                told = tell(to_worker, "FRESH %d" % case["test_id"])
                continue
            break
        if debug is None and kind != "CALLED":
            out.write("RESULT " + json.dumps({"test_id": case["test_id"], "name": case["name"], "status": "NOT_RUN",
                                               "debug_info": {"answer": said or "(the worker ended)"}}) + "\n")
            out.flush()
            return False
        if debug is None:
            out.write("CALLED %d %s\n" % (case["test_id"], json.dumps(said)))
            out.flush()
        torch.cuda.synchronize()
        called = time.monotonic()
        if debug is None:
            debug = harness.verify(case, data, sample=samples - 1 if samples else None)
        print("judge: test %d: inputs %.3f s, the call %.3f s, the check %.3f s%s" % (
            case["test_id"], made - began, called - made, time.monotonic() - called,
            " (%d samples: waiting %.3f s, checks %.3f s, refills %.3f s)" % (samples, spent["waiting"],
                                                                            spent["checks"], spent["refills"])
            if samples else ""), file=sys.stderr, flush=True)
        out.write("RESULT " + json.dumps({"test_id": case["test_id"], "name": case["name"],
                                           "status": "FAILED" if debug else "PASSED", "debug_info": debug,
                                           "samples": samples},
                                          default=str) + "\n")
        out.flush()
        del tensors, buffers, data
        if debug:
            return False
    out.write("DONE\n")
    out.flush()
    return True


if __name__ == "__main__":
    sys.exit(main())
