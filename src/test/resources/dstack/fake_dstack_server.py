#!/usr/bin/env python3
"""A fake dstack server for the tests: the HTTP API the service uses, built from dstack's own source (github
dstackai/dstack, master 511c318c; paths below are under src/dstack/_internal/ unless they say runner/).

    python3 fake_dstack_server.py HOME      prints "LISTENING <port>", serves on 127.0.0.1 until killed

A run's container is a real local process: the task's commands joined with " && " (server/services/jobs/
configurators/base.py:582) under /bin/sh, in a pseudo-terminal (stdout and stderr merged, "\\n" written as "\\r\\n"),
in a working folder where the run's file archives are extracted as the runner does (runner/internal/runner/
executor/files.go:19, 62-100: the first path component renamed to the destination's last one). Its output goes
through the runner's ANSI stripper into whole LF-ended lines (AnsiStrip), stamped as the runner stamps them
(MonotonicTimestamp: repeated past 999 events a second), under the runner's hourly log quota (runner_write), and
is served as the configured log storage serves it (logs_poll: file, CloudWatch or fluent-bit ship-only).

Knobs: HOME/config.json, read on every request (the tests rewrite it), see KNOBS. State: GET /fake/state.
"""
import base64
import codecs
import email.parser
import email.policy
import io
import json
import os
import pty
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOME = sys.argv[1]
KNOBS = {
    "token": "test-token",            # the only token accepted
    "server_version": "0.20.29",      # server/routers/server.py:13-18
    "step_seconds": 0.2,              # how long each status before running lasts
    "no_capacity_attempts": 0,        # the first N runs end "no capacity"
    "fleet_at_capacity_attempts": 0,  # the first N runs end "Fleet is at capacity"
    "vanish_after_seconds": None,     # a run disappears (deleted) this long after it starts running
    "down_from": None,                # epoch seconds: from then ...
    "down_until": None,               # ... until then, every connection is dropped unanswered
    "cut_random": False,              # cut the stripped log at random byte offsets instead of as the runner does
    "log_delay_seconds": 0,           # events become visible this long after they were written
    "timestamp_counter_max": 999,     # the runner's per-second counter cap (timestamp.go:50)
    "log_quota_hour": 50 * 2 ** 20,   # DSTACK_SERVER_LOG_QUOTA_PER_JOB_HOUR (server/settings.py:195-196); 0: none
    "log_storage": "file",            # file | cloudwatch | fluentbit (ship-only): see logs_poll
    "kill_delay_seconds": 10,         # SIGINT, then SIGKILL this long after (executor.go:504-512, killDelay)
    "pull_seconds": None,             # how long the image pull lasts (default: step_seconds), with its progress
    "page_limit": None,               # pages of at most this many events (whatever the request's limit), so
                                      # that a short log is still served over several next_token pages
    "max_duration_seconds": None,     # overrides the task's max_duration
    "cost_usd": None,                 # a finished run's cost as dstack reports it (default: price x running time)
    "ignore_stop": False,             # runs/stop is accepted but the runner is never told (no signal at all)
    "other_users": {},                # token -> username: more members of the project (their runs are theirs)
    "secrets_forbidden": False,       # the token's user is a plain member: secrets need a project manager
    "upload_limit": 2 * 2 ** 20,      # DSTACK_SERVER_CODE_UPLOAD_LIMIT (server/settings.py:190); 0: none
    "buffering_proxy": False,         # a proxy in front buffers bodies: a chunked upload arrives with its length
}
lock = threading.RLock()
caller = threading.local()  # the user of the request being served (.user)
runs = {}       # run name -> Run
fleets = {}     # fleet name -> dict
archives = {}   # hash -> {"id", "hash", "blob"}
requests_seen = []
ever_runs = []  # every run name ever applied (runs may vanish)
paged_polls = [0]  # logs/poll calls that asked for a next page


def knobs():
    values = dict(KNOBS)
    try:
        with open(os.path.join(HOME, "config.json")) as f:
            values.update(json.load(f))
    except (OSError, ValueError):
        pass
    return values


def now():
    return datetime.now(timezone.utc)


def iso(moment):
    # pydantic's JSON for an aware UTC datetime (server/utils/routers.py:32-51 serializes with to_json)
    return moment.isoformat().replace("+00:00", "Z")


class ClientError(Exception):
    """ServerClientError: 400 {"detail": [{"msg", "code"}]} (server/app.py:280-285, utils/routers.py:145-151)."""

    def __init__(self, msg, code="error", status=400):
        super().__init__(msg)
        self.msg, self.code, self.status = msg, code, status


def not_found(msg):
    return ClientError(msg, "resource_not_exists")  # core/errors.py:57-59


class Extra(Exception):
    """pydantic's extra="forbid" (core/models/common.py:50): FastAPI answers 422."""

    def __init__(self, loc):
        super().__init__(loc)
        self.loc = loc


def only(body, allowed, loc):
    if not isinstance(body, dict):
        raise Extra(loc)
    for key in body:
        if key not in allowed:
            raise Extra(loc + [key])


# Request schemas (server/schemas/*.py) and the models they embed (core/models/*.py), as far as the fake reads them.
RUN_SPEC = {"run_name", "repo_id", "repo_data", "repo_code_hash", "repo_dir", "file_archives", "working_dir",
            "configuration_path", "configuration", "profile", "ssh_key_pub"}          # core/models/runs.py:543-610
TASK = {"type", "name", "image", "env", "commands", "max_duration", "resources", "fleets", "spot_policy", "retry",
        "max_price", "creation_policy", "files", "working_dir", "user", "privileged", "shell", "nodes", "ports",
        "volumes", "backends", "regions", "idle_duration", "python", "entrypoint", "registry_auth", "docker",
        "utilization_policy", "stop_duration", "priority", "reservation", "instance_types", "tags"}
# core/models/configurations.py:518-690 with profiles.py:237-400 (a subset: what a task may carry)
FLEET_CONF = {"type", "name", "nodes", "backends", "resources", "idle_duration", "spot_policy", "placement",
              "ssh_config", "env", "regions", "max_price", "reservation", "blocks", "tags", "instance_types",
              "retry", "availability_zones", "termination_policy", "termination_idle_time"}  # core/models/fleets.py


