"""The worker's own logic, against a stand-in for the service's worker API (a real HTTP server on this machine)."""
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

from remote_agent import gpu_worker, sandbox


class ReadEvents(unittest.TestCase):
    def test_events_comments_and_multiline_data(self):
        raw = (b": heartbeat\n\nevent: hello\ndata: {\"worker_id\": \"w\"}\n\n"
               b"event: job\ndata: {\"job_id\":\ndata: \"j\"}\n\n: heartbeat\n\n")
        self.assertEqual(list(gpu_worker.read_events(io.BytesIO(raw))),
                         [("hello", {"worker_id": "w"}), ("job", {"job_id": "j"})])


class Batches(unittest.TestCase):
    def test_a_batch_keeps_under_its_byte_bound_but_never_empty(self):
        big = "x" * (gpu_worker.MAX_BATCH_BYTES + 10)
        self.assertEqual(gpu_worker._batch([big, "a"], 0), [big])
        self.assertEqual(gpu_worker._batch([big, "a"], 1), ["a"])
        self.assertEqual(len(gpu_worker._batch(["a"] * 2000, 0)), gpu_worker.MAX_BATCH_LINES)


class FlakyService(http.server.BaseHTTPRequestHandler):
    """Takes lines as the service does (from an index, the answer says how many it has), but drops the first
    answer of every job (the worker must send that batch again) and refuses an exit while lines are missing."""
    state = None

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        s = FlakyService.state
        with s["lock"]:
            s["posts"].append((self.path, body))
            if self.path.endswith("/lines"):
                start = body["from"]
                if start <= len(s["lines"]):
                    s["lines"].extend(body["lines"][len(s["lines"]) - start:])
                if not s["dropped"]:
                    s["dropped"] = True
                    self.connection.close()  # the answer is lost
                    return
                reply = {"consumed": len(s["lines"])}
            else:
                if body["lines"] != len(s["lines"]):
                    reply = {"ended": False, "consumed": len(s["lines"])}
                else:
                    s["exit"] = body
                    reply = {"ended": True}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class SendsEveryLineOnceInOrder(unittest.TestCase):
    def setUp(self):
        FlakyService.state = {"lock": threading.Lock(), "posts": [], "lines": [], "dropped": False, "exit": None}
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FlakyService)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.service = gpu_worker.Service("http://127.0.0.1:%d" % self.server.server_address[1], "t", "w:0:x")

    def tearDown(self):
        self.server.shutdown()
        self.server.server_close()

    def test_lines_then_exit(self):
        script = "import sys, time\nfor i in range(50):\n    print('line', i, flush=True)\n    time.sleep(0.002)\n" \
                 "print('to stderr', file=sys.stderr)\nsys.exit(3)\n"
        launcher = gpu_worker.Launcher([sys.executable, "-c", script], dict(os.environ))
        slot = gpu_worker.Slot(self.service, "H100", "h", "d", launcher, threading.Event())
        job = slot.take("job-1", "s-1", {"event_key": "k"})
        deadline = time.time() + 20
        while FlakyService.state["exit"] is None and time.time() < deadline:
            time.sleep(0.02)
        state = FlakyService.state
        self.assertEqual(state["lines"], ["line %d" % i for i in range(50)])
        self.assertEqual(state["exit"]["exit_code"], 3)
        self.assertEqual(state["exit"]["lines"], 50)
        self.assertIn("to stderr", state["exit"]["tail"])
        self.assertTrue(state["dropped"])
        self.assertFalse(os.path.exists(job.folder), "the payload's folder goes with the job")

    def test_a_stopping_worker_does_not_report_the_job_it_ended_as_the_jobs_end(self):
        script = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"
        FlakyService.state["dropped"] = True  # every answer arrives: the worker then waits for the job's next line
        launcher = gpu_worker.Launcher([sys.executable, "-c", script], dict(os.environ))
        stop = threading.Event()
        slot = gpu_worker.Slot(self.service, "H100", "h", "d", launcher, stop)
        job = slot.take("job-2", "s-2", {"event_key": "k"})
        deadline = time.time() + 20
        while FlakyService.state["lines"] != ["started"] and time.time() < deadline:
            time.sleep(0.02)
        self.assertEqual(["started"], FlakyService.state["lines"])
        time.sleep(0.2)  # its answer taken
        stop.set()  # as SIGTERM does; then main() ends the job
        job.kill(wait=True)
        time.sleep(0.5)
        self.assertIsNone(FlakyService.state["exit"], "the service re-queues a job its worker left; a -15 exit "
                          "would have ended it as the submission's RUNTIME_ERROR")
        self.assertFalse(any(path.endswith("/exit") for path, _ in FlakyService.state["posts"]))


