"""One submission, start to end: validate, compile, run the worker, report. Every failure becomes an event."""
import concurrent.futures
import dataclasses
import datetime
import json
import math
import os
import queue
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass

from remote_agent import (baseline, builder, catalog, compiler, device, events, gate, launcher, nvcc_steps, physics,
                          profiler, quiet, reference_cache, room, sandbox, stats, turn, verification)
from remote_agent import forked
from remote_agent import worker as worker_module
from remote_agent.payload import DEFAULT_REVIEW_SPEEDUP, PayloadError, parse

JUDGE_ARGV = [sys.executable, "-m", "remote_agent.judge"]

# What the solution's own process may say to the submission's stream: its own check. Its times are never its to say.
FORWARDED = {"CHECKING", "TEST_RESULT", "CHECKED", "WRONG_ANSWER", "RUNTIME_ERROR", "ERROR"}
# The share of ranked results whose replayed times Nsight Compute audits besides every new best of a board
# (audit_reason).
AUDIT_SHARE = 0.05
NEW_BEST, SAMPLED, ASKED = "a new best on its board", "a random sample", "asked"
REPLAY, OWN = "replay", "own"  # the timed pairs: the replay of the recorded call, the solution's own process
FORK_VARIABLE = "KR_FORK_PRESTARTED"  # "0": a warm agent starts its job's processes as new interpreters (forked.py)
AUDIT_AHEAD_VARIABLE = "KR_AUDIT_AHEAD"  # "0": a warm agent starts no audit ahead (Audit): one is started when needed
BUILDER_VARIABLE = "KR_BUILDER"  # "0": a warm agent starts its build's steps itself, not from its builder (builder.py)
SETS_AHEAD_VARIABLE = "KR_SETS_AHEAD"  # "0": a warm agent's judge makes no timed input sets ahead (judge.Ahead)


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def build_plan(code, language, problem, toolchain):
    """What to compile: (sources by file name, entry file, exported symbol, cache key)."""
    sources = {"solution.cu": code}
    entry, symbol = "solution.cu", launcher.HOST_SYMBOL
    if launcher.convention(code) == "kernel":
        sources["launcher.cu"] = launcher.generate(problem, "solution.cu")
        entry, symbol = "launcher.cu", launcher.LAUNCHER_SYMBOL
    key = compiler.cache_key(sources, toolchain.command(language, entry, "lib.so", problem.libraries),
                             toolchain.version)
    return sources, entry, symbol, key


class Prestarted:
    """What a warm agent makes before its payload arrives: the toolchain and nvcc's steps for it, the process that
    will run the solution (Python, PyTorch, the device's context), and one judge with two workers: the verdict's (it
    checks beside the solution's own check) and the replay's (it times after the check); each started into the
    job's room as ever, as a fork of this agent where PyTorch imports here (forked.py), and waiting on its stdin
    for its job (the solution's process first for the reference's, while the solution compiles). Besides, where
    Nsight Compute is, an audit (Audit: in a room of its own, with no device context until it is used). Used by
    one submission only."""

    def __init__(self, work, job_room):
        self.process = self.ready = self.judge = self.judge_started = self.audit = None
        self.workers = {}  # the judge's workers by use: None (the verdict's), REPLAY
        self.work = work
        self.room = job_room
        # First, while this process is small: its builds' steps start from there (builder.py).
        self.builder = builder.Builder.start(job_room) if os.environ.get(BUILDER_VARIABLE, "1") != "0" else None
        try:
            self.audit = self._begin_audit()  # its worker imports PyTorch while this process does, next
            # Forks of this process where PyTorch imports here (forked.py): made now, before its payload is read and
            # before any thread of its own starts.
            self.popen = forked.Forked if os.environ.get(FORK_VARIABLE, "1") != "0" and forked.available() \
                else subprocess.Popen
            self._start()
            if self.audit is not None:
                try:
                    self.audit.start_judge(self.popen)  # the last fork; the audit's threads after it
                except (OSError, subprocess.SubprocessError) as e:
                    log("agent: could not start the audit's judge ahead:", repr(e))
                    self.audit = None  # it ended itself
        except Exception:
            self.discard()
            raise
        if self.judge is not None:  # its log, read from its start: it serves two runs (verification.run)
            threading.Thread(target=_logged, args=("judge:", self.judge.stderr), daemon=True).start()
        _background(device.nvml)  # NVML's start (the device's readings around the job), before the job
        self.nvcc_plans = _background(self._nvcc_plans)
        self.ready = threading.Thread(target=self._then_ready, daemon=True)
        self.ready.start()

    def _start(self):
        argv, env = worker_command(self.work)
        served = argv + ["-", worker_module.NO_CUPTI]
        # No CUPTI session in the solution's process: it records its calls through CUPTI's callbacks itself.
        self.process = self.popen(served, cwd=self.work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, start_new_session=True,
                                  preexec_fn=solution_preexec(self.room, self.work))
        # One judge for the verdict's worker (it checks beside the solution's own check) and the replay's (it times
        # after the check): every process started ahead makes a device context, and those of the next jobs were
        # made beside this one's timed samples (docs/benchmarks.md, run 21). Both workers start now: started once
        # the solution's process was ready, the verdict's was still starting for a fifth of back-to-back jobs
        # (docs/evidence/worker-h100/run18), the replay's when needed (docs/evidence/replay-h100/run3-bench.txt).
        try:
            self.judge, workers = start_judged(self.room, self.work, served, env, 2, popen=self.popen)
        except (OSError, subprocess.SubprocessError) as e:
            log("agent: could not start the judge ahead:", repr(e))
            return
        self.judge_started = time.monotonic()
        self.workers = dict(zip((None, REPLAY), workers))

    def _begin_audit(self):
        """The audit (Audit), begun where Nsight Compute is (and KR_AUDIT_AHEAD is not "0"); None if not."""
        tool = profiler.find_tool("nvcc") if os.environ.get(AUDIT_AHEAD_VARIABLE, "1") != "0" else None
        if not tool:
            return None
        try:
            return Audit.begin(self.work, tool, lazy=True)
        except (OSError, subprocess.SubprocessError) as e:
            log("agent: could not start the audit ahead:", repr(e))
            return None

    def _then_ready(self):
        """The replay's pair ended where there is no nvcc (it replays NVIDIA's device code only), then the solution's
        process read until ready."""
        toolchain = self.toolchain("cuda")
        if (toolchain is None or toolchain.kind != "nvcc") and REPLAY in self.workers:
            verification._kill(self.workers.pop(REPLAY))
        for line in self.process.stderr:
            if line.strip() == worker_module.READY:
                break
            sys.stderr.write(line)

    def take_pair(self, use, job_file):
        """The judge and its worker for ``use`` (None: the verdict's; REPLAY), given the worker's job file as
        verification.run takes it; None if not made."""
        self.ready.join()
        worker = self.workers.pop(use, None)
        if worker is None:
            return None
        log("agent: the judge's processes (%s) were started %.1f s before they were needed" % (
            use or "the verdict", time.monotonic() - self.judge_started))
        return self.judge, worker, job_file

    def tell_ahead(self, job):
        """The judge told of the timed job to come (``job``: its problem, dtype and benchmark settings), which it
        makes the input sets of while it waits (judge.Ahead): the solution compiles meanwhile."""
        if self.judge is not None and os.environ.get(SETS_AHEAD_VARIABLE, "1") != "0":
            verification.send(self.judge, json.dumps({"ahead": job}))

    def take_audit(self):
        """The audit started ahead (Audit), once; None if not made, or if a process of it has ended."""
        audit, self.audit = self.audit, None
        if audit is not None and any(p.poll() is not None for p in (audit.worker, audit.judge)):
            log("agent: the audit started ahead has ended (codes %s, %s)" % (audit.worker.poll(), audit.judge.poll()))
            audit.close()
            return None
        if audit is not None:
            log("agent: the audit's processes were started %.1f s before they were needed" % (
                time.monotonic() - audit.started))
        return audit

    def _nvcc_plans(self):
        """The toolchain, and nvcc's steps for a CUDA solution built in this work folder by either entry (the
        launcher's or the solution's own), made ahead: (toolchain or None, {argv: Plan})."""
        toolchain = compiler.detect("cuda")
        if toolchain is None or toolchain.kind != "nvcc":
            return toolchain, {}
        argvs = [tuple(toolchain.command("cuda", entry, "lib.so")) for entry in ("launcher.cu", "solution.cu")]
        build = os.path.join(self.work, BUILD)
        return toolchain, {argv: nvcc_steps.plan(list(argv), build, compile_env(self.work)) for argv in argvs}

    def toolchain(self, language):
        """The CUDA toolchain found ahead (``compiler.detect`` runs nvidia-smi and nvcc), else found now."""
        found = self.nvcc_plans.result()[0] if language == "cuda" else None
        return found if found is not None else compiler.detect(language)

    def nvcc_plan(self, argv):
        return self.nvcc_plans.result()[1].get(tuple(argv))

    def is_ready(self):
        return not self.ready.is_alive()

    def take(self, job_file):
        """The process, given its job (its stdin stays open: the agent says when it may benchmark); None when it is
        gone (it is then started anew, the cold way)."""
        began = time.monotonic()
        self.ready.join()  # its stderr is read here until it is ready
        waited = time.monotonic() - began
        log("agent: the prestarted worker was " + ("ready" if waited < 0.01 else "ready after %.2f s more" % waited))
        process, self.process = self.process, None
        try:
            process.stdin.write(job_file + "\n")
            process.stdin.flush()
            return process
        except OSError:
            Agent._kill(process)
            return None

    def discard(self):
        if self.builder is not None:
            self.builder.close()
            self.builder = None
        if self.process is not None:
            Agent._kill(self.process)  # ends the reading of its stderr too
        if self.ready is not None:
            self.ready.join()  # before the process is let go: the reading may not have begun
        self.process = None
        verification._kill(*self.workers.values(), *([self.judge] if self.judge is not None else []))
        self.workers.clear()
        if self.audit is not None:
            self.audit.close()
            self.audit = None


