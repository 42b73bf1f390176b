"""The reference's times are the agent's: taken by the solution's process before the solution's library is loaded
into it, and what that process says of them afterwards (user code in it can write anything) counts for nothing.
A fake worker (a real child process speaking worker.py's protocol) forges reference times after its REFERENCES."""
import io
import json
import os
import sys
import tempfile
import textwrap
import time
import types
import unittest
from unittest import mock

from remote_agent import agent, events, payload, reference_cache, verification

KEY = bytes(range(32))

# worker.py's protocol in benchmark mode: PHASE reference, REFERENCES (before the library), then the check and its
# RECORDED; from CHECKING on the library is loaded, and this one lies about the reference and forges its own times.
FORGER = textwrap.dedent('''
    import json, sys
    def send(event, **fields):
        print(json.dumps(dict(fields, event=event)), flush=True)
    send("PHASE", name="reference")
    send("REFERENCES", tests=[{"test_id": 1, "runtime_ms": 0.05, "iterations": 100, "empty_window_ms": 0.00125},
                              {"test_id": 2, "runtime_ms": 0.2, "iterations": 100, "empty_window_ms": 0.00128}])
    send("PHASE", name="check")
    send("CHECKING", total_tests=2)
    send("REFERENCES", tests=[{"test_id": 1, "runtime_ms": 5.0, "empty_window_ms": 0.0001},
                              {"test_id": 2, "runtime_ms": 20.0, "empty_window_ms": 0.0001}])
    send("CHECKED", passed_tests=2, total_tests=2)
    send("BENCHMARKING", total_tests=2)
    forged = [{"test_id": t, "name": "t%d" % t, "runtime_ms": r, "reference_runtime_ms": 9.0, "speedup": 9.0 / r}
              for t, r in ((1, 0.025), (2, 0.1))]
    for result in forged:
        send("BENCHMARK_RESULT", result=result)
    send("SUMMARY", avg_runtime_ms=0.0625, geomean_runtime_ms=0.05, geomean_speedup=180.0, test_results=forged)
    send("RECORDED", records={"1": {"ops": []}, "2": {"ops": []}})
    send("DONE")
''')


# The same worker where the agent has the reference's times already: its job says so, and it goes straight to the
# check (a REFERENCES it sends anyway, after its library is loaded, is user code speaking).
KEPT = textwrap.dedent('''
    import json, sys
    def send(event, **fields):
        print(json.dumps(dict(fields, event=event)), flush=True)
    job = json.load(open(sys.argv[1]))
    if job.get("time_references") is not False:
        sys.exit(5)
    send("PHASE", name="check")
    send("CHECKING", total_tests=2)
    send("REFERENCES", tests=[{"test_id": 1, "runtime_ms": 5.0}, {"test_id": 2, "runtime_ms": 20.0}])
    send("CHECKED", passed_tests=2, total_tests=2)
    send("RECORDED", records={"1": {"ops": []}, "2": {"ops": []}})
    send("DONE")
''')


class ReferenceCacheTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.now = [1000.0]
        self.cache = reference_cache.ReferenceCache(self.folder, b"k" * 32, max_age=600, clock=lambda: self.now[0])

    def test_kept_times_come_back_with_their_age_until_they_are_too_old(self):
        self.cache.put("key", {1: 0.5, 2: 1.5})
        self.now[0] += 30
        self.assertEqual(({1: 0.5, 2: 1.5}, 30.0), self.cache.get("key"))
        self.now[0] += 571
        self.assertIsNone(self.cache.get("key"), "older than max_age: timed again")
        self.assertIsNone(self.cache.get("other"))

    def test_an_entry_changed_without_the_secret_is_not_trusted(self):
        self.cache.put("key", {1: 0.5})
        path = os.path.join(self.folder, "references", "key.json")
        with open(path) as f:
            entry = json.load(f)
        with open(path, "w") as f:
            json.dump(dict(entry, body=entry["body"].replace("0.5", "50.0")), f)
        self.assertIsNone(self.cache.get("key"))
        self.cache.put("key", {1: 0.5})
        other = reference_cache.ReferenceCache(self.folder, b"x" * 32, clock=lambda: self.now[0])
        self.assertIsNone(other.get("key"), "another worker's secret")
        with open(path, "w") as f:
            f.write("{not json")
        self.assertIsNone(self.cache.get("key"))

    def test_without_a_secret_nothing_is_kept(self):
        cache = reference_cache.ReferenceCache(self.folder, None)
        cache.put("key", {1: 0.5})
        self.assertIsNone(cache.get("key"))
        self.assertFalse(os.path.exists(os.path.join(self.folder, "references")))

    def test_the_key_changes_with_the_problem_dtype_settings_and_gpu(self):
        problem = agent.catalog.load("leaky-relu")
        base = reference_cache.cache_key(problem, "float32", {"flush": True}, ["nvcc", "sm_90", 0])
        self.assertEqual(base, reference_cache.cache_key(problem, "float32", {"flush": True}, ["nvcc", "sm_90", 0]))
        self.assertNotEqual(base, reference_cache.cache_key(problem, "float16", {"flush": True}, ["nvcc", "sm_90", 0]))
        self.assertNotEqual(base, reference_cache.cache_key(problem, "float32", {}, ["nvcc", "sm_90", 0]))
        self.assertNotEqual(base, reference_cache.cache_key(problem, "float32", {"flush": True}, ["nvcc", "sm_90", 1]))
        self.assertNotEqual(base, reference_cache.cache_key(agent.catalog.load("relu"), "float32", {"flush": True},
                                                            ["nvcc", "sm_90", 0]))


def figure(median, iterations=100):
    return {"median": median, "mean": median, "min": median, "max": median, "cv": 0.0, "iterations": iterations,
            "throttled": 0, "samples": [median] * iterations}


class ReferenceTest(unittest.TestCase):
    def test_the_solutions_process_says_nothing_of_times_and_the_speedups_are_over_the_first_references(self):
        report, emitted = self.run_worker(FORGER)
        self.assertIsNotNone(report)
        self.assertEqual(["CHECKING", "CHECKED"], [e["type"] for e in emitted],
                         "its BENCHMARKING, BENCHMARK_RESULT and SUMMARY reach no one")
        self.assertEqual({"1": {"ops": []}, "2": {"ops": []}}, report.records["records"], "its record, a claim")
        self.assertEqual({1: 0.05, 2: 0.2}, self.runner.references)
        results = [agent.result_of(self.problem, "float32", case, figure(t), self.runner.references[case["test_id"]])
                   for case, t in zip(self.problem.cases[:2], (0.025, 0.1))]
        self.assertEqual([2.0, 2.0], [round(r["speedup"], 9) for r in results])
        self.assertAlmostEqual(2.0, agent.summary_of(results, None)["geomean_speedup"])

    def test_a_worker_that_ends_before_the_reference_is_an_error_not_the_kernels(self):
        report, emitted = self.run_worker("import sys; print('no device', file=sys.stderr); sys.exit(3)")
        self.assertIsNone(report)
        self.assertEqual(["ERROR"], [e["type"] for e in emitted])
        self.assertIn("before it had timed the reference", emitted[0]["message"])
        self.assertIn("no device", emitted[0]["details"])

    def test_times_the_worker_kept_are_used_and_the_job_times_no_reference(self):
        cache = reference_cache.ReferenceCache(tempfile.mkdtemp(), b"s" * 32)
        cache.put("k", {1: 0.05, 2: 0.2})
        report, emitted = self.run_worker(KEPT, kept=(cache, "k", cache.get("k")))
        self.assertIsNotNone(report)
        self.assertEqual(["CHECKING", "CHECKED"], [e["type"] for e in emitted])
        self.assertEqual({1: 0.05, 2: 0.2}, self.runner.references, "the kept times; its REFERENCES count for nothing")
        self.assertEqual("kept", self.runner.reference_timing["timed"])
        self.assertIsNone(self.runner.reference_window, "no window of the job's: the GPU's history alone")

    def test_times_taken_in_a_job_are_kept_for_the_next(self):
        cache = reference_cache.ReferenceCache(tempfile.mkdtemp(), b"s" * 32)
        report, _ = self.run_worker(FORGER, kept=(cache, "k", None))
        self.assertIsNotNone(report)
        self.assertEqual({"timed": "this job"}, self.runner.reference_timing)
        self.assertEqual({1: 0.05, 2: 0.2}, cache.get("k")[0], "the first REFERENCES, not the forged ones")
        self.assertAlmostEqual(0.001265, self.runner.reference_window, 9, "the first REFERENCES' windows (quiet.py)")

    def run_worker(self, script_text, kept=None):
        """The agent's execute() in benchmark mode over a fake worker (``script_text``, started into the job's room
        as the solution's process is): (its report, the events). ``kept``: the agent's reference_cache_entry."""
        workspace = agent.Workspace.open()
        self.addCleanup(workspace.close)
        script = os.path.join(workspace.work, "worker.py")
        with open(script, "w") as f:
            f.write(script_text)
        out = io.StringIO()
        runner = self.runner = agent.Agent(events.Emitter(KEY, out), workspace=workspace)
        self.problem = agent.catalog.load("leaky-relu")
        runner.began = time.monotonic()
        runner.job = {"library": "x.so", "symbol": "solution", "problem": "leaky-relu", "dtype": "float32"}
        runner.solution = runner.judge = None
        runner.kept_references = kept
        job = payload.parse(json.dumps({
            "submission_id": "s1", "problem": "leaky-relu", "language": "cuda", "dtype": "float32", "code": "x",
            "mode": "benchmark", "limits": {"compile_seconds": 10, "test_seconds": 20,
                                            "benchmark_seconds": 30}}).encode())
        env = dict(agent.worker_command(workspace.work)[1])
        with mock.patch.object(agent, "worker_command", lambda w: ([sys.executable, script], env)), \
                mock.patch.object(agent.device, "info", lambda: {}):
            report = runner.execute(job, None, types.SimpleNamespace(kind="nvcc"), workspace.work)
        return report, [events.decode(line, KEY) for line in out.getvalue().splitlines()]

    def test_figures_that_are_not_times_are_left_out(self):
        times = agent.reference_times({"tests": [{"test_id": 1, "runtime_ms": 0.1}, {"test_id": 2, "runtime_ms": -1},
                                                 {"test_id": 3, "runtime_ms": float("nan")}, {"test_id": "4"},
                                                 {"test_id": 5, "runtime_ms": True}, "junk"]})
        self.assertEqual({1: 0.1}, times)
        problem = agent.catalog.load("leaky-relu")
        self.assertIsNone(agent.result_of(problem, "float32", problem.cases[1], figure(0.1), times.get(2))["speedup"],
                          "no reference time: no speedup")


