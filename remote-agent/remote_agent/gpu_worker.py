"""A long-lived worker for the GPUs of one machine: it pulls jobs from a kernel-runner service and runs each.

    python3 -m remote_agent worker --server URL --gpu-type TYPE [--gpus 0,1] [--job-command CMD]

The token comes from KERNEL_RUNNER_WORKER_TOKEN (or --token, which every user of the machine can read in the
process list). Each listed GPU is one worker of the service: it holds a job stream open (SSE: ``hello``, ``job``,
``cancel``, ``drop``, ``replaced``, ``revoked``), runs one job at a time, and posts the job's output lines back in order
(``POST /api/worker/jobs/<id>/lines`` with the index of the first; the answer says how many the service has, so a
batch sent twice or after a gap is harmless) and then its exit. It keeps every line of the current job until the
service has its exit, and reconnects with a doubling pause while the service is away, saying which job it holds.

A job runs in a process used for that job only: ``CMD --payload <file>`` with --job-command (the service's
AGENT_COMMAND contract), else the agent itself, ``python3 -m remote_agent --payload -``, started before the job
arrives (interpreter up, modules imported) and handed the payload on its stdin.
Standard library only.
"""
import argparse
import base64
import collections
import dataclasses
import ctypes
import hashlib
import hmac
import http.client
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

from remote_agent import gate, sandbox, turn
from remote_agent import payload as payload_module

TOKEN_VARIABLE = "KERNEL_RUNNER_WORKER_TOKEN"
IDENTITY_VARIABLE = "KERNEL_RUNNER_WORKER_IDENTITY"  # the file of this machine's key (see MachineKey)
PROOF_HEADER = "X-Machine-Proof"
JOB_LOGS = "KERNEL_RUNNER_JOB_LOGS"  # a folder: each job's whole agent log is kept there (<job id>.log)
MAX_BATCH_LINES = 500
MAX_BATCH_BYTES = 1 << 20
STREAM_READ_TIMEOUT = 90  # seconds without even a heartbeat: the stream is dead
KILL_GRACE = 0.2  # seconds between TERM and KILL of a cancelled job's processes
# Agents kept starting ahead of their jobs: each needs ~5 s on the H100 (PyTorch's import, once, in the agent, whose
# job's processes are forks of it; their device contexts), longer than a job; with one, back-to-back jobs often
# waited for it (docs/evidence/worker-h100/run9), with two the judge's processes were often not ready for jobs 3.5-4 s
# apart (run15). With three, 2 of 20 jobs 0.8 s apart came to an agent still importing PyTorch (replay-h100/run16);
# with five, the contexts made beside the benchmarks slowed and spread them more (run17); four against three on one
# machine: p50 1.55 s against 1.66 s for new code, 1.28 s against 1.24 s for the same code (run18). Each spare holds
# four device contexts (about 0.5 GiB of the GPU's memory each); with four a spare, five spares were again slower
# than four: 2.29 s against 1.96 s new code, 1.28 s against 1.05 s same code (run23). Forked from one process that
# had imported PyTorch (replay-h100/run59-60-zygote.diff), spares were 9 s ahead instead of 3.3 s, but each made its
# contexts while the job that took the last one was checked and timed: 1.24 s against 0.94 s same code, 1,663 against
# 2,304 new jobs an hour queued (run59); not kept. Five against four again (replay-h100/run69): 1.24 s against 1.01 s
# same code, though fewer jobs waited for theirs.
SPARES = int(os.environ.get("KR_WORKER_SPARES", "4"))  # agents kept starting ahead of their jobs
PR_SET_DUMPABLE = 4


def log(*parts):
    print("worker:", *parts, file=sys.stderr, flush=True)


class HttpError(Exception):
    def __init__(self, status, body):
        super().__init__("HTTP %d: %s" % (status, body))
        self.status = status
        self.body = body