# The work folder's own folders, each its user's (the job's): the home of the processes that run the solution, the
# judge's home, the compiler's folder, and the profiler's (its reports in profile mode; its verdict never: a pipe).
# An audit has a work folder of its own, with a home and a judge's home (Audit).
HOME, JUDGE_HOME, BUILD, PROFILER = "home", "judge", "build", "profiler"


WORK_FOLDERS = re.compile(r"^kr-agent-(\d+)-")


def make_work(parent=None):
    """The submission's work folder: the agent's (readable, not writable, by the job's user: no job file or library
    of ours can be swapped; by no other job's user), with the job user's own folders inside; bound into the room.
    Named after this process, so that the next agent removes it if this one is killed before its end does (dstack's
    SIGKILL 10 s after its stop, a stopping worker's to its spares): it holds a submission's source and build."""
    parent = parent or tempfile.gettempdir()
    sandbox.remove_orphans(parent, WORK_FOLDERS)
    work = tempfile.mkdtemp(prefix="kr-agent-%d-" % os.getpid(), dir=parent)
    sandbox.work_folder(work)
    for name in (HOME, JUDGE_HOME, BUILD, PROFILER):
        os.makedirs(os.path.join(work, name))
        sandbox.hand_over(os.path.join(work, name))
    return work


def write_job(folder, job, name):
    """A worker's job file in ``folder``: its path."""
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(job, f)
    return path


def worker_command(work):
    """(argv, environment) of a worker in ``work`` (its HOME is the work folder's home/, the one place there that
    user may write); its job file comes after the argv."""
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = sandbox.environment(os.environ, os.path.join(work, HOME),
                              {"PYTHONPATH": package_root, "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1",
                               "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": "/tmp"})
    return [sys.executable, "-m", "remote_agent.worker"], env


def compile_env(work):
    """The compiler's environment: a worker's, at home in the build folder."""
    return dict(worker_command(work)[1], HOME=os.path.join(work, BUILD))


def solution_preexec(job_room, work, nice=0):
    """Starts a process that loads the solution (the timed one, a serving worker) into the room: it writes its
    home alone."""
    return job_room.preexec("solution", work, own=[os.path.join(work, HOME)], nice=nice)


def start_pair(job_room, work, served, env):
    """The judge and its serving worker (``served``), each started into the room on its own, joined by a channel of
    their own (verification.Channel): the judge at home in the judge's folder, the worker as a solution's process."""
    judge, (worker,) = start_judged(job_room, work, served, env, 1)
    return judge, worker


def start_judged(job_room, work, served, env, workers, popen=subprocess.Popen):
    """A judge and ``workers`` serving workers (``served``: their argv), each started into the room on its own and
    joined to the judge by a channel of their own (verification.Channel): (judge, [workers]). ``popen``:
    forked.Forked for a warm agent's."""
    def worker(end):
        return verification.start(served, env, work, solution_preexec(job_room, work), end=end, popen=popen)
    return verification.start_judged(judge_starter(job_room, work, env, popen), *[worker] * workers)


def judge_starter(job_room, work, env, popen=subprocess.Popen, flags=()):
    """How a judge starts, given its ends of its channels: at home in the judge's folder, writing only that."""
    def judge(ends):
        return verification.start(JUDGE_ARGV + list(flags), dict(env, HOME=os.path.join(work, JUDGE_HOME)), work,
                                  job_room.preexec("judge", work, own=[os.path.join(work, JUDGE_HOME)]), end=ends,
                                  popen=popen)
    return judge


class Audit:
    """Nsight Compute's audit of a replay (Agent.audited): a judge, and a worker under the profiler that replays the
    recorded call in NVTX ranges of its own, in a room of their own (room.py), not the job's: no process of the
    job's can see them, signal them, reach anything the profiler opens (its files in /tmp, any socket:
    docs/evidence/probes/ncu-lazy-h100), or see, read or write their folder: a work folder of its own beside the
    job's (``folder``: their homes and the audit's job file), outside the job's room. Their room shows the job's work
    folder read-only (the library whose device code is replayed). The worker speaks on a pipe of its own, the
    profiler's figures come on another (profiler.Output).

    A warm agent starts one ahead for every job (``lazy``), audited or not, so that it being there says nothing: the
    worker under ncu first, a new interpreter importing PyTorch while the agent does, then the judge, forked; neither
    has a device context until its job comes. An audit then costs its device work alone: 1.6-3.4 s on the H100
    where both were started when needed in 6.1-9.0 s (docs/benchmarks.md, runs 28-30)."""

    def __init__(self, audit_room, folder, env, worker, output, channel, lazy):
        self.room, self.folder, self.env = audit_room, folder, env
        self.worker, self.output, self.channel, self.lazy = worker, output, channel, lazy
        self.judge = None
        self.started = time.monotonic()

    @classmethod
    def start(cls, work, tool):
        """One started now, its judge a new interpreter."""
        return cls.begin(work, tool).start_judge()

    @classmethod
    def begin(cls, work, tool, lazy=False):
        """Its folder, its room and its worker under ``tool``, waiting for its job; its judge comes with
        ``start_judge``. Starts no thread: a warm agent forks after this (forked.py)."""
        folder = os.path.realpath(tempfile.mkdtemp(prefix="kr-agent-%d-audit-" % os.getpid(),
                                                   dir=os.path.dirname(os.path.realpath(work))))
        try:
            sandbox.work_folder(folder)
            for name in (HOME, JUDGE_HOME):
                os.makedirs(os.path.join(folder, name))
                sandbox.hand_over(os.path.join(folder, name))
            layout = room.layout_for(work)
            audit_room = room.Room.open(dataclasses.replace(layout, writable=(folder,),
                                                            exposed=layout.exposed + layout.writable))
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        argv, env = worker_command(folder)
        served = profiler.verify_command(tool, argv + ["-", worker_module.NO_CUPTI] + (
            [worker_module.LAZY] if lazy else []))
        channel, output = verification.Channel(), profiler.Output(reading=False)
        try:
            # ncu's heavy start yields to the job's work (nice); its stdout is the agent's pipe, its figures.
            preexec = audit_room.preexec("profiler", folder, own=[os.path.join(folder, HOME)], nice=10)
            worker = verification.start(served, output.environment(env), folder, preexec,
                                        pass_fds=(output.protocol_write,), stdout=output.write_fd, end=channel.worker)
            output.started(worker)
        except BaseException:
            channel.close()
            output.close()
            audit_room.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(audit_room, folder, env, worker, output, channel, lazy)

    def start_judge(self, popen=subprocess.Popen):
        """Its judge (``popen``: forked.Forked, a warm agent's), joined to its worker by their channel; the profiler's
        output read from now on. Returns itself; ends itself if the judge cannot start."""
        try:
            self.judge = judge_starter(self.room, self.folder, self.env, popen,
                                       [worker_module.LAZY] if self.lazy else [])([self.channel.judge])
        except BaseException:
            self.close()
            raise
        finally:
            self._close_channel()
        self.output.read()
        threading.Thread(target=_logged, args=("audit's judge:", self.judge.stderr), daemon=True).start()
        return self

    def job_file(self, job):
        """The worker's job, written into the audit's folder: its path."""
        return write_job(self.folder, job, "audit-job.json")

    def run(self, job_file, judge_job, timeout):
        """The audited replay (``job_file``: the worker's job) judged: (outcome, the profiler's output's text)."""
        outcome = verification.run(None, judge_job, timeout, log, started=(self.judge, self.worker, job_file))
        return outcome, self.output.text()

    def _close_channel(self):
        if self.channel is not None:
            self.channel.close()  # this process's copies, once each end is in its process (or never will be)
            self.channel = None

    def close(self):
        """Its processes, its room with anything left in it, and its folder."""
        verification._kill(*[p for p in (self.worker, self.judge) if p is not None])
        self._close_channel()
        self.output.close()
        self.room.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class Workspace:
    """A job's work folder and its room (room.py), made together and ended together."""
    work: str
    room: room.Room

    @classmethod
    def open(cls, without=()):
        work = make_work()
        try:
            return cls(work, room.Room.open(room.layout_for(work), without))
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise

    def close(self):
        self.room.close()  # every process of the job's ends with it
        shutil.rmtree(self.work, ignore_errors=True)