class Run:
    def __init__(self, spec, user="admin"):
        self.id = str(uuid.uuid4())
        self.name = spec["run_name"]
        self.spec = spec
        self.user = user
        self.submitted_at = now()
        self.status = "submitted"
        self.termination_reason = None
        self.job = {"id": str(uuid.uuid4()), "submission_num": 0, "submitted_at": iso(now()),
                    "last_processed_at": iso(now()), "status": "submitted", "status_message": "submitted",
                    "termination_reason": None, "termination_reason_message": None, "exit_status": None,
                    "job_provisioning_data": None, "image_pull_progress": None}
        self.step_at = time.time()
        self.process = None
        self.workdir = None
        self.events = []  # (datetime, bytes) of the job's log
        self.running_since = None
        self.cost = 0.0
        self.stop = None  # None, "stop" or "abort"
        self.deleted = False
        self.members = set()  # every process seen in the container (its cgroup)
        self.clock = None  # the runner's MonotonicTimestamp, from the container's start
        self.quota_hour, self.quota_used, self.quota_exceeded = 0, 0, False
        self.interrupted_at = None  # when the runner sent SIGINT (a stop)

    def to_json(self):
        job = dict(self.job)
        return {"id": self.id, "project_name": "main", "user": self.user, "fleet": None,
                "submitted_at": iso(self.submitted_at), "last_processed_at": iso(now()), "status": self.status,
                # the run-level message is only "pulling", "retrying" or the status (see the reference note)
                "status_message": "pulling" if job["status"] == "pulling" else self.status,
                "termination_reason": self.termination_reason, "run_spec": self.spec, "jobs": [],
                "latest_job_submission": job, "cost": round(self.cost, 6), "service": None,
                "deployment_num": 0, "error": None, "deleted": None}


def job_status_message(job):
    """services/jobs/__init__.py:604-627 _get_job_status_message."""
    status, reason, message = job["status"], job["termination_reason"], job["termination_reason_message"] or ""
    if status == "done":
        return "exited (0)"
    if status == "failed":
        if reason == "container_exited_with_error":
            return "exited (%s)" % job["exit_status"]
        if reason == "failed_to_start_due_to_no_capacity":
            return "no fleets" if "No matching fleet found" in message else "no capacity"
        if reason == "interrupted_by_no_capacity":
            return "interrupted"
        return "error"
    if status == "terminated":
        if reason == "terminated_by_user":
            return "stopped"
        if reason == "aborted_by_user":
            return "aborted"
    return status


def finish_job(run, status, reason, message=None, exit_status=None):
    job = run.job
    job.update(status=status, termination_reason=reason, termination_reason_message=message,
               exit_status=exit_status, last_processed_at=iso(now()))
    job["status_message"] = job_status_message(job)
    # RunTerminationReason and its status (core/models/runs.py:90-125): a job that failed fails the run
    if run.stop == "abort":
        run.status, run.termination_reason = "terminated", "aborted_by_user"
    elif run.stop == "stop":
        run.status, run.termination_reason = "terminated", "stopped_by_user"
    elif status == "done":
        run.status, run.termination_reason = "done", "all_jobs_done"
    else:
        run.status, run.termination_reason = "failed", "job_failed"
    if knobs()["cost_usd"] is not None:
        run.cost = knobs()["cost_usd"]
    elif run.running_since is not None:
        price = (job["job_provisioning_data"] or {}).get("price", 0)
        run.cost = price * (time.time() - run.running_since) / 3600.0
    for fleet in fleets.values():
        for instance in fleet["instances"]:
            if instance.get("job") == run.name:
                instance["status"], instance["job"] = "idle", None


attempts = {"no_capacity": 0, "fleet_at_capacity": 0}


def advance(run, k):
    """One step of a run's life (server/background/pipeline_tasks/jobs_submitted.py, jobs_running.py)."""
    if run.status in ("done", "failed", "terminated"):
        return
    job = run.job
    if run.stop and job["status"] in ("submitted", "provisioning", "pulling"):
        finish_job(run, "terminated" if run.stop == "stop" else "aborted",
                   "terminated_by_user" if run.stop == "stop" else "aborted_by_user")
        return
    if time.time() - run.step_at < k["step_seconds"]:
        return
    run.step_at = time.time()
    if job["status"] == "submitted":
        run.status = "submitted"
        wanted = run.spec["configuration"].get("fleets")
        if wanted and not any(name in fleets for name in wanted):
            # jobs_submitted.py:1024-1031: a task with fleets: whose fleets cannot be used
            finish_job(run, "failed", "failed_to_start_due_to_no_capacity", "Failed to use specified fleets")
            return
        if attempts["no_capacity"] < k["no_capacity_attempts"]:
            attempts["no_capacity"] += 1
            fleet = wanted[0] if wanted else "fleet"
            # jobs_submitted.py:1540-1549 (0.21.1+)
            finish_job(run, "failed", "failed_to_start_due_to_no_capacity",
                       "Failed to provision in fleet %r: tried 3 of 3 offers, all failed." % fleet)
            return
        if attempts["fleet_at_capacity"] < k["fleet_at_capacity_attempts"]:
            attempts["fleet_at_capacity"] += 1
            finish_job(run, "failed", "failed_to_start_due_to_no_capacity", "Fleet is at capacity")  # :663-668
            return
        job["status"] = job["status_message"] = "provisioning"
        run.status = "provisioning"
        job["job_provisioning_data"] = {"backend": "amddevcloud", "instance_type": {"name": "gpu-mi300x1-192gb"},
                                        "instance_id": "droplet-1", "region": "atl1", "price": 1.99,
                                        "username": "root", "hostname": "127.0.0.1"}
        for name in wanted or []:
            if name in fleets:
                instances = fleets[name]["instances"]
                free = [i for i in instances if i["status"] == "idle"]
                instance = free[0] if free else None
                if instance is None:
                    instance = {"id": str(uuid.uuid4()), "project_name": "main", "backend": "amddevcloud",
                                "instance_type": {"name": "gpu-mi300x1-192gb"}, "name": "%s-%d" % (name, len(instances)),
                                "instance_num": len(instances), "status": "provisioning", "region": "atl1",
                                "price": 1.99, "created": iso(now())}
                    instances.append(instance)
                instance["status"], instance["job"] = "busy", run.name
    elif job["status"] == "provisioning":
        job["status"] = job["status_message"] = "pulling"
        run.pull_started = time.time()
    elif job["status"] == "pulling":
        # JobSubmission.image_pull_progress (core/models/runs.py:422-433, 457), from the shim's pull tracker
        # (runner/internal/shim/docker.go:132-150, jobs_running.py:937-939): bytes so far of an estimated total.
        pull = k["pull_seconds"] if k["pull_seconds"] is not None else 0
        done = min(1.0, (time.time() - run.pull_started) / pull) if pull else 1.0
        total = 8 * 2 ** 30
        job["image_pull_progress"] = {"downloaded_bytes": int(total * done), "extracted_bytes": int(total * done * 0.9),
                                      "total_bytes": total, "is_total_bytes_final": True}
        if done < 1.0:
            return
        job["status"] = job["status_message"] = "running"
        run.status = "running"
        run.running_since = time.time()
        job["image_pull_progress"] = None
        start_container(run, k)


