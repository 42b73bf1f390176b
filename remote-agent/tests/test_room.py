"""A job's room (remote_agent/room.py), with real processes, as root as CI runs: what a process started into it can
and cannot reach, and that nothing of it outlives the job. Each attack is a program run the way the submission's
code runs (the agent's own preexec functions, the job's user).

``KR_ROOM_WITHOUT`` (comma-separated: namespaces, landlock, seccomp, user, sweep) leaves parts of the room out, to
see each test fail when what it tests is switched off: ``KR_ROOM_WITHOUT=namespaces,landlock,seccomp,user,sweep
python3 -m unittest tests.test_room``."""
import io
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

from remote_agent import (agent, catalog, compiler, events, gate, gpu_worker, payload, profiler, room, sandbox,
                          turn)
from tests import JOB_USERS as USERS  # the job users these tests claim: this run's own

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
        if "sweep" in WITHOUT:  # nothing of a job's user is swept, at its release nor at its next claim
            patcher = mock.patch.object(sandbox, "sweep_all", lambda *a, **k: None)
            patcher.start()
            self.addCleanup(patcher.stop)

    def job(self):
        """A job's workspace as the agent makes it (a job user of its own, a work folder, a room); ended (and the
        user released) at the test's end, or by end_job()."""
        sandbox.claim(self.locks, USERS)
        workspace = agent.Workspace.open(tuple(p for p in WITHOUT if p != "sweep"))
        self.addCleanup(self.end_job, workspace)
        return workspace

    @staticmethod
    def end_job(workspace):
        if workspace.room.keeper is not None or os.path.isdir(workspace.work):
            workspace.close()
        sandbox.release()

    def run_solution(self, workspace, code, timeout=60):
        """``code`` (Python) run as the solution's process is: in the room, as the job's user."""
        return subprocess.run([PYTHON, "-c", textwrap.dedent(code)], cwd=workspace.work,
                              env=agent.worker_command(workspace.work)[1], capture_output=True, text=True,
                              timeout=timeout, preexec_fn=agent.solution_preexec(workspace.room, workspace.work))

    # ---- what the room is

    def test_the_room_says_what_it_is(self):
        isolation = self.job().room.isolation.as_dict()
        if set(WITHOUT) - {"sweep"}:
            self.assertFalse(isolation["full"], isolation)
            return
        self.assertTrue(isolation["full"], isolation)
        self.assertEqual("job", isolation["user"])
        self.assertEqual(["pid", "ipc", "net", "uts", "mount"], isolation["namespaces"])
        self.assertTrue(isolation["seccomp"])
        self.assertGreaterEqual(isolation["landlock_abi"], 1)

    def test_a_host_without_namespaces_gets_a_room_without_them_that_says_so(self):
        sandbox.claim(self.locks, USERS)
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

    def test_before_the_timing_only_the_processes_kept_are_left_in_the_room(self):
        """What the job's code left (a double fork out of its session, ignoring TERM) and a process of the agent's
        it ran in end; a process kept, and what it started, stay; nothing outside the room is touched."""
        if "namespaces" in WITHOUT:
            self.skipTest("no PID namespace: the room cannot tell its processes from others")
        workspace = self.job()
        ran_code = subprocess.Popen([PYTHON, "-c", textwrap.dedent("""
            import os, signal, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
                    print(os.getpid(), flush=True)
                    time.sleep(60)
                os._exit(0)
            time.sleep(60)
        """)], cwd=workspace.work, stdout=subprocess.PIPE, text=True,
            preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
        self.addCleanup(ran_code.wait)
        kept = subprocess.Popen([PYTHON, "-c", "import subprocess, time\n"
                                 "subprocess.Popen(['sleep', '60'])\ntime.sleep(60)\n"], cwd=workspace.work,
                                preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
        self.addCleanup(kept.wait)
        self.addCleanup(kept.kill)
        outside = subprocess.Popen(["sleep", "60"])
        self.addCleanup(outside.wait)
        self.addCleanup(outside.kill)
        ran_code.stdout.readline()  # the double fork is out
        time.sleep(0.3)  # the kept one's child started
        kept_tree = [kept.pid] + sandbox.descendants(kept.pid)
        ended, alone = workspace.room.end_strays([kept.pid])
        self.assertTrue(alone)
        self.assertEqual(2, len(ended), "the process that ran the code and its double fork (whose parent ended)")
        self.assertEqual(-9, ran_code.wait(timeout=5), "ran_code's room process KILLed: its outside parent saw it")
        for pid in ended:
            self.assertIn(room._state(pid), ("Z", None), pid)
        self.assertTrue(all(room._state(pid) not in ("Z", None) for pid in kept_tree),
                        [(pid, room._state(pid)) for pid in kept_tree])
        self.assertEqual(3, len(kept_tree), "kept (outside the room), its process inside and the sleep it started")
        self.assertIsNone(outside.poll(), "a process outside the room stays")
        self.assertEqual(([], True), workspace.room.end_strays([kept.pid]), "nothing left to end")

    def test_a_process_whose_first_thread_ended_is_ended_too(self):
        """A process whose first thread exited on its own (SYS_exit) reads as a zombie while its other threads run,
        and could drive the device beside the replay: it is stopped and KILLed like any other."""
        if "namespaces" in WITHOUT:
            self.skipTest("no PID namespace: the room cannot tell its processes from others")
        workspace = self.job()
        code = textwrap.dedent("""
            import ctypes, os, sys, threading, time
            def beat():
                while True:
                    os.utime(sys.argv[1])
                    time.sleep(0.01)
            threading.Thread(target=beat, daemon=True).start()
            print(os.getpid(), flush=True)
            time.sleep(0.2)
            ctypes.CDLL(None).syscall(60, 0)  # SYS_exit (x86-64): this thread alone
        """)
        beat = os.path.join(workspace.work, "home", "beat")
        open(beat, "w").close()
        os.chmod(beat, 0o666)
        runner = subprocess.Popen([PYTHON, "-c", code, beat], cwd=workspace.work, stdout=subprocess.PIPE, text=True,
                                  preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
        runner.stdout.readline()
        time.sleep(0.5)
        ended, alone = workspace.room.end_strays([])
        self.assertTrue(alone)
        self.assertEqual(1, len(ended), "found, though its first thread reads as a zombie")
        pid = ended[0]
        self.assertEqual(-9, runner.wait(timeout=5))
        ended_at = time.time()
        self.assertFalse(room._live(pid))
        time.sleep(0.1)
        self.assertLess(os.stat(beat).st_mtime, ended_at, "its thread no longer runs")

    def test_processes_that_fork_in_a_loop_or_stop_themselves_are_ended_too(self):
        """A process whose pid keeps changing (it forks and ends, over and over) is outrun by a kill that comes after
        a look at /proc; one that stopped itself still has its device work queued."""
        if "namespaces" in WITHOUT:
            self.skipTest("no PID namespace: the room cannot tell its processes from others")
        workspace = self.job()
        code = textwrap.dedent("""
            import os, signal, sys, time
            if os.fork() == 0:
                os.kill(os.getpid(), signal.SIGSTOP)  # stopped, by itself
                os._exit(0)
            print("started", flush=True)
            while True:  # a new pid every 2 ms, faster than a look through /proc
                time.sleep(0.002)
                try:
                    if os.fork() != 0:
                        os._exit(0)
                except OSError:  # the room's limit of processes, until its first process reaps the last ones
                    pass
        """)
        runner = subprocess.Popen([PYTHON, "-c", code], cwd=workspace.work, stdout=subprocess.PIPE, text=True,
                                  preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
        self.addCleanup(runner.wait)
        self.assertEqual("started", runner.stdout.readline().strip())
        time.sleep(0.05)  # its forks under way (the room's limit on processes ends such a loop within 0.3 s or so)
        ended, alone = workspace.room.end_strays([])
        self.assertTrue(alone, ended)
        self.assertGreaterEqual(len(ended), 2, "the forker and the stopped one")
        inside = workspace.room.pid_namespace
        left = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if room._in_namespace(pid, inside)
                and room._state(pid) not in ("Z", None) and not room._leads_namespace(pid)]
        self.assertEqual([], left, "nothing of the job's left running or stopped")

    def test_a_closed_rooms_first_process_ends_last(self):
        """The GPU's next job times nothing before its last holder's rooms ended (turn.settle): every process of
        the room is ending (KILLed) or gone, its first process (Room.first) included."""
        if "namespaces" in WITHOUT:
            self.skipTest("no PID namespace")
        workspace = self.job()
        child = subprocess.Popen([PYTHON, "-c", "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)"
                                  "\nprint('started', flush=True)\ntime.sleep(60)\n"], cwd=workspace.work,
                                 stdout=subprocess.PIPE, text=True,
                                 preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
        self.addCleanup(child.wait)
        self.assertEqual("started", child.stdout.readline().strip())
        inside = os.stat("/proc/%d/ns/pid_for_children" % workspace.room.keeper.pid)
        self.assertEqual((inside.st_dev, inside.st_ino), workspace.room.pid_namespace, "the room's own")
        first = workspace.room.first
        self.assertEqual(first, room.identity(first[0]))
        self.assertFalse(room.wait_ended([first], 0.1), "an open room has not ended")
        workspace.room.close()
        self.assertTrue(room.wait_ended([first], 5.0))
        left = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
                if room._in_namespace(pid, workspace.room.pid_namespace) and not room._leads_namespace(pid)
                and not room._exited(pid)]
        self.assertEqual([], left, "every process of the room has exited, its first one aside")
        child.wait(5)
        live = subprocess.Popen(["sleep", "30"])
        self.addCleanup(live.wait)
        self.addCleanup(live.kill)
        named = room.identity(live.pid)
        self.assertFalse(room.wait_ended([named], 0.1), "a live process is waited for")
        self.assertTrue(room.wait_ended([(named[0], named[1] + 1)], 0.0), "another process given its pid is not it")

    def test_the_room_ends_when_its_agent_does(self):
        """An agent killed (a cancel, the worker's end) takes its room and every process in it along."""
        helper = textwrap.dedent('''
            import subprocess, sys
            from remote_agent import agent, sandbox
            sandbox.claim(sys.argv[1], (int(sys.argv[-1]), 256))
            workspace = agent.Workspace.open()
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=workspace.work,
                                     preexec_fn=agent.solution_preexec(workspace.room, workspace.work))
            print(workspace.room.keeper.pid, child.pid, flush=True)
            sys.stdin.read()
        ''')
        if "namespaces" in WITHOUT:
            self.skipTest("no room to end")
        process = subprocess.Popen([sys.executable, "-c", helper, self.locks, str(USERS[0])], cwd=ROOT,
                                   stdin=subprocess.PIPE,
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


KEY = bytes(range(32))
# In this process's memory (the agent's) and in other places the job must not reach.
SECRET = "kr-secret-" + os.urandom(8).hex()


class Gcc(compiler.Toolchain):
    """The C++ compiler as a job's toolchain: what the agent's compile step runs, in the room."""

    def command(self, language, source, output, libraries=()):
        return ["g++", "-shared", "-fPIC", "-o", output, "-x", "c++", source]


@unittest.skipUnless(sandbox.can_drop(), "needs root: a job's user and its namespaces")
class AttackTest(RoomTest):
    """Each attack of issue 25, tried the way a submission's code runs, and refused."""

    def compile(self, workspace, code):
        """The agent's compile step on ``code``: (the library or None, the events it sent)."""
        out = io.StringIO()
        runner = agent.Agent(events.Emitter(KEY, out), workspace=workspace)
        runner.began = time.monotonic()
        job = payload.parse(json.dumps({"submission_id": "s", "problem": "leaky-relu", "language": "cuda",
                                        "dtype": "float32", "code": code, "mode": "check"}).encode())
        library, _ = runner.compile(job, catalog.load("leaky-relu"), Gcc("gcc", "g++", "g++ (test)", "native"),
                                    workspace.work)
        return library, [events.decode(line, KEY) for line in out.getvalue().splitlines()]

    def another_job(self):
        """Another agent beside this test's (another job user, its own room) with SECRET in its source and a
        process in its build folder: (its work folder, that process's pid)."""
        helper = textwrap.dedent('''
            import os, subprocess, sys
            from remote_agent import agent, sandbox
            sandbox.claim(sys.argv[1], (int(sys.argv[-1]), 256))
            workspace = agent.Workspace.open(tuple(p for p in sys.argv[3].split(",") if p and p != "sweep"))
            build = os.path.join(workspace.work, agent.BUILD)
            with open(os.path.join(build, "solution.cu"), "w") as f:
                f.write(sys.argv[2] + " is not C++: a compiler that reads it shows it\\n")
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], cwd=build,
                                     preexec_fn=workspace.room.preexec("compile", build, own=[build]))
            print(workspace.work, child.pid, flush=True)
            sys.stdin.read()
            child.kill()
            workspace.close()
            sandbox.release()
        ''')
        other = subprocess.Popen([PYTHON, "-c", helper, self.locks, SECRET, ",".join(WITHOUT), str(USERS[0])],
                                 cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(other.wait)
        self.addCleanup(other.stdin.close)
        self.addCleanup(other.stdout.close)
        work, pid = other.stdout.readline().split()
        return work, int(pid)

    def test_an_include_of_a_file_the_job_may_not_read_shows_none_of_it(self):
        if not os.path.exists("/etc/shadow") or shutil.which("g++") is None:
            self.skipTest("no /etc/shadow or no g++ here")
        with open("/etc/shadow") as f:
            lines = [line.strip() for line in f if line.strip()]
        library, sent = self.compile(self.job(), 'extern "C" void solution() {}\n#include "/etc/shadow"\n')
        self.assertIsNone(library)
        self.assertEqual("COMPILE_ERROR", sent[-1]["type"])
        self.assertIn("/etc/shadow", sent[-1]["details"])
        self.assertEqual([], [line for line in lines if line in sent[-1]["details"]], "no byte of it shown")

    def test_an_include_of_another_jobs_source_finds_nothing(self):
        if shutil.which("g++") is None:
            self.skipTest("no g++ here")
        work, pid = self.another_job()
        workspace = self.job()
        for path in (os.path.join(work, agent.BUILD, "solution.cu"), "/proc/%d/cwd/solution.cu" % pid,
                     "/proc/%d/root%s/%s/solution.cu" % (pid, work, agent.BUILD)):
            library, sent = self.compile(workspace, 'extern "C" void solution() {}\n#include "%s"\n' % path)
            self.assertEqual("COMPILE_ERROR", sent[-1]["type"], path)
            self.assertIn(path, sent[-1]["details"])
            self.assertNotIn(SECRET, sent[-1]["details"], path)
            shutil.rmtree(os.path.join(workspace.work, agent.BUILD))  # as a new job's, for the next try
            os.makedirs(os.path.join(workspace.work, agent.BUILD))
            sandbox.hand_over(os.path.join(workspace.work, agent.BUILD))

    def test_what_the_job_wrote_is_never_read_through_a_link(self):
        """The agent (root) reads files the job's user could write: the library, profile reports. A link there to
        a file only the agent may read would have it copy that file to the job, or into the events."""
        secret = tempfile.NamedTemporaryFile("w", delete=False, dir="/var/tmp")
        self.addCleanup(os.unlink, secret.name)
        secret.write(SECRET)
        secret.close()
        os.chmod(secret.name, 0o600)

        class Linker(compiler.Toolchain):  # a "compiler" that leaves a link where the library should be
            def command(self, language, source, output, libraries=()):
                return [PYTHON, "-c", "import os; os.symlink(%r, %r)" % (secret.name, output)]

        workspace = self.job()
        out = io.StringIO()
        runner = agent.Agent(events.Emitter(KEY, out), workspace=workspace)
        runner.began = time.monotonic()
        job = payload.parse(json.dumps({"submission_id": "s", "problem": "leaky-relu", "language": "cuda",
                                        "dtype": "float32", "code": 'extern "C" void solution() {}', "mode": "check"
                                        }).encode())
        library, _ = runner.compile(job, catalog.load("leaky-relu"), Linker("gcc", "g++", "x", "native"),
                                    workspace.work)
        sent = [events.decode(line, KEY) for line in out.getvalue().splitlines()]
        self.assertIsNone(library)
        self.assertIn("the build left no library", sent[-1]["details"])
        self.assertNotIn(SECRET, out.getvalue())
        report = os.path.join(workspace.work, agent.PROFILER, "profile.ncu-rep")
        os.symlink(secret.name, report)
        self.assertEqual([], profiler.report_pieces(report), "no report read through a link")

    def test_the_agents_and_the_workers_memory_and_environment_are_out_of_reach(self):
        worker = subprocess.Popen([PYTHON, "-c", "import time; secret = %r; time.sleep(60)" % SECRET], cwd="/",
                                  env=dict(os.environ, KERNEL_RUNNER_WORKER_TOKEN=SECRET))
        self.addCleanup(worker.wait)
        self.addCleanup(worker.kill)
        time.sleep(0.3)
        done = self.run_solution(self.job(), READER % (SECRET, [os.getpid(), worker.pid]))
        found = json.loads(done.stdout)
        self.assertGreaterEqual(found["looked"], 2, done.stderr)
        self.assertEqual([], found["found"], "no secret of the agent's or the worker's")

    def test_the_gpus_turn_and_its_windows_are_not_in_the_room_wherever_the_worker_keeps_them(self):
        """A worker whose temporary folder is not one the room makes fresh (TMPDIR elsewhere), or whose turn lies in a
        folder the room shows (the gate's), and whose job code runs as its own user (not root: no job users), would
        show its turn's folder in every room, read-only."""
        elsewhere = tempfile.mkdtemp(prefix="kr-turns-test-", dir="/")
        shown = tempfile.mkdtemp()  # under /tmp, which the room makes fresh, but the gate's folder is shown
        for folder, gate_flag in ((elsewhere, None), (os.path.join(shown, "turns"), os.path.join(shown, "flag"))):
            with self.subTest(folder=folder):
                os.makedirs(folder, exist_ok=True)
                self.addCleanup(shutil.rmtree, folder, True)
                for made in (folder, os.path.dirname(folder)):
                    os.chmod(made, 0o755)  # as a job of the worker's own user could read it
                path = os.path.join(folder, "gpu-0")
                for name in (path, path + ".windows"):
                    with open(name, "w") as f:
                        f.write(SECRET)
                    os.chmod(name, 0o644)
                names = {turn.VARIABLE: path}
                if gate_flag:
                    names[gate.VARIABLE] = gate_flag
                with mock.patch.dict(os.environ, names):
                    workspace = self.job()
                done = self.run_solution(workspace, "import os; print(os.listdir(%r))" % folder)
                self.end_job(workspace)
                self.assertEqual(0, done.returncode, done.stderr)
                if "namespaces" in WITHOUT:
                    self.assertIn("gpu-0", done.stdout)
                    continue
                self.assertEqual("[]", done.stdout.strip(), "an empty folder where the turn is")

    def test_the_agents_code_and_the_catalog_cannot_be_written(self):
        before = gpu_worker.agent_digest()
        kept = {}
        for relative in ("problems/leaky-relu/problem.py", "remote_agent/catalog.py"):
            with open(os.path.join(ROOT, relative), "rb") as f:
                kept[relative] = f.read()

        def restore():
            for relative, data in kept.items():
                with open(os.path.join(ROOT, relative), "wb") as f:
                    f.write(data)
            for planted in ("remote_agent/sitecustomize.py",):
                if os.path.exists(os.path.join(ROOT, planted)):
                    os.unlink(os.path.join(ROOT, planted))

        self.addCleanup(restore)
        done = self.run_solution(self.job(), PLANTER % ROOT)
        self.assertEqual([], json.loads(done.stdout), "nothing planted")
        self.assertEqual(before, gpu_worker.agent_digest())

    def test_nothing_a_job_leaves_is_found_by_the_next(self):
        first = self.job()
        done = self.run_solution(first, LEAVER)
        self.assertEqual(0, done.returncode, done.stderr)
        uid = sandbox.unprivileged()[0]
        self.end_job(first)
        if "sweep" not in WITHOUT:
            self.assertEqual([], sandbox.leftovers(uid), "nothing of the first job's user is left on the host")
        second = self.job()
        found = json.loads(self.run_solution(second, LOOKER).stdout)
        self.assertEqual([], found, "the next job found what the last one left")

    def test_more_jobs_than_job_users_each_get_a_user_of_their_own(self):
        users = (USERS[0] + 200, 3)
        claimed = []
        for _ in range(8):
            claimed.append(sandbox.claim(self.locks, users))
            if claimed[-1] is None:
                break
            workspace = agent.Workspace.open(tuple(p for p in WITHOUT if p != "sweep"))
            self.run_solution(workspace, "import os\n" + DAEMON)
            self.end_job(workspace)
        self.assertNotIn(None, claimed, "a job left with no user of its own: %s" % claimed)
        self.assertTrue(all(users[0] <= uid < users[0] + users[1] for uid in claimed))

    def test_the_kernels_riskier_calls_are_refused(self):
        """What the room's other parts leave to the system-call filter: a namespace of its own (a user namespace
        makes root of anyone), and the kernel's most attacked interfaces."""
        done = self.run_solution(self.job(), CALLS)
        self.assertEqual({}, json.loads(done.stdout), "every call refused with EPERM")

    def test_the_agent_the_keeper_and_the_judge_cannot_be_traced_or_signalled(self):
        workspace = self.job()
        agent_like = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"], cwd="/")
        self.addCleanup(agent_like.wait)
        self.addCleanup(agent_like.kill)
        # A judge beside the solution's process, in the same room, as the same user.
        judge = subprocess.Popen([PYTHON, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(60)"],
                                 cwd=workspace.work, stdout=subprocess.PIPE, text=True,
                                 preexec_fn=workspace.room.preexec("judge", workspace.work))
        self.addCleanup(judge.wait)
        self.addCleanup(judge.kill)
        judge_pid = int(judge.stdout.readline())
        judge.stdout.close()
        done = self.run_solution(workspace, TRACER % [agent_like.pid, 1, judge_pid])
        self.assertEqual([], json.loads(done.stdout), "no process outside it or beside it reached")
        self.assertIsNone(agent_like.poll())
        self.assertIsNone(judge.poll())


# The solution's process looking for a secret in every process it can see (and in the pids it was told).
READER = """
import json, os, re, sys
secret, told = %r.encode(), %r
found, looked = [], 0
pids = set(int(p) for p in os.listdir("/proc") if p.isdigit()) | set(told)
for pid in sorted(pids - {os.getpid()}):
    looked += 1
    try:
        with open("/proc/%%d/environ" %% pid, "rb") as f:
            if secret in f.read():
                found.append(["environment", pid])
    except OSError:
        pass
    try:
        with open("/proc/%%d/maps" %% pid) as maps, open("/proc/%%d/mem" %% pid, "rb") as mem:
            for line in maps:
                start, end = (int(x, 16) for x in line.split()[0].split("-"))
                if "r" not in line.split()[1] or end - start > 1 << 26:
                    continue
                try:
                    mem.seek(start)
                    if secret in mem.read(end - start):
                        found.append(["memory", pid])
                        break
                except (OSError, ValueError, OverflowError):
                    continue
    except OSError:
        pass
print(json.dumps({"looked": looked, "found": found}))
"""

# The solution's process planting code in the agent's folder.
PLANTER = """
import json, os
root, planted = %r, []
for relative, mode in (("problems/leaky-relu/problem.py", "a"), ("remote_agent/catalog.py", "a"),
                       ("remote_agent/sitecustomize.py", "w")):
    try:
        with open(os.path.join(root, relative), mode) as f:
            f.write("\\n# planted\\n")
        planted.append(relative)
    except OSError:
        pass
print(json.dumps(planted))
"""

# A process that leaves its session by a double fork and lives on.
DAEMON = """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in range(3):
            os.close(fd)
        import time
        time.sleep(120)
    os._exit(0)
os.wait()
"""

# What one job leaves behind, and what the next looks for (System V and POSIX IPC through the C library).
IPC = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mq_open.restype = ctypes.c_int
KEY = 0x4B525250
"""
LEAVER = IPC + """
libc.shmget(KEY, 4096, 0o1666)  # IPC_CREAT | 0666
libc.msgget(KEY, 0o1666)
queue = libc.mq_open(b"/kr-test-leftover", os.O_CREAT | os.O_RDWR, 0o666, None)
os.makedirs("/tmp/kr-open", exist_ok=True)
os.chmod("/tmp/kr-open", 0o777)
for path in ("/run/lock/kr-test-leftover", "/tmp/kr-open/kr-test-leftover", "/dev/shm/kr-test-leftover",
             "/var/tmp/kr-test-leftover", "/tmp/kr-test-leftover"):
    if os.path.isdir(os.path.dirname(path)):
        open(path, "w").close()
if os.fork() == 0:  # a child in a user namespace of its own (refused where the filter is)
    libc.unshare(0x10000000)
    libc.prctl(15, b"krtestleftover", 0, 0, 0)
    for fd in range(3):
        os.close(fd)
    import time
    time.sleep(120)
""" + DAEMON.replace("import time", "libc.prctl(15, b'krtestleftover', 0, 0, 0)\n        import time")
LOOKER = IPC + """
import json
found = []
if libc.shmget(KEY, 0, 0) >= 0:
    found.append("a System V segment")
if libc.msgget(KEY, 0) >= 0:
    found.append("a System V message queue")
if libc.mq_open(b"/kr-test-leftover", os.O_RDONLY, 0, None) >= 0:
    found.append("a POSIX message queue")
for path in ("/run/lock/kr-test-leftover", "/tmp/kr-open/kr-test-leftover", "/dev/shm/kr-test-leftover",
             "/var/tmp/kr-test-leftover", "/tmp/kr-test-leftover"):
    if os.path.exists(path):
        found.append(path)
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
        ended = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie holds nothing
        if open("/proc/%s/comm" % pid).read().startswith("krtestleftover") and not ended:
            found.append("a process")
    except OSError:
        pass
print(json.dumps(found))
"""

# The solution's process making calls the filter refuses: {call: what came back} for each that was not EPERM.
CALLS = """
import ctypes, errno, json, os
libc = ctypes.CDLL(None, use_errno=True)
calls = {"unshare (a user namespace)": (272, 0x10000000), "io_uring_setup": (425, 1, 0), "bpf": (321, 0, 0, 0),
         "keyctl": (250, 0, 0), "perf_event_open": (298, 0, 0, -1, -1, 0), "userfaultfd": (323, 0),
         "add_key": (248, 0, 0, 0, 0, 0)}
if os.uname().machine != "x86_64":
    calls = {}
got = {}
for name, (number, *args) in calls.items():
    result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
    if result != -1 or ctypes.get_errno() != errno.EPERM:
        got[name] = [result, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())]
print(json.dumps(got))
"""

# The solution's process tracing and signalling the processes it was told of.
TRACER = """
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
reached = []
for pid in %r:
    if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
        reached.append(["traced", pid])
        libc.ptrace(17, pid, 0, 0)
    try:
        os.kill(pid, 0)
        reached.append(["may signal", pid])
    except OSError:
        pass
print(json.dumps(reached))
"""


def _alive(pid):
    """Whether a process runs (a zombie, ended but not yet reaped, does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    unittest.main()