@dataclasses.dataclass(frozen=True)
class MachineKey:
    """This machine's key: 32 random bytes kept in a file only its owner reads, sent to the service once (enrolling
    binds the token to it). Each job stream then opens with a proof made with it, so a copy of the token alone, on
    another machine, opens nothing. The service checks the proof the same way (workers/MachineKey.java; a shared
    test vector holds them together)."""
    secret: bytes

    @staticmethod
    def load(path: "str | None") -> "MachineKey":
        """The key in ``path``, made there (mode 0600) the first time; without a path, one for this process only."""
        if not path:
            return MachineKey(secrets.token_bytes(32))
        try:
            with open(path, "rb") as f:
                secret = f.read()
            if len(secret) < 32:
                raise ValueError("the machine key in %s is shorter than 32 bytes" % path)
            return MachineKey(secret)
        except FileNotFoundError:
            pass
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
        secret = secrets.token_bytes(32)
        partial = "%s.%d.tmp" % (path, os.getpid())
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(secret)
        try:
            os.link(partial, path)  # whole or not at all; a worker starting beside this one may have won
        except FileExistsError:
            pass
        finally:
            os.unlink(partial)
        return MachineKey.load(path)

    def base64(self) -> str:
        return base64.b64encode(self.secret).decode("ascii")

    def fingerprint(self) -> str:
        return hashlib.sha256(self.secret).hexdigest()[:16]

    def proof(self, worker_id: str, at: int) -> str:
        message = ("connect\n%s\n%d" % (worker_id, at)).encode("utf-8")
        return "%d.%s" % (at, hmac.new(self.secret, message, hashlib.sha256).hexdigest())


def default_identity() -> "str | None":
    """Where this machine's key lives: $KERNEL_RUNNER_WORKER_IDENTITY, else root's /var/lib/kernel-runner, else the
    user's ~/.local/state/kernel-runner; None when none of those can be written (a key for this process only)."""
    chosen = os.environ.get(IDENTITY_VARIABLE)
    if chosen:
        return chosen
    folder = "/var/lib/kernel-runner" if os.geteuid() == 0 else os.path.join(
        os.path.expanduser("~"), ".local", "state", "kernel-runner")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return os.path.join(folder, "machine.key") if os.access(folder, os.W_OK) else None


class Service:
    """The service's worker API. Posts reuse one kept-alive connection per thread (a job's lines go one batch
    after another); the job stream has a connection of its own."""

    def __init__(self, url, token, worker_id, timeout=30, machine=None):
        parts = urllib.parse.urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("--server must be an http(s) URL, got " + url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.https else 80)
        self.base = parts.path
        self.token = token
        self.worker_id = worker_id
        self.timeout = timeout
        self.machine = machine
        self.local = threading.local()

    def _connection(self, timeout):
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def _headers(self):
        return {"Authorization": "Bearer " + self.token, "X-Worker-Id": self.worker_id}

    def post(self, path, body):
        data = json.dumps(body).encode("utf-8")
        headers = dict(self._headers(), **{"Content-Type": "application/json"})
        conn = getattr(self.local, "conn", None)
        reused = conn is not None
        if conn is None:
            conn = self.local.conn = self._connection(self.timeout)
        try:
            conn.request("POST", self.base + path, body=data, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException):
            conn.close()
            self.local.conn = None
            if not reused:
                raise
            return self.post(path, body)  # the kept connection had been closed by the service: once more, anew
        if response.status != 200:
            raise HttpError(response.status, text)
        return json.loads(text)

    def stream(self, params):
        """Yields (event, data) from the job stream until it ends; raises when it cannot be opened."""
        conn = self._connection(STREAM_READ_TIMEOUT)
        try:
            query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
            headers = dict(self._headers(), Accept="text/event-stream")
            if self.machine is not None:
                headers[PROOF_HEADER] = self.machine.proof(self.worker_id, int(time.time()))
            conn.request("GET", self.base + "/api/worker/stream?" + query, headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                raise HttpError(response.status, response.read().decode("utf-8", "replace"))
            yield from read_events(response)
        finally:
            conn.close()


def read_events(stream):
    """Server-sent events from a file-like object of bytes: (event, data as JSON) for each."""
    event, data = "message", []
    while True:
        raw = stream.readline()
        if not raw:
            return
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" "))