def extract(run, workdir):
    """files.go:62-100: each archive extracted so that its first path component becomes the destination's name."""
    for mapping in run.spec.get("file_archives", []):
        blob = next(a["blob"] for a in archives.values() if a["id"] == mapping["id"])
        dest = os.path.join(workdir, mapping["path"])
        base, name = os.path.split(dest)
        os.makedirs(base, exist_ok=True)
        shutil.rmtree(dest, ignore_errors=True)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            for member in tar.getmembers():
                member.name = re.sub(r"^([^/]*)(/|$)", name + r"\2", member.name)
                tar.extract(member, base)


def interpolate_secrets(value):
    """utils/interpolator.py (VariablesInterpolator, namespace "secrets"; names of letters, digits, '_' and '.'):
    each ${{ secrets.NAME }} becomes the secret's value, done when the job is handed to the runner
    (pipeline_tasks/jobs_running.py:626-634; jobs/__init__.py:173-175). A missing one is an error."""
    def one(match):
        name = match.group(1)
        if name not in secrets:
            raise ValueError("Secrets interpolation error: %s is not defined" % ("secrets." + name))
        return secrets[name]
    return re.sub(r"\$\{\{\s*secrets\.([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}", one, value)


def start_container(run, k):
    workdir = tempfile.mkdtemp(prefix="fake-dstack-run-")
    run.workdir = workdir
    extract(run, workdir)
    conf = run.spec["configuration"]
    env = dict(os.environ)
    try:
        env.update({key: interpolate_secrets(str(value)) for key, value in (conf.get("env") or {}).items()})
    except ValueError as e:  # jobs_running.py:634-640: the job is terminated by the server with the message
        finish_job(run, "terminated", "terminated_by_server", str(e))
        return
    env["FAKE_DSTACK_RUN"] = run.name
    run.clock = MonotonicTimestamp()
    master, slave = pty.openpty()
    run.process = subprocess.Popen(["/bin/sh", "-c", " && ".join(conf.get("commands", []))], cwd=workdir, env=env,
                                   stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    threading.Thread(target=pump, args=(run, master, k), daemon=True).start()


PLAIN = re.compile(r"[^\x00-\x1f\x1b]+")


class AnsiStrip:
    """The runner's job log writer: dstackai/ansistrip v0.0.6 (ansistrip.go), as executor.go:600-601 uses it with
    a 500 ms inactivity flush, a 3 s forced flush and a 32 KiB buffer (executor.go:38-47). The pty's bytes are a
    screen: a printable character is written at the cursor (a line grows with spaces to reach it, :407-440); "\n"
    moves to the next line's start, "\r" and "\b" move the cursor back (:389-405); every other control character,
    tabs included, is dropped (:407: only r >= ' ' is written); CSI sequences move the cursor or erase (:470-512),
    colours ('m') and modes ('h', 'l') vanish. A flush writes the lines above the cursor, each with its trailing
    spaces trimmed and one "\n" (:245-290), in writes of at most 32 KiB; a line longer than that is cut (:276-284);
    when the buffer passes 32 KiB the current line's head goes out alone, without "\n" (:302-338); at close,
    everything (:240, flushAll), the current line with a "\n" too. An empty line is never in the buffer: dropped."""

    def __init__(self, max_buffer=32 * 1024):
        self.max = max_buffer
        self.lines = {}  # y -> list of characters
        self.x = self.y = 0
        self.size = 0
        self.state, self.seq, self.params = "normal", "", ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("ignore")  # :360-365: invalid bytes are skipped
        self.caret_moved = False

    def feed(self, data):
        """Takes pty bytes; answers the writes a full buffer forces out (:149-156)."""
        out = []
        text = self.decoder.decode(data)
        i = 0
        while i < len(text):
            if self.state == "normal":
                plain = PLAIN.match(text, i)  # a run of printable characters, written at once
                if plain:
                    self.write(plain.group())
                    i = plain.end()
                    if self.size > self.max:
                        out += self.flush(False)
                    continue
            r = text[i]
            i += 1
            if self.state != "normal" and self.seq and r < " ":  # :368-370
                self.incomplete()
            if self.state == "normal":
                self.normal(r)
            elif self.state == "escape":
                self.seq += r
                if r == "[":
                    self.state, self.params = "csi", ""
                else:
                    self.incomplete()
            else:
                self.csi(r)
            if self.size > self.max:
                out += self.flush(False)
        return out

    def write(self, chars):
        """handleNormalRune's default branch (:407-440) for each character: written over the line at the cursor."""
        line = self.lines.setdefault(self.y, [])
        if len(line) < self.x:
            self.size += self.x - len(line)
            line.extend(" " * (self.x - len(line)))
        old = line[self.x:self.x + len(chars)]
        self.size += len(chars.encode()) - len("".join(old).encode())
        line[self.x:self.x + len(chars)] = chars
        self.x += len(chars)

    def normal(self, r):
        if r == "\x1b":
            self.state, self.seq = "escape", r
        elif r == "\n":
            self.y, self.x = self.y + 1, 0
        elif r == "\r":
            self.x, self.caret_moved = 0, True
        elif r == "\b":
            self.x, self.caret_moved = max(0, self.x - 1), True
        elif r >= " ":
            self.write(r)

    def incomplete(self):
        """:514-525: an unfinished sequence is written as it came (its ESC, a control character, is dropped)."""
        seq, self.seq, self.state = self.seq, "", "normal"
        for r in seq:
            self.normal(r)

    def csi(self, r):
        self.seq += r
        if r.isdigit() or r == ";" or (r == "?" and not self.params):
            self.params += r
            return
        params = [p.lstrip("?") for p in self.params.split(";")]
        self.state, self.seq = "normal", ""
        n = int(params[0]) if params[0].isdigit() else None
        if r in "ABCD":  # :540-561
            step = n or 1
            self.y += {"A": -step, "B": step}.get(r, 0)
            self.x += {"C": step, "D": -step}.get(r, 0)
            self.x, self.y = max(0, self.x), max(0, self.y)
        elif r == "G":
            self.x = max(0, (n or 1) - 1)
        elif r in "Hf":
            col = int(params[1]) if len(params) > 1 and params[1].isdigit() else 1
            self.y, self.x = max(0, (n or 1) - 1), max(0, col - 1)
        elif r == "K" and self.y in self.lines:  # erase in line: to the end (0), or all of it (2)
            line = self.lines[self.y]
            before = len("".join(line).encode())
            if (n or 0) == 0:
                del line[self.x:]
            else:
                line[:] = [" "] * len(line) if (n or 0) == 2 else [" "] * min(len(line), self.x + 1) + line[self.x + 1:]
            self.size += len("".join(line).encode()) - before
        else:  # 'J' and colours, modes, the rest: nothing kept
            return
        self.caret_moved = True

    def flush(self, flush_all):
        """flushInternal (:245-338): the writes (bytes) it makes."""
        writes, batch = [], b""
        for y in sorted(self.lines):
            if not (flush_all or y < self.y):
                continue
            text = "".join(self.lines.pop(y)).rstrip(" \x00").encode()
            if batch and len(batch) + len(text) + 1 > self.max:
                writes.append(batch)
                batch = b""
            while len(batch) + len(text) > self.max:  # a line over 32 KiB is cut
                room = self.max - len(batch)
                writes.append(batch + text[:room])
                batch, text = b"", text[room:]
            batch += text + b"\n"
        if batch:
            writes.append(batch)
        self.size = sum(len("".join(l).encode()) for l in self.lines.values())
        if not flush_all and self.size > self.max and self.lines.get(self.y):
            line = self.lines[self.y]
            head = "".join(line).encode()[:self.max].decode("utf-8", "ignore")
            writes.append(head.encode())
            del line[:len(head)]
            self.x = max(0, self.x - len(head))
            self.size -= len(head.encode())
        return writes

    def close(self):
        return self.flush(True)


class MonotonicTimestamp:
    """runner/internal/runner/executor/timestamp.go:11-60: whole seconds since the runner's start x 1000 plus a
    counter for the events within that second, capped at 999 (then every event of the second has the same stamp).
    The knob "timestamp_counter_max" lowers the cap, so that a test repeats stamps without 32 MB a second."""

    def __init__(self):
        self.initial = time.monotonic()
        self.initial_unix = int(time.time())
        self.elapsed, self.counter = 0, 0

    def next(self, cap):
        elapsed = int(time.monotonic() - self.initial)
        if elapsed == self.elapsed:
            if self.counter < cap:
                self.counter += 1
        else:
            self.elapsed, self.counter = elapsed, 0
        return (self.initial_unix + self.elapsed) * 1000 + self.counter


def runner_write(run, message, k):
    """The runner's job log (runner/internal/runner/executor/logs.go:46-67, appendWriter.Write): a write past the
    hourly quota (log_quota_hour, server/services/runner/client.py:147-155, DSTACK_SERVER_LOG_QUOTA_PER_JOB_HOUR
    50 MiB by default, server/settings.py:195-196) is refused and the job killed (executor.go:615-640, 248-256);
    else one event, stamped by the runner's clock. The server stores it with the message decoded, errors replaced
    (filelog.py:241-249); the fake's server sees it at once (dstack pulls at most every 5 s: jobs_running.py:161)."""
    with lock:
        if run.quota_exceeded:
            return
        quota = k["log_quota_hour"]
        hour = int((time.monotonic() - run.clock.initial) // 3600)
        if hour != run.quota_hour:
            run.quota_hour, run.quota_used = hour, 0
        if quota and run.quota_used + len(message) > quota:
            run.quota_exceeded = True
            signal_group(run, signal.SIGKILL)  # executor.go:626-628: cmd.Process.Kill()
            return
        run.quota_used += len(message)
        run.events.append((run.clock.next(k["timestamp_counter_max"]), time.time(),
                           message.decode("utf-8", "replace")))


def pump(run, master, k):
    """The runner's copy of the pty's output into the ansistrip writer (executor.go:596-640): flushed 500 ms after
    the cursor last moved, every 3 s, and whenever 32 KiB wait (AnsiStrip). With the knob "cut_random" the stripped
    output is cut at random byte offsets instead: lines straddle events, as dstack does only for lines over 32 KiB."""
    strip = AnsiStrip()
    moved_at, forced_at = None, time.time()
    pending = b""

    def write(chunks):
        nonlocal pending
        for chunk in chunks:
            if not knobs()["cut_random"]:
                runner_write(run, chunk, knobs())
                continue
            pending += chunk
            while pending:
                size = random.randint(1, min(len(pending), 97))
                runner_write(run, pending[:size], knobs())
                pending = pending[size:]

    while True:
        ready, _, _ = select.select([master], [], [], 0.05)
        data = None
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            write(strip.feed(data))
            if strip.caret_moved:
                strip.caret_moved, moved_at = False, time.time()
        if data == b"":
            break
        if moved_at is not None and time.time() - moved_at >= 0.5:
            moved_at = None
            write(strip.flush(False))
            forced_at = time.time()
        elif time.time() - forced_at >= 3:
            write(strip.flush(False))
            forced_at = time.time()
    write(strip.close())
    os.close(master)
    code = run.process.wait()
    with lock:
        if run.quota_exceeded:  # executor.go:248-256
            finish_job(run, "failed", "log_quota_exceeded",
                       "Job log output exceeded the hourly quota of %d bytes" % k["log_quota_hour"])
        elif run.stop:
            finish_job(run, "terminated" if run.stop == "stop" else "aborted",
                       "terminated_by_user" if run.stop == "stop" else "aborted_by_user", exit_status=code)
        elif getattr(run, "max_duration_hit", False):
            # JobTerminationReason.MAX_DURATION_EXCEEDED -> JobStatus.TERMINATED (core/models/runs.py:175)
            finish_job(run, "terminated", "max_duration_exceeded", "Max duration exceeded")
        elif code == 0:
            finish_job(run, "done", "done_by_runner", exit_status=0)
        else:
            # Go's ExitCode() is -1 for a process a signal ended (executor.go:263)
            finish_job(run, "failed", "container_exited_with_error", exit_status=code if code > 0 else -1)
    shutil.rmtree(run.workdir, ignore_errors=True)


def parse_duration(text):
    match = re.fullmatch(r"(\d+)([smhd]?)", str(text or ""))
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def ticker():
    while True:
        time.sleep(0.05)
        k = knobs()
        tick = getattr(ticker, "count", 0) + 1
        ticker.count = tick
        with lock:
            for run in list(runs.values()):
                if tick % 20 == 0:
                    remember_members(run)
                advance(run, k)
                if run.interrupted_at is not None and time.time() - run.interrupted_at > k["kill_delay_seconds"]:
                    run.interrupted_at = None
                    signal_group(run, signal.SIGKILL)
                limit = k["max_duration_seconds"] or parse_duration(run.spec["configuration"].get("max_duration"))
                if run.status == "running" and limit and run.running_since \
                        and time.time() - run.running_since > limit and not getattr(run, "max_duration_hit", False):
                    run.max_duration_hit = True
                    signal_group(run, signal.SIGKILL)
                vanish = k["vanish_after_seconds"]
                if vanish is not None and run.running_since and time.time() - run.running_since > vanish:
                    signal_group(run, signal.SIGKILL)
                    del runs[run.name]


def descendants(pid):
    """Every process started under pid, sessions and groups of their own included (the agent calls setsid)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def signal_group(run, sig):
    """A container is everything its first process started, as its cgroup holds it: all of it gets the signal,
    whether or not its first process is still there."""
    remember_members(run)
    for pid in run.members:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def remember_members(run):
    # Orphans are re-parented away from the container's first process: once seen, a member stays one (and its
    # own children join).
    if run.process is None:
        return
    for pid in [run.process.pid] + list(run.members):
        if alive(pid):
            run.members.update([pid] + descendants(pid))


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def container_alive(run):
    remember_members(run)
    return any(alive(pid) for pid in run.members)


def version_tuple(text):
    numbers = [int(n) for n in re.findall(r"\d+", text or "")[:3]]
    return tuple(numbers + [0] * (3 - len(numbers))) if numbers else None


def check_version(header, server):
    """server/utils/routers.py:160-199, applied to every /api/ route (server/app.py:361-371)."""
    if header is None:
        return
    client = version_tuple(header)
    if client is None:
        raise ClientError("Invalid version: '%s'" % header)
    ours = version_tuple(server)
    if ours and client > ours and (client[0] > ours[0] or client[1] > ours[1]):
        raise ClientError("The client/CLI version (%s) is incompatible with the server version (%s)."
                          % (header, server))


def parse_time(text):
    if text is None:
        return None
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        # filelog.py:81 compares it with the events' aware timestamps: TypeError, a 500
        raise TypeError("can't compare offset-naive and offset-aware datetimes")
    return moment


def version_before(version, than):
    """Whether dstack version text ``version`` is older than ``than`` (a dev build, 0.0.0, is never older)."""
    parse = lambda v: tuple(int(p) for p in re.findall(r"\d+", v)[:3])
    return parse(version) != (0, 0, 0) and parse(version) < parse(than)


# ---- routes

def get_info(body, k):
    only(body, set(), ["body"])
    return {"server_version": k["server_version"]}


def project_get(body, k):
    """server/routers/projects.py:124-131: the project (a subset of core/models/projects.py Project)."""
    return {"project_id": "00000000-0000-0000-0000-000000000001", "project_name": "main", "owner":
            {"username": "admin"}, "created_at": iso(now()), "backends": [], "members": [], "is_public": False}


def get_archive_by_hash(body, k):
    only(body, {"hash"}, ["body"])
    archive = archives.get(body["hash"])
    if archive is None:
        raise ClientError("Resource not found", "resource_not_exists")  # routers/files.py:39-40
    return {"id": archive["id"], "hash": archive["hash"]}


def upload_archive(handler, raw, k):
    # routers/files.py:53-64 with utils/routers.py:154-157: the size is the Content-Length header's, 0 without one
    # (a chunked upload is not checked), unless a buffering proxy in front sent it with its length.
    size = int(handler.headers.get("Content-Length") or (len(raw) if k["buffering_proxy"] else 0))
    if k["upload_limit"] > 0 and size > k["upload_limit"]:
        raise ClientError("Archive size is %dB, which exceeds the limit of %dB. Use .gitignore/.dstackignore to "
                          "exclude large files. This limit can be modified by setting the "
                          "DSTACK_SERVER_CODE_UPLOAD_LIMIT environment variable." % (size, k["upload_limit"]))
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + handler.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
    for part in message.iter_parts():
        if part.get_param("name", header="content-disposition") == "file":
            name = part.get_filename()
            if not name:
                raise ClientError("filename not specified")  # services/files.py:65-66
            # services/files.py:67: the file name IS the hash; nothing checks it
            archive = archives.setdefault(name, {"id": str(uuid.uuid4()), "hash": name,
                                                 "blob": part.get_payload(decode=True)})
            return {"id": archive["id"], "hash": archive["hash"]}
    raise Extra(["body", "file"])


def run_apply(body, k):
    only(body, {"plan", "force"}, ["body"])
    only(body["plan"], {"run_spec", "current_resource"}, ["body", "plan"])
    spec = body["plan"]["run_spec"]
    only(spec, RUN_SPEC, ["body", "plan", "run_spec"])
    conf = spec.get("configuration")
    only(conf, TASK, ["body", "plan", "run_spec", "configuration"])
    name = spec.get("run_name") or conf.get("name")
    if not re.match("^[a-z][a-z0-9-]{1,40}$", name or ""):
        raise ClientError("Resource name should match regex '^[a-z][a-z0-9-]{1,40}$'")  # core/services/__init__.py
    for mapping in spec.get("file_archives", []):
        if not any(a["id"] == mapping["id"] for a in archives.values()):
            raise ClientError("File archive %s not found" % mapping["id"])
    if name in runs and runs[name].status not in ("done", "failed", "terminated"):
        raise ClientError("Run %s is active" % name)
    spec = dict(spec, run_name=name)
    run = Run(spec, caller.user)
    runs[name] = run
    ever_runs.append(name)
    return run.to_json()


def run_get(body, k):
    only(body, {"run_name", "id"}, ["body"])
    run = runs.get(body.get("run_name"))
    if run is None:
        raise not_found("Run not found")  # routers/runs.py:114-115
    return run.to_json()


def run_stop(body, k):
    only(body, {"runs_names", "abort"}, ["body"])
    for name in body["runs_names"]:
        run = runs.get(name)
        if run is None or run.status in ("done", "failed", "terminated"):
            continue
        if run.status == "terminating":
            # services/runs/__init__.py:922-931 relabels the run, but its jobs are terminating already and run
            # processing leaves those alone (pipeline_tasks/runs/__init__.py:64-65): an abort now changes nothing.
            continue
        run.stop = "abort" if body["abort"] else "stop"
        if run.process is not None:  # the container runs (its first process may be gone, the rest not)
            run.status = "terminating"
            run.job["status"] = "terminating"
            if body["abort"]:
                # runs/terminating.py:60-66: an aborted running job is not stopped gracefully
                signal_group(run, signal.SIGKILL)
            elif not k["ignore_stop"]:
                interrupt(run)
    return None


def interrupt(run):
    """The runner stops a job's command as exec.CommandContext's Cancel does (executor.go:504-512): SIGINT to the
    command's first process (the shell), SIGKILL once killDelay (10 s) has passed if it is still there (the
    ticker, cmd.WaitDelay). The container then goes with it, every process in it."""
    run.interrupted_at = time.time()
    try:
        os.kill(run.process.pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def runs_list(body, k):
    """server/services/runs/__init__.py:181-330 (list_user_runs, list_projects_run_models)."""
    only(body, {"project_name", "repo_id", "username", "only_active", "include_jobs", "job_submissions_limit",
                "prev_submitted_at", "prev_run_id", "limit", "ascending"}, ["body"])
    username = body.get("username")
    if username is not None and username not in users(k):
        raise ClientError("User not found", "resource_not_exists")  # lines 198-201
    ascending = body.get("ascending", False)
    chosen = [r for r in runs.values()
              if (not body.get("only_active") or r.status not in ("done", "failed", "terminated"))
              and (username is None or r.user == username)]
    prev_at = parse_time(body.get("prev_submitted_at")) if body.get("prev_submitted_at") else None
    prev_id = body.get("prev_run_id")
    if prev_at is not None:  # lines 300-323: the page after (submitted_at, id)
        if ascending:
            chosen = [r for r in chosen if r.submitted_at > prev_at
                      or (prev_id is not None and r.submitted_at == prev_at and r.id < prev_id)]
        else:
            chosen = [r for r in chosen if r.submitted_at < prev_at
                      or (prev_id is not None and r.submitted_at == prev_at and r.id > prev_id)]
    # lines 324-326: newest first by default (submitted_at desc, id asc); ascending: submitted_at asc, id desc
    chosen.sort(key=lambda r: r.id, reverse=ascending)
    chosen.sort(key=lambda r: r.submitted_at, reverse=not ascending)
    return [r.to_json() for r in chosen[:body.get("limit", 100)]]


def users(k):
    """The project's members: "admin" (the knob "token") and the knob "other_users"."""
    return {"admin"} | set(k["other_users"].values())


secrets = {}  # name -> value (project "main")
SECRET_NAME = r"^[A-Za-z0-9-_]{1,200}$"  # services/secrets.py:25


def check_manager(k):
    """secrets routes need ProjectManager (routers/secrets.py, security/permissions.py): 403 "Access denied"."""
    if k["secrets_forbidden"]:
        raise ClientError("Access denied", None, 403)


def secrets_create_or_update(body, k):
    only(body, {"name", "value"}, ["body"])  # schemas/secrets.py CreateOrUpdateSecretRequest
    check_manager(k)
    if not re.match(SECRET_NAME, body["name"]):
        raise ClientError("Secret name should match regex '%s" % SECRET_NAME)  # services/secrets.py:247-249
    if len(body["value"]) > 5000:
        raise ClientError("Secret value length must not exceed 5000")  # services/secrets.py:252-254
    secrets[body["name"]] = body["value"]
    return {"id": str(uuid.uuid5(uuid.NAMESPACE_URL, body["name"])), "name": body["name"], "value": None}


def secrets_delete(body, k):
    only(body, {"secrets_names"}, ["body"])  # schemas/secrets.py DeleteSecretsRequest
    check_manager(k)
    missing = [n for n in body["secrets_names"] if n not in secrets]
    if missing:
        raise not_found("Secrets not found: " + ", ".join(missing))  # services/secrets.py:105
    for name in body["secrets_names"]:
        del secrets[name]
    return None


def secrets_list(body, k):
    check_manager(k)
    return [{"id": str(uuid.uuid5(uuid.NAMESPACE_URL, n)), "name": n, "value": None} for n in sorted(secrets)]


def get_my_user(body, k):
    """server/routers/users.py:63-71 (UserWithCreds, core/models/users.py): the token's user."""
    return {"id": "00000000-0000-0000-0000-00000000000a", "username": caller.user, "global_role": "admin",
            "email": None, "active": True, "created_at": iso(now()), "permissions": {"can_create_projects": True},
            "ssh_public_key": None, "creds": {"token": k["token"]}}


def logs_poll(body, k):
    """server/routers/logs.py -> services/logs/__init__.py:120-135: the configured storage's answer, each message
    sent in base64. The knob "log_storage" picks the storage (services/logs/__init__.py:29-86)."""
    only(body, {"run_name", "job_submission_id", "start_time", "end_time", "descending", "next_token", "limit",
                "diagnose"}, ["body"])
    run = runs.get(body["run_name"])
    start = parse_time(body.get("start_time"))
    limit = min(body.get("limit", 100), k["page_limit"] or 1000)
    storage = k["log_storage"]
    if storage == "fluentbit":
        # fluentbit.py:207-216 (NullLogReader): without Elasticsearch the logs are shipped, never read back.
        return {"logs": [], "external_url": None, "next_token": None}
    if run is None or run.job["id"] != body["job_submission_id"]:
        return {"logs": [], "external_url": None, "next_token": None}  # filelog.py:92-93: no file, no logs
    visible = [e for e in run.events if time.time() - e[1] >= k["log_delay_seconds"]]
    if body.get("next_token"):
        paged_polls[0] += 1
    if storage == "cloudwatch":
        logs, token = cloudwatch_page(visible, start, body.get("next_token"), limit)
        url = "https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#logsV2:log-groups/log-group/" \
              "dstack/log-events/main%2F" + run.name  # aws.py:204-207
    else:
        (logs, token), url = file_page(visible, start, body.get("next_token"), limit), None
    return {"logs": [{"timestamp": iso(ms_time(stamp)), "log_source": "stdout",
                      "message": base64.b64encode(text.encode()).decode()} for stamp, _, text in logs],
            "external_url": url, "next_token": token}


def ms_time(stamp):
    """services/logs/base.py unix_time_ms_to_datetime: the runner's milliseconds as an aware UTC datetime."""
    return datetime.fromtimestamp(stamp / 1000, timezone.utc)


def file_page(events, start, next_token, limit):
    """filelog.py:47-97 (_poll_logs_ascending): the token is the line to start at; lines at or before start_time
    are skipped (:81, strictly after); a token only when the page is full and more lines follow (:88-91)."""
    first = int(next_token or 0)
    logs = []
    for index in range(first, len(events)):
        if start and ms_time(events[index][0]) <= start:
            continue
        logs.append(events[index])
        if len(logs) >= limit:
            return logs, (str(index + 1) if index + 1 < len(events) else None)
    return logs, None


def cloudwatch_page(events, start, next_token, limit):
    """aws.py:115-198: GetLogEvents from the head with startTime (inclusive: events at it are returned again,
    :167-168) and endTime now; a page with events carries CloudWatch's forward token (always there), an empty one
    none (:127-131, :159: ascending)."""
    first = int(next_token[2:]) if next_token else 0
    start_ms = int(start.timestamp() * 1000) if start else None
    logs, index = [], first
    while index < len(events) and len(logs) < limit:
        if start_ms is None or events[index][0] >= start_ms:
            logs.append(events[index])
        index += 1
    return logs, ("f/%d" % index if logs else None)


def fleet_json(fleet):
    return {"id": fleet["id"], "name": fleet["name"], "project_name": "main", "spec": fleet["spec"],
            "created_at": fleet["created_at"], "status": "active", "status_message": None,
            "instances": [{key: value for key, value in i.items() if key != "job"} for i in fleet["instances"]]}


def fleet_get(body, k):
    only(body, {"name", "id"}, ["body"])
    fleet = fleets.get(body.get("name"))
    if fleet is None:
        raise not_found("Fleet not found")
    return fleet_json(fleet)


def check_fleet_spec(spec, loc):
    only(spec, {"configuration", "configuration_path", "profile", "autocreated"}, loc)
    if "profile" not in spec:
        raise Extra(loc + ["profile"])  # core/models/fleets.py:376: required
    conf = spec["configuration"]
    only(conf, FLEET_CONF, loc + ["configuration"])
    if conf.get("nodes") is None and conf.get("ssh_config") is None:
        raise ClientError("No ssh_config or nodes specified")  # services/fleets.py:1397-1398
    if conf.get("nodes") is not None and conf.get("env"):
        # services/fleets.py:1407-1421
        raise ClientError("Backend fleet configuration does not support the following fields: ['env']")


# What a cloud fleet may change in place (services/fleets.py:1251-1276, _check_can_update_fleet_configuration).
FLEET_IN_PLACE = {"nodes", "reservation", "tags", "resources", "backends", "regions", "availability_zones",
                  "instance_types", "spot_policy", "max_price"}


def fleet_changes(current, new):
    """The configuration fields that differ (services/fleets.py:1231-1240 diff_models), in place or not."""
    a, b = current["configuration"], new["configuration"]
    return sorted(key for key in set(a) | set(b) if a.get(key) != b.get(key))


def fleet_plan(body, k):
    only(body, {"spec"}, ["body"])
    check_fleet_spec(body["spec"], ["body", "spec"])
    current = fleets.get(body["spec"]["configuration"].get("name"))
    # services/fleets.py:440-452: an existing fleet it can update is an UPDATE, else a CREATE (a re-create)
    action = "update" if current is not None and set(fleet_changes(current["spec"], body["spec"])) <= FLEET_IN_PLACE \
        else "create"
    return {"project_name": "main", "user": "admin", "spec": body["spec"], "effective_spec": body["spec"],
            "current_resource": fleet_json(current) if current else None, "offers": [], "total_offers": 0,
            "max_offer_price": None, "action": action}


def fleet_apply(body, k):
    only(body, {"plan", "force"}, ["body"])
    only(body["plan"], {"spec", "current_resource"}, ["body", "plan"])
    spec = body["plan"]["spec"]
    check_fleet_spec(spec, ["body", "plan", "spec"])
    name = spec["configuration"]["name"]
    current = fleets.get(name)
    if current is None:  # services/fleets.py:579-590: created
        fleets[name] = {"id": str(uuid.uuid4()), "name": name, "spec": spec, "created_at": iso(now()),
                        "instances": []}
        return fleet_json(fleets[name])
    seen = body["plan"].get("current_resource")
    if not body.get("force") and (seen is None or seen.get("id") != current["id"] or seen.get("spec") != current["spec"]):
        # services/fleets.py:1134-1144 (_update_fleet without force)
        raise ClientError("Failed to apply plan. Resource has been changed. Try again or use force apply.")
    changed = fleet_changes(current["spec"], spec)
    if not set(changed) <= FLEET_IN_PLACE:  # services/fleets.py:1231-1240
        raise ClientError("Failed to update fields %s. Can only update %s." % (changed, sorted(FLEET_IN_PLACE)))
    current["spec"] = spec  # services/fleets.py:1148: updated in place, same id
    return fleet_json(current)


ROUTES = {
    "/api/server/get_info": get_info,
    "/api/users/get_my_user": get_my_user,
    "/api/project/main/secrets/create_or_update": secrets_create_or_update,
    "/api/project/main/secrets/delete": secrets_delete,
    "/api/project/main/secrets/list": secrets_list,
    "/api/project/main/get": project_get,
    "/api/files/get_archive_by_hash": get_archive_by_hash,
    "/api/runs/list": runs_list,
    "/api/project/main/runs/apply": run_apply,
    "/api/project/main/runs/get": run_get,
    "/api/project/main/runs/stop": run_stop,
    "/api/project/main/logs/poll": logs_poll,
    "/api/project/main/fleets/get": fleet_get,
    "/api/project/main/fleets/get_plan": fleet_plan,
    "/api/project/main/fleets/apply": fleet_apply,
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as uvicorn serves

    def log_message(self, *args):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        """The request body, sized or chunked (Vert.x sends multipart uploads chunked; uvicorn takes both)."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self):
        if self.path == "/fake/delete-fleets":  # someone deletes the fleets behind the service's back
            with lock:
                fleets.clear()
            return self.answer(200, {})
        if self.path == "/fake/state":
            with lock:
                self.answer(200, {
                    "runs": {name: dict(r.to_json(), workdir=r.workdir, log="".join(e[2] for e in r.events),
                                        alive=container_alive(r),
                                        pid=r.process.pid if r.process else None) for name, r in runs.items()},
                    "ever_runs": ever_runs, "secrets": sorted(secrets), "paged_polls": paged_polls[0], "fleets": {n: fleet_json(f) for n, f in fleets.items()},
                    "archives": {h: {"id": a["id"], "size": len(a["blob"])} for h, a in archives.items()},
                    "requests": requests_seen[-500:]})
            return
        self.answer(404, {"detail": "Not Found"})

    def do_POST(self):
        k = knobs()
        if k["down_from"] is not None and k["down_from"] <= time.time() < (k["down_until"] or 0):
            self.close_connection = True
            self.connection.shutdown(2)  # the server is away: no answer at all
            return
        raw = self.body()
        path = self.path
        requests_seen.append({"path": path, "version": self.headers.get("X-API-VERSION")})
        auth = self.headers.get("Authorization", "")
        presented = auth[len("Bearer "):] if auth.startswith("Bearer ") else None
        caller.user = "admin" if presented == k["token"] else k["other_users"].get(presented)
        # server/get_info has no auth dependency (server/routers/server.py:13-19): any token, or none, gets it.
        if caller.user is None and path != "/api/server/get_info":
            return self.answer(403, {"detail": {"msg": "Invalid token", "code": None}})  # utils/routers.py:130-135
        if re.match(r"^/api/project/[^/]+/", path) and not path.startswith("/api/project/main/"):
            # ProjectMemberOrPublicAccess / ProjectMember (security/permissions.py:142-144): no such project
            return self.answer(404, {"detail": [{"msg": "Not found", "code": None}]})  # utils/routers.py:117-121
        if version_before(k["server_version"], "0.19.33") and path.endswith("/runs/apply"):
            spec = (json.loads(raw or b"{}").get("plan") or {}).get("run_spec") or {}
            if "ssh_key_pub" not in spec:
                # core/models/runs.py:464-469 at 0.19.32: ssh_key_pub is a required field up to that version
                return self.answer(422, {"detail": [{"type": "missing", "loc": ["body", "plan", "run_spec",
                                                                              "ssh_key_pub"], "msg": "Field required"}]})
        try:
            if path.startswith("/api/"):
                check_version(self.headers.get("X-API-VERSION"), k["server_version"])
            with lock:
                if path == "/api/files/upload_archive":
                    result = upload_archive(self, raw, k)
                elif path in ROUTES:
                    result = ROUTES[path](json.loads(raw or b"{}"), k)
                else:
                    return self.answer(404, {"detail": "Not Found"})
            self.answer(200, result)
        except ClientError as e:
            self.answer(e.status, {"detail": [{"msg": e.msg, "code": e.code}]})
        except Extra as e:
            self.answer(422, {"detail": [{"type": "extra_forbidden", "loc": e.loc,
                                          "msg": "Extra inputs are not permitted"}]})
        except (TypeError, KeyError, ValueError) as e:
            self.answer(500, {"detail": "Internal Server Error: " + str(e)})


def shut_down(signum, frame):
    """Stopped (the test is over): no container outlives the server."""
    with lock:
        for run in runs.values():
            signal_group(run, signal.SIGKILL)
    os._exit(0)


def main():
    signal.signal(signal.SIGTERM, shut_down)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=ticker, daemon=True).start()
    print("LISTENING %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
