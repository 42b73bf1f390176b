"""Everything of the agent that needs no GPU: run with ``python3 -m unittest discover`` from remote-agent/."""
import base64
import fcntl
import hashlib
import hmac
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest
from unittest import mock

from remote_agent import agent as agent_module
from remote_agent import catalog, compiler, events, launcher, payload, stats, worker
from remote_agent.agent import Agent, build_plan

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
KEY = bytes(range(32))


def valid_payload(**changes):
    data = {"submission_id": "s1", "problem": "leaky-relu", "language": "cuda", "dtype": "float32",
            "code": "__global__ void solution() {}", "mode": "check",
            "limits": {"compile_seconds": 10, "test_seconds": 20, "benchmark_seconds": 30}}
    data.update(changes)
    return json.dumps(data).encode()


class PayloadTest(unittest.TestCase):
    def test_valid(self):
        p = payload.parse(valid_payload())
        self.assertEqual(("leaky-relu", "cuda", "check"), (p.problem, p.language, p.mode))
        self.assertEqual(20, p.limits["test_seconds"])

    def test_defaults(self):
        data = json.loads(valid_payload())
        del data["mode"], data["limits"], data["dtype"]
        p = payload.parse(json.dumps(data).encode())
        self.assertEqual("benchmark", p.mode)
        self.assertEqual("float32", p.dtype)
        self.assertEqual(payload.DEFAULT_LIMITS, p.limits)

    def test_every_problem_is_named(self):
        with self.assertRaises(payload.PayloadError) as caught:
            payload.parse(json.dumps({"language": "rust", "mode": "fast", "code": " ",
                                      "limits": {"test_seconds": -1}}).encode())
        text = " ".join(caught.exception.problems)
        for field in ("submission_id", "problem", "language", "code", "mode", "limits.test_seconds"):
            self.assertIn(field, text)

    def test_benchmark_settings(self):
        p = payload.parse(valid_payload(benchmark={"min_runs": 3, "max_runs": 9, "target_cv": 0.05}))
        self.assertEqual({"min_runs": 3, "max_runs": 9, "target_cv": 0.05}, p.benchmark)
        for bad in ({"min_runs": 10, "max_runs": 2}, {"max_runs": "many"}, [1]):
            with self.assertRaises(payload.PayloadError):
                payload.parse(valid_payload(benchmark=bad))

    def test_the_services_audit_settings(self):
        for good in ({"audit": True}, {"audit": False}, {"new_best_below_ms": 0.0021}, {"new_best_below_ms": None}):
            self.assertEqual(good, payload.parse(valid_payload(benchmark=good)).benchmark)
        for bad in ({"audit": "yes"}, {"new_best_below_ms": 0}, {"new_best_below_ms": -1.0}, {"new_best_below_ms": "1"},
                    {"new_best_below_ms": True}):
            with self.subTest(bad=bad), self.assertRaises(payload.PayloadError) as caught:
                payload.parse(valid_payload(benchmark=bad))
            self.assertIn(next(iter(bad)), " ".join(caught.exception.problems))

    def test_a_new_best_of_its_board_is_always_audited_else_a_share_is(self):
        never = agent_module.AUDIT_SHARE * 10 ** 6  # a draw above the share: not sampled
        self.assertEqual(agent_module.NEW_BEST, agent_module.audit_reason({"new_best_below_ms": 0.005}, 0.0049, draw=never))
        self.assertEqual(agent_module.NEW_BEST, agent_module.audit_reason({"new_best_below_ms": None}, 9.0, draw=never),
                         "the first result of a board is its best")
        self.assertIsNone(agent_module.audit_reason({"new_best_below_ms": 0.005}, 0.005, draw=never),
                          "within the #1's interval: a tie, not a new #1")
        self.assertIsNone(agent_module.audit_reason({}, 0.001, draw=never), "no board said: the share alone")
        self.assertEqual(agent_module.SAMPLED, agent_module.audit_reason({"new_best_below_ms": 0.005}, 0.006, draw=0))
        self.assertEqual(agent_module.ASKED, agent_module.audit_reason({"audit": True, "new_best_below_ms": 0.001}, 0.5, draw=never))
        self.assertIsNone(agent_module.audit_reason({"audit": False, "new_best_below_ms": None}, 0.001, draw=0),
                          "the service's false is never")

    def test_no_job_file_says_whether_or_above_what_a_result_is_audited(self):
        # Every job file (the solution's process's among them) is made from _job_basis: the submission's host code
        # can read it while it records.
        p = payload.parse(valid_payload(benchmark={"audit": True, "new_best_below_ms": 0.0021, "min_runs": 3}))
        basis = agent_module.Agent._job_basis(types.SimpleNamespace(
            benchmark_settings={"max_runs": 50}, problems_dir="problems"), p)
        self.assertEqual({"max_runs": 50, "min_runs": 3}, basis["benchmark"])
        self.assertEqual({"audit": True, "new_best_below_ms": 0.0021, "min_runs": 3}, p.benchmark,
                         "the agent's audit_reason still reads them")

    def test_a_report_limit_is_a_positive_number_of_bytes(self):
        self.assertIsNone(payload.parse(valid_payload()).report_limit_bytes)
        self.assertEqual(1024, payload.parse(valid_payload(report_limit_bytes=1024)).report_limit_bytes)
        for bad in (0, -1, 1.5, "1", True):
            with self.assertRaises(payload.PayloadError) as caught:
                payload.parse(valid_payload(report_limit_bytes=bad))
            self.assertIn("report_limit_bytes", " ".join(caught.exception.problems))

    def test_not_json(self):
        for raw in (b"{", b"\xff\xfe", b"[1]"):
            with self.assertRaises(payload.PayloadError):
                payload.parse(raw)