class Job:
    """One job's process, its output lines (all of them, until the service has its exit) and its end."""

    def __init__(self, job_id, submission_id):
        self.id = job_id
        self.submission_id = submission_id
        self.lines = []
        self.tail = collections.deque(maxlen=50)
        self.exit_code = None
        self.exited = False
        self.dropped = False
        self.changed = threading.Condition()
        self.process = None
        self.folder = None

    def start(self, process, folder=None):
        self.process = process
        self.folder = folder
        threading.Thread(target=self._read, args=(process.stdout, True), daemon=True).start()
        threading.Thread(target=self._read, args=(process.stderr, False), daemon=True).start()

    def _read(self, stream, events):
        logs = os.environ.get(JOB_LOGS) if not events else None
        kept = open(os.path.join(logs, self.id + ".log"), "a", encoding="utf-8") if logs else None
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if kept is not None:
                kept.write(line + "\n")
            with self.changed:
                if events:
                    self.lines.append(line)
                else:
                    self.tail.append(line)
                self.changed.notify_all()
        if kept is not None:
            kept.close()
        stream.close()
        if events:
            code = self.process.wait()
            _kill_group(self.process.pid, signal.SIGKILL)  # whatever it left behind goes with it
            if self.folder:
                shutil.rmtree(self.folder, ignore_errors=True)
            with self.changed:
                self.exit_code = code
                self.exited = True
                self.changed.notify_all()
            sandbox.sweep_unclaimed()  # the job's user, if its agent could not (killed by a cancel)

    def kill(self, wait=False):
        """TERM to the job's process tree (the agent starts the solution's process in a session of its own), KILL
        KILL_GRACE later; the tree is read first, while every process still has its parent. ``wait``: the KILL is
        sent before this returns (a worker that is stopping: a timer of its would die with it)."""
        if self.process is None:
            return
        tree = process_tree(self.process.pid)
        _signal(tree, signal.SIGTERM)
        if wait:
            time.sleep(KILL_GRACE)
            _signal(tree, signal.SIGKILL)
            return
        timer = threading.Timer(KILL_GRACE, _signal, args=(tree, signal.SIGKILL))
        timer.daemon = True
        timer.start()

    def drop(self):
        with self.changed:
            self.dropped = True
            self.changed.notify_all()
        self.kill()


def process_tree(root):
    """``root`` and every live process under it."""
    return [root] + sandbox.descendants(root)


def _signal(tree, sig):
    for pid in tree:
        _kill_group(pid, sig)


def _kill_group(pid, sig):
    """The process group ``pid`` leads, else the process alone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def agent_digest(root=AGENT_ROOT):
    """SHA-256 over the agent's code and the problem catalog (every file of remote_agent/ and problems/): what every
    job's agent imports and executes. Python's compiled copies (__pycache__) are left out: any process that
    imports a module may write them, and one that could plant a stale copy could change the source as well."""
    digest = hashlib.sha256()
    for part in ("remote_agent", "problems"):
        for folder, dirs, files in os.walk(os.path.join(root, part)):  # top down, in order: pruned as it goes
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode() + b"\0")
                try:
                    with open(path, "rb") as f:
                        digest.update(f.read())
                except OSError:
                    digest.update(b"unreadable")
    return digest.hexdigest()


class AgentChanged(RuntimeError):
    """The agent's code or the catalog changed since the worker started: no job may run on it."""


