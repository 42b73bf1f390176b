"""The agent's side of the judge, without a GPU: fake judges and workers (real child processes) speaking the line
protocol of remote_agent/judge.py and worker.py's serve mode; and the cross-check and the floor."""
import io
import os
import select
import sys
import tempfile
import textwrap
import time
import types
import unittest

from remote_agent import physics, profiler, verification

JUDGE = textwrap.dedent('''
    import json, os, sys
    job = json.loads(sys.stdin.readline())
    assert "secret" not in job and job["problem"] == "p", job  # the judge draws its own
    read_fd, write_fd = (int(fd) for fd in os.environ["KR_PEER_FDS"].split(","))
    from_worker, to_worker = os.fdopen(read_fd), os.fdopen(write_fd, "w", buffering=1)
    for test in (1, 2):
        to_worker.write("CALL %d payload-%d\\n" % (test, test))
        answer = from_worker.readline().split(" ", 2)
        if answer[:2] != ["CALLED", str(test)]:
            print("RESULT " + json.dumps({"test_id": test, "name": "t", "status": "NOT_RUN"}), flush=True)
            sys.exit(0)
        print("CALLED %d %s" % (test, answer[2].strip()), flush=True)
        status = "FAILED" if "{fail}" == str(test) else "PASSED"
        print("RESULT " + json.dumps({"test_id": test, "name": "t%d" % test, "status": status,
                                      "debug_info": {"seed": 5, "max_abs_error": 1.0} if status == "FAILED" else None}),
              flush=True)
        if status == "FAILED":
            sys.exit(0)
    print("DONE", flush=True)
    to_worker.close()
    sys.stdin.read()  # as remote_agent/judge.py: idle after its verdict until its stdin closes
''')

WORKER = textwrap.dedent('''
    import json, os, sys
    behaviour = "{worker}"
    # A hostile worker writes forged answers on its output: for the wrong test, then garbage, then the judge's own
    # words. The agent reads only the judge; its answers go to the judge over their channel.
    print(json.dumps({"event": "CALLED", "test_id": 99}), flush=True)
    print("RESULT " + json.dumps({"test_id": 1, "status": "PASSED"}), flush=True)
    print("DONE", flush=True)
    read_fd, write_fd = (int(fd) for fd in os.environ["KR_PEER_FDS"].split(","))
    from_judge, to_judge = os.fdopen(read_fd), os.fdopen(write_fd, "w", buffering=1)
    for line in from_judge:
        test = int(line.split()[1])
        assert line.split()[2] == "payload-%d" % test
        if behaviour == "crash" and test == 2:
            os._exit(3)
        if behaviour == "hang" and test == 2:
            import time; time.sleep(60)
        to_judge.write("CALLED %d %s\\n" % (test, json.dumps({"timing": {"median": test}})))
    if behaviour == "linger":  # a slow end after its last answer (a profiler writing its figures)
        import time; time.sleep(60)
    sys.stdin.read()  # as worker.py's serve: the channel closed, it ends once its stdin closes
''')


# A warm agent's judge (remote_agent/judge.py's judge_jobs): a channel to each of its workers, the n-th job line for
# the n-th; each job's tests as JUDGE's (a test numbered {fail} fails), its log on stderr.
SHARED_JUDGE = textwrap.dedent('''
    import json, sys
    sys.path.insert(0, {root!r})
    from remote_agent import judge, verification
    def one(job, channel, ahead):
        from_worker, to_worker = channel
        print("judging " + job["problem"], file=sys.stderr, flush=True)
        for test in (1, 2):
            to_worker.write("CALL %d payload-%d\\n" % (test, test))
            answer = from_worker.readline().split(" ", 2)
            if answer[:2] != ["CALLED", str(test)]:
                print("RESULT " + json.dumps({{"test_id": test, "name": "t", "status": "NOT_RUN"}}), flush=True)
                return False
            status = "FAILED" if job["problem"] + str(test) == "{fail}" else "PASSED"
            print("RESULT " + json.dumps({{"test_id": test, "name": "t", "status": status}}), flush=True)
            if status == "FAILED":
                return False
        print("DONE", flush=True)
        return True
    if judge.judge_jobs(sys.stdin, verification.peers(), one):
        sys.stdin.read()
''')
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scripts(folder, fail="0", worker="ok"):
    paths = []
    for name, text in (("judge.py", JUDGE.replace("{fail}", fail)), ("worker.py", WORKER.replace("{worker}", worker))):
        path = os.path.join(folder, name)
        with open(path, "w") as f:
            f.write(text)
        paths.append([sys.executable, path])
    return paths


