"""The timing gate of a GPU (remote_agent/gate.py): the next jobs' processes wait while a benchmark runs, never for
long; the worker names one per GPU and hands it to every process of its jobs."""
import os
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock

from remote_agent import agent, gate, gpu_worker


class GateTest(unittest.TestCase):
    def setUp(self):
        self.flag = os.path.join(tempfile.mkdtemp(), "gpu-0")

    def test_without_a_gate_nothing_waits(self):
        gate.hold(None)
        gate.release(None)
        self.assertLess(gate.wait_released(""), 0.05)
        self.assertLess(gate.wait_released(self.flag), 0.05, "a gate nobody holds")

    def test_a_process_releases_only_the_gate_it_holds_and_a_flag_left_behind_is_cleared(self):
        open(self.flag, "w").close()  # another job's agent holds it: it is timing
        gate.release(self.flag)
        self.assertTrue(os.path.exists(self.flag), "a job that ends (a compile error) leaves the other's gate")
        gate.clear(self.flag)
        self.assertFalse(os.path.exists(self.flag), "a flag left behind goes at the turn's taking")

    def test_a_held_gate_is_waited_for_until_its_benchmark_ends(self):
        gate.hold(self.flag)
        threading.Timer(0.4, gate.release, args=(self.flag,)).start()
        waited = gate.wait_released(self.flag, limit=10)
        self.assertGreater(waited, 0.35)
        self.assertLess(waited, 5)
        self.assertFalse(os.path.exists(self.flag))

    def test_a_flag_left_behind_costs_a_bounded_wait(self):
        with open(self.flag, "w"):
            pass  # as an agent killed mid-benchmark leaves it: nobody touches it
        began = time.monotonic()
        gate.wait_released(self.flag, limit=0.3)
        self.assertLess(time.monotonic() - began, 2)

    def test_a_long_hold_is_waited_out_while_its_holder_keeps_it_and_never_past_the_most(self):
        gate.hold(self.flag)
        self.addCleanup(gate.release, self.flag)
        with unittest.mock.patch.object(gate, "REFRESH_SECONDS", 0.1):
            gate.release(self.flag)
            gate.hold(self.flag)  # its toucher now touches it every 0.1 s
            threading.Timer(2.5, gate.release, args=(self.flag,)).start()
            waited = gate.wait_released(self.flag, limit=1.0)  # ten touches' time: a loaded machine stalls less
        self.assertGreater(waited, 2.3, "a flag kept fresh is no flag left behind")
        self.assertLess(waited, 5)
        gate.hold(self.flag)
        self.assertLess(gate.wait_released(self.flag, limit=10, most=0.3), 1, "no wait is longer than the most")
        gate.release(self.flag)
        self.assertFalse(os.path.exists(self.flag))

    def test_a_prestarted_process_stops_waiting_once_its_job_comes(self):
        gate.hold(self.flag)
        read, write = os.pipe()
        with os.fdopen(read) as stdin, os.fdopen(write, "w") as job:
            threading.Timer(0.3, lambda: (job.write("job.json\n"), job.flush())).start()
            waited = gate.wait_released(self.flag, limit=10, until=stdin)
            self.assertGreater(waited, 0.25)
            self.assertLess(waited, 3, "its own job's gate is no reason to wait")
            self.assertEqual("job.json\n", stdin.readline(), "the job is left for it to read")
        self.assertTrue(os.path.exists(self.flag), "the gate is still held (by the job itself)")

    def test_the_worker_gives_each_gpu_its_gate_and_the_agent_passes_it_to_the_processes_it_confines(self):
        env = gpu_worker.job_environment(dict(os.environ), "1", self.flag)
        self.assertEqual(self.flag, gate.path(env))
        saved = os.environ.get(gate.VARIABLE)
        os.environ[gate.VARIABLE] = self.flag
        try:
            _, confined = agent.worker_command(tempfile.mkdtemp())
        finally:
            if saved is None:
                os.environ.pop(gate.VARIABLE)
            else:
                os.environ[gate.VARIABLE] = saved
        self.assertEqual(self.flag, confined[gate.VARIABLE], "the solution's and the judges' processes wait too")

    def test_a_job_starts_with_no_flag_left_by_the_last(self):
        gate.hold(self.flag)
        env = gpu_worker.job_environment(dict(os.environ), "0", self.flag)
        job = gpu_worker.Job("j", "s")
        gpu_worker.Launcher([sys.executable, "-c", "print('x')"], env).launch(job, {})
        self.assertFalse(os.path.exists(self.flag))


    def test_a_workers_gate_folder_is_its_own_and_those_of_workers_gone_are_swept(self):
        parent = tempfile.mkdtemp()
        gone = os.path.join(parent, "kr-gates-999999999-old")  # no such pid
        os.makedirs(gone)
        alive = os.path.join(parent, "kr-gates-%d-other" % os.getppid())
        os.makedirs(alive)
        folder = gpu_worker.gate_folder(parent)
        self.assertFalse(os.path.exists(gone), "a killed worker's folder is removed")
        self.assertTrue(os.path.exists(alive), "a running worker's is not")
        self.assertTrue(os.path.basename(folder).startswith("kr-gates-%d-" % os.getpid()))
        self.assertEqual(0o755, os.stat(folder).st_mode & 0o777)


if __name__ == "__main__":
    unittest.main()
