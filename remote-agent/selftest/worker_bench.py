"""Benchmark (device machine): submissions one after another on one warm worker, timed end to end.

    python3 selftest/worker_bench.py OUT_DIR [COUNT [isolation | replay | all | queued | neighbours | tenant]]

The device machine has no Java, so a stand-in for the service speaks the worker protocol (the routes and
answers of src/main/java/dev/kernelrunner/http/WorkerApi.java: a job stream, lines taken from an index, exits
that wait for every line) on a real socket, and the real worker (`python3 -m remote_agent worker`, its warm
path) runs leaky-relu in benchmark mode: COUNT submissions with code new to the compiler cache, then COUNT with
the same code again (compile cached). Each is timed from the job's push to the BENCHMARKED line's arrival and to
its exit; every phase's event is timed too. Like the service, the stand-in gives each benchmark where its board's
#1's interval so far (``new_best_below_ms``): a new #1 is audited, as is a 5% sample of the rest. Writes
OUT_DIR/worker-bench.json and prints a table. With a third argument, the adversarial cases marked so (``all``: every
case; KR_CASES: those files of them) go through the worker first, after the honest leaky-relu whose geomean their
``min_honest_ratio`` is against; without, one submission warms the worker up first (not counted).
``neighbours``: instead, COUNT honest leaky-relus alone, then COUNT times the adversarial case neighbour-hog.cu
queued with an honest leaky-relu at once (new code each): the honest figures beside it against those alone.
``tenant``: the same, but beside another process of the machine's that keeps the GPU busy (TENANT), out of the
worker's reach: each honest job beside it must rank as alone or not rank (remote_agent/quiet.py).
``queued``: besides, COUNT new and then COUNT same submissions are queued at once, as a busy service
holds them: the worker's rate is the whole queue over the time from its first push to its last exit.

The worker runs with its default jobs per GPU (two: gpu_worker.py's ``--jobs-per-gpu``), or KR_BENCH_JOBS_PER_GPU.
Each of its places holds one job stream, and the stand-in pushes a stream its next job once its last one exited
(as the service's hub gives a job to a free worker).
"""
import base64
import concurrent.futures
import hashlib
import hmac
import http.server
import json
import math
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
AGENT_ROOT = os.path.dirname(HERE)
TOKEN = "bench-" + uuid.uuid4().hex


class Hub:
    def __init__(self):
        self.machine = None  # the worker's machine key, once it enrolled
        self.proofs = 0  # job streams opened with a valid proof
        self.jobs = queue.Queue()
        self.lock = threading.Lock()
        self.runs = {}  # job id -> {"key", "lines", "times", "exit", "done"}
        # Each board's #1 so far, (its geometric mean, the low end of its interval), by (problem, dtype): the
        # service's payloads carry the second (new_best_below_ms: a result under it is audited), from its Board.
        self.boards = {}


HUB = Hub()


def decode(line, key):
    if not line.startswith("JSON_EVENT:"):
        return None
    _, mac, text = line.split(":", 2)
    if hmac.compare_digest(mac, hmac.new(key, text.encode(), hashlib.sha256).hexdigest()):
        return json.loads(text)
    return None