def pair(folder, judge, worker):
    """What the agent's start_pair does, without a room: the judge and the worker started as a verification talks
    to them, joined by their channel."""
    def start():
        started, (served,) = verification.start_judged(
            *(lambda end, argv=argv: verification.start(argv, dict(os.environ), folder, None, end=end)
              for argv in (judge, worker)))
        return started, served
    return start


class VerificationTest(unittest.TestCase):
    def run_with(self, fail="0", worker="ok", timeout=20, **options):
        with tempfile.TemporaryDirectory() as folder:
            judge, work = scripts(folder, fail, worker)
            return verification.run(pair(folder, judge, work), {"problem": "p"}, timeout,
                                    log=lambda *a: None, **options)

    def test_every_test_called_and_passed_is_a_pass_whatever_the_worker_forged(self):
        outcome = self.run_with()
        self.assertEqual(outcome.status, "PASSED")
        self.assertEqual([r["test_id"] for r in outcome.results], [1, 2])
        self.assertEqual({1: {"timing": {"median": 1}}, 2: {"timing": {"median": 2}}}, outcome.calls,
                         "the worker's answers, as the judge passed them on; nothing of its own output")

    def test_a_failure_is_the_judges_and_names_its_test(self):
        outcome = self.run_with(fail="2")
        self.assertEqual(outcome.status, "FAILED")
        self.assertEqual(outcome.failure["test_id"], 2)

    def test_a_worker_that_dies_mid_call_crashed(self):
        outcome = self.run_with(worker="crash")
        self.assertEqual(outcome.status, "CRASHED")
        self.assertEqual(outcome.exit_code, 3)

    def test_a_pass_is_told_before_the_worker_ends(self):
        told = []
        began = time.monotonic()
        outcome = self.run_with(worker="linger", timeout=3,
                                on_passed=lambda o: told.append((o.status, len(o.results), time.monotonic() - began)))
        self.assertEqual([("PASSED", 2)], [t[:2] for t in told])
        self.assertLess(told[0][2], 2.5, "told before the worker's slow end")
        self.assertEqual(outcome.status, "TIMEOUT", "a profiled worker that never ends leaves no figures")

    def test_a_worker_whose_end_does_not_matter_is_not_waited_for(self):
        began = time.monotonic()
        outcome = self.run_with(worker="linger", timeout=30, await_worker=False)
        self.assertEqual(outcome.status, "PASSED")
        self.assertLess(time.monotonic() - began, 10)

    def test_a_lingering_pass_leaves_both_processes_idle_for_the_caller_to_end(self):
        told = []
        outcome = self.run_with(linger=True, on_start=lambda processes: told.extend(processes) or True)
        self.assertEqual(outcome.status, "PASSED")
        try:
            time.sleep(0.3)
            self.assertEqual([None, None], [p.poll() for p in told], "the judge and the worker both still there")
        finally:
            verification._kill(*told)
        self.assertTrue(all(p.poll() is not None for p in told))

    def test_a_lingering_run_that_fails_ends_its_processes_itself(self):
        told = []
        outcome = self.run_with(fail="2", linger=True, on_start=lambda processes: told.extend(processes) or True)
        self.assertEqual(outcome.status, "FAILED")
        self.assertTrue(all(p.poll() is not None for p in told))

    def test_no_pass_is_told_for_a_failure(self):
        told = []
        self.assertEqual(self.run_with(fail="1", on_passed=told.append).status, "FAILED")
        self.assertEqual([], told)

    def test_a_run_no_longer_needed_when_it_starts_ends_at_once_with_its_processes(self):
        told = []
        outcome = self.run_with(on_start=lambda processes: told.extend(processes) or False)
        self.assertEqual(outcome.status, "BROKEN")
        self.assertEqual(2, len(told))
        self.assertTrue(all(p.poll() is not None for p in told), "both killed")

    def test_a_cancelled_judge_run_ends_its_processes(self):
        from remote_agent.agent import JudgeRun
        agent = types.SimpleNamespace()
        with tempfile.TemporaryDirectory() as folder:
            judge, work = scripts(folder, worker="hang")
            os.makedirs(os.path.join(folder, "ok"))
            _, ok_worker = scripts(os.path.join(folder, "ok"))
            # The agent's judged(): the run, told its processes as it starts them; the second test hangs.
            agent.judged = lambda payload, cwd, run: verification.run(
                pair(folder, judge, work), {"problem": "p"}, 60, log=lambda *a: None, on_start=run.hold)
            run = JudgeRun(agent, None, folder)
            while not run.processes:
                time.sleep(0.05)
            began = time.monotonic()
            run.cancel()
            self.assertNotEqual("PASSED", run.outcome().status)
            self.assertLess(time.monotonic() - began, 10, "not the run's own 60 s limit")
            self.assertTrue(all(p.poll() is not None for p in run.processes))
            # A pass leaves its processes idle (the agent's judged() lingers) until release() ends them.
            agent.judged = lambda payload, cwd, run: verification.run(
                pair(folder, judge, ok_worker), {"problem": "p"}, 60, log=lambda *a: None, on_start=run.hold,
                linger=True)
            passed = JudgeRun(agent, None, folder)
            self.assertEqual("PASSED", passed.outcome().status)
            self.assertEqual([None, None], [p.poll() for p in passed.processes])
            passed.release()
            deadline = time.monotonic() + 10
            while any(p.poll() is None for p in passed.processes) and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertTrue(all(p.poll() is not None for p in passed.processes), "released: both ended")
            late = JudgeRun(agent, None, folder)
            late.cancel()
            self.assertNotEqual("PASSED", late.outcome().status, "cancelled as it starts: it never passes")
            self.assertTrue(all(p.poll() is not None for p in late.processes))

    def test_a_worker_that_never_answers_times_out(self):
        outcome = self.run_with(worker="hang", timeout=3)
        self.assertEqual(outcome.status, "TIMEOUT")