if __name__ == "__main__":
    unittest.main()


class UnverifiedConfirmedTest(unittest.TestCase):
    def verdicts(self, *first_then):
        from remote_agent import gate
        flag = os.path.join(tempfile.mkdtemp(), "gpu-0")
        runs = []
        answers = list(first_then)

        def audit_once(self_, payload_, work, tool, results, name):
            runs.append((name, os.path.exists(flag)))
            return answers.pop(0)

        runner = agent.Agent(events.Emitter(KEY, io.StringIO()))
        runner.began = time.monotonic()
        with mock.patch.object(agent.Agent, "audit_once", audit_once), \
                mock.patch.dict(os.environ, {gate.VARIABLE: flag}):
            timing = runner.audited(None, None, "ncu", [], {"method": "replayed", "status": "pending"})
        self.assertEqual("replayed", timing["method"])
        verdict = dict(timing["audit"], status=timing["status"])
        self.assertFalse(os.path.exists(flag), "the gate is released after")
        return verdict, runs

    def test_an_unverified_verdict_stands_only_if_a_second_run_with_the_device_held_agrees(self):
        noisy = {"status": "unverified", "problems": ["test 2: timed at 0.00267 ms, but the profiler saw 0.00464"]}
        verdict, runs = self.verdicts(noisy, {"status": "verified", "problems": []})
        self.assertEqual([("audit", False), ("audit-again", True)], runs)
        self.assertEqual("verified", verdict["status"])
        self.assertEqual(noisy["problems"], verdict["first_run"]["problems"], "the first run is on record")
        verdict, _ = self.verdicts(noisy, dict(noisy))
        self.assertEqual("unverified", verdict["status"])

    def test_a_verified_verdict_needs_one_run(self):
        verdict, runs = self.verdicts({"status": "verified", "problems": []})
        self.assertEqual([("audit", False)], runs)
