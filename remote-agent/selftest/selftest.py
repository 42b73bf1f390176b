"""GPU self-test of the agent, run on a GPU machine by scripts/gpu-selftest.sh.

Every problem with a correct CUDA and a correct HIP kernel; the faults (wrong result, unwritten output,
out-of-bounds write, infinite loop, compile error, a replayed result); a kernel on its own non-blocking
stream; the agent's median against triton.testing.do_bench; the spread of one kernel's median over 10 runs.
Writes transcripts.json (every run's events) and results.json into the output folder."""
import base64
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(HERE)
sys.path.insert(0, AGENT_ROOT)
from remote_agent import catalog, events as protocol  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/selftest"
CACHE = os.environ.get("KERNEL_RUNNER_CACHE", "/tmp/kr-selftest-cache")
os.makedirs(OUT, exist_ok=True)
transcripts = {}
checks = []


def run_agent(name, problem, language, code, mode="benchmark", limits=None, dtype="float32"):
    key = os.urandom(32)
    payload = {"submission_id": name, "problem": problem, "language": language, "dtype": dtype,
               "code": code, "mode": mode, "limits": limits or {}, "event_key": base64.b64encode(key).decode()}
    path = os.path.join(CACHE, "payload.json")
    os.makedirs(CACHE, exist_ok=True)
    with open(path, "w") as f:
        json.dump(payload, f)
    env = dict(os.environ, KERNEL_RUNNER_CACHE=CACHE, PYTHONPATH=AGENT_ROOT)
    started = time.time()
    done = subprocess.run([sys.executable, "-m", "remote_agent", "--payload", path], capture_output=True,
                          text=True, env=env, cwd=AGENT_ROOT, timeout=900)
    events = []
    # Both streams: on dstack they are one terminal. Only lines signed with the run's key count as events.
    signed_on_stderr = [e for e in (protocol.decode(line, key) for line in done.stderr.splitlines()) if e]
    if signed_on_stderr:
        events.append({"type": "<signed line on stderr>", "events": signed_on_stderr})
    for line in done.stdout.splitlines():
        event = protocol.decode(line, key)
        if event is not None:
            events.append(event)
        else:
            events.append({"type": "<not an event line>", "line": line})
    transcripts[name] = events
    last = events[-1] if events else {"type": "<none>"}
    print("%-38s %-20s %6.1fs" % (name, last["type"], time.time() - started), flush=True)
    if not events or last["type"] in ("ERROR", "RUNTIME_ERROR") and name.startswith("ok"):
        sys.stderr.write(done.stderr[-3000:])
    return events


def expect(name, events, wanted, why=""):
    got = events[-1]["type"] if events else None
    ok = got == wanted
    checks.append({"check": name, "expected": wanted, "got": got, "ok": ok, "why": why})
    if not ok:
        print("  FAILED: expected", wanted, "got", json.dumps(events[-1] if events else None)[:1500], flush=True)
    return ok


def timings(events):
    return {e["result"]["name"]: e["result"]["runtime_stats"]["timing"] for e in events
            if e.get("type") == "BENCHMARK_RESULT"}


def read(path):
    with open(path) as f:
        return f.read()