class SharedJudgeTest(unittest.TestCase):
    """A warm agent's judge serves two runs, the verdict's worker and then the replay's, each over a channel of its
    own: one device context fewer a job. The judge is the agent's (Prestarted) to end and to read the log of."""

    def start(self, folder, fail="none"):
        judge_path = os.path.join(folder, "shared_judge.py")
        with open(judge_path, "w") as f:
            f.write(SHARED_JUDGE.format(root=ROOT, fail=fail))
        _, worker = scripts(folder)
        start = (lambda argv: lambda end: verification.start(argv, dict(os.environ), folder, None, end=end))
        judge, workers = verification.start_judged(start([sys.executable, judge_path]), start(worker), start(worker))
        self.addCleanup(verification._kill, judge, *workers)
        return judge, workers

    def test_the_verdicts_run_then_the_replays_each_with_its_worker(self):
        with tempfile.TemporaryDirectory() as folder:
            judge, (verdict, replay) = self.start(folder)
            told = []
            first = verification.run(None, {"problem": "verdict"}, 20, log=lambda *a: None,
                                     started=(judge, verdict, "verdict-job.json"), linger=True,
                                     on_start=lambda processes: told.extend(processes) or True)
            self.assertEqual("PASSED", first.status)
            self.assertEqual([verdict], told, "the run's to end: its worker, not the judge it was given")
            self.assertEqual([None, None], [judge.poll(), verdict.poll()], "both wait: the judge for its next job")
            second = verification.run(None, {"problem": "replay"}, 20, log=lambda *a: None,
                                      started=(judge, replay, "replay-job.json"))
            self.assertEqual("PASSED", second.status)
            self.assertEqual([1, 2], [r["test_id"] for r in second.results], "the second job's own results")
            self.assertIsNotNone(replay.wait(timeout=10), "a run that does not linger ends its worker")
            self.assertIsNone(judge.poll(), "the judge is its starter's to end")
            readable, _, _ = select.select([judge.stderr], [], [], 5)
            self.assertEqual("judging verdict\njudging replay\n",
                             os.read(judge.stderr.fileno(), 4096).decode() if readable else "",
                             "its log is left for its starter: no run read it")

    def test_a_judge_that_fails_the_verdict_ends_and_judges_nothing_more(self):
        with tempfile.TemporaryDirectory() as folder:
            judge, (verdict, replay) = self.start(folder, fail="verdict2")
            outcome = verification.run(None, {"problem": "verdict"}, 20, log=lambda *a: None,
                                       started=(judge, verdict, "verdict-job.json"), linger=True)
            self.assertEqual("FAILED", outcome.status)
            self.assertIsNotNone(judge.wait(timeout=10), "a judge that did not pass is ended, whoever started it")
            self.assertIsNotNone(verdict.poll())

    def test_a_job_line_goes_to_its_own_channel_and_each_channel_is_closed_after(self):
        from remote_agent.judge import judge_jobs
        closed, judged = [], []

        class End:
            def __init__(self, name):
                self.name = name

            def close(self):
                closed.append(self.name)

        channels = [(End("r1"), End("w1")), (End("r2"), End("w2"))]
        jobs = io.StringIO('{"n": 1}\n{"n": 2}\n')
        self.assertTrue(judge_jobs(jobs, channels, lambda job, end, ahead: judged.append((job["n"], end[0].name))
                                   or True))
        self.assertEqual([(1, "r1"), (2, "r2")], judged)
        self.assertEqual(["w1", "r1", "w2", "r2"], closed)
        judged.clear()
        self.assertFalse(judge_jobs(io.StringIO('{"n": 1}\n{"n": 2}\n'), channels,
                                    lambda job, end, ahead: judged.append(job["n"]) and False))
        self.assertEqual([1], judged, "a failed job is the judge's last")
        judged.clear()
        self.assertFalse(judge_jobs(io.StringIO('{"n": 1}\n\n'), channels,
                                    lambda job, end, ahead: judged.append(1) or True))
        self.assertEqual([1], judged, "an empty line: not needed any more")

    def test_a_judges_last_line_for_a_job(self):
        for line, last in (("DONE\n", True), ("BROKEN no pool\n", True), ('RESULT {"status": "FAILED"}\n', True),
                           ('RESULT {"status": "NOT_RUN"}\n', True), ('RESULT {"status": "PASSED"}\n', False),
                           ("RESULT {bad\n", True), ('CALLED 1 {"timing": 1}\n', False), ("judge: log\n", False)):
            with self.subTest(line=line):
                self.assertEqual(last, verification.ends_a_job(line))


