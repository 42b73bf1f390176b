"""One submission, start to end: validate, compile, run the worker, report. Every failure becomes an event."""
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from remote_agent import catalog, compiler, device, events, launcher, profiler
from remote_agent.payload import PayloadError, parse

FORWARDED = {"CHECKING", "TEST_RESULT", "CHECKED", "WRONG_ANSWER", "BENCHMARKING", "BENCHMARK_RESULT",
                        "RUNTIME_ERROR", "ERROR"}


def log(*parts):
    print(*parts, file=sys.stderr, flush=True)


def build_plan(code, language, problem, toolchain):
    """What to compile: (sources by file name, entry file, exported symbol, cache key)."""
    sources = {"solution.cu": code}
    entry, symbol = "solution.cu", launcher.HOST_SYMBOL
    if launcher.convention(code) == "kernel":
        sources["launcher.cu"] = launcher.generate(problem, "solution.cu")
        entry, symbol = "launcher.cu", launcher.LAUNCHER_SYMBOL
    key = compiler.cache_key(sources, toolchain.command(language, entry, "lib.so"), toolchain.version)
    return sources, entry, symbol, key


class Agent:
    def __init__(self, emitter, problems_dir=catalog.PROBLEMS_DIR, cache_dir=None, benchmark=None):
        self.out = emitter
        self.problems_dir = problems_dir
        self.cache_dir = cache_dir or compiler.default_cache_dir()
        self.benchmark_settings = benchmark or {}

    def run(self, payload_bytes):
        try:
            self._run(payload_bytes)
        except Exception:  # noqa: the agent never dies with a bare traceback
            self.out.emit("ERROR", message="the agent failed", details=events.trim(traceback.format_exc()))

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
        toolchain = compiler.detect(payload.language)
        if toolchain is None:
            self.out.emit("ERROR", message="no GPU here: found no NVIDIA GPU with nvcc, nor ROCm with hipcc",
                          details="nvcc: " + str(compiler.find_nvcc()) + "; hipcc: " + str(shutil.which("hipcc")))
            return
        self.out.emit("COMPILING", compiler=toolchain.version, arch=toolchain.arch)
        work = tempfile.mkdtemp(prefix="kr-agent-")
        try:
            library, symbol = self.compile(payload, problem, toolchain, work)
            if library is None:
                return
            if self.execute(payload, problem, library, symbol, work) and payload.mode == "profile":
                self.profile(payload, problem, toolchain, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    # ---- compiling

    def compile(self, payload, problem, toolchain, work):
        try:
            plan = build_plan(payload.code, payload.language, problem, toolchain)
        except launcher.ConventionError as e:
            self.out.emit("COMPILE_ERROR", message=str(e), details="")
            return None, None
        sources, entry, symbol, key = plan
        cached = os.path.join(self.cache_dir, key, "lib.so")
        if os.path.isfile(cached):
            log("compiled library from the cache:", key)
            return cached, symbol
        for name, text in sources.items():
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(text)
        argv = toolchain.command(payload.language, entry, "lib.so")
        limit = payload.limits["compile_seconds"]
        try:
            done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            self.out.emit("TIME_LIMIT_EXCEEDED", phase="compile", limit_seconds=limit,
                          message="compilation took longer than " + str(limit) + " s")
            return None, None
        if done.returncode != 0:
            output = (done.stdout + done.stderr).replace(work + os.sep, "")
            self.out.emit("COMPILE_ERROR", message="compilation failed", details=events.trim(output.strip()))
            return None, None
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        partial = cached + ".tmp" + str(os.getpid())
        shutil.copyfile(os.path.join(work, "lib.so"), partial)
        os.replace(partial, cached)
        return cached, symbol

    # ---- running the worker

    @staticmethod
    def _worker_argv(work, job, name="job.json"):
        """Writes the worker's job file; returns (argv, environment) that start the worker on it."""
        job_file = os.path.join(work, name)
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump(job, f)
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        return [sys.executable, "-m", "remote_agent.worker", job_file], env

    def execute(self, payload, problem, library, symbol, work):
        """Runs the worker (check, then benchmark in that mode); True when it checked the kernel and the
        submission is not over yet (profile mode goes on from there)."""
        job = {"library": library, "symbol": symbol, "problem": problem.slug, "dtype": payload.dtype,
               "mode": "check" if payload.mode == "profile" else payload.mode, "problems_dir": self.problems_dir,
               "benchmark": dict(self.benchmark_settings, **payload.benchmark)}
        argv, env = self._worker_argv(work, job)
        device_start = device.info()
        child = subprocess.Popen(argv, cwd=work, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
        lines = queue.Queue()
        stderr_tail = []

        def pump(stream, sink, at_end=None):
            for line in stream:
                sink(line)
            if at_end:
                at_end()

        def keep_tail(line):
            sys.stderr.write(line)
            stderr_tail.append(line)
            del stderr_tail[:-200]

        threading.Thread(target=pump, args=(child.stdout, lines.put, lambda: lines.put(None)), daemon=True).start()
        err_thread = threading.Thread(target=pump, args=(child.stderr, keep_tail), daemon=True)
        err_thread.start()
        phase, limit = "check", payload.limits["test_seconds"]
        deadline = time.monotonic() + limit
        summary = None
        finished = False
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self._kill(child)
                self.out.emit("TIME_LIMIT_EXCEEDED", phase=phase, limit_seconds=limit,
                              message="the " + phase + " phase took longer than " + str(limit) + " s")
                return False
            if line is None:
                break
            try:
                message = json.loads(line)
                kind = message.pop("event")
            except (ValueError, KeyError, AttributeError):
                log("worker:", line.rstrip())
                continue
            if kind == "PHASE":
                phase = message["name"]
                limit = payload.limits["benchmark_seconds" if phase == "benchmark" else "test_seconds"]
                deadline = time.monotonic() + limit
            elif kind == "SUMMARY":
                summary = message
            elif kind == "DONE":
                finished = True
            elif kind in FORWARDED:
                self.out.emit(kind, **message)
                if kind in events.TERMINAL:
                    finished = True
        code = child.wait()
        err_thread.join(timeout=2)
        if self.out.finished:
            return False
        tail = events.trim("".join(stderr_tail).strip())
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals.__members__.values() else str(-code)
            self.out.emit("RUNTIME_ERROR", message="the kernel crashed the process (" + name + ")", details=tail)
        elif not finished:
            self.out.emit("RUNTIME_ERROR", message="the kernel's process ended with code " + str(code)
                          + " before finishing", details=tail)
        elif payload.mode == "benchmark" and summary is not None:
            summary["device"] = {"start": device_start, "end": device.info(), "runtime": summary.pop("runtime")}
            self.out.emit("BENCHMARKED", **summary)
        elif payload.mode == "benchmark":
            self.out.emit("ERROR", message="the benchmark ended without results", details=tail)
        return not self.out.finished and finished and code == 0

    # ---- profile mode

    def profile(self, payload, problem, toolchain, work):
        """The checked kernel once per test under the vendor's profiler, in a fresh worker: PROFILING, a
        PROFILE_RESULT per test (each kernel with its figures and the tool's hint), the report file in
        PROFILE_REPORT pieces, then PROFILED."""
        tool = profiler.find_tool(toolchain.kind)
        name = "rocprofv3" if toolchain.kind == "hipcc" else "Nsight Compute"
        if tool is None:
            self.out.emit("ERROR", message="profile mode needs " + name + " on the GPU machine, and it has none",
                          details="looked for " + ("rocprofv3" if toolchain.kind == "hipcc" else "ncu") + " on PATH")
            return
        total = len(problem.cases)
        self.out.emit("PROFILING", total_tests=total, tool=name)
        with open(os.path.join(work, "job.json"), encoding="utf-8") as f:
            job = dict(json.load(f), mode="profile")
        argv, env = self._worker_argv(work, job, "profile-job.json")
        if toolchain.kind == "hipcc":
            out_dir = os.path.join(work, "rocprof")
            command = profiler.rocprof_command(tool, out_dir, argv)
        else:
            report_base = os.path.join(work, "profile")
            log_file = os.path.join(work, "ncu.log")
            command = profiler.ncu_command(tool, report_base, log_file, argv)
        limit = payload.limits["benchmark_seconds"]
        child = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
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
            tool_log = _read(os.path.join(work, "ncu.log")) if toolchain.kind != "hipcc" else ""
            refusal = profiler.tool_refusal(tool_log + stderr)
            if refusal:
                self.out.emit("ERROR", message=refusal, details=events.trim(tool_log.strip()))
                return
            self.out.emit("RUNTIME_ERROR", message="the kernel failed under " + name + " (exit code "
                          + str(child.returncode) + ")", details=events.trim((tool_log + stderr).strip()))
            return
        if toolchain.kind == "hipcc":
            tests = profiler.parse_rocprof(out_dir)
            report = profiler.archive_dir(out_dir, os.path.join(work, "profile-rocprofv3"))
        else:
            report = report_base + ".ncu-rep"
            raw_cmd, details_cmd = profiler.ncu_import_commands(tool, report)
            raw = subprocess.run(raw_cmd, capture_output=True, text=True, timeout=120)
            details = subprocess.run(details_cmd, capture_output=True, text=True, timeout=120)
            tests = profiler.ncu_tests(raw.stdout, details.stdout)
        for case in problem.cases:
            kernels = tests.get(case["test_id"], [])
            self.out.emit("PROFILE_RESULT", result={"test_id": case["test_id"], "name": case["name"],
                                                    "kernels": kernels,
                                                    "duration_ms": sum(k["duration_ms"] or 0 for k in kernels)},
                          total_tests=total)
        pieces = profiler.report_pieces(report)
        for piece in pieces:
            self.out.emit("PROFILE_REPORT", **piece)
        first = pieces[0] if pieces else None
        self.out.emit("PROFILED", tool=name, tool_version=_first_line(subprocess.run(
                          [tool, "--version"], capture_output=True, text=True, timeout=30).stdout),
                      total_tests=total, kernels=sum(len(v) for v in tests.values()),
                      clock_control="base" if toolchain.kind != "hipcc" else None,
                      report={"name": first["name"], "size": first["size"], "sha256": first["sha256"]}
                      if first else None)

    @staticmethod
    def _kill(child):
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _first_line(text):
    """The version line of ``tool --version`` (ncu prints its copyright first and the version last)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else None
