"""forked.Forked: a child that is a fork of this process, given what Popen gives a new process, running a module as
``python3 -m`` would (tests/forked_child.py reports what it saw)."""
import json
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from unittest import mock

from remote_agent import agent, forked, verification, worker
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

        room = mock.Mock()
        room.preexec.return_value = None
        work = tempfile.mkdtemp()
        before = threading.active_count()
        with mock.patch.object(forked, "available", return_value=True), mock.patch.object(forked, "Forked", popen):
            started = agent.Prestarted(work, room)
        self.addCleanup(os.rmdir, work)
        self.addCleanup(started.discard)
        self.assertEqual(["remote_agent.worker", "remote_agent.judge", "remote_agent.worker", "remote_agent.worker"],
                         [module for module, _ in calls], "one judge for the verdict's worker and the replay's")
        self.assertEqual([before] * 4, [count for _, count in calls], "no thread of the agent's before a fork")
        self.assertEqual([0, 2, 1, 1], [len(c.split(";")) if c else 0 for c in channels],
                         "the judge holds a channel to each of its two workers")
        self.assertIs(popen, started.popen)