def main():
    medians = {}
    for slug in catalog.slugs():
        cuda = read(os.path.join(HERE, "kernels", slug + ".cu"))
        hip = read(os.path.join(HERE, "kernels", slug + ".hip"))
        events = run_agent("ok-cuda-" + slug, slug, "cuda", cuda)
        if expect("correct CUDA kernel benchmarks: " + slug, events, "BENCHMARKED"):
            medians[slug] = {r["name"]: r["runtime_ms"] for r in events[-1]["test_results"]}
        expect("correct HIP kernel passes: " + slug, run_agent("ok-hip-" + slug, slug, "hip", hip, "check"),
               "CHECKED")

    for dtype in ("float16", "bfloat16"):
        code = read(os.path.join(HERE, "kernels", "vector-addition-" + dtype + ".cu"))
        expect("correct " + dtype + " kernel benchmarks: vector-addition",
               run_agent("ok-" + dtype + "-vector-addition", "vector-addition", "cuda", code, dtype=dtype),
               "BENCHMARKED")
        wrong = code.replace("__hadd(A[i], B[i])", "A[i]")
        expect(dtype + " wrong result", run_agent("fault-" + dtype + "-wrong", "vector-addition", "cuda", wrong,
                                                  "check", dtype=dtype), "WRONG_ANSWER")

    faults = os.path.join(HERE, "faults")
    expect("wrong result", run_agent("fault-wrong", "vector-addition", "cuda", read(faults + "/wrong.cu"), "check"),
           "WRONG_ANSWER")
    expect("unwritten output element", run_agent("fault-unwritten", "vector-addition", "cuda",
                                                  read(faults + "/unwritten.cu"), "check"), "WRONG_ANSWER")
    expect("out-of-bounds write", run_agent("fault-out-of-bounds", "vector-addition", "cuda",
                                            read(faults + "/out-of-bounds.cu"), "check"), "RUNTIME_ERROR")
    crash = run_agent("fault-host-segfault", "vector-addition", "cuda", read(faults + "/host-segfault.cu"), "check")
    if expect("segfault in the host function", crash, "RUNTIME_ERROR"):
        checks.append({"check": "the segfault is named", "ok": "SIGSEGV" in crash[-1]["message"],
                       "got": crash[-1]["message"], "expected": "SIGSEGV"})
    expect("infinite loop", run_agent("fault-infinite-loop", "vector-addition", "cuda",
                                      read(faults + "/infinite-loop.cu"), "check", {"test_seconds": 15}),
           "TIME_LIMIT_EXCEEDED")
    expect("compile error", run_agent("fault-compile-error", "vector-addition", "cuda",
                                      read(faults + "/compile-error.cu"), "check"), "COMPILE_ERROR")
    expect("replayed result caught by the tamper guard", run_agent("fault-cached-result", "vector-addition",
                                                                   "cuda", read(faults + "/cached-result.cu")),
           "WRONG_ANSWER")

    forged = run_agent("fault-forged-events", "vector-addition", "cuda", read(faults + "/forge-events.cu"))
    expect("forged event lines on every fd change nothing", forged, "BENCHMARKED")
    real = [e for e in forged if e.get("type") == "BENCHMARKED"]
    checks.append({"check": "only the agent's own result counts", "expected": "one BENCHMARKED, not 0.0001 ms",
                   "got": [e.get("avg_runtime_ms") for e in real],
                   "ok": len(real) == 1 and real[0].get("avg_runtime_ms") != 0.0001})
    own = run_agent("stream-own", "vector-addition", "cuda", read(faults + "/own-stream.cu"))
    default = run_agent("stream-default", "vector-addition", "cuda",
                        "#define KR_DEFAULT_STREAM\n" + read(faults + "/own-stream.cu"))
    stream_result = {}
    if expect("kernel on its own stream benchmarks", own, "BENCHMARKED") and \
            expect("same kernel on the default stream benchmarks", default, "BENCHMARKED"):
        a, b = own[-1]["test_results"][-1], default[-1]["test_results"][-1]
        ratio = a["runtime_ms"] / b["runtime_ms"]
        stream_result = {"own_stream_ms": a["runtime_ms"], "default_stream_ms": b["runtime_ms"], "ratio": ratio}
        checks.append({"check": "own-stream time within 25% of the default-stream time", "ok": 0.75 < ratio < 1.25,
                       "got": ratio, "expected": "0.75..1.25"})
        used = {"own": timings(own), "default": timings(default), "plain": timings(transcripts.get(
            "ok-cuda-vector-addition", []))}
        stream_result["timing_sources"] = used
        plain = set(used["default"].values()) | set(used["plain"].values())
        checks.append({"check": "default-stream kernels are timed by GPU events at every size",
                       "ok": plain == {"events"}, "got": sorted(plain), "expected": ["events"]})
        checks.append({"check": "own-stream kernel (4 ms) falls back to device-wide timing",
                       "ok": used["own"].get(a["name"]) == "host", "got": used["own"].get(a["name"]),
                       "expected": "host"})

    bench = compare_do_bench(medians)
    spread = repeat_spread()
    results = {"checks": checks, "medians_ms": medians, "streams": stream_result, "do_bench": bench,
               "spread": spread}
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(OUT, "transcripts.json"), "w") as f:
        json.dump(transcripts, f)
    print(json.dumps({"do_bench": bench, "streams": stream_result, "spread": spread}, indent=1))
    failed = [c for c in checks if not c["ok"]]
    print("%d passed, %d failed" % (len(checks) - len(failed), len(failed)))
    return 1 if failed else 0