class AuditOnceTest(unittest.TestCase):
    """Agent.audit_once: the audit started ahead if the warm agent has one, else one started now; its job file in
    the audit's own folder; closed whatever happens; an audit that cannot start is a problem said, not a crash."""

    class FakeAudit:
        def __init__(self, folder):
            self.folder, self.closed, self.ran = folder, False, None

        def job_file(self, job):
            return agent_module.write_job(self.folder, job, "audit-job.json")

        def run(self, job_file, judge_job, timeout):
            with open(job_file) as f:
                self.ran = json.load(f)
            return agent_module.verification.Outcome("PASSED"), ""

        def close(self):
            self.closed = True

    def setUp(self):
        self.folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.folder)
        self.agent = types.SimpleNamespace(
            job={"problem": "p", "dtype": "float32", "problems_dir": "d", "benchmark": {"max_runs": 5}},
            replay_records={"1": []}, prestarted=None)
        self.agent._judge_job = lambda **extra: Agent._judge_job(self.agent, **extra)
        self.payload = types.SimpleNamespace(limits={"test_seconds": 1})

    def audit_once(self):
        return Agent.audit_once(self.agent, self.payload, "/work", "ncu", [], "audit")

    def test_the_audit_started_ahead_is_used_and_closed(self):
        ahead = self.FakeAudit(self.folder)
        self.agent.prestarted = types.SimpleNamespace(take_audit=lambda: ahead)
        with mock.patch.object(agent_module.Audit, "start", side_effect=AssertionError("none started now")):
            self.assertEqual("verified", self.audit_once()["status"])
        self.assertTrue(ahead.closed)
        self.assertEqual(("replay", {"1": []}), (ahead.ran["mode"], ahead.ran["records"]))

    def test_without_one_ahead_one_is_started_now(self):
        now = self.FakeAudit(self.folder)
        with mock.patch.object(agent_module.Audit, "start", return_value=now) as start:
            self.audit_once()
        start.assert_called_once_with("/work", "ncu")
        self.assertTrue(now.closed)

    def test_an_audit_that_cannot_start_says_so(self):
        with mock.patch.object(agent_module.Audit, "start", side_effect=OSError("no room")):
            audit = self.audit_once()
        self.assertEqual("unverified", audit["status"])
        self.assertIn("broken", audit["problems"][0])

class EventsTest(unittest.TestCase):
    def test_encoding(self):
        line = events.encode("TEST_RESULT", {"result": {"test_id": 1, "status": "PASSED", "name": "é"},
                                             "total_tests": 2}, KEY)
        self.assertTrue(line.startswith("JSON_EVENT:"))
        mac, text = line[len("JSON_EVENT:"):].split(":", 1)
        self.assertEqual(hmac.new(KEY, text.encode(), hashlib.sha256).hexdigest(), mac)
        body = events.decode(line, KEY)
        self.assertEqual("TEST_RESULT", body["type"])
        self.assertEqual("é", body["result"]["name"])
        self.assertNotIn("\n", line)
        self.assertTrue(line.isascii(), "dstack cuts logs into chunks at any byte: event lines stay ASCII")

    def test_a_line_signed_with_another_key_or_altered_is_no_event(self):
        line = events.encode("BENCHMARKED", {"avg_runtime_ms": 1.0}, KEY)
        self.assertIsNone(events.decode(line, b"k" * 32))
        self.assertIsNone(events.decode(line.replace("1.0", "0.1"), KEY))
        self.assertIsNone(events.decode('JSON_EVENT:{"type":"BENCHMARKED"}', KEY))
        self.assertIsNone(events.decode(line.replace("1.0", "é"), KEY), "a non-ASCII line is no event either")

    def test_non_finite_numbers_stay_valid_json(self):
        line = events.encode("WRONG_ANSWER", {"debug_info": {"max_abs_error": float("inf"),
                                                             "first_mismatch": {"actual": float("nan")}}}, KEY)
        body = events.decode(line, KEY)
        self.assertEqual("inf", body["debug_info"]["max_abs_error"])
        self.assertEqual("nan", body["debug_info"]["first_mismatch"]["actual"])

    def test_unknown_type_refused(self):
        with self.assertRaises(ValueError):
            events.encode("CANCELLED", {}, KEY)

    def test_emitter_flushes_and_remembers_the_end(self):
        out = io.StringIO()
        emitter = events.Emitter(KEY, out)
        emitter.emit("COMPILING")
        self.assertIsNone(emitter.finished)
        emitter.emit("COMPILE_ERROR", message="x", details="y")
        self.assertEqual("COMPILE_ERROR", emitter.finished)
        self.assertEqual(2, len(out.getvalue().splitlines()))

    def test_the_timing_verdict_follows_a_benchmark(self):
        out = io.StringIO()
        emitter = events.Emitter(KEY, out)
        emitter.emit("BENCHMARKED", verification={"timing": {"status": "pending"}})
        emitter.emit("VERIFIED", timing={"status": "verified", "by": "Nsight Compute"})
        self.assertEqual("BENCHMARKED", emitter.finished)
        self.assertEqual("VERIFIED", events.decode(out.getvalue().splitlines()[1], KEY)["type"])

    def test_trim_keeps_the_end(self):
        text = "a" * 100 + "THE ERROR"
        self.assertTrue(events.trim(text, 20).endswith("THE ERROR"))


class DeviceIndexTest(unittest.TestCase):
    def test_the_readings_follow_the_gpu_a_worker_slot_was_given(self):
        from remote_agent import device
        self.assertEqual(device.physical_index({"CUDA_VISIBLE_DEVICES": "3"}), 3)
        self.assertEqual(device.physical_index({"CUDA_VISIBLE_DEVICES": "1,2"}), 1)
        self.assertEqual(device.physical_index({}), 0)
        self.assertEqual(device.physical_index({"CUDA_VISIBLE_DEVICES": "GPU-8a1b"}), 0)


class FakeNvml:
    """NVML's calls as nvml.h declares them (NVIDIA/go-nvml pkg/nvml/nvml.h, commit 2f9e261): NVML_SUCCESS = 0
    (line 1305) or NVML_ERROR_UNKNOWN = 999 (line 1336), the value written through the last pointer; clocks by
    nvmlClockType_t (NVML_CLOCK_SM = 1, line 1119) in MHz, power in milliwatts (line 6555), memory as nvmlMemory_t
    in bytes (line 261), name and driver version into the caller's buffer (lines 4805, 4215)."""
    def __init__(self, failing=()):
        self.failing = failing

    def _answer(self, name, ref, value):
        if name in self.failing:
            return 999  # NVML_ERROR_UNKNOWN
        ref._obj.value = value
        return 0

    def nvmlDeviceGetClockInfo(self, handle, kind, ref):
        return self._answer("clock", ref, {1: 1755}[kind])

    def nvmlDeviceGetMaxClockInfo(self, handle, kind, ref):
        return self._answer("max_clock", ref, {1: 1980}[kind])

    def nvmlDeviceGetTemperature(self, handle, sensor, ref):
        return self._answer("temperature", ref, 41)

    def nvmlDeviceGetPowerUsage(self, handle, ref):
        return self._answer("power", ref, 118_734)  # milliwatts

    def nvmlDeviceGetMemoryInfo(self, handle, ref):
        ref._obj.total = 81_559 * 1024 * 1024
        return 0

    def nvmlDeviceGetName(self, handle, buffer, size):
        buffer.value = b"NVIDIA H100 80GB HBM3"
        return 0

    def nvmlSystemGetDriverVersion(self, buffer, size):
        buffer.value = b"580.159.04"
        return 0


