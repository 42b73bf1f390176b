"""A baseline job (payload mode ``baseline``): the agent has a worker process in the job's room measure PyTorch's
own times (baseline.py) with the GPU's timing gate held, publishes each test case as it comes and ends BASELINED;
a worker that fails, stalls, ends early or reports figures of another shape ends the job in one error. The workers
here are real child processes speaking worker.py's protocol, started as the agent starts its worker."""
import io
import json
import os
import sys
import tempfile
import textwrap
import types
import unittest
from unittest import mock

from remote_agent import agent, baseline, catalog, events, gate, payload

KEY = bytes(range(32))
CASES = [(case["test_id"], case["name"]) for case in catalog.load("leaky-relu").cases]

# worker.py in mode baseline: PHASE, the versions, a BASELINE_CASE per test case, DONE. ``{cases}`` is the list of
# (test id, name) to report, ``{broken}`` a change made to the first case's figures, ``{after}`` what it does last.
WORKER = textwrap.dedent('''
    import json, sys, time
    def send(event, **fields):
        print(json.dumps(dict(fields, event=event)), flush=True)
    job = json.load(open(sys.argv[1]))
    assert job["mode"] == "baseline" and job["problem"] == "leaky-relu", job
    send("PHASE", name="baseline")
    send("BASELINE_VERSIONS", hardware="NVIDIA H100 80GB HBM3", torch="2.9.0", triton="3.5.0", cuda="12.8",
         injected={{"not": "a version"}})
    figures = {{"median": 0.01, "mean": 0.011, "std": 0.001, "min": 0.009, "max": 0.02, "samples": 100}}
    for i, (test_id, name) in enumerate({cases}):
        eager = dict(figures)
        if i == 0:
            eager.update({broken})
        send("BASELINE_CASE", test_id=test_id, name=name, eager=eager,
             torch_compile=dict(figures, median=0.008, compile_seconds=1.5))
    {after}
''')


def worker(cases=CASES, broken="{}", after='send("DONE")'):
    return WORKER.format(cases=repr(list(cases)), broken=broken, after=after)


class BaselineJobTest(unittest.TestCase):
    def run_job(self, script_text, limit=30):
        """The agent's whole run of a baseline job over a fake worker: (its events, the gate's moves)."""
        workspace = agent.Workspace.open()
        self.addCleanup(workspace.close)
        script = os.path.join(workspace.work, "fake-worker.py")
        with open(script, "w") as f:
            f.write(script_text)
        out = io.StringIO()
        runner = agent.Agent(events.Emitter(KEY, out), workspace=workspace)
        raw = json.dumps({"submission_id": "b1", "problem": "leaky-relu", "dtype": "float32", "mode": "baseline",
                          "limits": {"benchmark_seconds": limit}}).encode()
        env = dict(agent.worker_command(workspace.work)[1])
        moves = []
        with mock.patch.object(agent, "worker_command", lambda w: ([sys.executable, script], env)), \
                mock.patch.object(agent.device, "info", lambda: {"driver": "580.65"}), \
                mock.patch.object(gate, "hold", lambda: moves.append("hold")), \
                mock.patch.object(gate, "release", lambda: moves.append("release")):
            runner.run(raw)
        return [events.decode(line, KEY) for line in out.getvalue().splitlines()], moves

    def test_every_case_is_published_then_the_baselines_with_their_versions(self):
        sent, moves = self.run_job(worker())
        self.assertEqual(["BENCHMARKING"] + ["BENCHMARK_RESULT"] * len(CASES) + ["BASELINED"],
                         [e["type"] for e in sent])
        self.assertEqual(["hold", "release"], moves, "the device is held while PyTorch is timed")
        end = sent[-1]
        self.assertEqual(("leaky-relu", "float32"), (end["problem"], end["dtype"]))
        self.assertEqual({"hardware": "NVIDIA H100 80GB HBM3", "torch": "2.9.0", "triton": "3.5.0", "cuda": "12.8",
                          "driver": "580.65"}, end["hardware"], "only versions, and the driver the agent read")
        self.assertEqual({name for _, name in CASES}, set(end["tests"]["eager"]))
        self.assertEqual(1.5, end["tests"]["torch_compile"][CASES[0][1]]["compile_seconds"])
        self.assertEqual(baseline.METHOD_TEXT, end["method"])
        self.assertIn("isolation", end, "a result says how its job was confined")
        first = sent[1]["result"]
        self.assertEqual((CASES[0][0], CASES[0][1], 0.008), (first["test_id"], first["name"],
                                                              first["torch_compile"]["median"]))

    def test_figures_of_another_shape_are_not_published_and_the_job_fails(self):
        for broken in ('{"median": -1}', '{"median": "fast"}', '{"samples": 0}', '{"mean": float("nan")}',
                       '{"samples": True}'):
            with self.subTest(broken=broken):
                sent, _ = self.run_job(worker(broken=broken))
                self.assertEqual("ERROR", sent[-1]["type"])
                self.assertIn(CASES[0][1], sent[-1]["message"])
                self.assertNotIn(CASES[0][0], [e["result"]["test_id"] for e in sent if e["type"] == "BENCHMARK_RESULT"])

    def test_a_case_the_problem_does_not_have_is_not_published(self):
        sent, _ = self.run_job(worker(cases=CASES + [(99, "forged")]))
        self.assertEqual("BASELINED", sent[-1]["type"])
        self.assertNotIn("forged", sent[-1]["tests"]["eager"])
        sent, _ = self.run_job(worker(cases=[(CASES[1][0], CASES[0][1])] + CASES[1:]))
        self.assertEqual("ERROR", sent[-1]["type"], "a name under another test's id is no case")

    def test_a_worker_that_ends_early_or_fails_ends_the_job_in_one_error(self):
        for after, expected in (('sys.exit(3)', "code 3"), ('pass', "without its end"),
                                ('send("ERROR", message="torch.compile failed: no C compiler"); sys.exit(1)',
                                 "torch.compile failed")):
            with self.subTest(after=after):
                sent, moves = self.run_job(worker(after=after))
                self.assertEqual(1, sum(e["type"] in events.TERMINAL for e in sent), sent)
                self.assertEqual("ERROR", sent[-1]["type"])
                self.assertIn(expected, sent[-1]["message"])
                self.assertEqual("release", moves[-1])

    def test_a_worker_that_stalls_runs_out_of_time(self):
        sent, moves = self.run_job(worker(after='time.sleep(60)'), limit=2)
        self.assertEqual("TIME_LIMIT_EXCEEDED", sent[-1]["type"])
        self.assertEqual("baseline", sent[-1]["phase"])
        self.assertEqual("release", moves[-1])


