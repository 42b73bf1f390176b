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

from remote_agent import catalog, compiler, device, events, launcher
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
            self.execute(payload, problem, library, symbol, work)
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

    def execute(self, payload, problem, library, symbol, work):
        job = {"library": library, "symbol": symbol, "problem": problem.slug, "dtype": payload.dtype,
               "mode": payload.mode, "problems_dir": self.problems_dir,
               "benchmark": dict(self.benchmark_settings, **payload.benchmark)}
        job_file = os.path.join(work, "job.json")
        with open(job_file, "w", encoding="utf-8") as f:
            json.dump(job, f)
        device_start = device.info()
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
        env["PYTHONUNBUFFERED"] = "1"
        child = subprocess.Popen([sys.executable, "-m", "remote_agent.worker", job_file], cwd=work, env=env,
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
                return
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
            return
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

    @staticmethod
    def _kill(child):
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