class StandIn(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.headers.get("Authorization") != "Bearer " + TOKEN:
            self.send_error(401)
            return
        # The stream opens only with the enrolled machine's proof (WorkerApi.stream, workers/MachineKey.java).
        worker_id = dict(part.split("=", 1) for part in self.path.split("?", 1)[1].split("&")).get("worker_id", "")
        proof = self.headers.get("X-Machine-Proof", "")
        at = proof.split(".", 1)[0]
        expected = None
        if HUB.machine is not None and at.isdigit():
            message = ("connect\n%s\n%s" % (urllib.parse.unquote(worker_id), at)).encode()
            expected = at + "." + hmac.new(HUB.machine, message, hashlib.sha256).hexdigest()
        if expected is None or not hmac.compare_digest(expected, proof) or abs(time.time() - int(at)) > 300:
            self.send_error(401)
            return
        HUB.proofs += 1
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b"event: hello\ndata: {}\n\n")
        self.wfile.flush()
        while True:
            try:
                job = HUB.jobs.get(timeout=5)
            except queue.Empty:
                self.wfile.write(b": heartbeat\n\n")
                self.wfile.flush()
                continue
            with HUB.lock:
                run = HUB.runs[job["job_id"]]
                run["pushed"] = time.monotonic()
                run["place"] = urllib.parse.unquote(worker_id)
            self.wfile.write(("event: job\ndata: " + json.dumps(job) + "\n\n").encode())
            self.wfile.flush()
            while not run["done"].wait(5):  # this worker's place is taken until the job's exit
                self.wfile.write(b": heartbeat\n\n")
                self.wfile.flush()

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        now = time.monotonic()
        if self.path == "/api/worker/enroll":  # the first machine key binds the token (WorkerApi.enroll)
            key = base64.b64decode(body["machine_key"])
            with HUB.lock:
                if HUB.machine is None:
                    HUB.machine = key
                same = HUB.machine == key
            if not same:
                self.send_error(409)
                return
            self._reply({"fingerprint": hashlib.sha256(key).hexdigest()[:16]})
            return
        job_id = self.path.split("/")[4]
        with HUB.lock:
            run = HUB.runs[job_id]
            if self.path.endswith("/lines"):
                start = body["from"]
                if start <= len(run["lines"]):
                    for line in body["lines"][len(run["lines"]) - start:]:
                        run["lines"].append(line)
                        event = decode(line, run["key"])
                        if event is not None:
                            run["times"].append((event["type"], now))
                            run["events"].append(event)
                reply = {"consumed": len(run["lines"])}
            else:
                if body["lines"] != len(run["lines"]):
                    reply = {"ended": False, "consumed": len(run["lines"])}
                else:
                    run["exit"] = (body["exit_code"], now, body.get("tail"))
                    reply = {"ended": True}
                    run["done"].set()
        self._reply(reply)


def push(code, name, problem="leaky-relu", mode="benchmark", dtype="float32", benchmark=None):
    """One job through the worker, as the service pushes it (``benchmark``: settings over the board's); its run
    once it exited: {"events", "times" (each event's type and arrival), "exit" (code, time, log tail), "created"}."""
    key = os.urandom(32)
    job_id = str(uuid.uuid4()) + "." + uuid.uuid4().hex[:8]
    payload = {"submission_id": name, "problem": problem, "language": "cuda", "dtype": dtype,
               "code": code, "mode": mode, "gpu_type": "H100", "limits": {},
               "event_key": base64.b64encode(key).decode(),
               "benchmark": {"review_speedup": 10}}
    if mode == "benchmark":
        payload["benchmark"]["new_best_below_ms"] = HUB.boards.get((problem, dtype), (None, None))[1]
        payload["benchmark"].update(benchmark or {})
    with HUB.lock:
        HUB.runs[job_id] = {"key": key, "lines": [], "times": [], "events": [], "exit": None,
                            "done": threading.Event(), "created": time.monotonic()}
    HUB.jobs.put({"job_id": job_id, "submission_id": name, "payload": payload})
    HUB.runs[job_id]["done"].wait(600)
    return HUB.runs[job_id]