class NvmlTest(unittest.TestCase):
    def nvml(self, lib):
        from remote_agent import device
        nvml = device.Nvml.__new__(device.Nvml)
        nvml.lib, nvml.handle = lib, object()
        return nvml

    def test_a_snapshot_has_nvidia_smis_fields_in_its_units(self):
        from remote_agent import device
        snapshot = self.nvml(FakeNvml()).snapshot()
        self.assertEqual({"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "driver": "580.159.04",
                          "sm_clock_mhz": 1755, "max_sm_clock_mhz": 1980, "temperature_c": 41, "power_w": 118.734,
                          "source": "nvml"}, snapshot)
        self.assertEqual(set(device.NVIDIA_KEYS) | {"source"}, set(snapshot))

    def test_a_reading_nvml_refuses_is_none(self):
        nvml = self.nvml(FakeNvml(failing=("clock", "power")))
        self.assertIsNone(nvml.sm_clock())
        self.assertIsNone(nvml.snapshot()["power_w"])
        self.assertEqual(1980, nvml.max_sm_clock())

    def test_without_nvml_every_reading_is_none(self):
        from remote_agent import device
        nvml = device.Nvml(index=0)  # this machine has no NVIDIA driver; where it has, the real one answers
        if nvml.lib is None:
            self.assertIsNone(nvml.snapshot())
            self.assertEqual((None, None, None), (nvml.sm_clock(), nvml.max_sm_clock(), nvml.temperature()))
        else:
            self.assertEqual("nvml", nvml.snapshot()["source"])


class StatsTest(unittest.TestCase):
    def fake(self, values):
        it = iter(values)
        return lambda: next(it)

    def test_stops_once_stable_after_the_minimum(self):
        samples = stats.collect(self.fake([1.0] * 50), stats.StoppingRule())
        self.assertEqual(5, len(samples))

    def test_noisy_runs_go_to_the_maximum(self):
        noisy = [1.0, 2.0] * 50
        self.assertEqual(20, len(stats.collect(self.fake(noisy), stats.StoppingRule())))

    def test_settles_when_cv_drops(self):
        values = [1.0, 1.5, 1.0, 1.0, 1.0] + [1.0] * 40
        samples = stats.collect(self.fake(values), stats.StoppingRule(target_cv=0.15))
        self.assertGreater(len(samples), 5)
        self.assertLessEqual(stats.cv(samples), 0.15)
        self.assertLess(len(samples), 20)

    def test_long_runs_get_a_fixed_count(self):
        samples = stats.collect(self.fake([1500.0] * 10), stats.StoppingRule())
        self.assertEqual(3, len(samples))

    def test_summary(self):
        s = stats.summary([1.0, 2.0, 3.0, 4.0], throttled=1)
        self.assertEqual((2.5, 2.5, 1.0, 4.0, 4, 1), (s["median"], s["mean"], s["min"], s["max"], s["iterations"],
                                                      s["throttled"]))
        self.assertAlmostEqual(0.5164, s["cv"], places=3)
        self.assertEqual([1.0, 2.0, 3.0, 4.0], s["samples"])

    def test_geomean(self):
        self.assertAlmostEqual(2.0, stats.geomean([1.0, 4.0]))
        self.assertIsNone(stats.geomean([]))

    def test_short_kernels_get_samples_until_their_median_is_known(self):
        rule = stats.many_samples_rule(stats.StoppingRule())
        first = stats.collect(self.fake([0.054] * 500), stats.StoppingRule())
        self.assertEqual(5, len(first))  # the coefficient-of-variation rule alone stops at its minimum
        settled = lambda taken: stats.median_settled(taken, 0.00125)  # noqa: E731
        steady = stats.collect_more(first, self.fake([0.054] * 500), rule, settled)
        self.assertEqual(stats.SHORT_MIN_SAMPLES, len(steady), "a steady kernel stops at the minimum")
        self.assertEqual(first, steady[:len(first)])
        # 2.6 us spread evenly over +-30 of the clock's ticks (+-37%): its median's interval never narrows to two
        # ticks within the most samples.
        noisy = [0.0026 + stats.TICK_MS * ((7 * i) % 61 - 30) for i in range(500)]
        self.assertEqual(stats.MANY_SAMPLES, len(stats.collect_more([], self.fake(noisy), rule, settled)))
        # 54 us spread evenly over +-4%: its median's interval is within 1% after more than the minimum, before 100.
        spread = [0.054 * (1 + 0.04 * (((13 * i) % 31) - 15) / 15) for i in range(500)]
        count = len(stats.collect_more([], self.fake(spread), rule, settled))
        self.assertLess(stats.SHORT_MIN_SAMPLES, count)
        self.assertLess(count, stats.MANY_SAMPLES)
        low, high = stats.median_interval(spread[:count])
        self.assertLessEqual((high - low) / 2, 0.01 * (stats.median(spread[:count]) - 0.00125))

    def test_the_median_interval_is_that_of_the_order_statistics(self):
        samples = list(range(1, 101))  # n = 100: ranks 50 -+ 9.8, so the 41st and the 60th
        self.assertEqual((41, 60), stats.median_interval(samples))
        self.assertEqual((3, 3), stats.median_interval([3] * 30))
        self.assertTrue(stats.median_settled([1.0] * 30))
        self.assertFalse(stats.median_settled([1.0, 2.0] * 15))

    def test_throttled_samples_are_discarded_and_counted(self):
        kept, throttled = stats.unthrottled([1.0, 5.0, 1.1, 6.0], [1980, 900, 1900, 1000], 1980, least=2)
        self.assertEqual(([1.0, 1.1], 2), (kept, throttled))
        self.assertEqual(([1.0, 2.0], 0), stats.unthrottled([1.0, 2.0], [None, None], 1980))
        self.assertEqual(([1.0, 2.0], 0), stats.unthrottled([1.0, 2.0], [100, 100], None))
        self.assertEqual(([3.0, 2.0], 2), stats.unthrottled([3.0, 2.0], [800, 900], 1980),
                         "all are kept when too few were not throttled (one sample once netted to 0 ms)")
        samples = [0.003] * 6 + [0.0001] + [0.003] * 3
        clocks = [900] * 6 + [1980] + [900] * 3
        self.assertEqual((samples, 9), stats.unthrottled(samples, clocks, 1980, least=5))
        self.assertEqual(([0.0001], 9), stats.unthrottled(samples, clocks, 1980, least=1))

    def test_the_empty_window_is_taken_off(self):
        got = stats.net([0.0037, 0.0010], 0.0012)
        self.assertAlmostEqual(0.0025, got[0])
        self.assertEqual(0.0, got[1])

    def test_work_that_escaped_the_events_is_seen_by_the_device_span(self):
        self.assertTrue(stats.escaped(0.0013, 0.035))   # 20 launches on a stream of its own, 1 x 1
        self.assertTrue(stats.escaped(0.002, 1.2))
        self.assertFalse(stats.escaped(0.0556, 0.0573))  # an honest kernel: the span is its own duration
        self.assertFalse(stats.escaped(0.0026, 0.0013))
        self.assertFalse(stats.escaped(0.05, None))

    def test_summary_carries_how_it_was_measured(self):
        s = stats.summary([1.0], 0, timing="events", method="m", clock_flag=False)
        self.assertEqual(("events", "m", False), (s["timing"], s["method"], s["clock_flag"]))

    def test_configurable(self):
        rule = stats.StoppingRule.from_settings({"min_runs": 2, "max_runs": 4, "ignored": 1})
        self.assertEqual((2, 4), (rule.min_runs, rule.max_runs))
        with self.assertRaises(ValueError):
            stats.StoppingRule.from_settings({"min_runs": 5, "max_runs": 2})


