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
import os
import pickle
import secrets
import select
import struct
import sys
import termios
import time
from dataclasses import dataclass

from remote_agent import gate, stats, verification, worker

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
    jobs = Lines(0)
    if worker.LAZY in sys.argv[1:] and not job_comes(jobs):
        return 0  # an audit's (agent.Audit), whose agent ended: no device context for nothing
    waited, ahead_line = wait_for_device(jobs)  # not beside another job's benchmark on this device
    if torch.cuda.is_available():
        worker.warm_kernels(torch)
    print("judge: " + worker.prestarted_in(began, imported, waited), file=sys.stderr, flush=True)
    if not judge_jobs(jobs, verification.peers(),
                      lambda job, channel, ahead: judge(job, channel, torch, reduce_tensor, out, ahead),
                      start_ahead=lambda job: Ahead.start(job, torch), ahead_line=ahead_line):
        return 0
    # Idle until the agent ends it: its end releases a device context (0.1-0.15 s of driver work), which the agent
    # keeps out of the benchmark that follows a pass by ending this process only once that is over.
    jobs.read()
    return 0


class Lines:
    """The judge's stdin (a pipe), read a line at a time and a byte at a time: nothing is read ahead of the line
    asked for, so whether the next line has come is the pipe's to say (``pending``, ``job_comes``, the gate's wait
    on it). A line read but not yet taken goes back with ``push``."""

    def __init__(self, fd):
        self.fd = fd
        self.pushed = []

    def fileno(self):
        return self.fd

    def push(self, line):
        self.pushed.append(line)

    def pending(self):
        """Whether a line (or the pipe's end) is there to read without waiting."""
        return bool(self.pushed) or bool(select.select([self.fd], [], [], 0)[0])

    def readline(self):
        """The next line with its newline; "" at the pipe's end."""
        if self.pushed:
            return self.pushed.pop(0)
        line = bytearray()
        while not line.endswith(b"\n"):
            byte = os.read(self.fd, 1)
            if not byte:
                break
            line += byte
        return line.decode("utf-8", "replace")

    def read(self):
        """Everything until the pipe's end."""
        while self.readline():
            pass


def ahead_of(line):
    """The job of an ahead line (``{"ahead": job}``), else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message.get("ahead") if isinstance(message, dict) and isinstance(message.get("ahead"), dict) else None


def wait_for_device(jobs):
    """Waits until no benchmark runs on this GPU (gate.py) or a job has come: (seconds waited, the ahead line read
    meanwhile or None). An ahead line (sent as the payload comes) does not end the wait: the job it tells of is
    made ahead only once the device is free; the line of a job does (its own agent holds the gate)."""
    waited, ahead_line = 0.0, None
    while True:
        waited += gate.wait_released(until=jobs)
        if not jobs.pending():
            return waited, ahead_line
        line = jobs.readline()
        if ahead_line is None and ahead_of(line) is not None:
            ahead_line = line
            continue
        jobs.push(line)
        return waited, ahead_line


def job_comes(stream):
    """Waits until ``stream`` (a pipe) has a line or has ended; whether it has one. Reads nothing: a forked
    judge's stdin has no buffer to peek into (forked.py), so the kernel is asked how much the pipe holds."""
    select.select([stream], [], [])
    held = fcntl.ioctl(stream.fileno(), termios.FIONREAD, struct.pack("i", 0))
    return struct.unpack("i", held)[0] > 0


def judge_jobs(jobs, channels, judge_one, start_ahead=None, ahead_line=None):
    """The n-th job line (``jobs``: the judge's stdin) judged against the worker at the n-th channel: a warm agent's
    judge has two, the verdict's worker and the replay's (one context fewer a job than a judge each: every context
    a next job makes is made beside some job's timed samples). Until a job fails (``judge_one`` answers False) or
    no job comes (an empty line, or none: not needed after all). Each job's worker has its channel closed after.
    An ahead line (``{"ahead": job}``: a warm agent's, as its payload comes; ``ahead_line`` if read already) is no
    channel's: ``start_ahead(job)`` makes what the timed job to come needs (Ahead), one ``step()`` at a time
    while no line is waiting (``jobs.pending()``: while the solution compiles, and between the verdict and the
    timing), and ``judge_one(job, channel, ahead)`` is given it."""
    ahead = None
    if ahead_line is not None and start_ahead is not None:
        ahead = start_ahead(ahead_of(ahead_line))
    working = ahead is not None
    for reader, writer in channels:
        while True:
            while working and not jobs.pending():
                working = ahead.step(until=jobs)
            line = jobs.readline()
            wanted = ahead_of(line)
            if wanted is None:
                break
            if ahead is None and start_ahead is not None:
                ahead = start_ahead(wanted)
                working = ahead is not None
        passed = bool(line.strip()) and judge_one(json.loads(line), (reader, writer), ahead)
        for end in (writer, reader):
            try:
                end.close()  # the worker's serving ends; nothing it says later reaches this process
            except OSError:
                pass
        if not passed:
            return False
    return True