class Launcher:
    """Starts a job's process: --job-command with a payload file, or a warm agent handed the payload on stdin.
    Before each, the agent's code and the catalog are checked against their digest when the worker started."""

    def __init__(self, job_argv, env, cache_secret=None, digest=None):
        self.job_command = job_argv
        self.env = env
        self.digest = digest
        # The agents' library cache is sealed with it (compiler.LibraryCache): it lives in this process and on
        # each agent's stdin, nowhere a job's code can read.
        self.cache_secret = cache_secret or secrets.token_bytes(32)
        self.spares = collections.deque()
        self.lock = threading.Lock()
        if job_argv is not None:  # the payload folders of a worker killed mid-job (a job's removes its own)
            sandbox.remove_orphans(tempfile.gettempdir(), JOB_FOLDERS)

    def warm_up(self):
        """Starts the next jobs' agents now, so that a job never waits for an interpreter and its imports."""
        if self.job_command is None:
            with self.lock:
                for dead in [s for s in self.spares if s.poll() is not None]:
                    self.spares.remove(dead)
                while len(self.spares) < SPARES:
                    self.spares.append(self._agent())

    def _agent(self):
        return subprocess.Popen([sys.executable, "-m", "remote_agent", "--payload", "-"],
                                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                env=agent_environment(self.env),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)

    def launch(self, job, payload):
        if self.digest is not None and agent_digest() != self.digest:
            raise AgentChanged("the agent's code or its problem catalog changed since this worker started "
                               "(%s): a job may have planted code there; the worker stops before running another"
                               % AGENT_ROOT)
        data = json.dumps(payload).encode("utf-8")
        if turn.path(self.env) is None:  # one job a GPU: none is timing now (with a turn, its taker clears one)
            gate.clear(gate.path(self.env))  # one left by the last job's agent, killed mid-benchmark
        if self.job_command is not None:
            folder = tempfile.mkdtemp(prefix="kr-job-%d-" % os.getpid())
            path = os.path.join(folder, "payload.json")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            process = subprocess.Popen(self.job_command + ["--payload", path], env=self.env,
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       start_new_session=True)
            job.start(process, folder)
            return
        process = None
        with self.lock:
            while self.spares and (process is None or process.poll() is not None):
                process = self.spares.popleft()  # the oldest: the furthest along
        if process is None or process.poll() is not None:
            process = self._agent()
        job.start(process)
        try:
            process.stdin.write(payload_module.with_cache_secret(self.cache_secret, data))
            process.stdin.close()
        except OSError as e:
            log("job", job.id, "could not be handed to its agent:", e)
        self.warm_up()

    def close(self):
        with self.lock:
            for spare in self.spares:
                _signal(process_tree(spare.pid), signal.SIGKILL)
            self.spares.clear()