class Agent:
    def __init__(self, emitter, problems_dir=catalog.PROBLEMS_DIR, cache_dir=None, benchmark=None,
                 prestarted=None, cache_secret=None, workspace=None):
        self.out = emitter
        self.problems_dir = problems_dir
        self.cache_dir = cache_dir or compiler.default_cache_dir()
        self.cache_secret = cache_secret  # the worker's, for its library cache (none: no cache)
        self.benchmark_settings = benchmark or {}
        self.prestarted = prestarted
        self.workspace = workspace  # the caller's to close; else made when first needed, and closed by run()
        self.own_workspace = None
        self.kept_references = None  # benchmark mode: (cache, key, kept times or None): reference_cache_entry
        self.settled = True  # whether the last job's rooms on this GPU had ended when this one's turn came (turn.py)
        if workspace is not None:
            self._stamp()

    @property
    def room(self):
        return self.workspace.room

    def _stamp(self):
        """Every result says how confined the job's processes were."""
        self.out.stamp["isolation"] = self.room.isolation.as_dict()

    def run(self, payload_bytes):
        self.began = time.monotonic()
        try:
            self._run(payload_bytes)
        except Exception:  # noqa: the agent never dies with a bare traceback
            self.out.emit("ERROR", message="the agent failed", details=events.trim(traceback.format_exc()))
        finally:
            if self.prestarted is not None:
                self.prestarted.discard()
            if self.own_workspace is not None:
                self.own_workspace.close()
                turn.release()  # its processes have all ended (a caller's workspace: the caller gives it back)

    def _run(self, payload_bytes):
        try:
            payload = parse(payload_bytes)
        except PayloadError as e:
            self.out.emit("ERROR", message="invalid payload", details="\n".join(e.problems))
            return
        try:
            problem = catalog.load(payload.problem, self.problems_dir)
        except catalog.UnknownProblem:
            self.out.emit("ERROR", message="unknown problem '" + payload.problem + "'",
                          details="known: " + ", ".join(catalog.slugs(self.problems_dir)))
            return
        if payload.dtype not in problem.dtypes:
            self.out.emit("ERROR", message="problem '" + problem.slug + "' does not take dtype " + payload.dtype,
                          details="it takes " + ", ".join(problem.dtypes))
            return
        if payload.mode == "baseline":
            self._open_workspace()
            self.baselines(payload, problem)
            return
        toolchain = (self.prestarted.toolchain(payload.language) if self.prestarted is not None
                     else compiler.detect(payload.language))
        if toolchain is None:
            self.out.emit("ERROR", message="no GPU here: found no NVIDIA GPU with nvcc, nor ROCm with hipcc",
                          details="nvcc: " + str(compiler.find_nvcc()) + "; hipcc: " + str(shutil.which("hipcc")))
            return
        self._open_workspace()
        self.out.emit("COMPILING", compiler=toolchain.version, arch=toolchain.arch)
        if payload.mode == "benchmark" and toolchain.kind == "nvcc" and self.prestarted is not None:
            self.prestarted.tell_ahead(self._job_basis(payload))  # the replay's timed job, which its judge serves
        work = self.workspace.work
        report = self.judge = self.solution = None
        self.kept_references = self.reference_cache_entry(payload, problem, toolchain)
        try:
            self.time_references(payload, work)
            library, symbol = self.compile(payload, problem, toolchain, work)
            if library is None:
                return
            self.job = dict(self._job_basis(payload), library=library, symbol=symbol)
            report = self.execute(payload, problem, toolchain, work)
            if report is None:
                return
            self._mark("the solution's process is done")
            verdict = self.verdict(payload, problem)
            if verdict is None:
                return
            if self.ended(payload, report) is None:
                return
            if payload.mode == "check":
                self.judge.release()
                self.out.emit("CHECKED", **dict(report.checked, verification=verdict))
            elif payload.mode == "profile":
                self.judge.release()
                self.profile(payload, problem, toolchain, work)
            else:
                self.benchmark(payload, problem, toolchain, work, report, verdict)
        finally:
            gate.release()  # whatever ended the benchmark
            if self.judge is not None:
                self.judge.cancel()  # the submission ended before its verdict was needed
            if self.solution is not None and self.solution.child.poll() is None:
                self._kill(self.solution.child)  # the submission ended while it was still ending (or compiling)

    def _open_workspace(self):
        if self.workspace is None:
            self.workspace = self.own_workspace = Workspace.open()
            self._stamp()

    def _mark(self, what):
        """A step's time since the payload came, in the log (docs/benchmarks.md reads them)."""
        log("agent: +%.3f s %s" % (time.monotonic() - self.began, what))

    # ---- compiling

    def compile(self, payload, problem, toolchain, work):
        """The solution built in the room by the job's user, in the build folder: the compiler reads what that user
        may read and nothing else, so no error it prints holds a byte the submission could not read itself. The
        library it leaves is taken out (a plain file, never a link) into the work folder, where the job's user may
        read but not change it. Returns (library, symbol), or (None, None) once the submission is over."""
        try:
            plan = build_plan(payload.code, payload.language, problem, toolchain)
        except launcher.ConventionError as e:
            self.out.emit("COMPILE_ERROR", message=str(e), details="")
            return None, None
        sources, entry, symbol, key = plan
        library = os.path.join(work, "solution.so")
        cache = compiler.LibraryCache(self.cache_dir, self.cache_secret)
        if cache.get(key, library) is not None:
            log("compiled library from the cache:", key)
            return library, symbol
        self._mark("compiling")
        build = os.path.join(work, BUILD)
        for name, text in sources.items():
            _write_new(os.path.join(build, name), text)
        os.makedirs(os.path.join(build, nvcc_steps.KEEP), exist_ok=True)
        sandbox.hand_over(build)
        argv = toolchain.command(payload.language, entry, "lib.so", problem.libraries)
        limit = payload.limits["compile_seconds"]
        steps = self.nvcc_plan(toolchain, argv, work)
        try:
            code, output, by = self._build(steps, argv, build, limit, compile_env(work))
        except subprocess.TimeoutExpired:
            self.out.emit("TIME_LIMIT_EXCEEDED", phase="compile", limit_seconds=limit,
                          message="compilation took longer than " + str(limit) + " s")
            return None, None
        except builder.BuilderGone as e:  # it had taken the build, whose steps may still run: not built again
            self.out.emit("ERROR", message="the process that ran the build ended before it did", details=str(e))
            return None, None
        if code == 0 and not take_out(os.path.join(build, "lib.so"), library):
            code, output = 1, output + "\nthe build left no library (lib.so)"
        if code != 0:
            output = output.replace(build + os.sep, "").replace(work + os.sep, "")
            barred = compiler.unallowed_library(output, problem.libraries)
            message = ("it calls %s (%s), which this problem does not allow a solution to use (allowed: %s)"
                       % (barred[0], barred[1], ", ".join(problem.libraries) or "none")
                       if barred else "compilation failed")
            self.out.emit("COMPILE_ERROR", message=message, details=events.trim(output.strip()))
            return None, None
        self._mark("compiled (%s, started by %s)" % ("nvcc's steps, two sides at once" if steps is not None
                                                     else "by " + toolchain.kind, by))
        cache.put(key, library)
        return library, symbol

    def _build(self, steps, argv, folder, limit, env):
        """builder.build, by the warm agent's builder where there is one: (code, output, whose process started the
        steps). BuilderGone where the builder took the build and did not answer; where it was gone before, the agent
        builds."""
        helper = self.prestarted.builder if self.prestarted is not None else None
        if helper is not None:
            try:
                return helper.build(steps, argv, folder, limit, env) + ("the builder",)
            except builder.BuilderGone as e:
                self.prestarted.builder = None
                helper.close()
                if e.taken:
                    raise
                log("agent: the builder could not build (%s): the agent builds" % e)
        return builder.build(self.room, steps, argv, folder, limit, env) + ("the agent",)

    def nvcc_plan(self, toolchain, argv, work):
        """nvcc's steps for ``argv`` split in two sides (nvcc_steps.py): a warm agent's, made before its job, else
        made now; None where nvcc is not the compiler or its steps are not the shape that module knows."""
        if toolchain.kind != "nvcc":
            return None
        ahead = self.prestarted.nvcc_plan(argv) if self.prestarted is not None else None
        return ahead if ahead is not None else nvcc_steps.plan(argv, os.path.join(work, BUILD), compile_env(work))

    # ---- running the worker

    @staticmethod
    def _worker_argv(work, job, name="job.json"):
        """Writes the worker's job file; returns (argv, environment) that start the worker on it."""
        argv, env = worker_command(work)
        return argv + [write_job(work, job, name)], env

    def _judge_job(self, **extra):
        """A judge's job: the problem it makes inputs for and checks, nothing of the solution's (it loads no
        library)."""
        return dict({k: self.job[k] for k in ("problem", "dtype", "problems_dir")}, **extra)

    def reference_cache_entry(self, payload, problem, toolchain):
        """Benchmark mode: (cache, key, kept) where kept is (times, age) of the reference's times this worker
        took lately on this GPU (reference_cache.py), or None where they are to be timed in this job."""
        if payload.mode != "benchmark":
            return None
        cache = reference_cache.ReferenceCache(self.cache_dir, self.cache_secret)
        key = reference_cache.cache_key(problem, payload.dtype, self._job_basis(payload)["benchmark"],
                                   [toolchain.kind, toolchain.arch, device.physical_index()])
        return cache, key, cache.get(key)

    def time_references(self, payload, work):
        """Benchmark mode, warm: the prestarted solution process times the reference now (while the solution
        compiles), before it has the solution's library; the device is held for it (gate.py). Not where this
        worker's kept figures serve."""
        if payload.mode != "benchmark" or self.prestarted is None or self.kept_references[2] is not None:
            return
        if not self.prestarted.is_ready():
            return  # not yet: it times the reference once it has its job, not holding up the compiler now
        if not self.device_turn(wait=False):
            return  # the device is another job's now: the reference is timed once this job's turn comes
        argv, _ = self._worker_argv(work, dict(self._job_basis(payload), mode="reference"), "reference-job.json")
        child = self.prestarted.take(argv[-1])
        if child is not None:
            gate.hold()
            self.solution = SolutionProcess(child, waits_for_job=True)

    def _job_basis(self, payload):
        return {"problem": payload.problem, "dtype": payload.dtype, "problems_dir": self.problems_dir,
                "benchmark": worker_settings(self.benchmark_settings, payload.benchmark)}

    def _start_worker(self, argv, env, work):
        """The job's worker process on its job file (``argv``'s last): the one started ahead if there is one, else
        one started now into the room."""
        child = self.prestarted.take(argv[-1]) if self.prestarted is not None else None
        if child is None:
            child = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True,
                                     preexec_fn=solution_preexec(self.room, work))
        return child

    def execute(self, payload, problem, toolchain, work):
        """Runs the solution's process (the reference's times, then its check, recording each call's device work
        in benchmark mode) and the judge beside its check. Its reports are the solution's own process speaking, so
        nothing it says ends the submission well: a WorkerReport (its CHECKED, held in check mode, and its RECORDED)
        goes to the judge first. Its first REFERENCES (sent before the solution's library is loaded) are the
        reference's times for good. None when the submission is over (an error was sent)."""
        if not self.device_turn():
            return None
        mode = "check" if payload.mode == "profile" else payload.mode
        kept = self.kept_references[2] if self.kept_references else None
        job = dict(self.job, mode=mode, record=payload.mode == "benchmark" and toolchain.kind == "nvcc",
                   time_references=kept is None)
        argv, env = self._worker_argv(work, job)
        device_start = _background(device.info)  # read while the worker starts
        solution = self.solution
        if solution is None:
            child = self._start_worker(argv, env, work)
            if payload.mode == "benchmark" and kept is None:
                gate.hold()  # it times the reference first
            solution = self.solution = SolutionProcess(child)
        child = solution.child
        references = records = checked = None
        self.references, self.reference_timing, self.reference_window = {}, None, None
        if kept is not None:
            references = self.references = kept[0]
            self.reference_timing = {"timed": "kept", "age_seconds": round(kept[1], 1)}
            self._mark("the reference's times kept from %.0f s ago" % kept[1])
        if payload.mode != "benchmark" or kept is not None:
            self.judge = JudgeRun(self, payload, work)
        phase, limit = "check", payload.limits["test_seconds"]
        deadline = time.monotonic() + limit
        finished = False
        for kind, message in solution.messages(lambda: deadline):
            if kind is None:
                self._kill(child)
                self.out.emit("TIME_LIMIT_EXCEEDED", phase=phase, limit_seconds=limit,
                              message="the " + phase + " phase took longer than " + str(limit) + " s")
                return None
            if kind == "PHASE":
                phase = message["name"]
                deadline = time.monotonic() + limit
            elif kind == "REFERENCES" and payload.mode == "benchmark" and references is None and self.judge is None:
                references = self.references = reference_times(message)  # the gate was released as it came
                self.reference_window = quiet.window_of({t.get("test_id"): t for t in message.get("tests") or []
                                                         if isinstance(t, dict)})
                self.reference_timing = {"timed": "this job"}
                if self.settled and turn.held():
                    quiet.History.of_turn().keep(self.reference_window)  # timed before any code of the job's ran
                if self.kept_references is not None and self.settled:
                    cache, key, _ = self.kept_references
                    cache.put(key, references)
                self._mark("the reference timed")
                if solution.waits_for_job:
                    solution.waits_for_job = False
                    verification.send(child, argv[-1])  # the solution's own job, its library now loaded
                self.judge = JudgeRun(self, payload, work)  # not beside the reference's timing
            elif kind == "RECORDED" and records is None:
                records = message  # a claim: the replay and the judge test it
            elif kind == "DONE":
                finished = True
                break  # its process ends while the judge runs (ended() waits for it)
            elif kind == "CHECKED" and payload.mode == "check":
                checked = message  # the end of a check-mode run: only once the judge agrees
            elif kind in FORWARDED:
                if kind == "CHECKED" and payload.mode == "benchmark" and references is None:
                    self._kill(child)  # its code cannot skip the reference: this is not our worker speaking
                    self.out.emit("ERROR", message="the worker checked before it timed the reference")
                    return None
                self.out.emit(kind, **message)
                if kind in events.TERMINAL:
                    finished = True
        gate.release()
        if payload.mode == "benchmark" and references is None and not self.out.finished:
            # No code of the submission's ran (the library is loaded after REFERENCES): not the kernel's failure.
            code = child.wait()
            solution.err_thread.join(timeout=2)
            self.out.emit("ERROR", message="the worker ended (code %s) before it had timed the reference; the "
                          "solution never ran" % code, details=events.trim("".join(solution.stderr_tail).strip()))
            return None
        report = WorkerReport(checked, device_start.result(), child, solution.err_thread, solution.stderr_tail,
                              finished, records)
        return report if finished and not self.out.finished else self.ended(payload, report)

    def device_turn(self, wait=True):
        """This job's turn on the device (turn.py), held until the agent's end: the other job on this GPU is
        checked, timed or audited first. False if it is not this job's: at once where ``wait`` is False, else once
        an error was sent (it never came)."""
        if turn.held():
            return True
        began = time.monotonic()
        if not turn.take(wait=wait, most=gate.MOST_SECONDS):
            if wait:
                self.out.emit("ERROR", message="the GPU was not free for %.0f s (another job held it)"
                              % gate.MOST_SECONDS)
            return False
        if turn.held():
            gate.clear()  # a flag the last holder of the turn left, killed mid-benchmark: the gate is the turn's
            self.settled = turn.settle()  # the last job's rooms ended before anything of this one's is on the device
        if time.monotonic() - began > 0.01:
            self._mark("the device's turn came after %.3f s" % (time.monotonic() - began))
        return True

    def ended(self, payload, report):
        """The worker's exit, checked: a crash, or an end without its results, is the submission's end (an error
        is sent and None returned); else the report."""
        code = report.child.wait()
        report.err_thread.join(timeout=2)
        checked, finished = report.checked_raw, report.finished
        if self.out.finished:
            return None
        tail = events.trim("".join(report.stderr_tail).strip())
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals.__members__.values() else str(-code)
            self.out.emit("RUNTIME_ERROR", message="the kernel crashed the process (" + name + ")", details=tail)
        elif not finished or code != 0:
            self.out.emit("RUNTIME_ERROR", message="the kernel's process ended with code " + str(code)
                          + " before finishing", details=tail)
        elif payload.mode == "check" and checked is None:
            self.out.emit("RUNTIME_ERROR", message="the kernel's process ended without checking", details=tail)
        else:
            return report
        return None

    # ---- the judge

    def judged(self, payload, work, run=None, on_passed=None):
        """One run of the judge (remote_agent/judge.py): every test once more, on inputs only the judge knows,
        called by a fresh worker serving the solution on buffers the judge owns and checks; ``run`` (a JudgeRun) is
        told its processes. Returns the outcome."""
        judge_job = self._judge_job()
        argv, env = self._worker_argv(work, dict(self.job, mode="serve"), "verify-job.json")
        started = self.prestarted.take_pair(None, argv[-1]) if self.prestarted is not None else None
        began = time.monotonic()
        outcome = verification.run(
            lambda: start_pair(self.room, work, argv, env), judge_job, payload.limits["test_seconds"], log,
            started=started, await_worker=False, on_start=run.hold if run else None, on_passed=on_passed,
            linger=run is not None)
        log("agent: judged in %.2f s (processes started %s)" % (time.monotonic() - began,
                                                                "before the job" if started else "now"))
        return outcome

    def verdict(self, payload, problem):
        """The judge's verdict on the solution's answers (the run started beside its check). Returns it, or None
        when the submission is over (an error was sent)."""
        outcome = self.judge.outcome()
        limit = payload.limits["test_seconds"]
        failure = outcome.failure or {}
        where = "test %s (%s)" % (failure.get("test_id"), failure.get("name"))
        if outcome.status == "FAILED":
            debug = failure.get("debug_info") or {}
            debug.pop("seed", None)  # the judge's inputs stay secret
            message = (where + ": the solution modified its inputs ('" + str(debug.get("modified_input")) + "')"
                       if "modified_input" in debug else where + " does not match the reference on fresh inputs "
                       "that only the judge knew (checked outside the solution's process)")
            self.out.emit("WRONG_ANSWER", message=message, debug_info=debug, passed_tests=len(outcome.results) - 1,
                          total_tests=len(problem.cases))
            return None
        if outcome.status == "CRASHED":
            self.out.emit("RUNTIME_ERROR", message="the kernel's process ended (code " + str(outcome.exit_code)
                          + ") when it was called on the judge's inputs", details=events.trim(outcome.worker_log))
            return None
        if outcome.status == "TIMEOUT":
            self.out.emit("TIME_LIMIT_EXCEEDED", phase="verify", limit_seconds=limit,
                          message="checking on the judge's inputs took longer than " + str(limit) + " s")
            return None
        if outcome.status != "PASSED":
            self.out.emit("ERROR", message="the judge could not check the solution: " + outcome.message,
                          details=events.trim(outcome.worker_log))
            return None
        return {"judge": "passed", "tests": len(outcome.results)}

    # ---- the benchmark

    def benchmark(self, payload, problem, toolchain, work, report, verdict):
        """The times, measured where the submission cannot reach (``measure``), published as BENCHMARK_RESULTs and
        BENCHMARKED; then, for an audited result, Nsight Compute's check of the replay (VERIFIED)."""
        self.out.emit("BENCHMARKING", total_tests=len(problem.cases))
        gate.hold()  # the next jobs' processes wait before touching the device
        try:
            alone = self.end_strays()
            measured = self.measure(payload, problem, toolchain, work, report.records, alone)
        finally:
            gate.release()
            self.judge.release()  # the verdict's processes, idle since their pass, end now: not beside the timing
        if measured is None:
            return
        figures, timing = measured
        timing = self.quiet(figures, timing)
        self._mark("timed (%s)" % timing["method"])
        results = []
        for case in problem.cases:
            result = result_of(problem, payload.dtype, case, figures[case["test_id"]],
                               self.references.get(case["test_id"]))
            results.append(result)
            self.out.emit("BENCHMARK_RESULT", result=result)
        runtime = next((f.get("runtime") for f in figures.values() if isinstance(f.get("runtime"), dict)), None)
        summary = summary_of(results, runtime)
        why = audit_reason(payload.benchmark, summary["geomean_runtime_ms"]) if timing["status"] == "verified" \
            else None
        audit = profiler.find_tool(toolchain.kind) if why else None
        if audit:
            timing = dict(timing, status="pending", audit=profiler.tool_name(toolchain.kind), audit_reason=why)
        verdict["timing"] = timing
        if self.benchmarked(payload, problem, report, verdict, summary) and audit:
            self._mark("benchmarked; audited by " + audit)
            self.out.emit("VERIFIED", timing=self.audited(payload, work, audit, results, timing))
            self._mark("audited")

    def quiet(self, figures, timing):
        """A replay's timing, unranked where its empty windows read long against the GPU's usual ones (quiet.py:
        another context was busy on the device, and its figures may be fast), or where the last job's rooms had
        not ended when this job's turn came (turn.settle); else as it is, and its window kept as this GPU's if it
        is as usual."""
        if timing["method"] != "replayed":
            return timing
        history = quiet.History.of_turn() if turn.held() else None
        usual = quiet.usual((history.read() if history is not None else []) + [self.reference_window])
        why = (None if self.settled else "the last job's processes on this GPU had not ended when this job's turn "
               "came") or quiet.long_window(figures, usual)
        if why is not None:
            log("agent: not ranked:", why)
            self._mark("the GPU was not known quiet: not ranked")
            return dict(timing, status="unranked", reason=why)
        window = quiet.window_of(figures)
        if history is not None and quiet.keeps(window, usual):
            history.keep(window)
        return timing

    def end_strays(self):
        """Before the timing, every process of the job's room ends but the judge and the replay's worker started
        ahead (room.end_strays): the verdict's worker, which ran the submission's host code, and whatever that code
        left running. Another process's work on the device lengthens the replay's empty windows more than its
        samples, and took an honest 2.3 us figure to 1.1 us (docs/evidence/replay-h100/run44-*, neighbour-hog.cu);
        the submission's code must not be able to do that to its own figures. Whether the replay would be timed
        alone: where that is not known, it is not timed at all (the result does not rank)."""
        kept = []
        if self.prestarted is not None:
            kept = [p.pid for p in (self.prestarted.judge, self.prestarted.workers.get(REPLAY)) if p is not None]
        began = time.monotonic()
        ended, alone = self.room.end_strays(kept)
        if ended or not alone:
            self._mark("ended %d process(es) of the job's room before the timing, in %.3f s%s" % (
                len(ended), time.monotonic() - began, "" if alone else "; not known to be alone: not replayed"))
        return alone

    def measure(self, payload, problem, toolchain, work, records, alone=True):
        """Each test's figures and how they were made: (figures by test id, timing), or None once the submission is
        over. The recorded work replayed by a process that never ran the solution's host code (``replayed``: it
        ranks); where it cannot be, or its outputs are wrong, the solution's own process times its own calls
        (``own-process``: it never ranks). Either way every timed sample is on fresh inputs the judge wrote and
        checks."""
        why = unreplayable(toolchain, records, problem) or (
            None if alone else "processes of the job's room could not all be ended before the timing")
        if why is None:
            # Half the time limit: a replay that hangs (a kernel waiting for its host code, say) leaves the rest to
            # the solution's own process.
            outcome = self.timed_run(payload, work, dict(self.job, mode="replay", records=records["records"]), REPLAY,
                                     payload.limits["benchmark_seconds"] / 2)
            figures, why = timed_figures(outcome, problem, "the replay")
            if figures is not None:
                self.replay_records = records["records"]
                return figures, {"method": "replayed", "status": "verified", "by": "replay", "how": REPLAYED}
        log("agent: not replayed:", why)
        self._mark("not replayed; timed in the solution's own process")
        outcome = self.timed_run(payload, work, dict(self.job, mode="serve"), OWN)
        limit = payload.limits["benchmark_seconds"]
        failure = outcome.failure or {}
        if outcome.status == "FAILED":
            debug = failure.get("debug_info") or {}
            debug.pop("seed", None)
            self.out.emit("WRONG_ANSWER", message="test %s (%s) gave a wrong result in timed run %s (each timed run has "
                          "fresh inputs only the judge knew, and every output is checked outside the solution's "
                          "process)" % (failure.get("test_id"), failure.get("name"), debug.get("sample", "?")),
                          debug_info=debug, passed_tests=len(outcome.results) - 1, total_tests=len(problem.cases))
            return None
        if outcome.status == "TIMEOUT":
            self.out.emit("TIME_LIMIT_EXCEEDED", phase="benchmark", limit_seconds=limit,
                          message="the benchmark took longer than " + str(limit) + " s")
            return None
        figures, failed = timed_figures(outcome, problem, "the solution's process")
        if figures is None:
            self.out.emit("RUNTIME_ERROR", message="the benchmark failed: " + failed,
                          details=events.trim(outcome.worker_log))
            return None
        return figures, {"method": "own-process", "status": "unranked", "reason": why, "how": OWN_PROCESS}

    def timed_run(self, payload, work, job, pair, limit=None):
        """One timed run of the judge's (``timed``) with ``job``'s worker: the prestarted ``pair`` if any. Started
        now, they are this job's own: they do not wait at the timing gate the job holds (gate.py)."""
        argv, env = self._worker_argv(work, job, pair + "-job.json")
        env = {k: v for k, v in env.items() if k != gate.VARIABLE}
        started = None
        if self.prestarted is not None:
            started = self.prestarted.take_pair(pair, argv[-1])
        judge_job = self._judge_job(timed=True)
        began = time.monotonic()
        outcome = verification.run(lambda: start_pair(self.room, work, argv, env), judge_job,
                                   limit or payload.limits["benchmark_seconds"], log, started=started,
                                   await_worker=False)
        log("agent: timed (%s) in %.2f s: %s" % (pair, time.monotonic() - began, outcome.status))
        return outcome

    def audited(self, payload, work, tool, results, timing):
        """Nsight Compute around a fresh replay of each test's call (the replay's process opens the NVTX ranges it
        times: the submission has no part in it), against the published times. It decides no rank but its own: a
        result it contradicts is ``unverified`` and leaves the boards, but only if a second audit, made with the
        GPU's timing gate held (gate.py: nothing of the next jobs' starts on the device meanwhile), says so too: in
        a warm worker, other processes' work during a profiled call once took an honest 2.7 us kernel's figure to
        4.6 us (docs/evidence/worker-h100/run35)."""
        audit = self.audit_once(payload, work, tool, results, "audit")
        if audit["status"] == "unverified":
            self._mark("unverified; audited once more, the device held")
            gate.hold()
            try:
                again = self.audit_once(payload, work, tool, results, "audit-again")
            finally:
                gate.release()
            audit = dict(again, first_run={"status": audit["status"], "problems": audit.get("problems", [])})
        return dict(timing, status=audit["status"], audit=audit)

    def audit_once(self, payload, work, tool, results, name):
        """One replay under Nsight Compute, in the audit's room (Audit): the warm agent's, started ahead, else one
        started now; its figures against the published ``results``. ``name`` (the first audit, or the one again)
        is the log's."""
        judge_job = self._judge_job()
        job = dict(self.job, mode="replay", records=self.replay_records)
        audit = self.prestarted.take_audit() if self.prestarted is not None else None
        ahead = audit is not None
        began = time.monotonic()
        try:
            audit = audit or Audit.start(work, tool)
            outcome, figures = audit.run(audit.job_file(job), judge_job, payload.limits["test_seconds"] + 120)
        except (OSError, subprocess.SubprocessError) as e:
            outcome, figures = verification.Outcome("BROKEN", message="could not start: %r" % (e,)), ""
        finally:
            if audit is not None:
                audit.close()
        log("agent: %s under %s in %.2f s (processes started %s)" % (
            name, tool, time.monotonic() - began, "before the job" if ahead else "now"))
        if outcome.status != "PASSED":
            return {"status": "unverified", "by": "ncu", "problems": [
                "the audited replay on the judge's inputs did not pass (" + outcome.status.lower() + ")"]}
        return dict(profiler.cross_check(results, profiler.read_verify_text(figures)), by="ncu")

    def benchmarked(self, payload, problem, report, verdict, summary):
        """BENCHMARKED from the measured summary, once the judge passed it: with the verdict, the device readings,
        and a check against physics (a time under the device's floor is impossible: ERROR)."""
        device_end = device.info()
        name = device_end.get("name") or report.device_start.get("name") or ""
        review = payload.benchmark.get("review_speedup", DEFAULT_REVIEW_SPEEDUP)
        for result in summary["test_results"]:
            case = next(c for c in problem.cases if c["test_id"] == result["test_id"])
            floor = physics.floor_ms(name, problem.bytes_moved(case["sizes"], payload.dtype),
                                     problem.flops(case["sizes"]))
            result["floor_ms"] = floor
            if physics.impossible(result.get("runtime_ms"), floor):
                self.out.emit("ERROR", message="test %d (%s): %.6f ms is faster than the device can move the data "
                              "(%s: at least %.6f ms)" % (case["test_id"], case["name"], result["runtime_ms"],
                                                          name, floor), details=json.dumps(result)[:4000])
                return False
        speedups = [r.get("speedup") or 0 for r in summary["test_results"]]
        timing = verdict["timing"]
        summary["verification"] = verdict
        summary["ranked"] = timing["method"] == "replayed" and timing.get("status") in ("verified", "pending")
        summary["unverified"] = timing.get("status") == "unverified"
        summary["needs_review"] = bool(speedups) and max(speedups) > review
        summary["device"] = {"start": report.device_start, "end": device_end, "runtime": summary.pop("runtime", None)}
        summary["reference_timing"] = self.reference_timing  # in this job, or kept by the worker (reference_cache.py)
        self.out.emit("BENCHMARKED", **summary)
        return True

    # ---- baseline mode

    def baselines(self, payload, problem):
        """PyTorch's own times for the problem, eager and under torch.compile (baseline.py), measured by a worker
        process in the job's room as a submission's reference is timed, with the GPU's timing gate held. No user's
        code is in this job; still, the worker's figures are published only in the shape baseline.py makes them.
        BENCHMARKING, a BENCHMARK_RESULT per test case, then BASELINED (the service stores it as the GPU type's
        newest baselines of the problem)."""
        work = self.workspace.work
        if not self.device_turn():
            return
        argv, env = self._worker_argv(work, dict(self._job_basis(payload), mode="baseline"))
        device_start = _background(device.info)
        child = self._start_worker(argv, env, work)
        gate.hold()
        solution = SolutionProcess(child)
        try:
            self.out.emit("BENCHMARKING", methods=list(baseline.METHODS), total_tests=len(problem.cases))
            measured = self._baseline_figures(payload, problem, solution)
        finally:
            gate.release()
            if child.poll() is None:
                self._kill(child)
            child.stdin.close()
        if measured is None:
            return
        found, tests = measured
        hardware = dict(found, driver=device_start.result().get("driver"))
        self.out.emit("BASELINED", problem=problem.slug, dtype=payload.dtype, hardware=hardware,
                      measured_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                      method=baseline.METHOD_TEXT, tests=tests)

    def _baseline_figures(self, payload, problem, solution):
        """(versions, {method: {test name: figures}}) as the baseline's worker reports them; None once an error
        was sent (the worker failed, ran out of time, or said something no worker of ours says)."""
        limit = payload.limits["benchmark_seconds"]
        deadline = time.monotonic() + limit
        cases = {case["test_id"]: case["name"] for case in problem.cases}
        found, tests, done = None, {method: {} for method in baseline.METHODS}, False
        for kind, message in solution.messages(lambda: deadline):
            if kind is None:
                self._kill(solution.child)
                self.out.emit("TIME_LIMIT_EXCEEDED", phase="baseline", limit_seconds=limit,
                              message="the baseline took longer than " + str(limit) + " s")
                return None
            if kind == "BASELINE_VERSIONS" and found is None:
                found = {k: v for k, v in message.items() if isinstance(v, str) or v is None}
            elif kind == "BASELINE_CASE" and cases.get(message.get("test_id")) == message.get("name") \
                    and all(baseline.valid_figures(message.get(m), m) for m in baseline.METHODS):
                for method in baseline.METHODS:
                    tests[method][message["name"]] = message[method]
                self.out.emit("BENCHMARK_RESULT", result=dict({m: message[m] for m in baseline.METHODS},
                                                              test_id=message["test_id"], name=message["name"]))
            elif kind == "DONE":
                done = True
                break
            elif kind in ("RUNTIME_ERROR", "ERROR"):
                self.out.emit("ERROR", message="the baseline failed: " + str(message.get("message", ""))[:300],
                              details=message.get("details"))
                return None
            elif kind != "PHASE":
                log("agent: left out of the baseline (no case of the problem's, or figures of another shape):",
                    kind, str(message.get("test_id"))[:40])
        code = solution.child.wait()
        solution.err_thread.join(timeout=2)
        missing = [name for name in cases.values() if name not in tests[baseline.METHODS[0]]]
        if code != 0 or found is None or missing or not done:
            self.out.emit("ERROR", message="the baseline's worker ended (code %s) without %s" % (
                code, "its versions" if found is None else "test cases " + ", ".join(missing) if missing
                else "its end"), details=events.trim("".join(solution.stderr_tail).strip()))
            return None
        return found, tests

    # ---- profile mode

    def profile(self, payload, problem, toolchain, work):
        """The checked kernel once per test under the vendor's profiler, in a fresh worker: PROFILING, a
        PROFILE_RESULT per test (each kernel with its figures and the tool's hint), the report file in
        PROFILE_REPORT pieces, then PROFILED."""
        tool = profiler.find_tool(toolchain.kind)
        name = profiler.tool_name(toolchain.kind)
        if tool is None:
            self.out.emit("ERROR", message="profile mode needs " + name + " on the GPU machine, and it has none",
                          details="looked for " + ("rocprofv3" if toolchain.kind == "hipcc" else "ncu") + " on PATH")
            return
        total = len(problem.cases)
        self.out.emit("PROFILING", total_tests=total, tool=name)
        argv, env = self._worker_argv(work, dict(self.job, mode="profile"), "profile-job.json")
        folder = os.path.join(work, PROFILER)
        report_base = os.path.join(folder, "profile")
        tool_log = os.path.join(folder, "ncu.log")
        if toolchain.kind == "hipcc":
            command = profiler.rocprof_command(tool, report_base, argv)
        else:
            command = profiler.ncu_command(tool, report_base, tool_log, argv)
        limit = payload.limits["benchmark_seconds"]
        # The author's own profile: the profiler and the solution in the room, the report in the profiler's folder.
        child = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True, preexec_fn=self.room.preexec(
                                     "profiler", work, own=[folder, os.path.join(work, HOME)]))
        try:
            stdout, stderr = child.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            self._kill(child)
            self.out.emit("TIME_LIMIT_EXCEEDED", phase="profile", limit_seconds=limit,
                          message="the profile phase took longer than " + str(limit) + " s")
            return
        sys.stderr.write(stderr)
        done = False
        for line in stdout.splitlines():
            try:
                message = json.loads(line)
                kind = message.pop("event")
            except (ValueError, KeyError, AttributeError):
                log("profiler:", line)
                continue
            if kind in ("RUNTIME_ERROR", "ERROR"):
                self.out.emit(kind, **message)
                return
            done = done or kind == "DONE"
        if child.returncode != 0 or not done:
            logged = _read(tool_log) if toolchain.kind != "hipcc" else ""
            refusal = profiler.tool_refusal(logged + stderr)
            if refusal:
                self.out.emit("ERROR", message=refusal, details=events.trim(logged.strip()))
                return
            self.out.emit("RUNTIME_ERROR", message="the kernel failed under " + name + " (exit code "
                          + str(child.returncode) + ")", details=events.trim((logged + stderr).strip()))
            return
        # Read back in the room, as the job's user: the report is the job's writing.
        tests = profiler.read_tests(toolchain.kind, tool, report_base, preexec=self.room.preexec(
            "profiler", folder, own=[folder]), env=env)
        report = (profiler.archive_dir(report_base, os.path.join(work, "profile-rocprofv3"))
                  if toolchain.kind == "hipcc" else report_base + ".ncu-rep")
        for case in problem.cases:
            kernels = tests.get(case["test_id"], [])
            self.out.emit("PROFILE_RESULT", result={"test_id": case["test_id"], "name": case["name"],
                                                    "kernels": kernels,
                                                    "duration_ms": sum(k["duration_ms"] or 0 for k in kernels)},
                          total_tests=total)
        pieces = profiler.report_pieces(report, payload.report_limit_bytes)
        for piece in pieces:
            self.out.emit("PROFILE_REPORT", **piece)
        first = pieces[0] if pieces else None
        size = None if first else profiler.report_size(report)
        withheld = {"name": os.path.basename(report), "size": size} if size is not None else None
        self.out.emit("PROFILED", tool=name, tool_version=_version_line(subprocess.run(
                          [tool, "--version"], capture_output=True, text=True, timeout=30).stdout),
                      total_tests=total, kernels=sum(len(v) for v in tests.values()),
                      clock_control="base" if toolchain.kind != "hipcc" else None,
                      report={"name": first["name"], "size": first["size"], "sha256": first["sha256"]}
                      if first else withheld)  # too large to send: named, with its size, and no pieces

    @staticmethod
    def _kill(child):
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()


