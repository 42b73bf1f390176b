"""forked.Forked: a child that is a fork of this process, given what Popen gives a new process, running a module as
``python3 -m`` would (tests/forked_child.py reports what it saw)."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

from remote_agent import agent, forked, profiler, room, verification, worker
from tests import forked_child

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(args=(), env=None, pass_fds=(), preexec_fn=None, cwd=None):
    return forked.Forked([sys.executable, "-m", "tests.forked_child", *args], cwd=cwd or ROOT,
                         env=env if env is not None else {"ONLY": "this"}, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         pass_fds=pass_fds, preexec_fn=preexec_fn)


class ForkedTest(unittest.TestCase):
    def setUp(self):
        forked_child.MARK = "set in the parent"

    def tearDown(self):
        forked_child.MARK = None

    def test_the_module_runs_in_a_fork_with_its_arguments_pipes_environment_and_exit_code(self):
        with tempfile.TemporaryDirectory() as folder:
            child = start(["3"], env={"ONLY": "this"}, cwd=folder)
            out, err = child.communicate("hello\n", timeout=60)
            self.assertEqual(3, child.returncode)
            seen = json.loads(out)
            self.assertEqual("set in the parent", seen["mark"])  # no exec: the parent's modules, as they were
            self.assertEqual("__main__", seen["name"])
            self.assertEqual([os.path.join(ROOT, "tests", "forked_child.py"), "3"], seen["argv"])  # as python3 -m
            self.assertEqual("hello", seen["line"])
            self.assertEqual(os.path.realpath(folder), os.path.realpath(seen["cwd"]))
            self.assertEqual({"ONLY": "this"}, seen["environ"])  # the parent's environment is gone
            self.assertEqual("this", seen["getenv"])
            self.assertTrue(seen["sid"])
            self.assertEqual("to stderr\n", err)

    def test_only_the_standard_and_passed_descriptors_stay_open(self):
        read_end, write_end = os.pipe()
        kept_out = os.open(os.devnull, os.O_RDONLY)  # open in the parent, not passed
        try:
            child = start(env={"PASSED_FD": str(write_end)}, pass_fds=(write_end,))
            os.close(write_end)
            out, _ = child.communicate("\n", timeout=60)
            self.assertEqual(0, child.returncode)
            fds = json.loads(out)["fds"]
            self.assertIn(write_end, fds)
            self.assertNotIn(kept_out, fds)
            self.assertLessEqual(len(set(fds) - {0, 1, 2, write_end}), 1)  # the listing's own descriptor
            self.assertEqual(b"through the passed descriptor", os.read(read_end, 100))
        finally:
            os.close(read_end)
            os.close(kept_out)

    def test_preexec_runs_in_the_child_before_the_module(self):
        with tempfile.TemporaryDirectory() as folder:
            marker = os.path.join(folder, "preexec")

            def preexec():
                with open(marker, "w") as f:
                    f.write(str(os.getpid()))
            child = start(preexec_fn=preexec)
            child.communicate("\n", timeout=60)
            with open(marker) as f:
                self.assertEqual(str(child.pid), f.read())
            self.assertFalse(os.path.exists(os.path.join(folder, "nothing")))

    def test_a_failing_module_ends_its_child_with_1_and_its_traceback_not_the_parent(self):
        child = start()
        out, err = child.communicate("raise\n", timeout=60)
        self.assertEqual(1, child.returncode)
        self.assertIn("RuntimeError: the module failed", err)
        self.assertEqual("", out)

    def test_a_failing_preexec_ends_the_child_before_the_module(self):
        def preexec():
            raise OSError("no room")
        child = start(preexec_fn=preexec)
        out, err = child.communicate("\n", timeout=60)
        self.assertEqual(1, child.returncode)
        self.assertIn("no room", err)
        self.assertEqual("", out)

    def test_only_a_python_m_command_of_this_interpreter_is_forked(self):
        self.assertEqual(("remote_agent.worker", ["-", "x"]),
                         forked.module_of([sys.executable, "-m", "remote_agent.worker", "-", "x"]))
        for argv in (["/bin/true"], [sys.executable, "script.py"], ["/usr/bin/python3-other", "-m", "m"]):
            with self.assertRaises(ValueError):
                forked.module_of(argv)


if __name__ == "__main__":
    unittest.main()


class PrestartedTest(unittest.TestCase):
    """A warm agent forks its job's processes before anything secret is in its memory: in Prestarted's constructor,
    which __main__.run calls before it reads its payload, and with no thread of its own running (a fork copies only
    the thread that forks, and whatever locks the others held)."""

    def test_every_process_of_the_job_is_forked_at_once_before_any_thread_of_the_agents(self):
        calls, channels = [], []

        def popen(argv, **kwargs):
            calls.append((argv[2], threading.active_count()))
            channels.append(kwargs["env"].get(verification.PEER, ""))
            return subprocess.Popen([sys.executable, "-c", "import sys; print(%r, file=sys.stderr, flush=True); "
                                     "sys.stdin.read()" % worker.READY], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)

        job_room = mock.Mock()
        job_room.preexec.return_value = None
        work = tempfile.mkdtemp()
        before = threading.active_count()
        with mock.patch.object(forked, "available", return_value=True), mock.patch.object(forked, "Forked", popen), \
                mock.patch.object(profiler, "find_tool", return_value=None):
            started = agent.Prestarted(work, job_room)
        self.addCleanup(os.rmdir, work)
        self.addCleanup(started.discard)
        self.assertEqual(["remote_agent.worker", "remote_agent.judge", "remote_agent.worker", "remote_agent.worker"],
                         [module for module, _ in calls], "one judge for the verdict's worker and the replay's")
        self.assertEqual([before] * 4, [count for _, count in calls], "no thread of the agent's before a fork")
        self.assertEqual([0, 2, 1, 1], [len(c.split(";")) if c else 0 for c in channels],
                         "the judge holds a channel to each of its two workers")
        self.assertIs(popen, started.popen)


class AuditAheadTest(unittest.TestCase):
    """Where Nsight Compute is, a warm agent also starts an audit for every job (agent.Audit): in a room of its own,
    with a work folder of its own beside the job's (the job's read-only there), its worker under the profiler first
    (a new interpreter importing PyTorch while the agent does), lazy, its judge forked last, lazy; used once, and
    ended with its room and its folder."""

    def test_the_audit_is_started_ahead_in_a_room_of_its_own(self):
        forks = []

        def popen(argv, **kwargs):
            forks.append((argv[2:], threading.active_count()))
            homes.append(kwargs["env"]["HOME"])
            return subprocess.Popen([sys.executable, "-c", "import sys; print(%r, file=sys.stderr, flush=True); "
                                     "sys.stdin.read()" % worker.READY], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)

        homes = []
        folder = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", folder]))
        work = os.path.join(folder, "work")
        os.makedirs(work)
        seen = os.path.join(folder, "ncu-saw")
        tool = os.path.join(folder, "ncu")  # stands in for ncu: says what it was given, then waits for its stdin
        with open(tool, "w") as f:
            f.write("#!/bin/sh\nprintf '%%s\\n' \"$@\" > %s\necho \"HOME=$HOME\" >> %s\nexec cat > /dev/null\n"
                    % (seen, seen))
        os.chmod(tool, 0o755)
        job_room, audit_room = mock.Mock(), mock.Mock()
        job_room.preexec.return_value = audit_room.preexec.return_value = None
        before = threading.active_count()
        order, begin = [], agent.Audit.begin

        def begun(*args, **kwargs):
            order.append("the audit's worker started")
            return begin(*args, **kwargs)

        def available():
            order.append("PyTorch imported")
            return True
        with mock.patch.object(forked, "available", available), mock.patch.object(forked, "Forked", popen), \
                mock.patch.object(profiler, "find_tool", return_value=tool), \
                mock.patch.object(agent.Audit, "begin", begun), \
                mock.patch.object(room.Room, "open", return_value=audit_room) as opened:
            started = agent.Prestarted(work, job_room)
        self.addCleanup(started.discard)
        self.assertEqual(1, opened.call_count, "a room of its own")
        self.assertEqual(["the audit's worker started", "PyTorch imported"], order,
                         "its new interpreter imports PyTorch while the agent does")
        served = ["remote_agent.worker", "-", worker.NO_CUPTI]
        self.assertEqual([served, ["remote_agent.judge"], served, served, ["remote_agent.judge", worker.LAZY]],
                         [argv for argv, _ in forks], "the audit's judge forked too, lazy")
        self.assertEqual([before] * 5, [count for _, count in forks], "no thread of the agent's before a fork")
        audit = started.audit
        layout = opened.call_args.args[0]
        self.assertEqual((audit.folder,), layout.writable, "the audit's room writes its own folder alone")
        self.assertIn(os.path.realpath(work), layout.exposed, "and reads the job's")
        self.assertEqual(os.path.dirname(os.path.realpath(work)), os.path.dirname(audit.folder),
                         "beside the job's work folder, not in it: out of the job's room")
        self.assertEqual(["profiler", "judge"], [c.args[0] for c in audit_room.preexec.call_args_list])
        self.assertNotIn("profiler", [c.args[0] for c in job_room.preexec.call_args_list])
        self.assertEqual({"own": [os.path.join(audit.folder, agent.HOME)], "nice": 10},
                         audit_room.preexec.call_args_list[0].kwargs, "its profiler writes its home alone")
        self.assertEqual({"own": [os.path.join(audit.folder, agent.JUDGE_HOME)]},
                         audit_room.preexec.call_args_list[1].kwargs)
        self.assertEqual(os.path.join(audit.folder, agent.JUDGE_HOME), homes[-1], "not the job's judge's home")
        deadline = time.monotonic() + 10
        while not (os.path.exists(seen) and "HOME=" in open(seen).read()) and time.monotonic() < deadline:
            time.sleep(0.05)
        with open(seen) as f:
            said = f.read().splitlines()
        self.assertEqual(["-m", "remote_agent.worker", "-", worker.NO_CUPTI, worker.LAZY], said[-6:-1],
                         "the worker under the profiler, lazy")
        self.assertIn("--nvtx", said)
        self.assertEqual("HOME=" + os.path.join(audit.folder, agent.HOME), said[-1])
        self.assertIs(audit, started.take_audit())
        self.assertIsNone(started.take_audit(), "used once")
        job_file = audit.job_file({"mode": "replay"})
        self.assertEqual(audit.folder, os.path.dirname(job_file))
        audit.close()
        audit_room.close.assert_called_once_with()
        self.assertIsNotNone(audit.worker.poll())
        self.assertIsNotNone(audit.judge.poll())
        self.assertFalse(os.path.exists(audit.folder))

    def test_a_job_that_is_not_audited_ends_the_audit_with_its_other_processes(self):
        job_room, audit_room = mock.Mock(), mock.Mock()
        job_room.preexec.return_value = audit_room.preexec.return_value = None
        work = tempfile.mkdtemp()
        self.addCleanup(os.rmdir, work)
        tool = os.path.join(work, "ncu")  # stands in for ncu: waits for its stdin
        with open(tool, "w") as f:
            f.write("#!/bin/sh\nexec cat > /dev/null\n")
        os.chmod(tool, 0o755)
        self.addCleanup(os.remove, tool)
        waits = [sys.executable, "-c", "import sys; sys.stdin.read()"]
        with mock.patch.object(forked, "available", return_value=False), \
                mock.patch.object(agent, "worker_command", return_value=(waits, dict(os.environ))), \
                mock.patch.object(agent, "JUDGE_ARGV", waits), \
                mock.patch.object(profiler, "find_tool", return_value=tool), \
                mock.patch.object(room.Room, "open", return_value=audit_room):
            started = agent.Prestarted(work, job_room)
        audit = started.audit
        self.assertIsNotNone(audit)
        self.assertEqual([None, None], [audit.worker.poll(), audit.judge.poll()], "both waiting")
        started.discard()
        audit_room.close.assert_called_once_with()
        self.assertIsNotNone(audit.worker.poll())
        self.assertIsNotNone(audit.judge.poll())
        self.assertIsNone(started.audit)
        self.assertFalse(os.path.exists(audit.folder))
