"""The agent's builder (remote_agent/builder.py): a fork of the agent made while it is small, that starts each step of
a build with the room's preexec and answers as the agent would have built it itself. nvcc's own steps through it:
test_nvcc_steps.py."""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from types import SimpleNamespace

from remote_agent import builder


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def room(marker):
    """A room whose preexec leaves a mark the step can see (its working folder moved to ``marker``)."""
    return SimpleNamespace(preexec=lambda role, cwd, own: (lambda: os.chdir(marker)), ns_fds=[])


class BuilderTest(unittest.TestCase):
    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.folder = folder.name
        self.marker = os.path.join(self.folder, "in-the-room")
        os.mkdir(self.marker)
        self.made = builder.Builder.start(room(self.marker), beside_threads=True)
        self.assertIsNotNone(self.made)
        self.addCleanup(self.made.close)

    def test_a_build_is_the_rooms_step_and_its_answer(self):
        code, output = self.made.build(None, ["sh", "-c", "pwd; echo out; echo err >&2; exit 3"], self.folder, 30,
                                       dict(os.environ))
        self.assertEqual(3, code)
        self.assertEqual([self.marker, "out", "err"], output.split())

    def test_past_its_limit_a_build_times_out_as_subprocess_says(self):
        began = time.monotonic()
        with self.assertRaises(subprocess.TimeoutExpired):
            self.made.build(None, ["sleep", "30"], self.folder, 0.5, dict(os.environ))
        self.assertLess(time.monotonic() - began, 10)

    def test_a_builder_that_ended_is_gone_before_the_build_and_one_closed_has_ended(self):
        os.kill(self.made.pid, signal.SIGKILL)
        os.waitpid(self.made.pid, 0)
        with self.assertRaises(builder.BuilderGone) as gone:
            self.made.build(None, ["true"], self.folder, 30, dict(os.environ))
        self.assertFalse(gone.exception.taken, "the agent builds itself")
        other = builder.Builder.start(room(self.marker), beside_threads=True)
        other.close()
        with self.assertRaises(ChildProcessError):
            os.waitpid(other.pid, os.WNOHANG)

    def test_a_builder_that_ends_during_the_build_had_taken_it(self):
        threading.Timer(0.5, os.kill, args=(self.made.pid, signal.SIGKILL)).start()
        with self.assertRaises(builder.BuilderGone) as gone:
            self.made.build(None, ["sleep", "5"], self.folder, 30, dict(os.environ))
        self.assertTrue(gone.exception.taken, "its steps may still run: not built again")

    def test_a_step_that_cannot_start_is_an_error_the_agent_builds_itself_after(self):
        with self.assertRaises(builder.BuilderGone) as gone:
            self.made.build(None, [os.path.join(self.folder, "no-such-compiler")], self.folder, 30, dict(os.environ))
        self.assertFalse(gone.exception.taken)

    def test_it_holds_none_of_the_agents_descriptors_and_ends_with_it(self):
        """Started from a process (the agent) whose stdin is a pipe (the payload's) and that holds a file: the builder
        reads /dev/null, writes the agent's stderr, holds neither, and ends when the agent is KILLed in the middle of
        a build."""
        script = textwrap.dedent("""
            import os, sys, time
            sys.path.insert(0, %r)
            from types import SimpleNamespace
            from remote_agent import builder
            held = open(%r, "w")
            made = builder.Builder.start(SimpleNamespace(preexec=lambda role, cwd, own: None, ns_fds=[]))
            print(made.pid, held.fileno(), flush=True)
            sys.stdin.readline()  # the payload, as it were
            made.build(None, ["sleep", "10"], "/", 120, None)
        """ % (ROOT, os.path.join(self.folder, "held")))
        agent = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        self.addCleanup(agent.kill)
        pid, held = (int(word) for word in agent.stdout.readline().split())
        fds = {}
        for _ in range(100):  # its descriptors are closed as it starts
            fds = {int(fd): os.readlink("/proc/%d/fd/%s" % (pid, fd)) for fd in os.listdir("/proc/%d/fd" % pid)}
            if held not in fds:
                break
            time.sleep(0.01)
        self.assertEqual("/dev/null", fds[0])
        self.assertEqual(os.readlink("/proc/%d/fd/2" % agent.pid), fds[1], "its stdout is the agent's stderr")
        self.assertEqual(os.readlink("/proc/%d/fd/2" % agent.pid), fds[2])
        self.assertEqual({0, 1, 2}, {fd for fd, target in fds.items() if not target.startswith("socket:")})
        self.assertEqual(1, sum(target.startswith("socket:") for target in fds.values()), "its end of the socket")
        agent.stdin.write("{}\n")
        agent.stdin.flush()
        time.sleep(0.3)  # its step started
        agent.kill()
        agent.wait()
        for _ in range(200):
            if not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z":
                break
            time.sleep(0.01)
        else:
            self.fail("the builder outlived the agent")

    def test_none_is_forked_beside_another_thread(self):
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        try:
            self.assertIsNone(builder.Builder.start(room(self.marker)))
        finally:
            stop.set()
            thread.join()


class GoneBuilder:
    def __init__(self, taken):
        self.taken, self.closed = taken, False

    def build(self, *args):
        raise builder.BuilderGone("gone", taken=self.taken)

    def close(self):
        self.closed = True


class AgentBuildTest(unittest.TestCase):
    """Agent._build: the warm agent's builder builds; one that was gone before it took the build is closed and the
    agent builds; one that took it and ended is not built again (its steps may still run)."""

    def agent(self, helper, marker):
        return SimpleNamespace(prestarted=SimpleNamespace(builder=helper), room=room(marker))

    def test_whose_process_started_the_steps(self):
        from remote_agent.agent import Agent
        with tempfile.TemporaryDirectory() as folder:
            helper = builder.Builder.start(room(folder), beside_threads=True)
            self.addCleanup(helper.close)
            code, output, by = Agent._build(self.agent(helper, folder), None, ["pwd"], "/", 30, dict(os.environ))
            self.assertEqual((0, folder, "the builder"), (code, output.strip(), by))
            gone = GoneBuilder(taken=False)
            agent = self.agent(gone, folder)
            self.assertEqual("the agent", Agent._build(agent, None, ["true"], "/", 30, dict(os.environ))[2])
            self.assertTrue(gone.closed)
            self.assertIsNone(agent.prestarted.builder, "not asked again")
            taken = GoneBuilder(taken=True)
            agent = self.agent(taken, folder)
            with self.assertRaises(builder.BuilderGone):
                Agent._build(agent, None, ["true"], "/", 30, dict(os.environ))
            self.assertTrue(taken.closed)


if __name__ == "__main__":
    unittest.main()
