"""The agent's builder (remote_agent/builder.py): a fork of the agent made while it is small, that starts each step of
a build with the room's preexec and answers as the agent would have built it itself. nvcc's own steps through it:
test_nvcc_steps.py."""
import os
import subprocess
import tempfile
import threading
import time
import unittest
from types import SimpleNamespace

from remote_agent import builder


def room(marker):
    """A room whose preexec leaves a mark the step can see (its working folder moved to ``marker``)."""
    return SimpleNamespace(preexec=lambda role, cwd, own: (lambda: os.chdir(marker)))


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

    def test_a_builder_that_ended_is_gone_and_one_closed_has_ended(self):
        self.made.process.kill()
        self.made.process.join()
        with self.assertRaises(builder.BuilderGone):
            self.made.build(None, ["true"], self.folder, 30, dict(os.environ))
        other = builder.Builder.start(room(self.marker), beside_threads=True)
        other.close()
        self.assertFalse(other.process.is_alive())

    def test_a_step_that_cannot_start_is_an_error_the_agent_builds_itself_after(self):
        with self.assertRaises(builder.BuilderGone):
            self.made.build(None, [os.path.join(self.folder, "no-such-compiler")], self.folder, 30, dict(os.environ))

    def test_none_is_forked_beside_another_thread(self):
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        try:
            self.assertIsNone(builder.Builder.start(room(self.marker)))
        finally:
            stop.set()
            thread.join()


if __name__ == "__main__":
    unittest.main()
