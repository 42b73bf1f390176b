"""The device's turn of a GPU (remote_agent/turn.py): one job's processes on the device at a time where a worker runs
two jobs on it, given back however its holder ends, and never kept by what its holder started."""
import fcntl
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

from remote_agent import room, turn

AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOLDER = ("import sys, time\nfrom remote_agent import turn\nassert turn.take(flag=sys.argv[1])\n"
          "print('held', flush=True)\ntime.sleep(float(sys.argv[2]))\n")


def free(flag):
    """Whether no process holds the turn ``flag`` (a lock tried and given back at once)."""
    fd = os.open(flag, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def holder(flag, seconds):
    """Another process holding the turn ``flag`` for ``seconds``, once it said so."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, flag, str(seconds)], stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=AGENT_ROOT))
    assert process.stdout.readline().strip() == "held"
    return process


class TurnTest(unittest.TestCase):
    def setUp(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        self.flag = os.path.join(folder, "gpu-0")
        self.addCleanup(turn.release)

    def test_without_a_turn_nothing_waits(self):
        self.assertTrue(turn.take(flag=""))
        self.assertFalse(turn.held())

    def test_a_held_turn_is_waited_for_and_taken_once_given_back(self):
        other = holder(self.flag, 0.5)
        self.addCleanup(other.kill)
        self.assertFalse(free(self.flag))
        self.assertFalse(turn.take(wait=False, flag=self.flag), "another job's turn: not taken without a wait")
        began = time.monotonic()
        self.assertFalse(turn.take(most=0.2, flag=self.flag), "nor past the most")
        self.assertGreaterEqual(time.monotonic() - began, 0.2)
        self.assertTrue(turn.take(flag=self.flag))
        self.assertIsNotNone(other.poll(), "taken only once its holder ended")
        self.assertTrue(turn.held())
        self.assertTrue(turn.take(wait=False, flag=self.flag), "a turn held is held")
        turn.release()
        self.assertTrue(free(self.flag))

    def test_a_holder_killed_gives_the_turn_back(self):
        other = holder(self.flag, 60)
        other.send_signal(signal.SIGKILL)
        other.wait()
        began = time.monotonic()
        self.assertTrue(turn.take(most=5, flag=self.flag))
        self.assertLess(time.monotonic() - began, 0.5)

    def test_a_process_its_holder_started_does_not_keep_it(self):
        self.assertTrue(turn.take(flag=self.flag))
        # As the agent starts a judge or ncu once it holds the turn; with every descriptor it may inherit.
        child = subprocess.Popen(["sleep", "30"], close_fds=False)
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        turn.release()
        self.assertTrue(free(self.flag), "its child holds no copy of the lock")

    def test_the_next_taker_times_nothing_before_the_last_holders_rooms_ended(self):
        # The holder noted a room whose first process lives on (a cancel KILLs an agent and its room's processes at
        # once, and the lock goes with the agent; those processes release their device contexts a moment later).
        alive = subprocess.Popen(["sleep", "30"])
        self.addCleanup(alive.wait)
        self.addCleanup(alive.kill)
        code = ("import sys\nfrom remote_agent import room, turn\nturn.note(room.identity(int(sys.argv[2])))\n"
                "assert turn.take(flag=sys.argv[1])\n")
        subprocess.run([sys.executable, "-c", code, self.flag, str(alive.pid)], check=True,
                       env=dict(os.environ, PYTHONPATH=AGENT_ROOT))
        began = time.monotonic()
        self.assertTrue(turn.take(most=5, flag=self.flag))
        self.assertLess(time.monotonic() - began, 0.3, "the turn is taken at once: the job may check meanwhile")
        with mock.patch.object(turn, "ROOMS_GONE_SECONDS", 0.4):
            turn.settle()
        self.assertGreaterEqual(time.monotonic() - began, 0.4, "its room was waited for before any timing")
        began = time.monotonic()
        turn.settle()
        self.assertLess(time.monotonic() - began, 0.1, "once")
        turn.release()
        with open(self.flag, "w") as f:
            f.write("%d:%d" % room.identity(alive.pid))
        threading.Timer(0.3, alive.kill).start()
        self.assertTrue(turn.take(most=5, flag=self.flag))
        began = time.monotonic()
        turn.settle()
        self.assertGreater(time.monotonic() - began, 0.2, "waited until that room's first process ended")
        self.assertLess(time.monotonic() - began, 2.0)
        turn.release()
        other = subprocess.Popen(["sleep", "30"])
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        with open(self.flag, "w") as f:  # a process given the pid of a room's first process is not it
            f.write("%d:%d" % (other.pid, room.identity(other.pid)[1] - 1))
        self.assertTrue(turn.take(most=5, flag=self.flag))
        began = time.monotonic()
        self.assertTrue(turn.settle())
        self.assertLess(time.monotonic() - began, 0.1, "a room that ended is not waited for")
        turn.release()

    def test_a_taker_killed_before_it_settled_passes_the_last_rooms_on(self):
        alive = subprocess.Popen(["sleep", "30"])
        self.addCleanup(alive.wait)
        self.addCleanup(alive.kill)
        with open(self.flag, "w") as f:
            f.write("%d:%d" % room.identity(alive.pid))  # the last holder's room, still alive
        # A taker that never settles (its job timed nothing, or it was killed first) ends with the turn.
        subprocess.run([sys.executable, "-c", "import sys\nfrom remote_agent import turn\n"
                        "assert turn.take(flag=sys.argv[1])\n", self.flag], check=True,
                       env=dict(os.environ, PYTHONPATH=AGENT_ROOT))
        self.assertTrue(turn.take(most=5, flag=self.flag))
        began = time.monotonic()
        with mock.patch.object(turn, "ROOMS_GONE_SECONDS", 0.3):
            self.assertFalse(turn.settle(), "that room had not ended")
        self.assertGreaterEqual(time.monotonic() - began, 0.3)
        turn.release()

    def test_any_other_descriptor_of_the_file_is_another_holder(self):
        fd = os.open(self.flag, os.O_RDWR | os.O_CREAT)
        self.addCleanup(os.close, fd)
        fcntl.flock(fd, fcntl.LOCK_EX)
        self.assertFalse(turn.take(wait=False, flag=self.flag))
        fcntl.flock(fd, fcntl.LOCK_UN)
        self.assertTrue(turn.take(wait=False, flag=self.flag))


if __name__ == "__main__":
    unittest.main()