class PayloadTest(unittest.TestCase):
    def test_a_baseline_job_needs_no_code_nor_language(self):
        parsed = payload.parse(json.dumps({"submission_id": "b1", "problem": "leaky-relu",
                                           "mode": "baseline"}).encode())
        self.assertEqual(("baseline", "", "cuda"), (parsed.mode, parsed.code, parsed.language))
        with self.assertRaises(payload.PayloadError) as refused:
            payload.parse(json.dumps({"submission_id": "s1", "problem": "leaky-relu", "mode": "benchmark"}).encode())
        self.assertIn("code is required (a non-empty string)", refused.exception.problems)


class FakeTimer:
    """worker.Timer's face as baseline.measure uses it: every sample of a call is its own count of calls."""

    def __init__(self, problem, torch):
        self.problem = problem
        self.job = {"dtype": "float32"}
        self.torch = torch
        self.timed = []

    def input_set(self, case):
        return types.SimpleNamespace(inputs={"x": case["name"]})

    def measure(self, prepare, guard=True):
        self.timed.append(guard)
        run = prepare()
        run()
        return {"median": 2.0, "mean": 2.5, "min": 1.0, "max": 4.0, "samples": [1.0, 2.0, 4.0, 3.0]}


class MeasureTest(unittest.TestCase):
    def test_each_case_eager_then_compiled_the_compile_outside_the_timing(self):
        problem = catalog.load("leaky-relu")
        calls = []

        def compile_(fn, dynamic):
            calls.append(("compile", dynamic))

            def compiled(args):
                calls.append(("compiled", args["x"]))
                return fn(args)
            return compiled
        torch = types.SimpleNamespace(compile=compile_, cuda=types.SimpleNamespace(synchronize=lambda: None),
                                      _dynamo=types.SimpleNamespace(reset=lambda: calls.append(("reset",))))
        with mock.patch.object(problem.module, "reference", lambda args, torch_: calls.append(("eager", args["x"]))):
            told = []
            timer = FakeTimer(problem, torch)
            out = baseline.measure(timer, torch, on_case=lambda case, figs: told.append(case["name"]))
        first = problem.cases[0]["name"]
        self.assertEqual([("eager", first), ("compile", False), ("compiled", first), ("eager", first),
                          ("compiled", first), ("eager", first), ("reset",)], calls[:7],
                         "timed eager; compiled once untimed; then the compiled call timed")
        self.assertEqual([c["name"] for c in problem.cases], told)
        self.assertEqual([False] * 2 * len(problem.cases), timer.timed, "PyTorch's calls need no device-span guard")
        self.assertEqual({"median": 2.0, "mean": 2.5, "std": statistics_stdev([1.0, 2.0, 4.0, 3.0]), "min": 1.0,
                          "max": 4.0, "samples": 4}, out["eager"][first])
        self.assertIn("compile_seconds", out["torch_compile"][first])
        self.assertTrue(all(baseline.valid_figures(out[m][first], m) for m in baseline.METHODS))

    def test_compile_caches_go_to_the_jobs_home(self):
        home = tempfile.mkdtemp()
        with mock.patch.dict(os.environ, {}, clear=False):
            for name in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_COMPILE_THREADS"):
                os.environ.pop(name, None)
            baseline.compile_here(home)
            self.assertTrue(os.environ["TORCHINDUCTOR_CACHE_DIR"].startswith(home))
            self.assertTrue(os.environ["TRITON_CACHE_DIR"].startswith(home))
            self.assertEqual("1", os.environ["TORCHINDUCTOR_COMPILE_THREADS"])


class ShippedBaselinesTest(unittest.TestCase):
    def test_the_shipped_h100_baselines_name_every_case_of_every_problem(self):
        """A result's speedups over a baseline are matched test by test by name."""
        path = os.path.join(os.path.dirname(catalog.PROBLEMS_DIR), os.pardir, "conf", "baselines", "H100.json")
        with open(path) as f:
            shipped = json.load(f)["problems"]
        for slug in catalog.slugs():
            problem = catalog.load(slug)
            for dtype in problem.dtypes:
                for method in baseline.METHODS:
                    with self.subTest(problem=slug, dtype=dtype, method=method):
                        tests = shipped[slug][dtype][method]
                        self.assertEqual([case["name"] for case in problem.cases], list(tests))
                        self.assertTrue(all(baseline.valid_figures(f, method) for f in tests.values()))


def statistics_stdev(values):
    import statistics
    return statistics.stdev(values)


if __name__ == "__main__":
    unittest.main()