def start_worker(out):
    """The stand-in service on a socket of its own, and the real worker (its warm path) enrolled with it, logging
    to out/worker-bench.txt: (the worker's process, its log)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = dict(os.environ, KERNEL_RUNNER_WORKER_TOKEN=TOKEN, PYTHONPATH=AGENT_ROOT,
               KERNEL_RUNNER_JOB_LOGS=os.path.join(out, "jobs"))
    os.makedirs(env["KERNEL_RUNNER_JOB_LOGS"], exist_ok=True)
    log = open(os.path.join(out, "worker-bench.txt"), "w")
    places = ["--jobs-per-gpu", os.environ["KR_BENCH_JOBS_PER_GPU"]] if os.environ.get("KR_BENCH_JOBS_PER_GPU") else []
    worker = subprocess.Popen([sys.executable, "-m", "remote_agent", "worker", "--server",
                               "http://127.0.0.1:%d" % server.server_address[1], "--gpu-type", "H100"] + places,
                              cwd=AGENT_ROOT, env=env, stdout=log, stderr=log)
    return worker, log


def submit(code, name, problem="leaky-relu", mode="benchmark", benchmark=None):
    run = push(code, name, problem, mode, benchmark=benchmark)
    row = result_of(run, name)
    timing = (row["verification"] or {}).get("timing") or {}
    best = HUB.boards.get((problem, "float32"))
    if row["final"] == "BENCHMARKED" and row["ranked"] and timing.get("status") == "verified" and (
            best is None or row["geomean_runtime_ms"] < best[0]):
        samples = [((e.get("result") or {}).get("runtime_stats") or {}).get("samples") or [0.0]
                   for e in run["events"] if e.get("type") == "BENCHMARK_RESULT"]
        HUB.boards[(problem, "float32")] = (row["geomean_runtime_ms"], interval_low(samples))
    return row


def interval_low(tests):
    """The low end of a result's 95% interval as the service's Board (leaderboard/Board.java) ranks it: the
    geometric mean over its tests of each one's order statistic at rank n/2 - 1.96 sqrt(n)/2 (at least the first)."""
    lows = []
    for samples in tests:
        ordered = sorted(samples)
        lows.append(ordered[max(1, math.floor(len(ordered) / 2 - 1.959964 * math.sqrt(len(ordered)) / 2)) - 1])
    return math.exp(sum(math.log(max(low, 1e-12)) for low in lows) / len(lows))


def result_of(run, name):
    """A job's run as the service would store it: its last event (a VERIFIED's timing in its result), and when each
    phase came."""
    start = run["created"]
    phases = {}
    for kind, at in run["times"]:
        phases.setdefault(kind, round(at - start, 3))
    last = run["events"][-1] if run["events"] else {}
    if last.get("type") == "VERIFIED":  # the profiler's verdict on the times, after the result (as the service does)
        result = dict(run["events"][-2], verification=dict(run["events"][-2].get("verification") or {},
                                                           timing=last.get("timing")))
        last = dict(result, type="BENCHMARKED", unverified=(last.get("timing") or {}).get("status") == "unverified")
    return {"name": name, "place": run.get("place"), "final": last.get("type"), "message": last.get("message"),
            "unverified": last.get("unverified"), "isolation": last.get("isolation"),
            "to_benchmarked_s": phases.get("BENCHMARKED"),
            "to_verified_s": phases.get("VERIFIED"),
            "to_exit_s": round(run["exit"][1] - start, 3) if run["exit"] else None, "phases": phases,
            "verification": last.get("verification"), "avg_runtime_ms": last.get("avg_runtime_ms"),
            "geomean_runtime_ms": last.get("geomean_runtime_ms"), "geomean_speedup": last.get("geomean_speedup"),
            "ranked": last.get("ranked"), "audit_reason": ((last.get("verification") or {}).get("timing") or {})
            .get("audit_reason"),
            "tests": [{"name": r.get("name"), "runtime_ms": r.get("runtime_ms"),
                       "iterations": (r.get("runtime_stats") or {}).get("iterations"),
                       "empty_window_ms": (r.get("runtime_stats") or {}).get("empty_window_ms")}
                      for r in (e.get("result") or {} for e in run["events"]
                                if e.get("type") == "BENCHMARK_RESULT")],
            "exit": run["exit"][0] if run["exit"] else None,
            "tail": [line for line in (run["exit"][2] or []) if line.startswith(("agent:", "worker: ", "judge: judge:"))]
            if run["exit"] and last.get("type") == "BENCHMARKED" else (run["exit"][2] or [])[-5:] if run["exit"]
            else None}