class Slot:
    """One place of a GPU (gpu_worker --jobs-per-gpu): one worker of the service, one job at a time."""

    def __init__(self, service, gpu_type, host, device, launcher, stop):
        self.service = service
        self.gpu_type = gpu_type
        self.host = host
        self.device = device
        self.launcher = launcher
        self.stop = stop
        self.job = None
        self.jobs = []  # every job launched here whose process was not yet seen to end (``end_jobs``)
        self.error = None  # why this worker had to stop (AgentChanged)
        self.lock = threading.Lock()

    def run(self):
        self.launcher.warm_up()
        pause = 0.25
        while not self.stop.is_set():
            held = self.job.id if self.job is not None and not self.job.dropped else None
            try:
                for event, data in self.service.stream({"worker_id": self.service.worker_id,
                                                        "gpu_type": self.gpu_type, "host": self.host,
                                                        "device": self.device, "job": held}):
                    pause = 0.25
                    if event == "hello":
                        log("connected as", data.get("worker_id"), "holding", data.get("job_id"))
                    elif event == "job":
                        self.take(data["job_id"], data.get("submission_id"), data["payload"])
                    elif event in ("cancel", "drop"):
                        self.stop_job(data.get("job_id"), event == "drop")
                    elif event == "replaced":
                        break
                    elif event == "revoked":
                        log("the service revoked this worker's token; its job is dropped")
                        if self.job is not None:
                            self.stop_job(self.job.id, True)
                        break
                    if self.stop.is_set():
                        return
            except HttpError as e:
                if e.status in (401, 403, 400):
                    log("the service refused this worker:", e)
                    pause = 30.0
                else:
                    log("job stream:", e)
            except (OSError, http.client.HTTPException, ValueError) as e:
                log("job stream lost:", e.__class__.__name__, e)
            if self.stop.wait(pause):
                return
            pause = min(pause * 2, 10.0)

    def take(self, job_id, submission_id, payload):
        with self.lock:
            current = self.job
            if current is not None and current.id == job_id:
                return current
            if current is not None and not current.exited:
                log("a new job while", current.id, "runs: the service no longer counts it; stopping it")
                current.drop()
            job = Job(job_id, submission_id)
            self.job = job
            self.jobs = [j for j in self.jobs if not j.exited] + [job]
        log("job", job_id, "for submission", submission_id)
        try:
            self.launcher.launch(job, payload)
        except AgentChanged as e:
            log("ERROR:", e)
            self.error = str(e)
            self.stop.set()  # not reported as the job's end: the service gives the job to another worker
            return job
        threading.Thread(target=self.send, args=(job,), daemon=True).start()
        return job

    def end_jobs(self):
        """A stopping worker's last word to its jobs: each whose process still runs is sent TERM, then KILL before
        this returns. Not only ``self.job``: the job's sender lets go of it once the worker stops (while the service
        is away, say), and a dropped job's KILL is a timer's, which would die with the worker (a fake agent that
        ignored TERM once outlived the service so: ShutdownTest)."""
        with self.lock:
            jobs = list(self.jobs)
        for job in jobs:
            if not job.exited:
                job.kill(wait=True)

    def stop_job(self, job_id, drop):
        with self.lock:
            job = self.job
        if job is not None and job.id == job_id:
            log("dropping" if drop else "cancelling", "job", job_id)
            job.drop() if drop else job.kill()

    def send(self, job):
        """Posts the job's lines in order, then its exit; survives the service going away meanwhile."""
        acked = 0
        pause = 0.1
        while not self.stop.is_set():
            with job.changed:
                while not job.dropped and len(job.lines) <= acked and not job.exited:
                    job.changed.wait()
                if job.dropped:
                    break
                batch = _batch(job.lines, acked)
                exited = job.exited and not batch
            if exited and self.stop.is_set():
                break  # the worker stops and has ended its job: not the job's own end (the service re-queues it)
            try:
                if batch:
                    reply = self.service.post("/api/worker/jobs/%s/lines" % job.id, {"from": acked, "lines": batch})
                    acked = reply["consumed"]
                elif exited:
                    reply = self.service.post("/api/worker/jobs/%s/exit" % job.id, {
                        "lines": len(job.lines), "exit_code": job.exit_code, "tail": list(job.tail)})
                    if reply.get("ended"):
                        break
                    acked = reply["consumed"]
                pause = 0.1
            except HttpError as e:
                if e.status == 404:
                    log("the service no longer has job", job.id, "-", e.body)
                    job.drop()
                    break
                log("posting job", job.id, ":", e)
                self.stop.wait(pause)
                pause = min(pause * 2, 5.0)
            except (OSError, http.client.HTTPException, ValueError) as e:
                log("posting job", job.id, "failed:", e.__class__.__name__, e)
                self.stop.wait(pause)
                pause = min(pause * 2, 5.0)
        with self.lock:
            if self.job is job:
                self.job = None


def _batch(lines, start):
    batch, size = [], 0
    for line in lines[start:start + MAX_BATCH_LINES]:
        if batch and size + len(line) > MAX_BATCH_BYTES:
            break
        batch.append(line)
        size += len(line) + 16
    return batch


