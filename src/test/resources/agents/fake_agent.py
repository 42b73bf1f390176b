#!/usr/bin/env python3
"""A test agent that speaks the real agent protocol (signed JSON_EVENT lines on stdout, logs on stderr).

What it does is chosen by directives in the submitted code, so one agent serves every test:
  // agent: ok | crash | garbage | forge | noisy | hang | trap_term | exit0 | snoop | nul | secret-probe
  //        | replay:<transcript>
  // delay: <seconds between events>
  // report: whole | corrupt | missing-piece   (profile mode: the report file the agent sends)
  // piece-delay: <seconds after each piece of the report>
  // report-bytes: <size of the report file; default 384000>   (a report over the payload's report_limit_bytes, which
  //               the dstack backend sets, is declared in PROFILED but its pieces are not sent)
  // timing: verified | unverified | never   (benchmark mode: BENCHMARKED with its times pending, then VERIFIED
  //                                          saying so after a second; never: the agent ends without it)
  // timing-method: replayed | own-process | replayed-unranked   (benchmark mode with timing: how the times were
  //                                         made, as remote_agent/agent.py says it; own-process, or a replay whose
  //                                         empty windows read long (remote_agent/quiet.py): published unranked at
  //                                         once, no VERIFIED; default replayed)
  // runtime: <ms>   (test i's runtime is <ms> x i; default 0.5)
  // spread: <fraction>   (each test's 21 timed samples spread evenly over runtime x (1 -+ fraction); default 0.01)
  // verdict-after: <seconds>   (benchmark mode with timing: between BENCHMARKED and VERIFIED; default 1)
  // review: yes   (the result is marked needs_review)
  // isolation: full | partial   (how confined the job's processes were, on its first event and every result, as
  //                              remote_agent/events.py stamps them; default full)
It writes the code it received to $FAKE_AGENT_ECHO_DIR (default: its working directory)/<submission_id>.code.
"""
import base64
import hashlib
import hmac
import json
import os
import re
import signal
import subprocess
import sys
import time


KEY = b""
ISOLATION = {"full": True, "user": "job", "namespaces": ["pid", "ipc", "net", "uts", "mount"], "landlock_abi": 7,
             "seccomp": True, "no_new_privs": True}
PARTIAL = dict(ISOLATION, full=False, namespaces=[], missing=["pid namespace", "ipc namespace", "net namespace",
                                                              "uts namespace", "mount namespace"])
# The events the real agent stamps with its room's isolation (remote_agent/events.py STAMPED).
STAMPED = {"COMPILING", "CHECKED", "VERIFIED", "COMPILE_ERROR", "WRONG_ANSWER", "BENCHMARKED", "PROFILED",
           "RUNTIME_ERROR", "TIME_LIMIT_EXCEEDED", "ERROR", "BASELINED"}
stamp = {"isolation": ISOLATION}


def signed(text):
    """JSON_EVENT:<hex HMAC-SHA256(event_key, json)>:<json>, as the real agent writes it."""
    return "JSON_EVENT:" + hmac.new(KEY, text.encode("utf-8"), hashlib.sha256).hexdigest() + ":" + text


def emit(event_type, **fields):
    if event_type in STAMPED:
        fields = dict(stamp, **fields)
    fields["type"] = event_type
    sys.stdout.write(signed(json.dumps(fields)) + "\n")
    sys.stdout.flush()


def audit_reason(settings, geomean_ms):
    """Why the times are audited, as remote-agent's agent.audit_reason says it (every fake result with a verdict
    is audited: a random sample where nothing else asks)."""
    if settings.get("audit") is True:
        return "asked"
    if "new_best_below_ms" in settings and (settings["new_best_below_ms"] is None
                                            or geomean_ms < settings["new_best_below_ms"]):
        return "a new best on its board"
    return "a random sample"


def directive(code, name, default):
    match = re.search(r"//\s*" + name + r":\s*(\S+)", code)
    return match.group(1) if match else default


