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
import unittest
from unittest import mock

from remote_agent import agent, events, payload, verification

KEY = bytes(range(32))

# worker.py's protocol in benchmark mode: PHASE reference, REFERENCES (before the library), then the check, GO,
# the benchmark; from CHECKING on the library is loaded, and this one lies about the reference.
FORGER = textwrap.dedent('''
    import json, sys
    def send(event, **fields):
        print(json.dumps(dict(fields, event=event)), flush=True)
    send("PHASE", name="reference")
    send("REFERENCES", tests=[{"test_id": 1, "runtime_ms": 0.05, "iterations": 100},
                              {"test_id": 2, "runtime_ms": 0.2, "iterations": 100}])
    send("PHASE", name="check")
    send("CHECKING", total_tests=2)
    send("REFERENCES", tests=[{"test_id": 1, "runtime_ms": 5.0}, {"test_id": 2, "runtime_ms": 20.0}])
    send("CHECKED", passed_tests=2, total_tests=2)
    assert sys.stdin.readline().strip() == "GO"
    send("PHASE", name="benchmark")
    send("BENCHMARKING", total_tests=2)
    forged = [{"test_id": t, "name": "t%d" % t, "runtime_ms": r, "reference_runtime_ms": 9.0, "speedup": 9.0 / r}
              for t, r in ((1, 0.025), (2, 0.1))]
    for result in forged:
        send("BENCHMARK_RESULT", result=result)
    send("SUMMARY", avg_runtime_ms=0.0625, geomean_runtime_ms=0.05, geomean_speedup=180.0, test_results=forged)
    send("DONE")
''')


class ReferenceTest(unittest.TestCase):
    def test_the_speedups_are_over_the_reference_times_taken_before_the_library(self):
        passed = verification.Outcome("PASSED", [{"test_id": 1}, {"test_id": 2}])
        with mock.patch.object(agent.Agent, "judged", lambda self, *a, **k: (passed, None)):
            report, emitted = self.run_worker(FORGER)
        self.assertIsNotNone(report)
        results = [e["result"] for e in emitted if e["type"] == "BENCHMARK_RESULT"]
        self.assertEqual([0.05, 0.2], [r["reference_runtime_ms"] for r in results])
        self.assertEqual([2.0, 2.0], [round(r["speedup"], 9) for r in results])
        summary = report.summary
        self.assertEqual([0.05, 0.2], [r["reference_runtime_ms"] for r in summary["test_results"]])
        self.assertAlmostEqual(2.0, summary["geomean_speedup"])

    def test_a_worker_that_ends_before_the_reference_is_an_error_not_the_kernels(self):
        report, emitted = self.run_worker("import sys; print('no device', file=sys.stderr); sys.exit(3)")
        self.assertIsNone(report)
        self.assertEqual(["ERROR"], [e["type"] for e in emitted])
        self.assertIn("before it had timed the reference", emitted[0]["message"])
        self.assertIn("no device", emitted[0]["details"])

    def run_worker(self, script_text):
        """The agent's execute() in benchmark mode over a fake worker (``script_text``, started into the job's room
        as the solution's process is): (its report, the events)."""
        workspace = agent.Workspace.open()
        self.addCleanup(workspace.close)
        script = os.path.join(workspace.work, "worker.py")
        with open(script, "w") as f:
            f.write(script_text)
        out = io.StringIO()
        runner = agent.Agent(events.Emitter(KEY, out), workspace=workspace)
        runner.began = time.monotonic()
        runner.job = {"library": "x.so", "symbol": "solution", "problem": "leaky-relu", "dtype": "float32"}
        runner.solution = runner.judge = None
        job = payload.parse(json.dumps({
            "submission_id": "s1", "problem": "leaky-relu", "language": "cuda", "dtype": "float32", "code": "x",
            "mode": "benchmark", "limits": {"compile_seconds": 10, "test_seconds": 20,
                                            "benchmark_seconds": 30}}).encode())
        env = dict(agent.worker_command(workspace.work)[1])
        with mock.patch.object(agent, "worker_command", lambda w: ([sys.executable, script], env)), \
                mock.patch.object(agent.device, "info", lambda: {}):
            report = runner.execute(job, None, None, workspace.work)
        return report, [events.decode(line, KEY) for line in out.getvalue().splitlines()]

    def test_figures_that_are_not_times_are_left_out(self):
        times = agent.reference_times({"tests": [{"test_id": 1, "runtime_ms": 0.1}, {"test_id": 2, "runtime_ms": -1},
                                                 {"test_id": 3, "runtime_ms": float("nan")}, {"test_id": "4"},
                                                 {"test_id": 5, "runtime_ms": True}, "junk"]})
        self.assertEqual({1: 0.1}, times)
        self.assertIsNone(agent.with_reference({"test_id": 2, "runtime_ms": 0.1}, times)["speedup"],
                          "no reference time: no speedup")


if __name__ == "__main__":
    unittest.main()


class UnverifiedConfirmedTest(unittest.TestCase):
    def verdicts(self, *first_then):
        from remote_agent import gate
        flag = os.path.join(tempfile.mkdtemp(), "gpu-0")
        runs = []
        answers = list(first_then)

        def profiled(self_, payload_, toolchain, work, tool, claims, name):
            runs.append((name, os.path.exists(flag)))
            return answers.pop(0)

        runner = agent.Agent(events.Emitter(KEY, io.StringIO()))
        runner.began = time.monotonic()
        with mock.patch.object(agent.Agent, "profiled_verdict", profiled), \
                mock.patch.dict(os.environ, {gate.VARIABLE: flag}):
            verdict = runner.timing_verdict(None, None, None, "ncu", [])
        self.assertFalse(os.path.exists(flag), "the gate is released after")
        return verdict, runs

    def test_an_unverified_verdict_stands_only_if_a_second_run_with_the_device_held_agrees(self):
        noisy = {"status": "unverified", "problems": ["test 2: timed at 0.00267 ms, but the profiler saw 0.00464"]}
        verdict, runs = self.verdicts(noisy, {"status": "verified", "problems": []})
        self.assertEqual([("verify", False), ("verify-again", True)], runs)
        self.assertEqual("verified", verdict["status"])
        self.assertEqual(noisy["problems"], verdict["first_run"]["problems"], "the first run is on record")
        verdict, _ = self.verdicts(noisy, dict(noisy))
        self.assertEqual("unverified", verdict["status"])

    def test_a_verified_verdict_needs_one_run(self):
        verdict, runs = self.verdicts({"status": "verified", "problems": []})
        self.assertEqual([("verify", False)], runs)