# What a judge may hold made ahead: at most AHEAD_BYTES, or AHEAD_SHARE of the device's memory if less (two jobs
# a GPU hold two); a test whose inputs alone pass AHEAD_SET_BYTES (4096 x 4097's are 67 MB, 335 MB with answers and
# bounds) is made per sample, where the check is the device's work and making it ahead would save little.
AHEAD_BYTES = 3 << 29
AHEAD_SHARE = 0.04
AHEAD_SET_BYTES = 32 << 20


@dataclass
class SampleSet:
    """One timed sample's input set made ahead (Ahead): its seed, its input tensors and the reference's answers for
    them by output name (worker.Answer), all in the Ahead's own memory pool; ``size``: their bytes."""
    seed: int
    inputs: dict
    answers: dict
    size: int


class Ahead:
    """A timed job's input sets, made before the job comes: a warm agent's judge is idle while the solution compiles
    and between the verdict and the timing. Per sample, the inputs ``Harness.refill`` would make from the sample's
    seed and the reference's answers for them; served in their stead (``take``), the judge's work between two timed
    samples is a comparison and a copy, where making the set and the reference was most of the ~0.6-0.9 ms the worker
    waited for each sample of a small kernel (docs/benchmarks.md). The secret the job's inputs derive from is drawn
    here, for that job alone (``serves``: the timed job of the same problem and dtype, not the verdict's). Made in two
    rounds, each in test order: the samples a short kernel takes at least, then up to the most it takes; within a
    budget of device memory; one set at a time, each waited for, and only while no benchmark holds the GPU (gate.py:
    nothing is made beside another job's timed samples, nor while this job's reference is timed). The sets live in
    a memory pool of their own, kept to the process's end: no other process maps it, and none of its memory is ever
    another allocation's."""

    def __init__(self, job, torch, harness, budget):
        self.job = job
        self.torch = torch
        self.harness = harness
        self.secret = secrets.token_bytes(32)
        rule = stats.many_samples_rule(stats.StoppingRule.from_settings(job.get("benchmark")))
        cases = harness.problem.cases
        # (case, how many of its sets): the warm-up and the samples a short kernel takes at least, then at most.
        self.plan = [(case, 1 + rule.min_runs) for case in cases] + [(case, 1 + rule.max_runs) for case in cases]
        self.budget, self.used = budget, 0
        self.sets = {case["test_id"]: [] for case in cases}
        self.skipped = set()  # tests whose inputs are too large
        self.scalars = {}  # each test's scalar inputs: the call's (made from the test's seed), as refill keeps them
        self.spent = {"making": 0.0, "at the gate": 0.0}
        self.failed = None
        self.pool = None

    @classmethod
    def start(cls, job, torch):
        """An Ahead for ``job`` (a job line's fields: problem, dtype, problems_dir, benchmark), or None (logged)
        where none can be made here."""
        try:
            if not torch.cuda.is_available():
                return None
            memory = torch.cuda.get_device_properties(0).total_memory
            ahead = cls(job, torch, worker.Harness(job, torch), min(AHEAD_BYTES, int(AHEAD_SHARE * memory)))
            ahead.pool = torch.cuda.MemPool()  # see the class's docstring
            EXPORTED.append(ahead.pool)
            return ahead
        except Exception as e:  # a problem this catalog lacks, bad settings: the job says so when it comes
            print("judge: nothing made ahead (%s)" % repr(e)[:300], file=sys.stderr, flush=True)
            return None

    def serves(self, job):
        return bool(job.get("timed")) and all(job.get(k) == self.job.get(k) for k in ("problem", "dtype",
                                                                                       "problems_dir"))

    def take(self, test_id, sample):
        """The set made for ``sample`` of test ``test_id``, or None."""
        sets = self.sets.get(test_id, [])
        return sets[sample] if sample < len(sets) else None

    def step(self, until=None):
        """One more set made, or a wait while a benchmark holds the GPU (gate.POLL_SECONDS at most, less where
        ``until``, a stream, becomes readable); False once there is none to make (or making failed: logged, the
        rest is made per sample)."""
        if self.failed is not None or not self.plan:
            return False
        if gate.held():
            began = time.monotonic()
            select.select([until] if until is not None else [], [], [], gate.POLL_SECONDS)
            self.spent["at the gate"] += time.monotonic() - began
            return True
        while self.plan:
            case, count = self.plan[0]
            sets = self.sets[case["test_id"]]
            if case["test_id"] in self.skipped or len(sets) >= count:
                self.plan.pop(0)
                continue
            began = time.monotonic()
            try:
                one = self.make(case, len(sets))
                self.torch.cuda.synchronize()  # its device work done before the gate is looked at again
            except Exception as e:  # out of memory, say: what was made serves
                self.failed = repr(e)[:300]
                print("judge: making ahead stopped: " + self.failed, file=sys.stderr, flush=True)
                return False
            self.spent["making"] += time.monotonic() - began
            if one is None or one.size > AHEAD_SET_BYTES or self.used + one.size > self.budget:
                self.skipped.add(case["test_id"])
                continue
            sets.append(one)
            self.used += one.size
            return True
        return False

    def make(self, case, sample):
        """Sample ``sample``'s set of the test ``case``: what ``refill`` makes from its seed, and the reference's
        answers; None where the test's inputs alone are over AHEAD_SET_BYTES. Made in the Ahead's pool; what it
        made on the way is zeroed, as Harness.expected zeroes its own."""
        torch, harness = self.torch, self.harness
        with torch.cuda.use_mem_pool(self.pool):
            return self._make(torch, harness, case, sample)

    def _make(self, torch, harness, case, sample):
        test_id = case["test_id"]
        if test_id not in self.scalars:
            first = harness.fresh_inputs(case, seed_for(self.secret, test_id))
            tensors = [v for v in first.values() if torch.is_tensor(v)]
            for tensor in tensors:
                tensor.zero_()
            if sum(t.numel() * t.element_size() for t in tensors) > AHEAD_SET_BYTES:
                return None
            self.scalars[test_id] = {k: v for k, v in first.items() if not torch.is_tensor(v)}
        seed = sample_seed(self.secret, test_id, sample)
        inputs = {k: v for k, v in harness.fresh_inputs(case, seed).items() if torch.is_tensor(v)}
        outputs, wide = harness.reference_outputs(dict(inputs, **self.scalars[test_id]))
        atol, rtol = harness.problem.tolerance(case["sizes"], harness.job["dtype"])
        answers = {}
        for name in harness.problem.outputs():
            want = outputs[name].reshape(-1)
            answers[name] = worker.Answer(want, worker.bound(want, atol, rtol))
        kept = {t.untyped_storage().data_ptr() for t in [a.want for a in answers.values()] + list(inputs.values())}
        for value in list(wide.values()) + list(outputs.values()):  # not an answer or an input (a view, a float64)
            if torch.is_tensor(value) and value.untyped_storage().data_ptr() not in kept:
                value.zero_()
        size = sum(t.numel() * t.element_size() for t in list(inputs.values())
                   + [t for a in answers.values() for t in (a.want, a.bounds)])
        return SampleSet(seed, inputs, answers, size)

    def summary(self):
        count = sum(len(sets) for sets in self.sets.values())
        return "%d input sets made ahead (%.0f MiB) in %.3f s, %.3f s waited at the gate%s" % (
            count, self.used / 2 ** 20, self.spent["making"], self.spent["at the gate"],
            "; stopped: " + self.failed if self.failed else "")

    def release(self):
        """The sets let go as the timed job ends, not zeroed (which would be device work after the job's last line,
        beside the next job's timing): their pool is kept to the process's end, and the timed job is its last."""
        self.sets = {test_id: [] for test_id in self.sets}