class JudgeRun:
    """The plain judge's run, in the background from the moment the solution's process has its job: it checks on
    the judge's inputs while that process checks on its own (nothing is timed then), so its verdict is in when the
    benchmark may start. Cancelled (its processes killed) when the submission ends without needing it."""

    def __init__(self, agent, payload, work):
        self.lock = threading.Lock()
        self.processes = []
        self.cancelled = False
        self.future = _background(lambda: agent.judged(payload, work, run=self))

    def hold(self, processes):
        """Told the run's processes as they start; False when it was cancelled already (the run kills them)."""
        with self.lock:
            self.processes.extend(processes)
            return not self.cancelled

    def outcome(self):
        return self.future.result()

    def cancel(self):
        with self.lock:
            self.cancelled = True
            processes = list(self.processes)
        verification._kill(*processes, close=False)  # a run may still be reading their pipes

    def release(self):
        """Its processes (idle after a pass) ended in the background, once what they must not run beside is over."""
        _background(self.cancel)


class SolutionProcess:
    """The process that runs the solution, as the agent reads it: its protocol lines (a queue, None at its end)
    and the tail of its log. ``waits_for_job``: a warm process timing the reference that waits for the solution's
    job file next."""

    def __init__(self, child, waits_for_job=False):
        self.child = child
        self.waits_for_job = waits_for_job
        self.lines = queue.Queue()
        self.stderr_tail = []
        threading.Thread(target=self._pump, args=(child.stdout, self._line, lambda: self.lines.put(None)),
                         daemon=True).start()
        self.err_thread = threading.Thread(target=self._pump, args=(child.stderr, self._log), daemon=True)
        self.err_thread.start()

    @staticmethod
    def _pump(stream, sink, at_end=None):
        for line in stream:
            sink(line)
        if at_end:
            at_end()

    def messages(self, deadline):
        """(kind, fields) of each protocol message until the process's output ends; (None, None) once
        ``deadline()`` (a time.monotonic() instant, asked anew for each line) passes first. Lines that are no
        message go to the log."""
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline() - time.monotonic()))
            except queue.Empty:
                yield None, None
                return
            if line is None:
                return
            try:
                message = json.loads(line)
                kind = message.pop("event")
            except (ValueError, KeyError, AttributeError, TypeError):
                log("worker:", line.rstrip())
                continue
            yield kind, message

    def _line(self, line):
        if '"REFERENCES"' in line:
            gate.release()  # at once, even while the solution still compiles
        self.lines.put(line)

    def _log(self, line):
        sys.stderr.write(line)
        self.stderr_tail.append(line)
        del self.stderr_tail[:-200]


