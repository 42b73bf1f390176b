"""The process that runs user code: its environment and its limits (a real child process)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from remote_agent import sandbox
from tests import JOB_USERS as USERS  # the job users these tests claim: this run's own


class SandboxTest(unittest.TestCase):
    def test_the_environment_holds_only_what_a_gpu_program_needs(self):
        source = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1", "LANG": "C.UTF-8",
                  "ADMIN_TOKEN": "kr_secret", "DSTACK_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root",
                  "KERNEL_RUNNER_WORKER_TOKEN": "w", "PYTHONPATH": "/elsewhere"}
        env = sandbox.environment(source, "/work/run", {"PYTHONPATH": "/agent", "PYTHONUNBUFFERED": "1"})
        self.assertEqual(env, {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1",
                               "LANG": "C.UTF-8", "HOME": "/work/run", "PYTHONPATH": "/agent",
                               "PYTHONUNBUFFERED": "1", "USER": "kernel-runner-job", "LOGNAME": "kernel-runner-job"})

    def test_the_gpu_groups_go_with_the_unprivileged_user_and_a_root_only_device_keeps_it_root(self):
        chr_ = 0o020000
        nvidia = (chr_ | 0o666, 0)       # crw-rw-rw- root root
        kfd = (chr_ | 0o660, 109)         # crw-rw---- root render
        render = (chr_ | 0o660, 44)       # crw-rw---- root video
        self.assertEqual(sandbox.device_groups([nvidia]), ([], True))
        self.assertEqual(sandbox.device_groups([kfd, render, nvidia]), ([44, 109], True))
        self.assertEqual(sandbox.device_groups([kfd, (chr_ | 0o600, 0)]), ([109], False))
        self.assertEqual(sandbox.device_groups([(chr_ | 0o660, 0)]), ([], False))


# As root the children run as other users, who may not enter root's own folders (a pyenv under /root, say).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
AGENT = """
import subprocess, sys
from remote_agent import sandbox
uid = sandbox.claim(sys.argv[1], (int(sys.argv[3]), 256))
child = subprocess.Popen([sys.argv[2], "-c", "import time; time.sleep(60)"], cwd="/",
                         preexec_fn=lambda: sandbox.become(*sandbox.unprivileged()))
print(uid, child.pid, flush=True)
sys.stdin.read()
child.kill()
"""


# A container's process: a user namespace that root makes, its root mapped onto the job user's id (the host's view).
CONTAINER = """
import ctypes, os, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    if ctypes.CDLL(None).unshare(0x10000000) != 0:
        os._exit(1)
    os.write(1, b"%%d\\n" %% os.getpid())
    os.read(r, 1)
    os.setgid(0)
    os.setuid(0)
    time.sleep(60)
    os._exit(0)
os.close(r)
time.sleep(0.3)
for name, text in (("setgroups", "deny"), ("uid_map", "0 %d 1"), ("gid_map", "0 %d 1")):
    open("/proc/%%d/%%s" %% (pid, name), "w").write(text)