class TimerWindowTest(unittest.TestCase):
    """Timer.measure on a stand-in device whose event pairs run 0.6 us long for the process's first 60 timed runs
    (another process's context being made), as one job's did in run 33: a 2.3 us kernel published at 1.7 us."""
    KERNEL_MS, WINDOW_MS, DISTURBED_MS = 0.0023, 0.00125, 0.0006

    class Device:
        def __init__(self, disturbed=lambda run, empty: run <= 60):
            self.runs = 0
            self.disturbed = disturbed  # (the timed run's count, whether it is an empty window) -> bool

        def time_once(self, run):
            self.runs += 1
            jitter = stats.TICK_MS * (self.runs % 3 - 1)
            empty = run is worker._nothing
            return ((0 if empty else TimerWindowTest.KERNEL_MS) + TimerWindowTest.WINDOW_MS
                    + (TimerWindowTest.DISTURBED_MS if self.disturbed(self.runs, empty) else 0) + jitter)

    def timer(self, device=None):
        timer = worker.Timer.__new__(worker.Timer)  # no device: what measure uses of it
        device = device or self.Device()
        timer.windows = []
        timer.torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))
        timer.nvml = types.SimpleNamespace(max_sm_clock=lambda: 1980, sm_clock=lambda: 1980, temperature=lambda: 40)
        timer.rule = stats.StoppingRule()
        timer.time_once = device.time_once
        return timer, device

    def test_the_window_is_timed_among_the_samples(self):
        timer, device = self.timer()
        figures = timer.measure(lambda: (lambda: None), guard=False)
        self.assertAlmostEqual(self.KERNEL_MS, figures["median"], delta=2 * stats.TICK_MS)
        self.assertGreaterEqual(figures["iterations"], stats.SHORT_MIN_SAMPLES)
        self.assertEqual(figures["iterations"] + (figures["iterations"] + 1) // 2, device.runs,
                         "a window beside every other sample, the first's included")

    def test_a_window_taken_apart_from_the_samples_would_publish_it_low(self):
        # What the figure was when the window was timed once, in 51 runs before the first sample.
        timer, device = self.timer()
        burst = stats.empty_window([device.time_once(worker._nothing) for _ in range(51)])
        samples = [device.time_once(lambda: None) for _ in range(stats.SHORT_MIN_SAMPLES)]
        self.assertLess(stats.median(stats.net(samples, burst)), 0.8 * self.KERNEL_MS)

    def test_a_later_tests_windows_alone_disturbed_do_not_take_it_low(self):
        # One test of 1,000 in runs 35-40: its windows 0.4 us long, its samples not.
        later = []
        timer, device = self.timer(self.Device(disturbed=lambda run, empty: empty and bool(later)))
        first = timer.measure(lambda: (lambda: None), guard=False)
        later.append(True)
        second = timer.measure(lambda: (lambda: None), guard=False)
        for figures in (first, second):
            self.assertAlmostEqual(self.KERNEL_MS, figures["median"], delta=2 * stats.TICK_MS)

    def test_the_window_is_the_lower_quartile(self):
        self.assertEqual(0.00125, stats.empty_window([0.002, 0.00125, 0.0013, 0.00125, 0.0019, 0.0012, 0.0025]))
        self.assertEqual(0.0012, stats.empty_window([0.0012]))