def adversarial_cases(marked):
    """The cases of adversarial/cases.json marked ``marked`` (``all``: every one), each through the worker (``repeat``
    times in a row): its verdict as the cold self-test requires it (ranked or not, and no faster than its
    ``min_honest_ratio`` of the honest leaky-relu timed through the worker first), and the agent's folder as it was."""
    sys.path.insert(0, HERE)
    import selftest  # noqa: the cold self-test's checks of a verdict (its argv is this script's: it writes nothing)
    with open(os.path.join(HERE, "adversarial", "cases.json")) as f:
        cases = [c for c in json.load(f) if marked == "all" or c.get(marked)]
    chosen = [name for name in os.environ.get("KR_CASES", "").split(",") if name]  # a part of them, by file
    cases = [c for c in cases if not chosen or c["file"] in chosen]
    before = selftest.agent_digest()
    with open(os.path.join(HERE, "kernels", "leaky-relu.cu")) as f:
        honest = submit(f.read(), "honest-leaky-relu")
    selftest.HONEST["leaky-relu"] = honest["geomean_runtime_ms"]
    rows = [dict(honest, ok=honest["final"] == "BENCHMARKED" and honest["ranked"] is True)]
    for case in cases:
        with open(os.path.join(HERE, "adversarial", case["file"])) as f:
            code = ("#define " + case["define"] + "\n" if "define" in case else "") + f.read()
        for attempt in range(case.get("repeat", 1)):
            row = submit(code, "%s-%d" % (case["file"], attempt), case["problem"], case.get("mode", "benchmark"),
                         case.get("benchmark"))
            event = {k: row[k] for k in ("message", "unverified", "ranked", "geomean_runtime_ms", "geomean_speedup")}
            event["type"] = row["final"]
            row["ok"] = selftest.judge_case(dict(case, attack=False), [event], row["name"])
            print("case  ", row["name"], row["final"], row["ok"], (row["message"] or "")[:120], flush=True)
            rows.append(row)
    after = selftest.agent_digest()
    rows.append({"name": "the agent's folder is as it was", "ok": before == after})
    return rows


def summary(label, rows):
    times = [r["to_benchmarked_s"] for r in rows if r["to_benchmarked_s"] is not None]
    exits = [r["to_exit_s"] for r in rows if r["to_exit_s"] is not None]
    if not times:
        print("%-8s no BENCHMARKED: %s" % (label, [r["final"] for r in rows]))
        return {"label": label, "benchmarked": 0}
    out = {"label": label, "n": len(rows), "benchmarked": len(times), "p50_s": round(statistics.median(times), 3),
           "p90_s": round(sorted(times)[int(0.9 * (len(times) - 1))], 3), "min_s": min(times),
           "max_s": max(times), "exit_p50_s": round(statistics.median(exits), 3),
           "per_hour": round(3600 / statistics.mean(exits)) if exits else None}
    out["audited"] = {}
    for row in rows:
        if row.get("audit_reason"):
            out["audited"][row["audit_reason"]] = out["audited"].get(row["audit_reason"], 0) + 1
    print("%-8s %d/%d BENCHMARKED  p50 %.2f s  p90 %.2f s  (min %.2f, max %.2f)  exit p50 %.2f s  ~%s/hour  "
          "audited: %s" % (label, len(times), len(rows), out["p50_s"], out["p90_s"], out["min_s"], out["max_s"],
                           out["exit_p50_s"], out["per_hour"], out["audited"] or "none"))
    # Each test's figure from one job (one set of processes) to the next: the spread of the published medians.
    out["tests"] = {}
    for name in dict.fromkeys(t["name"] for r in rows for t in r.get("tests") or []):
        def each(key, name=name):  # the test's ``key`` in every job that has it
            return [t[key] for r in rows for t in r.get("tests") or [] if t["name"] == name and t.get(key)]
        figures, counts, windows = each("runtime_ms"), each("iterations"), each("empty_window_ms")
        if figures:
            middle = statistics.median(figures)
            out["tests"][name] = {"median_ms": middle, "spread": (max(figures) - min(figures)) / middle,
                                  "jobs": len(figures), "samples_p50": statistics.median(counts) if counts else None,
                                  "empty_window_ms": [min(windows), max(windows)] if windows else None}
            print("%-8s   %-12s median %.5f ms over %d jobs, spread %.1f%%, samples p50 %s, empty windows %s ms" % (
                "", name, middle, len(figures), 100 * out["tests"][name]["spread"], out["tests"][name]["samples_p50"],
                out["tests"][name]["empty_window_ms"]))
    return out