os.write(w, b"x")
time.sleep(0.3)
os.waitpid(pid, 0)
"""


@unittest.skipUnless(sandbox.can_drop(), "needs root: user code runs as another user only where the agent can switch")
class JobUsersTest(unittest.TestCase):
    """Two agents on one machine (a worker's two GPUs, or a job and the spare waiting for the next): each job's code
    runs as a user of its own, which can neither signal nor read the other's, and what one leaves behind ends."""

    def setUp(self):
        self.locks = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.locks, True)

    def agent(self):
        process = subprocess.Popen([PYTHON, "-c", AGENT, self.locks, PYTHON, str(USERS[0])], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, text=True, cwd=os.path.dirname(os.path.dirname(
                                       os.path.abspath(__file__))))
        self.addCleanup(process.wait)
        self.addCleanup(process.stdin.close)
        self.addCleanup(process.stdout.close)
        uid, pid = map(int, process.stdout.readline().split())
        return uid, pid

    def test_one_agents_job_user_cannot_signal_anothers_job(self):
        first_uid, first_child = self.agent()
        second_uid, second_child = self.agent()
        self.assertNotEqual(first_uid, second_uid)
        self.assertNotIn(sandbox.UNPRIVILEGED[1], (first_uid, second_uid))
        self.assertEqual(os.stat("/proc/%d" % first_child).st_uid, first_uid, "the job's process runs as it")
        probe = ("import os\ntry:\n    os.kill(%d, 0)\n    print('reached')\n"
                 "except PermissionError:\n    print('refused')")
        seen = subprocess.run([PYTHON, "-c", probe % second_child], capture_output=True, text=True, cwd="/",
                              preexec_fn=lambda: sandbox.become(first_uid, first_uid), timeout=30).stdout.strip()
        self.assertEqual(seen, "refused")
        same = subprocess.run([PYTHON, "-c", probe % second_child], capture_output=True, text=True, cwd="/",
                              preexec_fn=lambda: sandbox.become(second_uid, second_uid), timeout=30).stdout.strip()
        self.assertEqual(same, "reached", "the probe can tell")

    def test_a_claimed_user_is_held_until_released_and_its_work_folder_is_its_own(self):
        uid = sandbox.claim(self.locks, USERS)
        self.addCleanup(sandbox.release)
        self.assertEqual(sandbox.unprivileged(), (uid, uid))
        self.assertIsNone(sandbox.take_lock(self.locks, uid), "held while this agent lives")
        work = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, work, True)
        sandbox.work_folder(work)
        with open(os.path.join(work, "solution.cu"), "w") as f:
            f.write("// a kernel")
        read = "print(open(%r).read())" % os.path.join(work, "solution.cu")
        mine = subprocess.run([PYTHON, "-c", read], capture_output=True, text=True, cwd="/",
                              preexec_fn=lambda: sandbox.become(uid, uid), timeout=30)
        self.assertEqual(mine.stdout.strip(), "// a kernel")
        theirs = subprocess.run([PYTHON, "-c", read], capture_output=True, text=True, cwd="/",
                                preexec_fn=lambda: sandbox.become(uid + 1, uid + 1), timeout=30)
        self.assertIn("PermissionError", theirs.stderr, "another job's user reads nothing of this job's")
        sandbox.release()
        self.assertEqual(sandbox.unprivileged(), sandbox.UNPRIVILEGED[1:])
        fd = sandbox.take_lock(self.locks, uid)
        self.assertIsNotNone(fd, "free for the next agent")
        os.close(fd)

    def test_the_sweep_ends_a_process_that_left_the_jobs_session_and_removes_its_files(self):
        uid = USERS[0] + USERS[1] - 1
        shared = tempfile.mkdtemp()
        os.chmod(shared, 0o1777)
        self.addCleanup(shutil.rmtree, shared, True)
        kept = os.path.join(shared, "someone-else")
        open(kept, "w").close()
        escape = ("import os, time\n"
                  "open(os.path.join(%r, 'left-behind'), 'w').close()\n"
                  "os.makedirs(os.path.join(%r, 'a-folder', 'inside'))\n"
                  "if os.fork() == 0:\n"
                  "    os.setsid()\n"
                  "    if os.fork() == 0:\n"
                  "        print(os.getpid(), flush=True)\n"
                  "        os.close(1)\n"
                  "        os.close(2)\n"
                  "        time.sleep(60)\n"
                  "    os._exit(0)\n"
                  "os._exit(0)\n") % (shared, shared)
        left = subprocess.run([PYTHON, "-c", escape], capture_output=True, text=True, cwd="/", timeout=30,
                              preexec_fn=lambda: sandbox.become(uid, uid))
        daemon = int(left.stdout.strip())
        self.assertTrue(os.path.exists("/proc/%d" % daemon), "it outlived its parent, in a session of its own")
        sandbox.sweep(uid, folders=(shared,))
        deadline = time.monotonic() + 5
        while os.path.exists("/proc/%d" % daemon) and time.monotonic() < deadline:
            time.sleep(0.02)
        status = open("/proc/%d/status" % daemon).read() if os.path.exists("/proc/%d" % daemon) else ""
        self.assertTrue(not status or "zombie" in status, "ended")
        self.assertEqual(os.listdir(shared), ["someone-else"], "its files gone, another's kept")

    def test_the_sweep_looks_only_where_a_job_could_write(self):
        uid = USERS[0] + 3
        shared = tempfile.mkdtemp()
        os.chmod(shared, 0o1777)
        self.addCleanup(shutil.rmtree, shared, True)
        for folder, mode in (("open", 0o1777), ("group", 0o2775), ("closed", 0o755)):
            os.makedirs(os.path.join(shared, folder, "deeper"))
            os.chmod(os.path.join(shared, folder), mode)
            for place in (folder, os.path.join(folder, "deeper")):
                path = os.path.join(shared, place, "theirs")
                open(path, "w").close()
                os.chown(path, uid, uid)
        open(os.path.join(shared, "closed-file"), "w").close()  # a file is never entered
        os.makedirs(os.path.join(shared, "their-folder", "inside"))
        os.chown(os.path.join(shared, "their-folder"), uid, uid)
        self.assertEqual(sorted(os.path.join(shared, p) for p in ("open/theirs", "group/theirs", "their-folder")),
                         sorted(sandbox._files_of({uid}, (shared,))),
                         "the shared folders' own, and theirs whole; not below a folder only its owner writes")

    def test_a_worker_sweeps_the_users_no_agent_holds_and_leaves_the_others(self):
        first = USERS[0] + USERS[1] - 3
        held = sandbox.take_lock(self.locks, first)  # a live agent's
        self.addCleanup(os.close, held)
        os.close(sandbox.take_lock(self.locks, first + 1))  # an agent killed by a cancel: its lock is free
        sleepers = {}
        for uid in (first, first + 1):
            sleeper = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(60)"], cwd="/",
                                       preexec_fn=lambda uid=uid: sandbox.become(uid, uid))
            self.addCleanup(sleeper.wait)
            self.addCleanup(sleeper.kill)
            sleepers[uid] = sleeper
        sandbox.sweep_unclaimed(self.locks, folders=())
        self.assertEqual(sleepers[first + 1].wait(timeout=5), -9, "the free user's process ended")
        self.assertIsNone(sleepers[first].poll(), "the held user's left running")

    def test_an_id_that_a_container_uses_is_neither_claimed_nor_swept(self):
        """Another user namespace's processes (a container whose ids the host maps onto the same numbers: a
        namespace root made, mapping its root onto the job user's id)."""
        uid = USERS[0]
        container = CONTAINER % (uid, uid)
        other = subprocess.Popen([PYTHON, "-c", container], stdout=subprocess.PIPE, text=True, cwd="/")
        self.addCleanup(other.wait)
        self.addCleanup(other.kill)
        pid = int(other.stdout.readline())
        self.addCleanup(lambda: os.kill(pid, 9))
        if pid <= 0:
            self.skipTest("no user namespace here")
        deadline = time.monotonic() + 5
        while "\t%d\t" % uid not in open("/proc/%d/status" % pid).read() and time.monotonic() < deadline:
            time.sleep(0.02)  # until it has become the container's root
        self.assertTrue(sandbox.foreign(uid))
        sandbox.sweep(uid, folders=())
        self.assertTrue(os.path.exists("/proc/%d" % pid), "not ours to end")
        claimed = sandbox.claim(self.locks, USERS)
        self.addCleanup(sandbox.release)
        self.assertNotEqual(claimed, uid, "nor to take")

    def test_a_job_users_child_in_a_namespace_of_its_own_is_the_jobs(self):
        """A job's process that entered a user namespace it made is still the job's: swept, and its id is reused."""
        uid = USERS[0] + 7
        child = subprocess.Popen(["unshare", "--user", "sleep", "60"], cwd="/",
                                 preexec_fn=lambda: sandbox.become(uid, uid))
        self.addCleanup(child.wait)
        self.addCleanup(child.kill)
        deadline = time.monotonic() + 5
        while os.readlink("/proc/%d/ns/user" % child.pid) == os.readlink("/proc/self/ns/user"):
            if child.poll() is not None or time.monotonic() > deadline:
                self.skipTest("no user namespace here")
            time.sleep(0.02)
        self.assertFalse(sandbox.foreign(uid))
        sandbox.sweep(uid, folders=())
        self.assertEqual(-9, child.wait(timeout=5), "ended with the job")
        self.assertEqual([], sandbox.leftovers(uid, folders=()))


    def test_ids_that_cannot_be_used_or_that_an_account_has_leave_user_code_to_nobody(self):
        self.assertIsNone(sandbox.claim(self.locks, users=(0, 1)), "root's id is an account")
        self.assertIsNone(sandbox.claim(self.locks, users=(4294967295, 1)), "an id no process can take")
        self.assertEqual(sandbox.unprivileged(), sandbox.UNPRIVILEGED[1:])


if __name__ == "__main__":
    unittest.main()