class CatalogTest(unittest.TestCase):
    REQUIRED = {"vector-addition", "leaky-relu", "relu", "matrix-multiplication", "softmax", "layer-norm",
                "sum-reduction", "conv-1d"}

    def test_all_problems_load_and_agree_with_their_metadata(self):
        slugs = set(catalog.slugs())
        self.assertTrue(self.REQUIRED <= slugs, self.REQUIRED - slugs)
        for slug in slugs:
            problem = catalog.load(slug)  # raises on any disagreement between problem.json and problem.py
            self.assertGreaterEqual(len(problem.cases), 4, slug)
            self.assertTrue(problem.outputs(), slug)
            self.assertEqual(["cuda", "hip"], problem.meta["languages"], slug)
            for case in problem.cases:
                self.assertGreater(problem.flops(case["sizes"]), 0)
                self.assertGreater(problem.bytes_moved(case["sizes"], "float32"), 0)

    def test_every_problem_has_a_level_tags_a_known_solution_and_its_source_named(self):
        for slug in catalog.slugs():
            meta = catalog.load(slug).meta
            with self.subTest(problem=slug):
                self.assertIn(meta.get("level"), (1, 2, 3))
                self.assertTrue(meta.get("tags") and all(isinstance(t, str) for t in meta["tags"]))
                # The catalog's own check (selftest.py OUT kernels) runs it on a GPU; it never reaches users.
                self.assertTrue(os.path.isfile(os.path.join(ROOT, "selftest", "kernels", slug + ".cu")))
                source = meta.get("attribution")
                if source is not None:
                    self.assertIn("KernelBench", source["source"])
                    self.assertEqual("MIT", source["license"])
                    notice = os.path.join(catalog.PROBLEMS_DIR, slug, source["notice"])
                    with open(notice, encoding="utf-8") as f:
                        self.assertIn("Copyright (c) 2023 Anne Ouyang, Simon Guo, Azalia Mirhoseini", f.read())

    def test_sizes_include_ones_off_the_block_size(self):
        for slug in catalog.slugs():
            problem = catalog.load(slug)
            odd = [c for c in problem.cases if any(v % 16 for v in c["sizes"].values())]
            self.assertTrue(odd, slug + " has no size off a multiple of 16")

    def test_leaky_relu_signature(self):
        names = [p["name"] for p in catalog.load("leaky-relu").parameters]
        self.assertEqual(["input", "alpha", "output", "M", "N"], names)

    def test_seed_is_per_problem_and_case(self):
        a, b = catalog.load("relu"), catalog.load("leaky-relu")
        self.assertEqual(a.seed(1), catalog.load("relu").seed(1))
        self.assertNotEqual(a.seed(1), a.seed(2))
        self.assertNotEqual(a.seed(1), b.seed(1))

    def test_bad_metadata_is_refused(self):
        folder = tempfile.mkdtemp()
        try:
            shutil.copytree(os.path.join(catalog.PROBLEMS_DIR, "relu"), os.path.join(folder, "relu"))
            meta_path = os.path.join(folder, "relu", "problem.json")
            meta = json.load(open(meta_path))
            meta["launch"] = {"elements": "M * system(1)"}
            json.dump(meta, open(meta_path, "w"))
            with self.assertRaises(ValueError):
                catalog.load("relu", folder)
            with self.assertRaises(catalog.UnknownProblem):
                catalog.load("../relu", folder)
        finally:
            shutil.rmtree(folder)


class LauncherTest(unittest.TestCase):
    def test_conventions(self):
        self.assertEqual("host", launcher.convention('extern "C" void solution(float* x) {}'))
        self.assertEqual("kernel", launcher.convention("__global__ void solution(float* x) {}"))
        self.assertEqual("kernel", launcher.convention("__global__ __launch_bounds__(256) void solution(int n)"))
        with self.assertRaises(launcher.ConventionError):
            launcher.convention('// extern "C" void solution(\nvoid other() {}')

    def test_one_dimensional_launch(self):
        text = launcher.generate(catalog.load("leaky-relu"), "solution.cu")
        self.assertIn('#include "solution.cu"', text)
        self.assertIn('extern "C" void kr_launch(void* input, float alpha, void* output, size_t M, size_t N)', text)
        self.assertIn("(size_t)(M * N)", text)
        self.assertIn("solution<<<kr_grid, kr_block>>>(kr_ptr{input}, alpha, kr_ptr{output}, M, N);", text)

    def test_two_dimensional_launch(self):
        text = launcher.generate(catalog.load("matrix-multiplication"), "solution.cu")
        self.assertIn("dim3 kr_block(16, 16);", text)
        self.assertIn("kr_x = (size_t)(N), kr_y = (size_t)(M)", text)

    def test_user_code_stays_in_its_own_file(self):
        code = "__global__ void solution(const float* input, float* output, size_t M, size_t N) {} // MARKER\n"
        tc = compiler.Toolchain("nvcc", "nvcc", "V13", "sm_90")
        sources, _, _, _ = build_plan(code, "cuda", catalog.load("relu"), tc)
        self.assertEqual(code, sources["solution.cu"])
        self.assertNotIn("MARKER", sources["launcher.cu"])