def queued(label, codes):
    """``codes`` queued at once, each a submission: their rows, and the worker's rate over the whole queue."""
    began = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(len(codes)) as pool:
        rows = list(pool.map(lambda item: submit(item[1], "%s-%d" % (label, item[0])), enumerate(codes)))
    wall = time.monotonic() - began
    out = summary(label, rows)
    out.update(wall_s=round(wall, 3), queue_per_hour=round(3600 * len(codes) / wall),
               places={place: sum(r["place"] == place for r in rows) for place in {r["place"] for r in rows}})
    print("%-8s %d queued at once: the last exit after %.2f s: %d an hour; by place %s" % (
        label, len(codes), wall, out["queue_per_hour"], out["places"]), flush=True)
    return rows, out


# Another tenant of the worker's GPU, out of the worker's reach: a process of the machine's that keeps the device
# busy with device-to-device copies (as neighbour-hog.cu's process left behind does) until it is killed.
TENANT = """import sys, torch
a = torch.empty(1 << 28, dtype=torch.uint8, device='cuda'); b = torch.empty_like(a)
b.copy_(a); torch.cuda.synchronize(); print('busy', flush=True)
while True:
    for _ in range(8): b.copy_(a)
    torch.cuda.synchronize()
"""


def neighbours(code, count, tenant=False):
    """An honest job's figures beside neighbour-hog.cu on the same GPU (or, ``tenant``, beside TENANT's process),
    against its figures alone: (rows, out)."""
    with open(os.path.join(HERE, "adversarial", "neighbour-hog.cu")) as f:
        hog = f.read()
    tag = uuid.uuid4().hex
    rows = {"alone": [], "beside": [], "hog": []}
    for i in range(count):
        rows["alone"].append(submit(code + "\n// alone %s %d\n" % (tag, i), "alone-%d" % i))
    if tenant:
        other = subprocess.Popen([sys.executable, "-c", TENANT], stdout=subprocess.PIPE, text=True)
        try:
            other.stdout.readline()
            for i in range(count):
                rows["beside"].append(submit(code + "\n// beside %s %d\n" % (tag, i), "beside-%d" % i))
                print("tenant", i, rows["beside"][-1]["final"], rows["beside"][-1]["ranked"],
                      rows["beside"][-1]["geomean_runtime_ms"], flush=True)
        finally:
            other.kill()
            other.wait()
    for i in range(count if not tenant else 0):
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            hogged = pool.submit(submit, hog, "hog-%d" % i, "leaky-relu", "benchmark", {"new_best_below_ms": 1e-6})
            time.sleep(0.05)  # the case first in the queue
            beside = pool.submit(submit, code + "\n// beside %s %d\n" % (tag, i), "beside-%d" % i)
            rows["hog"].append(hogged.result())
            rows["beside"].append(beside.result())
        print("pair  ", i, rows["hog"][-1]["final"], rows["hog"][-1]["place"], rows["beside"][-1]["final"],
              rows["beside"][-1]["place"], rows["beside"][-1]["geomean_runtime_ms"], flush=True)

    def medians(label):
        figures = {}
        for row in rows[label]:
            for test in row.get("tests") or []:
                figures.setdefault(test["name"], []).append(test["runtime_ms"])
        geomeans = [r["geomean_runtime_ms"] for r in rows[label] if r["geomean_runtime_ms"]]
        return {name: statistics.median(v) for name, v in figures.items()}, (
            statistics.median(geomeans) if geomeans else None)

    alone, beside = medians("alone"), medians("beside")
    ratio = beside[1] / alone[1] if alone[1] and beside[1] else None
    # Each honest job beside the case either ranks with its figures as alone, or does not rank (quiet.py: its
    # windows read long); a ranked one fast or slow beyond NEIGHBOUR_MOST is the case moving a rival's figures.
    ranked = [r["geomean_runtime_ms"] / alone[1] for r in rows["beside"]
              if r["ranked"] and r["geomean_runtime_ms"] and alone[1]]
    out = {"alone_geomean_ms": alone[1], "beside_geomean_ms": beside[1], "ratio": ratio,
           "tests": {name: {"alone_ms": alone[0][name], "beside_ms": beside[0].get(name),
                            "ratio": beside[0][name] / alone[0][name] if beside[0].get(name) else None}
                     for name in alone[0]},
           "hog_finals": [r["final"] for r in rows["hog"]], "beside_finals": [r["final"] for r in rows["beside"]],
           "beside_ranked_ratios": ranked,
           "beside_unranked": [((r["verification"] or {}).get("timing") or {}).get("reason")
                               for r in rows["beside"] if not r["ranked"]],
           "ok": alone[1] is not None and all(1 / NEIGHBOUR_MOST <= x <= NEIGHBOUR_MOST for x in ranked) and all(
               r["final"] == "BENCHMARKED" for r in rows["beside"] + rows["hog"])}
    print("neighbours: honest geomean alone %s ms, beside the other work %s ms (x%s); %d ranked beside it (x%s), "
          "%d not: %s"
          % (alone[1], beside[1], "%.3f" % ratio if ratio else "?", len(ranked),
             ", ".join("%.3f" % x for x in ranked) or "-", len(rows["beside"]) - len(ranked),
             "as alone or not ranked" if out["ok"] else "MOVED OR FAILED"))
    for name, test in out["tests"].items():
        print("            %-12s alone %.5f ms beside %s ms" % (name, test["alone_ms"], test["beside_ms"]))
    return rows, out