def not_dumpable():
    """Other processes of this user (user code, when the agent cannot drop to another user) may not read this
    one's memory or environment: the worker token is in them."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        log("could not make itself non-dumpable")


def device_name(gpu):
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", str(gpu)],
                             capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    return "GPU %s" % gpu


GATES = re.compile(r"^kr-gates-(\d+)-")
JOB_FOLDERS = re.compile(r"^kr-job-(\d+)-")  # a --job-command's payload folders, by the worker's pid


def gate_folder(parent=None, readable=True):
    """A folder for this worker's timing gates (gate.py) that only its user writes, named after its pid; those of
    this user's workers that are gone (killed: a stopped one removes its own) are removed first. ``readable``: by
    everyone (the jobs' processes look for a gate's flag); else its user's alone (the GPUs' turns: turn.py)."""
    parent = parent or tempfile.gettempdir()
    sandbox.remove_orphans(parent, GATES)
    folder = tempfile.mkdtemp(prefix="kr-gates-%d-" % os.getpid(), dir=parent)
    if readable:
        os.chmod(folder, 0o755)  # mkdtemp's 0700, opened for reading
    return folder


# What of a slot's environment a warm agent gets (sandbox.passing's form: a name, or a prefix ending in _): what user
# code's processes get, the project's own settings, where Python and its packages are, and whose home. Its job's
# processes are forks of it (forked.py) and hold a copy of its memory, its environment's first copy among it,
# whatever they are given: an operator's credential in the worker's environment would be theirs to read.
AGENT_PASSED = sandbox.PASSED + ("KR_", "KERNEL_RUNNER_CACHE", "HOME", "USER", "LOGNAME", "PYTHONPATH", "PYTHONHOME",
                                 "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONNOUSERSITE")


def agent_environment(env):
    """A warm agent's environment: ``env`` (a slot's) with only the names in AGENT_PASSED, and no compiled copies
    written into the agent's folder (its digest leaves them out, but it is what every job runs)."""
    return dict(sandbox.passing(env, AGENT_PASSED), PYTHONDONTWRITEBYTECODE="1")


def job_environment(source, gpu, gate_flag=None, turn_file=None):
    """The environment of a slot's jobs: the worker's, less its token, on one GPU, and without the user site
    directory (a warm agent gets less: ``agent_environment``). A job's user code runs as this user (unless the worker
    is root): a .pth it left in ~/.local/lib/python*/site-packages would run at the start of every later agent, which
    holds the next job's key. ``gate_flag``: the GPU's timing gate (gate.py); ``turn_file``: its turn (turn.py)."""
    env = {k: v for k, v in source.items() if k not in (TOKEN_VARIABLE, turn.VARIABLE)}
    env.update(CUDA_VISIBLE_DEVICES=gpu, HIP_VISIBLE_DEVICES=gpu, PYTHONNOUSERSITE="1")
    if gate_flag:
        env[gate.VARIABLE] = gate_flag
    if turn_file:
        env[turn.VARIABLE] = turn_file
    return env


def places(host, gpu, run_id, jobs_per_gpu):
    """The worker ids of one GPU's places, one job each: host:gpu:run, then host:gpu:run@2 (the service's worker ids
    are letters, digits and '_.:@-': WorkerApi.WORKER_ID)."""
    return ["%s:%s:%s%s" % (host, gpu, run_id, "@%d" % place if place > 1 else "")
            for place in range(1, jobs_per_gpu + 1)]


def orphaned(parent_pid):
    """Whether the service that started this worker (``--parent-pid``) is gone: this process was handed to another
    parent. A parent-death signal (prctl) would fire when the service's thread that started it ends, not the
    service."""
    return parent_pid is not None and os.getppid() != parent_pid


def enroll(service: Service, machine: MachineKey, stop: threading.Event) -> bool:
    """Binds the token to this machine's key (the first time; again is harmless), trying again while the service is
    away; False when the token is bound to another machine."""
    pause = 0.25
    while not stop.is_set():
        try:
            service.post("/api/worker/enroll", {"machine_key": machine.base64()})
            log("this machine's key:", machine.fingerprint())
            return True
        except HttpError as e:
            if e.status == 409:
                log("this token is bound to another machine (this one's key is %s):" % machine.fingerprint(), e.body)
                return False
            if e.status in (401, 403, 404):
                log("enrolling refused:", e)  # the job stream will say why, and wait
                return True
            log("enrolling:", e)
        except (OSError, http.client.HTTPException, ValueError) as e:
            log("enrolling: the service is not reachable:", e.__class__.__name__, e)
        stop.wait(pause)
        pause = min(pause * 2, 10.0)
    return True