class CompilerTest(unittest.TestCase):
    def test_cuda_command_line(self):
        tc = compiler.Toolchain("nvcc", "/usr/bin/nvcc", "V13", "sm_90")
        argv = tc.command("cuda", "solution.cu", "lib.so")
        self.assertEqual("/usr/bin/nvcc", argv[0])
        self.assertIn("-arch=sm_90", argv)
        self.assertIn("-shared", argv)
        self.assertEqual(["-x", "cu", "solution.cu"], argv[-3:])
        self.assertNotIn("-include", argv)

    def test_hip_on_nvidia_uses_the_header(self):
        argv = compiler.Toolchain("nvcc", "nvcc", "V13", "sm_90").command("hip", "solution.cu", "lib.so")
        header = argv[argv.index("-include") + 1]
        self.assertTrue(header.endswith("hip_cuda.h") and os.path.isfile(header))
        self.assertTrue(os.path.isfile(os.path.join(argv[argv.index("-I") + 1], "hip", "hip_runtime.h")))

    @unittest.skipUnless(compiler.find_nvcc(), "needs nvcc")
    def test_a_library_the_problem_does_not_allow_fails_to_build_and_is_named(self):
        code = ('extern "C" int cublasCreate_v2(void** handle);\n'
                'extern "C" void solution(const float* a, float* b, size_t n) { void* h; cublasCreate_v2(&h); }\n')
        tc = compiler.Toolchain("nvcc", compiler.find_nvcc(), "local", "sm_90")
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "solution.cu"), "w") as f:
                f.write(code)
            done = subprocess.run(tc.command("cuda", "solution.cu", "lib.so"), cwd=work, capture_output=True,
                                  text=True, timeout=300)
            self.assertNotEqual(done.returncode, 0, "built although cuBLAS is not linked")
            self.assertEqual(compiler.unallowed_library(done.stdout + done.stderr), ("cuBLAS", "cublasCreate_v2"))
            self.assertIsNone(compiler.unallowed_library(done.stdout + done.stderr, ("cublas",)))
        self.assertIn("-lcublas", tc.command("cuda", "solution.cu", "lib.so", ("cublas",)))

    def test_hip_on_rocm(self):
        argv = compiler.Toolchain("hipcc", "/opt/rocm/bin/hipcc", "6.2", "gfx942").command("hip", "s.cu", "l.so")
        self.assertIn("--offload-arch=gfx942", argv)

    def test_cache_key_covers_source_flags_and_version(self):
        base = compiler.cache_key({"a.cu": "x"}, ["nvcc", "-O3"], "V1")
        self.assertEqual(base, compiler.cache_key({"a.cu": "x"}, ["nvcc", "-O3"], "V1"))
        self.assertNotEqual(base, compiler.cache_key({"a.cu": "y"}, ["nvcc", "-O3"], "V1"))
        self.assertNotEqual(base, compiler.cache_key({"a.cu": "x"}, ["nvcc", "-O2"], "V1"))
        self.assertNotEqual(base, compiler.cache_key({"a.cu": "x"}, ["nvcc", "-O3"], "V2"))

    def test_plan(self):
        tc = compiler.Toolchain("nvcc", "nvcc", "V13", "sm_90")
        sources, entry, symbol, key = build_plan("__global__ void solution(const float* input, float* output, "
                                                 "size_t M, size_t N) {}", "cuda", catalog.load("relu"), tc)
        self.assertEqual(("launcher.cu", "kr_launch"), (entry, symbol))
        self.assertEqual({"solution.cu", "launcher.cu"}, set(sources))
        _, entry, symbol, _ = build_plan('extern "C" void solution() {}', "cuda", catalog.load("relu"), tc)
        self.assertEqual(("solution.cu", "solution"), (entry, symbol))

    @unittest.skipUnless(compiler.find_nvcc(), "nvcc is not installed")
    def test_hip_header_and_launchers_build_with_nvcc(self):
        tc = compiler.Toolchain("nvcc", compiler.find_nvcc(), "local", "sm_90")
        for slug, ext in (("softmax", ".hip"), ("matrix-multiplication", ".cu"), ("relu", ".hip")):
            code = open(os.path.join(ROOT, "selftest", "kernels", slug + ext)).read()
            sources, entry, _, _ = build_plan(code, "hip" if ext == ".hip" else "cuda", catalog.load(slug), tc)
            work = tempfile.mkdtemp()
            try:
                for name, text in sources.items():
                    open(os.path.join(work, name), "w").write(text)
                done = subprocess.run(tc.command("hip" if ext == ".hip" else "cuda", entry, "lib.so"), cwd=work,
                                      capture_output=True, text=True)
                self.assertEqual(0, done.returncode, done.stderr[-2000:])
            finally:
                shutil.rmtree(work)


class LibraryCacheTest(unittest.TestCase):
    """What user code running as the worker's user may change in the cache is built again, never loaded."""

    def setUp(self):
        self.dir, self.work = tempfile.mkdtemp(), tempfile.mkdtemp()
        self.built = os.path.join(self.work, "lib.so")
        with open(self.built, "wb") as f:
            f.write(b"the library we built")

    def entry(self):
        return os.path.join(self.dir, "k1", "lib.so")

    def test_an_entry_comes_back_as_it_was_built(self):
        cache = compiler.LibraryCache(self.dir, b"s" * 32)
        cache.put("k1", self.built)
        copy = cache.get("k1", os.path.join(self.work, "cached.so"))
        self.assertEqual(b"the library we built", open(copy, "rb").read())
        self.assertIsNone(cache.get("k2", os.path.join(self.work, "other.so")), "another key is a miss")

    def test_a_changed_library_or_seal_is_a_miss(self):
        cache = compiler.LibraryCache(self.dir, b"s" * 32)
        cache.put("k1", self.built)
        with open(self.entry(), "wb") as f:
            f.write(b"planted")
        self.assertIsNone(cache.get("k1", os.path.join(self.work, "cached.so")))
        # Whoever planted it cannot seal it: the seal is an HMAC under a secret they never saw.
        seal = hmac.new(b"guess" * 7, b"k1\0" + hashlib.sha256(b"planted").digest(), hashlib.sha256).hexdigest()
        with open(self.entry() + ".seal", "w") as f:
            f.write(seal)
        self.assertIsNone(cache.get("k1", os.path.join(self.work, "cached.so")))
        self.assertIsNone(compiler.LibraryCache(self.dir, b"t" * 32).get("k1", os.path.join(self.work, "x.so")),
                          "another worker's secret")

    def test_without_a_secret_nothing_is_cached(self):
        cache = compiler.LibraryCache(self.dir, None)
        cache.put("k1", self.built)
        self.assertFalse(os.path.exists(self.entry()))
        self.assertIsNone(cache.get("k1", os.path.join(self.work, "cached.so")))

    def test_the_agent_builds_once_then_loads_from_the_cache_and_builds_again_what_was_changed(self):
        class WritingToolchain(compiler.Toolchain):  # its "compiler" writes the library, in the job's room
            def command(self, language, source, output, libraries=()):
                return [sys.executable, "-c", "open(%r, 'wb').write(b'built')" % output]

        toolchain = WritingToolchain("nvcc", "nvcc", "V1", "sm_90")
        p = payload.parse(valid_payload(code="__global__ void solution() {}\n", mode="benchmark"))
        problem = catalog.load("leaky-relu")

        def compile_once():
            """(the library's bytes, whether it was built rather than taken from the cache)."""
            workspace = agent_module.Workspace.open()
            self.addCleanup(workspace.close)
            agent = Agent(events.Emitter(KEY, io.StringIO()), cache_dir=self.dir, cache_secret=b"s" * 32,
                          workspace=workspace)
            agent.began = 0.0  # run() sets it; compile() logs its steps' times from it
            library, _ = agent.compile(p, problem, toolchain, workspace.work)
            built = os.path.exists(os.path.join(workspace.work, agent_module.BUILD, "lib.so"))
            return open(library, "rb").read(), built

        self.assertEqual((b"built", True), compile_once())
        self.assertEqual((b"built", False), compile_once(), "the second time from the cache")
        entry = next(os.path.join(root, name) for root, _, names in os.walk(self.dir) for name in names
                     if name == "lib.so")
        with open(entry, "wb") as f:
            f.write(b"planted by a job")
        self.assertEqual((b"built", True), compile_once(), "a changed entry is built again, never loaded")

    def test_the_secret_comes_on_the_line_before_the_payload(self):
        self.assertEqual((bytes.fromhex("ab01"), b'{"a": 1}'),
                         payload.take_cache_secret(b'CACHE-SECRET ab01\n{"a": 1}'))
        self.assertEqual((b"s" * 32, b'{"a": 1}'),
                         payload.take_cache_secret(payload.with_cache_secret(b"s" * 32, b'{"a": 1}')))
        self.assertEqual((None, b'{"a": 1}'), payload.take_cache_secret(b'{"a": 1}'))


