"""A job's room (remote_agent/room.py), with real processes, as root as CI runs: what a process started into it can
and cannot reach, and that nothing of it outlives the job. Each attack is a program run the way the submission's
code runs (the agent's own preexec functions, the job's user).

``KR_ROOM_WITHOUT`` (comma-separated: namespaces, landlock, seccomp, user, sweep) leaves parts of the room out, to
see each test fail when what it tests is switched off: ``KR_ROOM_WITHOUT=namespaces,landlock,seccomp,user,sweep
python3 -m unittest tests.test_room``."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from unittest import mock

from remote_agent import agent, room, sandbox

WITHOUT = tuple(part for part in os.environ.get("KR_ROOM_WITHOUT", "").split(",") if part)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The room shows the agent's Python; without its mount namespace, the job's user may not reach one under /root.
PYTHON = sys.executable if "namespaces" not in WITHOUT or not os.path.exists("/usr/bin/python3") \
    else "/usr/bin/python3"


@unittest.skipUnless(sandbox.can_drop(), "needs root: a job's user and its namespaces")
class RoomTest(unittest.TestCase):
    def setUp(self):
        self.locks = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.locks, True)

    def job(self):
        """A job's workspace as the agent makes it (a job user of its own, a work folder, a room); ended (and the
        user released) at the test's end, or by end_job()."""
        sandbox.claim(self.locks)
        workspace = agent.Workspace.open(tuple(p for p in WITHOUT if p != "sweep"))
        self.addCleanup(self.end_job, workspace)
        return workspace

    @staticmethod
    def end_job(workspace):
        if workspace.room.keeper is not None or os.path.isdir(workspace.work):
            workspace.close()
        if "sweep" in WITHOUT:
            sandbox._claimed = None  # the lock stays held until the test's process ends: no sweep at release
        else:
            sandbox.release()

    def run_solution(self, workspace, code, timeout=60):
        """``code`` (Python) run as the solution's process is: in the room, as the job's user."""
        return subprocess.run([PYTHON, "-c", textwrap.dedent(code)], cwd=workspace.work,
                              env=agent.worker_command(workspace.work)[1], capture_output=True, text=True,
                              timeout=timeout, preexec_fn=agent.solution_preexec(workspace.room, workspace.work))

    # ---- what the room is

    def test_the_room_says_what_it_is(self):
        isolation = self.job().room.isolation.as_dict()
        if WITHOUT:
            self.assertFalse(isolation["full"], isolation)
            return
        self.assertTrue(isolation["full"], isolation)
        self.assertEqual("job", isolation["user"])
        self.assertEqual(["pid", "ipc", "net", "uts", "mount"], isolation["namespaces"])
        self.assertTrue(isolation["seccomp"])
        self.assertGreaterEqual(isolation["landlock_abi"], 1)

    def test_a_host_without_namespaces_gets_a_room_without_them_that_says_so(self):
        sandbox.claim(self.locks)
        self.addCleanup(sandbox.release)
        work = agent.make_work()
        self.addCleanup(shutil.rmtree, work, True)
        bare = room.Room.open(room.layout_for(work), without=("namespaces",))
        self.addCleanup(bare.close)
        isolation = bare.isolation.as_dict()
        self.assertFalse(isolation["full"])
        self.assertIn("mount namespace", isolation["missing"])
        done = subprocess.run(["/bin/sh", "-c", "id -u"], capture_output=True, text=True, cwd="/",
                              preexec_fn=bare.preexec("probe", "/"))
        self.assertEqual(str(sandbox.unprivileged()[0]), done.stdout.strip(), "still the job's user")

    # ---- its processes' lives

    def test_a_process_started_from_a_thread_that_ended_lives_on(self):
        """The agent starts the profiler's pair from a thread that ends at once: its processes must outlive it."""
        workspace = self.job()
        started = []
        thread = threading.Thread(target=lambda: started.append(subprocess.Popen(
            [PYTHON, "-c", "import time; time.sleep(30)"], cwd=workspace.work, start_new_session=True,
            preexec_fn=agent.solution_preexec(workspace.room, workspace.work))))
        thread.start()
        thread.join()
        time.sleep(1.0)
        self.assertIsNone(started[0].poll(), "still running after the thread that started it ended")
        workspace.close()
        self.assertEqual(-9 if "namespaces" not in WITHOUT else None, started[0].wait(timeout=10)
                         if "namespaces" not in WITHOUT else None, "ended with the room")
        started[0].kill()
        started[0].wait()

    def test_the_room_ends_when_its_agent_does(self):
        """An agent killed (a cancel, the worker's end) takes its room and every process in it along."""
        helper = textwrap.dedent('''
            import subprocess, sys
            from remote_agent import agent, sandbox
            sandbox.claim(sys.argv[1])
            workspace = agent.Workspace.open()
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=workspace.work,
                                     preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
            print(workspace.room.keeper.pid, child.pid, flush=True)
            sys.stdin.read()
        ''')
        if "namespaces" in WITHOUT:
            self.skipTest("no room to end")
        process = subprocess.Popen([sys.executable, "-c", helper, self.locks], cwd=ROOT, stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True)
        keeper, child = map(int, process.stdout.readline().split())
        process.kill()
        process.wait()
        process.stdin.close()
        process.stdout.close()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in (keeper, child)) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertFalse(_alive(keeper), "the keeper ended")
        self.assertFalse(_alive(child), "the job's process ended")


def _alive(pid):
    """Whether a process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
