"""The judge's reading of its stdin and its sets made ahead (remote_agent/judge.py: Lines, wait_for_device,
judge_jobs with an ahead line, Ahead's plan): no GPU needed. What a set made ahead holds is tested on a GPU
(test_harness_gpu.py)."""
import json
import os
import tempfile
import threading
import time
import unittest
from types import SimpleNamespace

from remote_agent import gate, judge

AHEAD_LINE = json.dumps({"ahead": {"problem": "p", "dtype": "float32"}}) + "\n"


class Pipe:
    def __enter__(self):
        self.read, self.write = os.pipe()
        self.lines = judge.Lines(self.read)
        return self

    def say(self, text):
        os.write(self.write, text.encode())

    def end(self):
        if self.write is not None:
            os.close(self.write)
            self.write = None

    def __exit__(self, *exc):
        self.end()
        os.close(self.read)


class LinesTest(unittest.TestCase):
    def test_a_line_read_leaves_the_next_in_the_pipe(self):
        with Pipe() as pipe:
            self.assertFalse(pipe.lines.pending())
            pipe.say('{"n": 1}\n{"n": 2}\n')
            self.assertEqual('{"n": 1}\n', pipe.lines.readline())
            self.assertTrue(pipe.lines.pending(), "the second line is still the pipe's: select sees it")
            self.assertTrue(judge.job_comes(pipe.lines))
            self.assertEqual('{"n": 2}\n', pipe.lines.readline())
            self.assertFalse(pipe.lines.pending())

    def test_a_line_pushed_back_comes_first_and_the_end_is_an_empty_line(self):
        with Pipe() as pipe:
            pipe.say("a\n")
            line = pipe.lines.readline()
            pipe.lines.push(line)
            self.assertTrue(pipe.lines.pending())
            self.assertEqual("a\n", pipe.lines.readline())
            pipe.say("b")
            pipe.end()
            self.assertEqual("b", pipe.lines.readline())
            self.assertEqual("", pipe.lines.readline())
            pipe.lines.read()  # returns at the end

    def test_an_ahead_line_and_others(self):
        self.assertEqual({"problem": "p", "dtype": "float32"}, judge.ahead_of(AHEAD_LINE))
        for line in ('{"problem": "p"}\n', "", "\n", "not json\n", '{"ahead": 1}\n', "[1]\n"):
            with self.subTest(line=line):
                self.assertIsNone(judge.ahead_of(line))


class WaitForDeviceTest(unittest.TestCase):
    """A prestarted judge waits at the gate before it makes its device context; its job's line ends the wait (its
    own agent holds the gate), the ahead line that comes first does not."""

    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.flag = os.path.join(folder.name, "gate")
        saved = os.environ.get(gate.VARIABLE)
        os.environ[gate.VARIABLE] = self.flag
        self.addCleanup(lambda: os.environ.pop(gate.VARIABLE) if saved is None else
                        os.environ.__setitem__(gate.VARIABLE, saved))

    def test_the_ahead_line_is_kept_and_the_wait_goes_on_until_the_job(self):
        gate.hold(self.flag)
        self.addCleanup(gate.release, self.flag)
        with Pipe() as pipe:
            pipe.say(AHEAD_LINE)
            threading.Timer(0.3, pipe.say, args=('{"n": 1}\n',)).start()
            began = time.monotonic()
            waited, ahead_line = judge.wait_for_device(pipe.lines)
            self.assertGreaterEqual(time.monotonic() - began, 0.25, "the ahead line did not end the wait")
            self.assertEqual(AHEAD_LINE, ahead_line)
            self.assertEqual('{"n": 1}\n', pipe.lines.readline(), "the job's line is left to read")

    def test_a_free_gate_ends_the_wait_with_nothing_read(self):
        with Pipe() as pipe:
            waited, ahead_line = judge.wait_for_device(pipe.lines)
            self.assertLess(waited, 0.05)
            self.assertIsNone(ahead_line)
            gate.hold(self.flag)
            threading.Timer(0.2, gate.release, args=(self.flag,)).start()
            pipe.say(AHEAD_LINE)
            waited, ahead_line = judge.wait_for_device(pipe.lines)
            self.assertGreaterEqual(waited, 0.15)
            self.assertEqual(AHEAD_LINE, ahead_line)
            self.assertFalse(pipe.lines.pending())


class Jobs:
    """A judge's stdin as judge_jobs reads it: lines, each pending only once ``after`` steps were taken."""

    def __init__(self, lines, ahead):
        self.lines = list(lines)  # (steps taken before it is there, the line)
        self.ahead = ahead

    def pending(self):
        return bool(self.lines) and self.ahead.steps >= self.lines[0][0]

    def readline(self):
        return self.lines.pop(0)[1] if self.lines else ""


class CountingAhead:
    def __init__(self, job, most=100):
        self.job, self.steps, self.most = job, 0, most

    def step(self, until=None):
        self.steps += 1
        return self.steps < self.most