class WorkFolderTest(unittest.TestCase):
    def test_the_folders_of_agents_that_were_killed_are_removed_by_the_next(self):
        parent = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, parent, True)
        dead = os.path.join(parent, "kr-agent-999999999-old")  # no such pid: its agent was killed
        os.makedirs(os.path.join(dead, "build"))
        with open(os.path.join(dead, "build", "solution.cu"), "w") as f:
            f.write("a submission's source\n")
        alive = os.path.join(parent, "kr-agent-%d-running" % os.getppid())
        os.makedirs(alive)
        not_a_folder = os.path.join(parent, "kr-agent-999999999-file")
        open(not_a_folder, "w").close()
        work = agent_module.make_work(parent)
        self.addCleanup(shutil.rmtree, work, True)
        self.assertTrue(os.path.basename(work).startswith("kr-agent-%d-" % os.getpid()), work)
        self.assertFalse(os.path.exists(dead), "a killed agent's folder (a submission's source) is gone")
        self.assertTrue(os.path.isdir(alive), "a running agent's is not")
        self.assertTrue(os.path.exists(not_a_folder))
        if os.getuid() == 0:
            theirs = os.path.join(parent, "kr-agent-999999998-theirs")
            os.makedirs(theirs)
            os.chown(theirs, 65534, 65534)
            agent_module.make_work(parent)
            self.assertTrue(os.path.isdir(theirs), "another user's folder is not ours to remove")