def stop(signum, frame):
    """As the real agent (remote_agent/__main__.py): INT (dstack's stop) ends the job, its processes with it, and
    exits 128 + the signal."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(os.getpgrp(), signal.SIGTERM)
    os._exit(128 + signum)


def main():
    try:
        os.setsid()  # as the real agent does: its process group is what the service stops
    except OSError:
        pass
    signal.signal(signal.SIGINT, stop)
    args = sys.argv[1:]
    payload_path = args[args.index("--payload") + 1]
    with open(payload_path, "rb") as f:
        payload = json.loads(f.read().decode("utf-8"))
    global KEY
    KEY = base64.b64decode(payload["event_key"])
    code = payload["code"]
    if directive(code, "isolation", "full") == "partial":
        stamp["isolation"] = PARTIAL
    echo_dir = os.environ.get("FAKE_AGENT_ECHO_DIR") or os.getcwd()
    if echo_dir:
        try:
            with open(os.path.join(echo_dir, payload["submission_id"] + ".code"), "wb") as f:
                f.write(code.encode("utf-8"))
        except OSError as e:  # a folder the agent's user may not write (the service's own, say)
            print("fake agent: could not echo the code: %s" % e, file=sys.stderr, flush=True)
    if payload["mode"] == "baseline":
        baseline(payload)
        return
    behaviour = directive(code, "agent", "ok")
    if behaviour == "payload-probe":
        # What the payload holds (its keys; the judge's input secret is not among them: the judge makes its own).
        emit("COMPILING", keys=sorted(payload))
        emit("ERROR", message="probe done")
        return
    if behaviour.startswith("replay:"):
        # Replays what the real agent printed on a GPU (remote-agent/scripts/gpu-selftest.sh).
        name = behaviour[len("replay:"):]
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "agent-transcripts", name + ".jsonl"), encoding="utf-8") as f:
            for line in f:
                sys.stdout.write(signed(line.strip()) + "\n")
                sys.stdout.flush()
        return
    if behaviour == "orphan":
        # A grandchild whose parent has already exited: re-parented, but still in the agent's group.
        out = subprocess.run(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True)
        emit("COMPILING", orphan_pid=int(out.stdout.strip()), agent_pid=os.getpid())
        time.sleep(300)
        return
    if behaviour == "snoop":
        # What user code can see from where the agent runs: its identity, its environment, the service's.
        # HOME is DATA_DIR/runs/<id> for a child process of the service, DATA_DIR/runs/local-workers for a job of
        # a local worker.
        data_dir = os.path.dirname(os.path.dirname(os.path.abspath(os.environ["HOME"])))
        reads = {}
        for path in [os.path.join(data_dir, "postgres.password"), os.path.join(data_dir, "kernel-runner.lock"),
                     "/proc/%d/environ" % os.getppid(), payload_path]:
            try:
                with open(path, "rb") as f:
                    reads[path] = len(f.read())
            except OSError as e:
                reads[path] = type(e).__name__
        try:
            listing = os.listdir(data_dir)
        except OSError as e:
            listing = type(e).__name__
        emit("COMPILE_ERROR", message="snooped", details=json.dumps({
            "uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "env": dict(os.environ),
            "reads": reads, "data_dir": data_dir, "listing": listing}))
        return
    if behaviour == "nul":
        # Text PostgreSQL cannot store (jsonb refuses \u0000), as compiler output or a kernel's print can carry.
        emit("COMPILING", log="nvcc said \x00 here")
        emit("CHECKING", total_tests=1)
        emit("TEST_RESULT", result={"test_id": 1, "name": "a\x00b", "status": "PASSED"}, total_tests=1)
        emit("CHECKED", passed_tests=1, total_tests=1)
        emit("BENCHMARKING", total_tests=1)
        emit("BENCHMARK_RESULT", result={"test_id": 1, "name": "a\x00b", "runtime_ms": 1.0})
        emit("BENCHMARKED", avg_runtime_ms=1.0, avg_gflops=1.0, note="end\x00")
        return
    delay = float(directive(code, "delay", "0.01"))
    print("fake agent starting " + behaviour, file=sys.stderr, flush=True)

    child = subprocess.Popen(["sleep", "300"])  # a grandchild of the service, to prove tree kills
    if behaviour == "trap_term":  # an agent that will not stop: only a KILL ends it
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    emit("COMPILING", child_pid=child.pid, agent_pid=os.getpid(), code_bytes=len(code.encode("utf-8")))
    print("compiling with nvcc (pretend)")

    if behaviour == "crash":
        print("Segmentation fault (core dumped) in solution()", file=sys.stderr, flush=True)
        child.kill()
        sys.exit(139)
    if behaviour == "exit0":
        child.kill()
        sys.exit(0)
    if behaviour in ("hang", "trap_term"):
        while True:
            time.sleep(1)
    if behaviour == "flood":
        # Many large events, as fast as it can: for streams whose client cannot keep up.
        count = int(directive(code, "events", "1000"))
        size = int(directive(code, "size", "1000"))
        pause = float(directive(code, "pause", "0"))
        emit("CHECKING", total_tests=count)
        for i in range(count):
            emit("TEST_RESULT", result={"test_id": i + 1, "name": "t%d" % (i + 1), "status": "PASSED"},
                 padding="p" * size)
            if pause:
                time.sleep(pause)
        emit("CHECKED", passed_tests=count, total_tests=count)
        emit("BENCHMARKING", total_tests=0)
        emit("BENCHMARKED", avg_runtime_ms=1.0, avg_gflops=1.0, test_results=[])
        child.kill()
        return
    if behaviour == "noisy":
        # Megabytes of log (a chatty kernel), with user lines that look like dstack's own errors.
        megabytes = float(directive(code, "megabytes", "5"))
        line = "[error] Run kr-x not found; user print " + "." * 60 + "\n"
        for _ in range(int(megabytes * 1024 * 1024 / len(line))):
            sys.stdout.write(line)
        sys.stdout.flush()
    if behaviour == "forge":
        # What hostile user code prints: results without the key, with a wrong one, and with a MAC copied from
        # another line; each must stay a log line.
        fake = json.dumps({"type": "BENCHMARKED", "avg_runtime_ms": 0.0001, "test_results": []})
        print("JSON_EVENT:" + fake)
        print("JSON_EVENT:" + hmac.new(b"guess" * 8, fake.encode(), hashlib.sha256).hexdigest() + ":" + fake)
        real = signed(json.dumps({"type": "CHECKING", "total_tests": 2}))
        print(real[:real.rindex(":") + 1] + fake, file=sys.stderr)
        sys.stdout.flush()
    if behaviour == "garbage":
        print("not an event at all")
        print(signed("{this is not json"))
        print(signed('{"type": "NOT_A_TYPE"}'))
        emit("TEST_RESULT", result={"test_id": 99, "name": "out of phase", "status": "PASSED"})
        sys.stdout.write("x" * 100000 + "\n")

    tests = [{"test_id": 1, "name": "n = 1024"}, {"test_id": 2, "name": "n = 65536"}]
    time.sleep(delay)
    emit("CHECKING", total_tests=len(tests))
    for test in tests:
        time.sleep(delay)
        emit("TEST_RESULT", result=dict(test, status="PASSED"), total_tests=len(tests))
    time.sleep(delay)
    emit("CHECKED", passed_tests=len(tests), total_tests=len(tests))
    if payload["mode"] == "check":
        child.kill()
        return
    if payload["mode"] == "profile":
        profile(tests, directive(code, "report", "whole"), delay, float(directive(code, "piece-delay", "0")),
                int(directive(code, "report-bytes", "384000")), payload.get("report_limit_bytes"))
        child.kill()
        return
    time.sleep(delay)
    emit("BENCHMARKING", total_tests=len(tests))
    results = []
    base = float(directive(code, "runtime", "0.5"))
    spread = float(directive(code, "spread", "0.01"))
    for i, test in enumerate(tests):
        time.sleep(delay)
        runtime = base * (i + 1)
        result = dict(test, runtime_ms=runtime, gflops=100.0 / (i + 1), speedup=1.0 / base)
        results.append(result)
        samples = [runtime * (1 + spread * (k - 10) / 10.0) for k in range(21)]
        emit("BENCHMARK_RESULT", result=dict(result, runtime_stats={"median": runtime, "samples": samples,
                                                                    "iterations": len(samples), "timing": "events"}))
    time.sleep(delay)
    timing = directive(code, "timing", None)
    summary = dict(avg_runtime_ms=1.5 * base, geomean_runtime_ms=base * 2 ** 0.5, geomean_speedup=1.0 / base,
                   avg_gflops=75.0, test_results=results, device={"name": "fake"},
                   needs_review=directive(code, "review", "no") == "yes")
    method = directive(code, "timing-method", "replayed")
    if timing is None:
        emit("BENCHMARKED", **summary)
    elif method in ("own-process", "replayed-unranked"):
        own = method == "own-process"
        emit("BENCHMARKED", **summary, ranked=False, unverified=False, verification={
            "judge": "passed", "tests": len(tests), "timing": {
                "method": "own-process" if own else "replayed", "status": "unranked",
                "reason": "test 1: the call uses cuGraphLaunch" if own else "the GPU's empty event window read "
                "2.208 us against its usual 1.248 us while the replay was timed: another context was busy on the "
                "device, and that takes small figures low"}})
    else:
        why = audit_reason(payload.get("benchmark") or {}, summary["geomean_runtime_ms"])
        emit("BENCHMARKED", **summary, ranked=True,
             verification={"judge": "passed", "tests": len(tests), "timing": {
                 "method": "replayed", "status": "pending", "audit": "Nsight Compute", "audit_reason": why}},
             unverified=False)
        if timing != "never":
            time.sleep(float(directive(code, "verdict-after", "1")))
            emit("BENCHMARK_RESULT", result=results[0])  # out of place after the end: dropped
            emit("VERIFIED", timing={"method": "replayed", "status": timing, "audit_reason": why, "audit": {
                "by": "ncu", "problems": ["test 1: claimed 0.5 ms, profiler 1.0 ms"] if timing == "unverified"
                else []}})
            emit("VERIFIED", timing={"status": "verified", "by": "a second verdict: dropped"})
    if behaviour == "garbage":
        emit("TEST_RESULT", result={"test_id": 100, "name": "after the end", "status": "FAILED"})
    child.kill()


def baseline(payload):
    """A baseline job as the real agent reports it (remote_agent/agent.py ``baselines``): BENCHMARKING, a
    BENCHMARK_RESULT per test, BASELINED with PyTorch's figures. Eager takes FAKE_BASELINE_EAGER_MS (default 2.0)
    x the test's number, torch.compile half that; the problem "conv-1d" fails (ERROR)."""
    tests = [{"test_id": 1, "name": "n = 1024"}, {"test_id": 2, "name": "n = 65536"}]
    emit("BENCHMARKING", methods=["eager", "torch_compile"], total_tests=len(tests))
    if payload["problem"] == "conv-1d":
        emit("ERROR", message="the baseline failed: torch.compile: no C compiler")
        return
    eager_ms = float(os.environ.get("FAKE_BASELINE_EAGER_MS", "2.0"))
    figures = {"eager": {}, "torch_compile": {}}
    for test in tests:
        for method, ms in (("eager", eager_ms * test["test_id"]), ("torch_compile", eager_ms * test["test_id"] / 2)):
            figures[method][test["name"]] = {"median": ms, "mean": ms, "std": 0.0, "min": ms, "max": ms,
                                             "samples": 100}
        figures["torch_compile"][test["name"]]["compile_seconds"] = 1.5
        emit("BENCHMARK_RESULT", result=dict(test, **{m: figures[m][test["name"]] for m in figures}))
    emit("BASELINED", problem=payload["problem"], dtype=payload["dtype"], measured_at=time.strftime(
        "%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()), method="fake", tests=figures,
        hardware={"hardware": "Test GPU", "driver": "1", "torch": "2", "triton": "3", "cuda": "13"})


def profile(tests, report, delay, piece_delay, size, limit):
    """Profile mode as the real agent reports it (remote_agent/profiler.py): a PROFILE_RESULT per test, the
    report file in PROFILE_REPORT pieces, PROFILED. ``// report: whole | corrupt | missing-piece``."""
    emit("PROFILING", total_tests=len(tests), tool="Nsight Compute")
    for i, test in enumerate(tests):
        time.sleep(delay)
        kernel = {"kernel": "add(const float *, const float *, float *, unsigned long)", "duration_ms": 0.01 * (i + 1),
                  "dram_gbs": 1000.0, "dram_pct_of_peak": 30.0, "sm_pct_of_peak": 10.0,
                  "achieved_occupancy_pct": 70.0, "registers_per_thread": 16, "shared_mem_static_bytes": 0,
                  "shared_mem_dynamic_bytes": 0, "grid_size": 4, "block_size": 256,
                  "hint": "Memory is more heavily utilized than Compute", "hint_rule": "SOLBottleneck"}
        emit("PROFILE_RESULT", result=dict(test, kernels=[kernel], duration_ms=kernel["duration_ms"]),
             total_tests=len(tests))
    data = (bytes(range(256)) * (size // 256 + 1))[:size]  # 384,000 bytes by default: three pieces
    digest = hashlib.sha256(data).hexdigest()
    piece = 160 * 1024
    parts = [data[i:i + piece] for i in range(0, len(data), piece)] if limit is None or size <= limit else []
    for n, part in enumerate(parts, 1):
        if report == "missing-piece" and n == 2:
            continue
        if report == "corrupt" and n == 3:
            part = b"x" + part[1:]
        emit("PROFILE_REPORT", name="profile.ncu-rep", part=n, parts=len(parts), size=len(data), sha256=digest,
             data=base64.b64encode(part).decode("ascii"))
        time.sleep(piece_delay)
    emit("PROFILED", tool="Nsight Compute", tool_version="fake", total_tests=len(tests), kernels=len(tests),
         report={"name": "profile.ncu-rep", "size": len(data), "sha256": digest})


if __name__ == "__main__":
    main()
