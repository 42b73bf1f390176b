"""Baseline jobs on a GPU machine, as the service's admin command runs them (POST /api/admin/baselines): each problem
a job of mode ``baseline`` pushed to the real warm worker through worker_bench.py's stand-in for the service, and one
through the cold agent (``python3 -m remote_agent --payload FILE``); every job must end BASELINED with figures for
each test, eager and torch.compile. Each figure is set beside the stored one of the same problem (conf/baselines/,
selftest/baselines.py's run on this GPU type) as a ratio.

    python3 selftest/baseline_jobs.py OUT [--no-cold] SLUG [SLUG ...]

Each problem in each of its dtypes. Writes OUT/baseline-jobs.json, prints a line per job, and writes the figures of
the worker's jobs as a baselines file (selftest/baselines.py's form, the last job's measured_at) to
OUT/baselines.json."""
import base64
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import worker_bench  # noqa: E402

from remote_agent import baseline, catalog, events  # noqa: E402

STORED = os.path.join(os.path.dirname(os.path.dirname(HERE)), "conf", "baselines")


def stored_figures():
    """{problem: {dtype: {method: {test: figures}}}} of every stored file (a later file's problem wins)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(STORED, "*.json"))):
        with open(path) as f:
            found.update(json.load(f).get("problems", {}))
    return found


def cold(slug, out):
    """One baseline job through the cold agent: its events."""
    key = os.urandom(32)
    payload = {"submission_id": "cold-" + slug, "problem": slug, "dtype": "float32", "mode": "baseline",
               "gpu_type": "H100", "event_key": base64.b64encode(key).decode()}
    fd, path = tempfile.mkstemp(suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(payload, f)
    with open(os.path.join(out, "cold-%s.log" % slug), "w") as log:
        done = subprocess.run([sys.executable, "-m", "remote_agent", "--payload", path], cwd=worker_bench.AGENT_ROOT,
                              stdout=subprocess.PIPE, stderr=log, text=True, timeout=600)
    return [e for e in (events.decode(line, key) for line in done.stdout.splitlines()) if e]


def row(name, path, slug, dtype, sent, seconds, stored):
    last = sent[-1] if sent else {}
    ratios = {}
    if last.get("type") == "BASELINED":
        before = stored.get(slug, {}).get(dtype, {})
        for method, tests in last["tests"].items():
            for test, figures in tests.items():
                old = before.get(method, {}).get(test, {}).get("median")
                ratios.setdefault(method, {})[test] = round(figures["median"] / old, 3) if old else None
    results = sum(e.get("type") == "BENCHMARK_RESULT" for e in sent)
    ok = last.get("type") == "BASELINED" and results == len(last["tests"]["eager"]) and all(
        set(last["tests"][m]) == set(last["tests"]["eager"]) for m in ("eager", "torch_compile"))
    line = {"name": name, "path": path, "problem": slug, "dtype": dtype, "final": last.get("type"), "ok": ok,
            "message": last.get("message"), "seconds": round(seconds, 2), "results": results,
            "hardware": last.get("hardware"), "measured_at": last.get("measured_at"), "tests": last.get("tests"),
            "vs_stored": ratios}
    compiled = [f.get("compile_seconds") for f in (last.get("tests") or {}).get("torch_compile", {}).values()]
    print("%-5s %-6s %-34s %-8s %-10s %6.1f s  compiles %s  vs stored eager %s compile %s" % (
        "ok" if ok else "FAIL", path, slug, dtype, last.get("type"), seconds, compiled,
        list((ratios.get("eager") or {}).values()), list((ratios.get("torch_compile") or {}).values())), flush=True)
    return line


def baselines_file(rows):
    """The worker's jobs that ended well as one baselines file (the form the service loads)."""
    done = [r for r in rows if r["path"] == "worker" and r["ok"]]
    if not done:
        return None
    last = max(done, key=lambda r: r["measured_at"])
    out = dict(last["hardware"], gpu_type=os.environ.get("KR_GPU_TYPE", "H100"), measured_at=last["measured_at"],
               method="baseline jobs through the warm worker (selftest/baseline_jobs.py; " + baseline.METHOD_TEXT + ")",
               problems={})
    for r in done:
        out["problems"].setdefault(r["problem"], {})[r["dtype"]] = r["tests"]
    return out


def main():
    args = sys.argv[1:]
    out = args.pop(0)
    cold_first = "--no-cold" not in args
    slugs = [a for a in args if a != "--no-cold"]
    os.makedirs(out, exist_ok=True)
    stored = stored_figures()
    rows = []
    if cold_first:
        began = time.monotonic()
        sent = cold(slugs[0], out)
        rows.append(row("cold-" + slugs[0], "cold", slugs[0], "float32", sent, time.monotonic() - began, stored))
    worker, log = worker_bench.start_worker(out)
    try:
        for slug in slugs:
            for dtype in catalog.load(slug).dtypes:
                run = worker_bench.push("", "warm-" + slug, slug, "baseline", dtype)
                seconds = (run["exit"][1] if run["exit"] else time.monotonic()) - run["created"]
                rows.append(row("warm-" + slug, "worker", slug, dtype, run["events"], seconds, stored))
    finally:
        worker.terminate()
        worker.wait(30)
        log.close()
    with open(os.path.join(out, "baseline-jobs.json"), "w") as f:
        json.dump({"jobs": rows, "ok": sum(r["ok"] for r in rows), "of": len(rows)}, f, indent=1)
    measured = baselines_file(rows)
    if measured is not None:
        with open(os.path.join(out, "baselines.json"), "w") as f:
            json.dump(measured, f, indent=1)
    print("%d of %d baseline jobs ended BASELINED with every test" % (sum(r["ok"] for r in rows), len(rows)))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