class DeviceTurnTest(unittest.TestCase):
    """A job's agent uses the device only in its turn (turn.py): where another job of the GPU holds it, the
    reference is not timed ahead, and the job waits for the turn (or ends with an error past the most)."""

    def setUp(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        self.flag = os.path.join(folder, "turn")
        self.fd = os.open(self.flag, os.O_RDWR | os.O_CREAT)  # the other job's agent holds the turn
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        self.addCleanup(os.close, self.fd)
        self.addCleanup(agent_module.turn.release)
        patch = mock.patch.dict(os.environ, {agent_module.turn.VARIABLE: self.flag})
        patch.start()
        self.addCleanup(patch.stop)
        self.out = io.StringIO()
        self.agent = Agent(events.Emitter(KEY, self.out), cache_dir=tempfile.mkdtemp())
        self.agent.began = time.monotonic()

    def test_the_reference_is_not_timed_ahead_in_another_jobs_turn(self):
        taken = []
        self.agent.prestarted = types.SimpleNamespace(is_ready=lambda: True, take=taken.append)
        self.agent.kept_references = (None, None, None)
        self.agent.time_references(types.SimpleNamespace(mode="benchmark"), "/nowhere")
        self.assertEqual([], taken, "the prestarted process was given no job")
        self.assertFalse(agent_module.turn.held())

    def test_a_job_waits_for_its_turn_and_keeps_it(self):
        left = self.flag + "-gate"
        open(left, "w").close()  # the last holder's agent, killed mid-benchmark, left its gate's flag
        threading.Timer(0.3, fcntl.flock, args=(self.fd, fcntl.LOCK_UN)).start()
        began = time.monotonic()
        with mock.patch.dict(os.environ, {agent_module.gate.VARIABLE: left}):
            self.assertTrue(self.agent.device_turn())
        self.assertGreater(time.monotonic() - began, 0.25)
        self.assertTrue(agent_module.turn.held())
        self.assertFalse(os.path.exists(left), "the turn's taker clears a flag left behind")

    def test_a_turn_that_never_comes_is_the_jobs_error(self):
        with mock.patch.object(agent_module.gate, "MOST_SECONDS", 0.2):
            self.assertFalse(self.agent.device_turn())
        got = [events.decode(line, KEY) for line in self.out.getvalue().splitlines()]
        self.assertEqual(["ERROR"], [e["type"] for e in got])
        self.assertIn("GPU was not free", got[0]["message"])


class QuietTest(unittest.TestCase):
    """A replay timed while another context was busy on the GPU (its empty windows long against the GPU's usual
    ones, quiet.py) does not rank; a quiet one's windows become the GPU's history."""

    REPLAYED = {"method": "replayed", "status": "verified", "by": "replay"}
    ALONE = {1: {"empty_window_ms": 0.001248}, 2: {"empty_window_ms": 0.001280}}
    BESIDE = {1: {"empty_window_ms": 0.001248}, 2: {"empty_window_ms": 0.002208}}

    def setUp(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        self.flag = os.path.join(folder, "turn")
        self.agent = Agent(events.Emitter(KEY, io.StringIO()), cache_dir=tempfile.mkdtemp())
        self.agent.began = time.monotonic()
        self.agent.reference_window = None

    def held_turn(self, history):
        patch = mock.patch.dict(os.environ, {agent_module.turn.VARIABLE: self.flag})
        patch.start()
        self.addCleanup(patch.stop)
        self.addCleanup(agent_module.turn.release)
        self.assertTrue(agent_module.turn.take())
        kept = agent_module.quiet.History.of_turn()
        kept.keep(*history)
        return kept

    def test_long_windows_against_the_gpus_history_do_not_rank(self):
        history = self.held_turn([0.00125] * 8)
        timing = self.agent.quiet(self.BESIDE, dict(self.REPLAYED))
        self.assertEqual(("replayed", "unranked"), (timing["method"], timing["status"]))
        self.assertIn("2.208 us against its usual 1.250 us", timing["reason"])
        self.assertEqual([0.00125] * 8, history.read(), "a long window is not the GPU's usual")

    def test_a_quiet_replay_ranks_and_its_window_is_kept(self):
        history = self.held_turn([0.00125] * 8)
        self.agent.reference_window = 0.001216
        self.assertEqual(self.REPLAYED, self.agent.quiet(self.ALONE, dict(self.REPLAYED)))
        self.assertEqual([0.00125] * 8 + [0.001264], history.read())

    def test_a_window_near_the_limit_ranks_but_is_not_kept(self):
        history = self.held_turn([0.00125] * 8)
        near = {1: {"empty_window_ms": 0.00140}, 2: {"empty_window_ms": 0.00140}}  # x1.12: not long, not usual
        self.assertEqual("verified", self.agent.quiet(near, dict(self.REPLAYED))["status"])
        self.assertEqual([0.00125] * 8, history.read(), "no run of such jobs raises the usual window")

    def test_a_job_whose_turn_came_before_the_last_rooms_ended_does_not_rank(self):
        self.held_turn([0.00125] * 8)
        self.agent.settled = False
        timing = self.agent.quiet(self.ALONE, dict(self.REPLAYED))
        self.assertEqual("unranked", timing["status"])
        self.assertIn("had not ended", timing["reason"])

    def test_without_a_turn_the_reference_timed_in_the_job_is_the_usual(self):
        with mock.patch.dict(os.environ, {agent_module.turn.VARIABLE: ""}):
            self.agent.reference_window = 0.001248
            self.assertEqual("unranked", self.agent.quiet(self.BESIDE, dict(self.REPLAYED))["status"])
            self.assertEqual("verified", self.agent.quiet(self.ALONE, dict(self.REPLAYED))["status"])
            self.agent.reference_window = None  # nothing to go on: it is not known quiet
            timing = self.agent.quiet(self.ALONE, dict(self.REPLAYED))
            self.assertEqual("unranked", timing["status"])
            self.assertIn("not known", timing["reason"])

    def test_an_own_process_timing_is_left_as_it_is(self):
        self.agent.reference_window = 0.001248
        own = {"method": "own-process", "status": "unranked", "reason": "not replayed"}
        self.assertEqual(own, self.agent.quiet(self.BESIDE, dict(own)))


class AgentWithoutGpuTest(unittest.TestCase):
    def run_agent(self, raw):
        out = io.StringIO()
        emitter = events.Emitter(KEY, out)
        Agent(emitter, cache_dir=tempfile.mkdtemp()).run(raw)
        return [events.decode(line, KEY) for line in out.getvalue().splitlines()]

    def test_every_failure_is_one_event(self):
        for raw, message in ((b"not json", "invalid payload"),
                             (valid_payload(problem="nope"), "unknown problem"),
                             (valid_payload(dtype="float64"), "does not take dtype")):
            got = self.run_agent(raw)
            self.assertEqual(1, len(got), got)
            self.assertEqual("ERROR", got[0]["type"])
            self.assertIn(message, got[0]["message"])

    def test_command_line_never_tracebacks(self):
        done = subprocess.run([sys.executable, "-m", "remote_agent", "--payload", "/nonexistent/file"], cwd=ROOT,
                              capture_output=True, text=True)
        self.assertEqual(2, done.returncode)
        self.assertEqual("", done.stdout, "without a key there is nothing it could sign")
        self.assertIn("cannot read the payload file", done.stderr)
        self.assertNotIn("Traceback", done.stderr)

    def test_the_key_is_taken_out_of_the_payload_and_the_file_removed(self):
        work = tempfile.mkdtemp()
        path = os.path.join(work, "payload.json")
        with open(path, "wb") as f:
            f.write(valid_payload(problem="nope", event_key=base64.b64encode(KEY).decode()))
        # The agent's own process, as the service starts it: its one event is signed with the payload's key.
        done = subprocess.run([sys.executable, "-m", "remote_agent", "--payload", path], cwd=ROOT,
                              capture_output=True, text=True)
        self.assertEqual(["ERROR"], [events.decode(l, KEY)["type"] for l in done.stdout.splitlines()])
        self.assertFalse(os.path.exists(path), "the payload (with the key) is gone once read")
        key, rest = payload.take_event_key(valid_payload(event_key=base64.b64encode(KEY).decode()))
        self.assertEqual(KEY, key)
        self.assertNotIn(b"event_key", rest)
        self.assertEqual((None, b"x"), payload.take_event_key(b"x"))
        self.assertIsNone(payload.take_event_key(valid_payload(event_key="c2hvcnQ="))[0], "5 bytes is no key")
        self.assertIsNone(payload.take_event_key(valid_payload(event_key="not base64!"))[0])

    def test_the_agent_makes_itself_non_dumpable(self):
        # PR_GET_DUMPABLE (3) is 0 once it ran: same-user processes cannot read its memory, where the key is.
        code = ("import ctypes; from remote_agent.__main__ import not_dumpable; not_dumpable(); "
                "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        self.assertEqual("0", done.stdout.strip(), done.stderr)

    def test_a_stop_signal_ends_the_job_with_its_room(self):
        # dstack's stop: SIGINT to the run's command, a shell that exec'ed the agent (conf/dstack/task.json); the
        # service's and a worker's: TERM. Before, SIGINT was a KeyboardInterrupt's traceback, TERM a death with no
        # clean-up. The agent waits on its payload (a FIFO nobody writes) when the signal comes.
        for sig in (signal.SIGINT, signal.SIGTERM):
            work = tempfile.mkdtemp()
            path = os.path.join(work, "payload.json")
            os.mkfifo(path)
            agent = subprocess.Popen(["/bin/sh", "-c", "exec %s -m remote_agent --payload %s" % (sys.executable, path)],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            first = agent.stderr.readline()
            self.assertIn("run in a room", first)
            agent.send_signal(sig)
            out, err = agent.communicate(timeout=30)
            self.assertEqual(128 + sig, agent.returncode, first + err)
            self.assertEqual("", out)
            self.assertNotIn("Traceback", err)

    def test_without_a_key_it_exits_without_an_event(self):
        work = tempfile.mkdtemp()
        path = os.path.join(work, "payload.json")
        with open(path, "wb") as f:
            f.write(valid_payload())
        done = subprocess.run([sys.executable, "-m", "remote_agent", "--payload", path], cwd=ROOT,
                              capture_output=True, text=True)
        self.assertEqual((2, ""), (done.returncode, done.stdout))
        self.assertIn("no valid event_key", done.stderr)


if __name__ == "__main__":
    unittest.main()