def reference_times(message):
    """{test id: the reference's median in ms} from a REFERENCES message; entries that are not figures are left out."""
    times = {}
    for test in message.get("tests") or []:
        if isinstance(test, dict) and isinstance(test.get("test_id"), int):
            value = test.get("runtime_ms")
            if _number(value) and math.isfinite(value) and value > 0:
                times[test["test_id"]] = float(value)
    return times


REPLAYED = ("the call's device work, as the solution's process recorded it (kernels, grids, blocks, parameters, "
            "memsets, copies), issued in order on one stream by a process that never ran the solution's host code, on "
            "fresh inputs only the judge knew for every sample, each output checked by the judge")
OWN_PROCESS = ("timed in the solution's own process, which could change its own figures; every sample on fresh "
               "inputs only the judge knew, each output checked by the judge")


def unreplayable(toolchain, records, problem):
    """Why the recorded calls cannot be replayed, or None. The records themselves are checked by the replay."""
    if toolchain.kind != "nvcc":
        return "only NVIDIA's device code is replayed here (the replay loads a CUDA fat binary)"
    if not isinstance(records, dict):
        return "the solution's process sent no record of its calls"
    if records.get("unavailable"):
        return "its calls could not be recorded: " + str(records["unavailable"])[:300]
    found = records.get("records")
    if not isinstance(found, dict):
        return "the solution's process sent no record of its calls"
    for case in problem.cases:
        record = found.get(str(case["test_id"]))
        if not isinstance(record, dict):
            return "test %d's call was not recorded" % case["test_id"]
        if record.get("unreplayable"):
            return "test %d: %s" % (case["test_id"], str(record["unreplayable"])[:300])
    return None