# How much slower or faster a ranked honest job's geometric mean may be beside neighbour-hog.cu than alone's median:
# one job's figures move 1.3-3.9% (sd) from process to process below 20 us (docs/benchmarks.md).
NEIGHBOUR_MOST = 1.05


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/worker-bench"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    marked = sys.argv[3] if len(sys.argv) > 3 else None  # which adversarial cases go through the worker first
    in_queue, beside, tenant = marked == "queued", marked in ("neighbours", "tenant"), marked == "tenant"
    marked = None if in_queue or beside else marked
    os.makedirs(out, exist_ok=True)
    worker, log = start_worker(out)
    with open(os.path.join(HERE, "kernels", "leaky-relu.cu")) as f:
        code = f.read()
    rows = {"fresh": [], "cached": []}
    cases, warm_up, queues, hogged = [], None, {}, None
    try:
        if marked:
            cases = adversarial_cases(marked)
        else:
            # A worker just started has no agent ready yet (and a fresh machine compiles PyTorch's kernels for its
            # GPU once): its first job, 9.6-10.9 s (docs/evidence/replay-h100/run23-*), is not a warm worker's.
            warm_up = submit(code + "\n// warm-up %s\n" % uuid.uuid4().hex, "warm-up")
            print("warm-up", warm_up["final"], warm_up["to_benchmarked_s"], "(not counted)", flush=True)
        if beside:
            found, hogged = neighbours(code, count, tenant)
            rows.update(found)
            count = 0  # nothing else
        for i in range(count):
            # A comment of its own: new to the compiler's cache.
            rows["fresh"].append(submit(code + "\n// fresh %s %d\n" % (uuid.uuid4().hex, i), "fresh-%d" % i))
            print("fresh ", i, rows["fresh"][-1]["final"], rows["fresh"][-1]["to_benchmarked_s"],
                  json.dumps(rows["fresh"][-1]["phases"]), flush=True)
        for i in range(count):
            rows["cached"].append(submit(code, "cached-%d" % i))
            print("cached", i, rows["cached"][-1]["final"], rows["cached"][-1]["to_benchmarked_s"],
                  json.dumps(rows["cached"][-1]["phases"]), rows["cached"][-1]["tail"], flush=True)
        if in_queue:
            tag = uuid.uuid4().hex
            for label, codes in (("q-fresh", [code + "\n// queued %s %d\n" % (tag, i) for i in range(count)]),
                                 ("q-cached", [code] * count)):
                rows[label], queues[label] = queued(label, codes)
    finally:
        worker.terminate()
        worker.wait(30)
    result = {"count": count, "fresh": summary("fresh", rows["fresh"]), "cached": summary("cached", rows["cached"]),
              "queued": queues, "neighbours": hogged, "runs": rows, "cases": cases, "warm_up": warm_up,
              "machine": {"enrolled": HUB.machine is not None, "streams_with_proof": HUB.proofs}}
    print("machine key enrolled: %s; job streams opened with its proof: %d" % (HUB.machine is not None, HUB.proofs))
    if cases:
        print("%d of %d adversarial cases through the worker as expected" % (sum(c["ok"] for c in cases), len(cases)))
    with open(os.path.join(out, "worker-bench.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