def compare_do_bench(medians):
    """The agent's median against triton.testing.do_bench on the same library and inputs (largest case)."""
    import torch
    import triton.testing
    from remote_agent import compiler
    from remote_agent.agent import build_plan
    toolchain = compiler.detect("cuda")
    out = []
    for slug in ("vector-addition", "relu", "matrix-multiplication", "softmax"):
        if slug not in medians:
            continue
        problem = catalog.load(slug)
        code = read(os.path.join(HERE, "kernels", slug + ".cu"))
        _, _, symbol, key = build_plan(code, "cuda", problem, toolchain)
        library = os.path.join(CACHE, key, "lib.so")
        case = problem.cases[-1]
        gen = torch.Generator(device="cuda")
        gen.manual_seed(problem.seed(case["test_id"]))
        inputs = problem.module.make_inputs(case["sizes"], torch.float32, gen, torch)
        ref = problem.module.reference(inputs, torch)
        outputs = {n: torch.empty_like(ref[n]) for n in problem.outputs()}
        args = []
        for p in problem.parameters:
            if p["pointer"]:
                args.append((outputs.get(p["name"]) if p["name"] in outputs else inputs[p["name"]]).data_ptr())
            else:
                args.append(case["sizes"].get(p["name"], inputs.get(p["name"])))
        fn = None
        if os.path.isfile(library):
            fn = getattr(ctypes.CDLL(library), symbol)
            fn.restype = None
            fn.argtypes = [ctypes.c_void_p if p["pointer"] else
                           {"float": ctypes.c_float, "size_t": ctypes.c_size_t, "int": ctypes.c_int}[p["type"]]
                           for p in problem.parameters]
        if fn is None:
            out.append({"problem": slug, "error": "library not found in the cache"})
            continue
        triton_ms = triton.testing.do_bench(lambda: fn(*args), return_mode="median")
        agent_ms = medians[slug][case["name"]]
        diff = abs(agent_ms - triton_ms) / triton_ms
        out.append({"problem": slug, "case": case["name"], "agent_median_ms": agent_ms,
                    "do_bench_median_ms": triton_ms, "relative_difference": diff})
        checks.append({"check": "agent median within 5% of do_bench: " + slug, "ok": diff <= 0.05,
                       "got": diff, "expected": "<= 0.05"})
    return out


def repeat_spread():
    code = read(os.path.join(HERE, "kernels", "vector-addition.cu"))
    per_case = {}
    for i in range(10):
        events = run_agent("spread-%d" % i, "vector-addition", "cuda", code)
        if events and events[-1]["type"] == "BENCHMARKED":
            for r in events[-1]["test_results"]:
                per_case.setdefault(r["name"], []).append(r["runtime_ms"])
                if r["name"] == "N = 2^25 + 3" and i == 0:
                    per_case["bandwidth_gbs"] = r["bandwidth_gbs"]
    summary = {}
    for name, values in per_case.items():
        if isinstance(values, list) and len(values) > 1:
            summary[name] = {"runs": len(values), "min_ms": min(values), "max_ms": max(values),
                             "median_ms": statistics.median(values),
                             "spread_pct": 100 * (max(values) - min(values)) / statistics.median(values)}
    summary["bandwidth_gbs_largest"] = per_case.get("bandwidth_gbs")
    return summary


if __name__ == "__main__":
    sys.exit(main())