# Every buffer this process ever shared, its memory pool with them: kept to its end, so that no memory a worker
# mapped (an earlier job's, whose worker may linger, running the solution's code) is ever a later job's buffer or
# anything of the judge's own.
EXPORTED = []


def judge(job, channel, torch, reduce_tensor, out, ahead=None):
    """One job: every test on inputs from a secret drawn for it alone, in buffers of a memory pool of its own,
    called by the worker at ``channel`` and checked here (and with ``timed``, every timed sample: on the sets made
    ahead for it where there are, ``ahead``). Prints each test's ``RESULT``, then ``DONE``; True when every test
    passed."""
    serves = ahead is not None and ahead.serves(job)
    if ahead is not None and job.get("timed"):
        print("judge: " + ahead.summary() + ("" if serves else " (for another job: not used)"), file=sys.stderr,
              flush=True)
    ahead = ahead if serves else None
    try:
        return _judge(job, channel, torch, reduce_tensor, out, ahead)
    finally:
        if ahead is not None:
            ahead.release()


def _judge(job, channel, torch, reduce_tensor, out, ahead):
    from_worker, to_worker = channel
    secret = ahead.secret if ahead is not None else secrets.token_bytes(32)
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
        inputs_made = time.monotonic()
        buffers = dict(data.inputs, **data.outputs)
        tensors = {name: reduce_tensor(buffers[name]) for kind, name in call_spec(harness.problem, case, data)
                   if kind == "tensor"}
        request = {"test_id": case["test_id"], "tensors": tensors, "timed": bool(job.get("timed")),
                   "spec": call_spec(harness.problem, case, data)}
        told = tell(to_worker, "CALL %d %s" % (case["test_id"],
                                               base64.b64encode(pickle.dumps(request)).decode("ascii")))
        samples, served, debug = 0, 0, None
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
                ready = ahead.take(case["test_id"], samples) if ahead is not None else None
                if ready is not None:
                    harness.refill_from(data, ready)
                    served += 1
                else:
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
            case["test_id"], inputs_made - began, called - inputs_made, time.monotonic() - called,
            " (%d samples, %d made ahead: waiting %.3f s, checks %.3f s, refills %.3f s)" % (
                samples, served, spent["waiting"], spent["checks"], spent["refills"])
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