def timed_figures(outcome, problem, who):
    """Each test's figures from a timed run that the judge passed: (figures by test id, None), else (None, why).
    A test's figures count only if the judge checked at least as many samples as they were taken from."""
    if outcome.status != "PASSED":
        failure = outcome.failure or {}
        said = outcome.calls.get(failure.get("test_id"), {}).get("unreplayable")
        if said:
            return None, "test %s: %s" % (failure.get("test_id"), str(said)[:300])
        if outcome.calls.get("error"):
            return None, "%s failed: %s" % (who, outcome.calls["error"])
        if outcome.status == "FAILED":
            return None, ("test %s: %s gave a wrong answer on the judge's inputs in sample %s: the call's work "
                          "depends on more than its record (data-dependent host logic, state kept between calls, "
                          "pointers kept in device memory...)" % (failure.get("test_id"), who,
                                                                   (failure.get("debug_info") or {}).get("sample")))
        return None, "%s: %s %s" % (who, outcome.status.lower(), outcome.message or "")
    figures = {}
    checked = {r.get("test_id"): r.get("samples") for r in outcome.results}
    for case in problem.cases:
        figure = outcome.calls.get(case["test_id"], {}).get("timing")
        median = figure.get("median") if isinstance(figure, dict) else None
        if not (_number(median) and math.isfinite(median) and median >= 0 and _number(figure.get("iterations"))):
            return None, "%s gave no figures for test %d" % (who, case["test_id"])
        if not _number(checked.get(case["test_id"])) or figure["iterations"] > checked[case["test_id"]]:
            return None, "%s gave figures of more samples than the judge checked (test %d)" % (who, case["test_id"])
        figures[case["test_id"]] = figure
    return figures, None