class LazyJudgeTest(unittest.TestCase):
    """An audit's judge started ahead (agent.Audit) makes no device context until its job comes, and none at all
    when its agent ends first (its stdin's end); it reads nothing meanwhile, on the buffered stdin of a new
    interpreter or the raw one of a fork (forked.py)."""

    def test_a_job_or_the_end_of_the_pipe(self):
        from remote_agent.judge import job_comes
        for make in (lambda fd: os.fdopen(fd, "r"), lambda fd: io.TextIOWrapper(io.FileIO(fd, "r"))):
            read, write = os.pipe()
            with make(read) as stream:
                os.write(write, b'{"problem": "p"}\n')
                self.assertTrue(job_comes(stream))
                self.assertEqual('{"problem": "p"}\n', stream.readline(), "nothing read before")
                os.close(write)
                self.assertFalse(job_comes(stream), "its agent ended")


class JudgeReadsTheWorkerTest(unittest.TestCase):
    """How the judge (remote_agent/judge.py) takes a line from its worker's end of the channel, which user code can
    write anything to: the answer it waits for, or the end of the test (NOT_RUN)."""

    def test_only_the_answers_for_the_test_asked_are_taken(self):
        from remote_agent.judge import answer_of
        self.assertEqual(("NEXT", None), answer_of("NEXT 3\n", 3))
        self.assertEqual(("CALLED", {"timing": {"median": 0.1}}), answer_of('CALLED 3 {"timing": {"median": 0.1}}\n', 3))
        self.assertEqual(("CALLED", {}), answer_of("CALLED 3\n", 3))
        for line in ("NEXT 4\n", "NEXT 3 more\n", "CALLED 4 {}\n", "CALLED 3 [1]\n", "CALLED 3 {bad\n",
                     "RESULT {}\n", "", "x" * 500):
            with self.subTest(line=line[:20]):
                kind, said = answer_of(line, 3)
                self.assertIsNone(kind)
                self.assertLessEqual(len(said), 200)