class AgentDigest(unittest.TestCase):
    def test_a_worker_whose_agent_changed_since_it_started_runs_no_job_and_stops(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        for part in ("remote_agent", "problems"):
            shutil.copytree(os.path.join(gpu_worker.AGENT_ROOT, part), os.path.join(folder, part),
                            ignore=shutil.ignore_patterns("__pycache__"))
        started = gpu_worker.agent_digest(folder)
        self.assertEqual(started, gpu_worker.agent_digest(folder), "the same files, the same digest")
        cached = os.path.join(folder, "problems", "leaky-relu", "__pycache__")
        os.makedirs(cached)
        with open(os.path.join(cached, "problem.cpython-311.pyc"), "wb") as f:
            f.write(b"a compiled copy, which any process that imports the module may write")
        self.assertEqual(started, gpu_worker.agent_digest(folder), "compiled copies are left out")
        ran = os.path.join(folder, "ran")
        launcher = gpu_worker.Launcher([sys.executable, "-c", "open(%r, 'w')" % ran], dict(os.environ),
                                       digest=started)
        stop = threading.Event()
        slot = gpu_worker.Slot(None, "H100", "h", "d", launcher, stop)
        with open(os.path.join(folder, "problems", "leaky-relu", "problem.py"), "a") as f:
            f.write("\n# planted by a job\n")
        with mock.patch.object(gpu_worker, "AGENT_ROOT", folder), \
                mock.patch.object(gpu_worker.agent_digest, "__defaults__", (folder,)):
            slot.take("job-1", "s-1", {"event_key": "k"})
        self.assertTrue(stop.is_set(), "the worker stops")
        self.assertIn("changed since this worker started", slot.error)
        time.sleep(0.3)
        self.assertFalse(os.path.exists(ran), "no job ran on it")


class Cancel(unittest.TestCase):
    def test_a_cancelled_job_and_its_children_are_gone_quickly(self):
        # Its child in a session of its own, as the agent starts the solution's process.
        script = "import subprocess, time\nsubprocess.Popen(['sleep', '60'], start_new_session=True)\n" \
                 "print('started', flush=True)\ntime.sleep(60)\n"
        job = _started_job(script)
        pgid = job.process.pid
        time.sleep(0.1)
        tree = sandbox.descendants(pgid)
        self.assertEqual(len(tree), 1, tree)
        job.kill()
        with job.changed:
            self.assertTrue(job.changed.wait_for(lambda: job.exited, timeout=5))
        deadline = time.time() + 2
        while time.time() < deadline:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.01)
        with self.assertRaises(ProcessLookupError):
            os.killpg(pgid, 0)
        deadline = time.time() + 2
        while time.time() < deadline and os.path.exists("/proc/%d" % tree[0]) and _state(tree[0]) != "Z":
            time.sleep(0.01)
        self.assertTrue(not os.path.exists("/proc/%d" % tree[0]) or _state(tree[0]) == "Z",
                        "the child in its own session is gone too")


class Stop(unittest.TestCase):
    def test_a_job_that_ignores_term_is_killed_before_a_stopping_worker_returns(self):
        script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('started', flush=True)\n" \
                 "time.sleep(60)\n"
        job = _started_job(script)
        job.kill(wait=True)
        self.assertEqual(-9, job.process.wait(timeout=0.1), "KILLed once TERM was ignored, before kill returned")


    def test_a_stopping_worker_ends_the_jobs_its_slot_let_go(self):
        # The sender clears the slot's job once the worker stops (the service away meanwhile); a dropped job's KILL
        # is a timer that dies with the worker. Both jobs ignore TERM: only end_jobs' KILL ends them.
        script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('started', " \
                 "flush=True)\ntime.sleep(60)\n"
        launcher = gpu_worker.Launcher([sys.executable, "-c", script], dict(os.environ))
        service = gpu_worker.Service("http://127.0.0.1:9", "t", "w:0:x")  # nobody there
        slot = gpu_worker.Slot(service, "H100", "h", "d", launcher, threading.Event())
        dropped = slot.take("job-a", "s-a", {"event_key": "k"})
        time.sleep(0.3)
        let_go = slot.take("job-b", "s-b", {"event_key": "k"})  # a new job while job-a runs: job-a is dropped
        slot.job = None
        slot.end_jobs()
        for job in (dropped, let_go):
            self.assertEqual(-9, job.process.wait(timeout=1), job.id)