def result_of(problem, dtype, case, figure, reference):
    """A test's BENCHMARK_RESULT: its median and figures, the reference's time the agent holds (from before the
    solution's library was loaded) and the speedup over it."""
    median = float(figure["median"])
    flops = problem.flops(case["sizes"])
    moved = problem.bytes_moved(case["sizes"], dtype)
    result = {
        "test_id": case["test_id"], "name": case["name"], "runtime_ms": median,
        "runtime_stats": {k: v for k, v in figure.items() if k != "runtime"},
        "gflops": flops / (median * 1e6) if median > 0 else None,
        "bandwidth_gbs": moved / (median * 1e6) if median > 0 else None,
        "reference_runtime_ms": reference,
        "speedup": reference / median if reference and median > 0 else None,
    }
    if "device_span_calls" in figure:  # a small kernel: its steady figure beside the events'
        result["device_span_ms"] = figure.get("device_span_ms")
    return result


# The payload's benchmark settings that decide an audit (audit_reason): the agent's alone. A job file is readable by
# the solution's process, and its host code must not learn, while it records, whether or above what figure its
# result will be audited.
AUDIT_SETTINGS = ("audit", "new_best_below_ms")


def worker_settings(defaults, settings):
    """The benchmark settings a job's workers are given: ``settings`` over ``defaults``, less AUDIT_SETTINGS."""
    return {k: v for k, v in dict(defaults, **settings).items() if k not in AUDIT_SETTINGS}