class CrossCheckTest(unittest.TestCase):
    CLAIMS = [{"test_id": 1, "name": "small", "runtime_ms": 0.0025},
              {"test_id": 2, "name": "large", "runtime_ms": 0.200}]

    def test_claims_the_profiler_agrees_with_are_verified(self):
        tests = {1: [{"duration_ms": 0.0029}], 2: [{"duration_ms": 0.120}, {"duration_ms": 0.090}]}
        checked = profiler.cross_check(self.CLAIMS, tests)
        self.assertEqual(checked["status"], "verified", checked)
        self.assertAlmostEqual(checked["tests"][1]["profiler_ms"], 0.210)

    def test_a_time_well_under_the_profilers_or_with_no_kernel_is_unverified(self):
        faked = profiler.cross_check(self.CLAIMS, {1: [{"duration_ms": 0.0029}], 2: [{"duration_ms": 0.312}]})
        self.assertEqual(faked["status"], "unverified")
        self.assertIn("test 2 (large): timed at 0.2 ms, but the profiler saw 0.312000 ms", faked["problems"][0])
        # Under 20 us the share is 0.6 (the events' figure sat 0.69-0.84 of ncu's at 2.0-2.5 us for the honest
        # kernel): relative, so 2.5 us against ncu's 4.0 us is noise, against 4.3 us it is not (no fixed
        # microseconds that dominate at 2 us).
        small = profiler.cross_check(self.CLAIMS[:1], {1: [{"duration_ms": 0.0040}]})
        self.assertEqual(small["status"], "verified")
        self.assertEqual(profiler.cross_check(self.CLAIMS[:1], {1: [{"duration_ms": 0.0043}]})["status"], "unverified")
        self.assertEqual(profiler.cross_check([{"test_id": 1, "name": "tiny", "runtime_ms": 0.0012}],
                                              {1: [{"duration_ms": 0.0025}]})["status"], "unverified",
                         "half the time at 2.5 us (the old 1.5 us of slack let it through)")
        nothing = profiler.cross_check(self.CLAIMS, {2: [{"duration_ms": 0.2}]})
        self.assertEqual(nothing["problems"], ["test 1 (small): the profiler saw no kernel of the solution's"])


class PhysicsTest(unittest.TestCase):
    def test_the_h100_floor_of_an_8192_square_copy(self):
        moved = 2 * 8192 * 8192 * 4
        floor = physics.floor_ms("NVIDIA H100 80GB HBM3", moved, 0)
        self.assertAlmostEqual(floor, 1000 * moved / 3.35e12)
        self.assertTrue(physics.impossible(0.100, floor))  # 537 MB in 0.1 ms would be 5.4 TB/s
        self.assertFalse(physics.impossible(0.233, floor))  # what the H100 really takes (docs/evidence/profile-h100)
        self.assertFalse(physics.impossible(floor * 0.96, floor))  # within the slack

    def test_compute_bound_work_and_unknown_devices(self):
        flops = 2 * 4096 ** 3
        self.assertAlmostEqual(physics.floor_ms("AMD Instinct MI300X", 3 * 4096 * 4096 * 4, flops),
                               1000 * flops / 653.7e12)
        self.assertEqual(physics.peaks("NVIDIA H100 PCIe")[0], 2.0e12)
        self.assertIsNone(physics.floor_ms("NVIDIA GeForce RTX 4090", 1, 1))
        self.assertFalse(physics.impossible(0.0, None))


if __name__ == "__main__":
    unittest.main()