class Orphaned(unittest.TestCase):
    def test_a_worker_told_its_services_pid_stops_once_it_has_another_parent(self):
        self.assertFalse(gpu_worker.orphaned(None), "a worker started by hand has no service to outlive")
        self.assertFalse(gpu_worker.orphaned(os.getppid()))
        self.assertTrue(gpu_worker.orphaned(os.getppid() + 100000), "handed to another parent: the service is gone")

    def test_a_job_commands_payload_folders_left_by_a_killed_worker_are_swept(self):
        parent = tempfile.gettempdir()
        gone = tempfile.mkdtemp(prefix="kr-job-999999999-", dir=parent)  # no such pid
        alive = tempfile.mkdtemp(prefix="kr-job-%d-" % os.getppid(), dir=parent)
        self.addCleanup(shutil.rmtree, alive, True)
        launcher = gpu_worker.Launcher([sys.executable, "-c", "pass"], dict(os.environ))
        self.assertFalse(os.path.exists(gone), "a killed worker's folder is removed")
        self.assertTrue(os.path.exists(alive), "a running worker's is not")
        job = gpu_worker.Job("job", "s")
        launcher.launch(job, {"event_key": "k"})
        self.assertTrue(os.path.basename(job.folder).startswith("kr-job-%d-" % os.getpid()))
        with job.changed:
            self.assertTrue(job.changed.wait_for(lambda: job.exited, timeout=20))
        self.assertFalse(os.path.exists(job.folder), "a job's own goes with it")


class JobEnvironment(unittest.TestCase):
    def test_a_pth_that_user_code_left_in_the_user_site_does_not_run_in_later_agents(self):
        import subprocess
        import tempfile
        home = tempfile.mkdtemp()
        marker = os.path.join(home, "ran")
        site = os.path.join(home, ".local", "lib", "python%d.%d" % sys.version_info[:2], "site-packages")
        os.makedirs(site)
        with open(os.path.join(site, "planted.pth"), "w") as f:
            f.write("import os; open(%r, 'w').close()\n" % marker)
        source = dict(os.environ, HOME=home, KERNEL_RUNNER_WORKER_TOKEN="secret")
        source.pop("PYTHONNOUSERSITE", None)
        subprocess.run([sys.executable, "-c", "pass"], env=source, check=True)
        self.assertTrue(os.path.exists(marker), "the planted file runs in a plain Python of that user")
        os.remove(marker)
        env = gpu_worker.job_environment(source, "1")
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        self.assertFalse(os.path.exists(marker), "a job's agent does not run it")
        self.assertNotIn("KERNEL_RUNNER_WORKER_TOKEN", env)
        self.assertEqual(("1", "1"), (env["CUDA_VISIBLE_DEVICES"], env["HIP_VISIBLE_DEVICES"]))

    def test_a_warm_agent_gets_none_of_the_workers_environment_but_what_it_needs(self):
        """A warm agent's job processes are forks of it: its whole environment is in their memory. (A --job-command
        gets the slot's: the tests' fake agents read their settings from it.)"""
        source = {"PATH": "/usr/bin", "HOME": "/root", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64",
                  "CUDA_HOME": "/usr/local/cuda", "KERNEL_RUNNER_CACHE": "/var/cache/kr", "KR_WORKER_SPARES": "4",
                  "PYTHONPATH": "/opt/torch", "KERNEL_RUNNER_WORKER_TOKEN": "token",
                  "AWS_SECRET_ACCESS_KEY": "an operator's", "HF_TOKEN": "another", "GITHUB_TOKEN": "and another",
                  "KERNEL_RUNNER_ADMIN_TOKENS": "the service's, where it runs beside the worker"}
        env = gpu_worker.agent_environment(gpu_worker.job_environment(source, "0", "/tmp/gates/gpu-0"))
        self.assertEqual({"PATH", "HOME", "LD_LIBRARY_PATH", "CUDA_HOME", "KERNEL_RUNNER_CACHE", "KR_WORKER_SPARES",
                          "PYTHONPATH", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "PYTHONNOUSERSITE",
                          "KR_TIMING_GATE", "PYTHONDONTWRITEBYTECODE"}, set(env))


def _started_job(script):
    """A job whose command is the Python ``script``, once it has printed its first line."""
    job = gpu_worker.Job("j", "s")
    gpu_worker.Launcher([sys.executable, "-c", script], dict(os.environ)).launch(job, {})
    with job.changed:
        job.changed.wait_for(lambda: job.lines, timeout=10)
    return job


def _state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


if __name__ == "__main__":
    unittest.main()