def main(argv):
    parser = argparse.ArgumentParser(prog="remote_agent worker")
    parser.add_argument("--server", required=True, help="the service's URL, e.g. https://kr.example.com")
    parser.add_argument("--token", help="a worker token (better: the %s variable)" % TOKEN_VARIABLE)
    parser.add_argument("--gpu-type", required=True, help="the GPU type this machine serves, e.g. H100")
    parser.add_argument("--gpus", default="0", help="comma list of device indexes")
    parser.add_argument("--jobs-per-gpu", type=int, choices=(1, 2), default=None,
                        help="jobs a GPU holds at once, each as a worker of the service: with 2, the next job compiles "
                        "while the last one is checked, timed and audited, and only one job's processes use the device "
                        "at a time (turn.py). Default and most: 2 with the worker's own agents; 1 with --job-command "
                        "(a command of another's takes no turn)")
    parser.add_argument("--job-command", help="run CMD --payload <file> for each job instead of the agent")
    parser.add_argument("--host", default=socket.gethostname(), help="this machine's name in the service's list")
    parser.add_argument("--identity", default=default_identity(),
                        help="the file of this machine's key (made the first time; default: $%s, else "
                        "/var/lib/kernel-runner/machine.key as root, ~/.local/state/kernel-runner/machine.key "
                        "otherwise)" % IDENTITY_VARIABLE)
    parser.add_argument("--parent-pid", type=int, help="stop once this process, the service that started this "
                        "worker on its own host, is gone (killed outright, it revokes nothing and stops no one)")
    args = parser.parse_args(argv)
    if args.jobs_per_gpu == 2 and args.job_command:
        print("worker: --jobs-per-gpu 2 needs the worker's own agents: a --job-command takes no turn of the GPU "
              "(turn.py), and two of its jobs would use the device at once", file=sys.stderr)
        return 2
    token = args.token or os.environ.get(TOKEN_VARIABLE)
    if not token:
        print("worker: no token: set %s (POST /api/admin/tokens {\"role\": \"worker\"})" % TOKEN_VARIABLE,
              file=sys.stderr)
        return 2
    if args.token:
        log("--token is visible to every user of this machine in the process list; prefer", TOKEN_VARIABLE)
    not_dumpable()
    sandbox.sweep_unclaimed()  # job users the last worker's agents, killed with it, left running
    gpus = [g.strip() for g in args.gpus.split(",") if g.strip()]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    if not args.identity:
        log("no place to keep this machine's key (set %s): one for this process only" % IDENTITY_VARIABLE)
    machine = MachineKey.load(args.identity)
    if not enroll(Service(args.server, token, "enroll", machine=machine), machine, stop):
        return 2
    run_id = uuid.uuid4().hex[:8]
    cache_secret = secrets.token_bytes(32)  # one library cache for every slot of this worker
    digest = agent_digest()
    slots, launchers = [], []
    gates = gate_folder()
    jobs_per_gpu = args.jobs_per_gpu or (1 if args.job_command else 2)
    # Each GPU's turn (turn.py), and beside it the windows its replays read (quiet.py): the worker's own agents
    # take it, one job a GPU or two; a job command takes none. In no job's room.
    turns = gate_folder(readable=False) if not args.job_command else None
    for gpu in gpus:
        env = job_environment(os.environ, gpu, os.path.join(gates, "gpu-" + gpu),
                              os.path.join(turns, "gpu-" + gpu) if turns else None)
        launcher = Launcher(shlex.split(args.job_command) if args.job_command else None, env, cache_secret, digest)
        launchers.append(launcher)
        name = device_name(gpu)
        for worker_id in places(args.host, gpu, run_id, jobs_per_gpu):
            slots.append(Slot(Service(args.server, token, worker_id, machine=machine), args.gpu_type, args.host,
                              name, launcher, stop))
    threads = [threading.Thread(target=slot.run, daemon=True) for slot in slots]
    for thread in threads:
        thread.start()
    while not stop.wait(0.5):
        if orphaned(args.parent_pid):
            log("the service that started this worker is gone")
            stop.set()
    log("stopping")
    for slot in slots:
        slot.end_jobs()
    for launcher in launchers:
        launcher.close()
    sandbox.sweep_unclaimed()
    for folder in (gates, turns):
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    return 3 if any(slot.error for slot in slots) else 0