def audit_reason(settings, geomean_ms, draw=None):
    """Why Nsight Compute audits a replayed result, or None: the payload's ``benchmark.audit`` where it says (true:
    ASKED; false: never); a new #1 of its board, its geometric mean under ``benchmark.new_best_below_ms`` (the low
    end of the board's #1's 95% interval when the service started the run: beyond the #1's noise, where the board
    would no longer call the two a tie; null for a board with no entry yet; the service's word, not the
    submission's); else one result in AUDIT_SHARE, drawn (``draw``: a number in [0, 10**6), else drawn here)."""
    asked = settings.get("audit")
    if asked is not None:
        return ASKED if asked is True else None
    if "new_best_below_ms" in settings:
        below = settings["new_best_below_ms"]
        if below is None or geomean_ms < below:
            return NEW_BEST
    draw = secrets.randbelow(10 ** 6) if draw is None else draw
    return SAMPLED if draw < AUDIT_SHARE * 10 ** 6 else None


def summary_of(results, runtime):
    """BENCHMARKED's figures over the tests' results."""
    medians = [r["runtime_ms"] for r in results]
    gflops = [r["gflops"] for r in results if r["gflops"] is not None]
    return {"avg_runtime_ms": stats.mean(medians), "geomean_runtime_ms": stats.geomean(medians),
            "avg_gflops": stats.mean(gflops) if gflops else None,
            "geomean_speedup": stats.geomean([r["speedup"] for r in results]),
            "test_results": [{k: v for k, v in r.items() if k != "runtime_stats"} for r in results],
            "runtime": runtime}


def _number(value):
    """A JSON number (``True`` is an int to Python, not a time)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class WorkerReport:
    """What the solution's process said at its end: its CHECKED (check mode, held), its RECORDED (benchmark mode:
    each call's device work, a claim); and its process, which may still be ending (see Agent.ended)."""

    def __init__(self, checked, device_start, child=None, err_thread=None, stderr_tail=(), finished=True,
                 records=None):
        self.checked_raw = checked
        self.device_start = device_start or {}
        self.child = child
        self.err_thread = err_thread
        self.stderr_tail = stderr_tail
        self.finished = finished
        self.records = records

    @property
    def checked(self):
        return self.checked_raw or {}


def _logged(prefix, stream):
    """Each line of ``stream`` to the log, until it ends (or is closed under this thread, its process ended)."""
    try:
        for line in stream:
            log(prefix, line.rstrip())
    except (ValueError, OSError):
        pass


def _background(call):
    """``call()`` on a thread of its own: its future (the thread ends with the call)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-bg")
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return future


def _read(path):
    """A text the job's user could have written (sandbox.open_plain), or ""."""
    try:
        with sandbox.open_plain(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _version_line(text):
    """The version in ``tool --version``: its last line (ncu prints its copyright first)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else None


def _write_new(path, text):
    """A new file of the agent's, never through a link someone left at ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def take_out(built, destination):
    """Copies what the compiler left at ``built`` to ``destination`` (the agent's) if it is a plain file: a link
    (to a file only the agent may read, say) or anything else is refused. Whether it was copied."""
    try:
        with sandbox.open_plain(built) as source, open(destination, "wb") as copy:
            shutil.copyfileobj(source, copy)
        return True
    except OSError:
        return False