class MachineKeys(unittest.TestCase):
    """The machine key and its proof; the vector is the one workers/MachineKeyTest.java checks the service with."""

    def test_the_proof_is_the_services(self):
        key = gpu_worker.MachineKey(bytes(range(32)))
        self.assertEqual("1700000000.f266fc4ffccb6dec9613f2fcde38cb6f4df876091b14ac1551c982d00a34fa90",
                         key.proof("w-1", 1700000000))
        self.assertEqual("630dcd2966c43366", key.fingerprint())

    def test_the_key_is_made_once_readable_by_its_owner_only_and_kept(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, "state", "machine.key")
        first = gpu_worker.MachineKey.load(path)
        self.assertEqual(0o600, os.stat(path).st_mode & 0o777)
        self.assertEqual(first, gpu_worker.MachineKey.load(path), "the same key at the next start")
        self.assertNotEqual(first, gpu_worker.MachineKey.load(None), "without a file: one for this process")
        with open(path, "wb") as f:
            f.write(b"short")
        with self.assertRaises(ValueError):
            gpu_worker.MachineKey.load(path)

    def test_a_token_bound_to_another_machine_stops_the_worker_and_an_away_service_is_waited_for(self):
        answers = [OSError("refused"), gpu_worker.HttpError(503, "away"), gpu_worker.HttpError(409, "bound")]
        service = mock.Mock()
        service.post.side_effect = answers
        stop = threading.Event()
        with mock.patch.object(stop, "wait", return_value=False):
            self.assertFalse(gpu_worker.enroll(service, gpu_worker.MachineKey(bytes(32)), stop))
        self.assertEqual(3, service.post.call_count)
        service.post.side_effect = None
        service.post.return_value = {"fingerprint": "x"}
        self.assertTrue(gpu_worker.enroll(service, gpu_worker.MachineKey(bytes(32)), stop))


class TwoJobsAGpu(unittest.TestCase):
    """--jobs-per-gpu 2: two places of one GPU, one launcher; each job's agent takes the GPU's turn (turn.py) before
    it touches the device, so the next job compiles while the last one runs there, and no two run there at once."""

    def test_their_work_before_the_turn_overlaps_their_device_work_does_not(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        env = gpu_worker.job_environment(dict(os.environ, PYTHONPATH=gpu_worker.AGENT_ROOT), "0",
                                         os.path.join(folder, "gate"), os.path.join(folder, "turn"))
        # 1.5 s "compiling": the two processes' starts may be far apart on a loaded machine.
        script = ("import time\nfrom remote_agent import turn\nprint('compiling', time.time(), flush=True)\n"
                  "time.sleep(1.5)\nassert turn.take(most=10)\nprint('device', time.time(), flush=True)\n"
                  "time.sleep(0.5)\nprint('done', time.time(), flush=True)\n")
        launcher = gpu_worker.Launcher([sys.executable, "-c", script], env)
        stop = threading.Event()
        self.addCleanup(stop.set)
        service = gpu_worker.Service("http://127.0.0.1:9", "t", "w:0:x")  # nobody there: the lines stay here
        slots = [gpu_worker.Slot(service, "H100", "h", "d", launcher, stop) for _ in range(2)]
        jobs = [slot.take("job-%d" % i, "s-%d" % i, {"event_key": "k"}) for i, slot in enumerate(slots)]
        for job in jobs:
            with job.changed:
                self.assertTrue(job.changed.wait_for(lambda: job.exited, timeout=20))
            self.assertEqual(0, job.exit_code, job.tail)
        at = [{line.split()[0]: float(line.split()[1]) for line in job.lines} for job in jobs]
        first, second = sorted(at, key=lambda times: times["device"])
        self.assertLess(max(first["compiling"], second["compiling"]), first["device"], "both compiled at once")
        self.assertGreaterEqual(second["device"], first["done"], "one job on the device at a time")

    def test_a_launch_clears_a_gates_flag_left_behind_only_where_a_gpu_holds_one_job(self):
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder, True)
        flag = os.path.join(folder, "gate")
        for turn_file, kept in ((os.path.join(folder, "turn"), True), (None, False)):
            launcher = gpu_worker.Launcher([sys.executable, "-c", "pass"],
                                           gpu_worker.job_environment(dict(os.environ), "0", flag, turn_file))
            open(flag, "w").close()  # the other place's job may be timing: its agent holds the gate
            launcher.launch(gpu_worker.Job("job", "s"), {"event_key": "k"})
            self.assertEqual(kept, os.path.exists(flag), "with a turn, its taker clears a flag left behind")

    def test_two_jobs_a_gpu_are_refused_to_a_job_command_which_takes_no_turn(self):
        with mock.patch("sys.stderr", io.StringIO()) as err:
            self.assertEqual(2, gpu_worker.main(["--server", "http://127.0.0.1:9", "--gpu-type", "H100",
                                                 "--jobs-per-gpu", "2", "--job-command", "true"]))
        self.assertIn("takes no turn", err.getvalue())

    def test_each_place_is_a_worker_id_the_service_takes(self):
        ids = gpu_worker.places("gpu-host.example", "3", "0a1b2c3d", 2)
        self.assertEqual(["gpu-host.example:3:0a1b2c3d", "gpu-host.example:3:0a1b2c3d@2"], ids)
        for worker_id in ids:
            self.assertRegex(worker_id, r"^[A-Za-z0-9_.:@-]{1,128}$")  # WorkerApi.WORKER_ID
        self.assertEqual(["h:0:r"], gpu_worker.places("h", "0", "r", 1), "one job a GPU: its id as ever")