class JudgeJobsAheadTest(unittest.TestCase):
    def channels(self):
        end = SimpleNamespace(close=lambda: None)
        return [(end, end), (end, end)]

    def test_the_ahead_line_is_no_channels_and_its_work_goes_on_while_no_line_waits(self):
        made, started, judged = CountingAhead(None), [], []

        def start(job):
            started.append(job)
            return made
        jobs = Jobs([(0, AHEAD_LINE), (5, '{"n": 1}\n'), (9, '{"n": 2, "timed": true}\n')], made)
        self.assertTrue(judge.judge_jobs(jobs, self.channels(), lambda job, channel, given: judged.append(
            (job["n"], given)) or True, start_ahead=start))
        self.assertEqual([{"problem": "p", "dtype": "float32"}], started)
        self.assertEqual([(1, made), (2, made)], judged, "each job given the ahead")
        self.assertEqual(9, made.steps, "steps until each line came, none after the last")

    def test_work_ends_when_there_is_none_and_an_ahead_read_before_serves(self):
        judged = []
        made = CountingAhead({"problem": "q"}, most=3)
        jobs = Jobs([(100, '{"n": 1}\n'), (100, '{"n": 2}\n')], made)
        jobs.pending = lambda: False  # no line ever waits: readline blocks (here, returns it)
        self.assertTrue(judge.judge_jobs(jobs, self.channels(), lambda job, channel, given: judged.append(given)
                                         or True, start_ahead=lambda job: made, ahead_line=AHEAD_LINE))
        self.assertEqual(3, made.steps, "step() said there was no more")
        self.assertEqual([made, made], judged)

    def test_without_a_maker_the_ahead_line_is_skipped(self):
        judged = []
        jobs = Jobs([(0, AHEAD_LINE), (0, '{"n": 1}\n'), (0, '{"n": 2}\n')], SimpleNamespace(steps=0))
        self.assertTrue(judge.judge_jobs(jobs, self.channels(), lambda job, channel, given: judged.append(
            (job["n"], given)) or True))
        self.assertEqual([(1, None), (2, None)], judged)


def sized(size):
    return judge.SampleSet(seed=0, inputs={}, answers={}, size=size)


NO_DEVICE = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))


class PlannedAhead(judge.Ahead):
    """Ahead with made-up sets: ``sizes`` by test id (None: the test's inputs too large)."""

    def __init__(self, sizes, budget, benchmark=None):
        cases = [{"test_id": t, "name": str(t), "sizes": {}} for t in sizes]
        harness = SimpleNamespace(problem=SimpleNamespace(cases=cases))
        super().__init__({"problem": "p", "dtype": "float32", "benchmark": benchmark}, NO_DEVICE, harness, budget)
        self.sizes = sizes
        self.order = []

    def make(self, case, sample):
        self.order.append((case["test_id"], sample))
        size = self.sizes[case["test_id"]]
        return None if size is None else sized(size)


class AheadPlanTest(unittest.TestCase):
    def setUp(self):
        saved = os.environ.pop(gate.VARIABLE, None)
        if saved is not None:
            self.addCleanup(os.environ.__setitem__, gate.VARIABLE, saved)

    def run_out(self, ahead):
        steps = 0
        while ahead.step():
            steps += 1
            self.assertLess(steps, 10000)
        return steps

    def test_every_test_gets_its_least_samples_first_then_its_most(self):
        ahead = PlannedAhead({1: 10, 2: 10}, budget=1 << 30, benchmark={"min_runs": 2, "max_runs": 3})
        self.run_out(ahead)
        least, most = 1 + 30, 1 + 100  # stats.many_samples_rule: 30 to 100 samples, and the warm-up
        self.assertEqual([(1, s) for s in range(least)] + [(2, s) for s in range(least)]
                         + [(1, s) for s in range(least, most)] + [(2, s) for s in range(least, most)], ahead.order)
        self.assertEqual(2 * most * 10, ahead.used)
        self.assertEqual(ahead.sets[2][40], ahead.take(2, 40))
        self.assertIsNone(ahead.take(2, most))
        self.assertIsNone(ahead.take(3, 0))

    def test_a_test_too_large_or_over_the_budget_is_left_to_be_made_per_sample(self):
        ahead = PlannedAhead({1: None, 2: judge.AHEAD_SET_BYTES + 1, 3: 100, 4: 1000}, budget=100 * 31 + 1000 * 5)
        self.run_out(ahead)
        self.assertEqual([], ahead.sets[1])
        self.assertEqual([], ahead.sets[2])
        self.assertEqual(31, len(ahead.sets[3]), "its first round; its second is over the budget")
        self.assertEqual(5, len(ahead.sets[4]), "until the budget ran out")
        self.assertEqual([(1, 0), (2, 0)], ahead.order[:2], "each tried once")

    def test_nothing_is_made_while_a_benchmark_holds_the_gate(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        flag = os.path.join(folder.name, "gate")
        os.environ[gate.VARIABLE] = flag
        self.addCleanup(os.environ.pop, gate.VARIABLE)
        ahead = PlannedAhead({1: 10}, budget=1 << 30)
        gate.hold(flag)
        try:
            self.assertTrue(ahead.step())
            self.assertEqual([], ahead.order, "it waited")
        finally:
            gate.release(flag)
        self.assertTrue(ahead.step())
        self.assertEqual([(1, 0)], ahead.order)

    def test_making_that_fails_stops_and_what_was_made_serves(self):
        ahead = PlannedAhead({1: 10}, budget=1 << 30)
        ahead.step()

        def broken(case, sample):
            raise RuntimeError("CUDA out of memory")
        ahead.make = broken
        self.assertFalse(ahead.step())
        self.assertFalse(ahead.step())
        self.assertEqual(1, len(ahead.sets[1]))
        self.assertIn("out of memory", ahead.summary())

    def test_it_serves_its_own_timed_job_only(self):
        ahead = PlannedAhead({1: 10}, budget=1)
        ahead.job["problems_dir"] = "/p"
        timed = {"problem": "p", "dtype": "float32", "problems_dir": "/p", "timed": True}
        self.assertTrue(ahead.serves(timed))
        for other in (dict(timed, timed=False), dict(timed, problem="q"), dict(timed, dtype="float16"),
                      dict(timed, problems_dir="/q")):
            with self.subTest(job=other):
                self.assertFalse(ahead.serves(other))


if __name__ == "__main__":
    unittest.main()
