"""The process that runs user code: its environment and its limits (a real child process)."""
import json
import os
import subprocess
import sys
import unittest

from remote_agent import sandbox


class SandboxTest(unittest.TestCase):
    def test_the_environment_holds_only_what_a_gpu_program_needs(self):
        source = {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1", "LANG": "C.UTF-8",
                  "ADMIN_TOKEN": "kr_secret", "DSTACK_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "k", "HOME": "/root",
                  "KERNEL_RUNNER_WORKER_TOKEN": "w", "PYTHONPATH": "/elsewhere"}
        env = sandbox.environment(source, "/work/run", {"PYTHONPATH": "/agent", "PYTHONUNBUFFERED": "1"})
        self.assertEqual(env, {"PATH": "/usr/bin", "CUDA_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "1",
                               "LANG": "C.UTF-8", "HOME": "/work/run", "PYTHONPATH": "/agent",
                               "PYTHONUNBUFFERED": "1"})

    def test_the_gpu_groups_go_with_the_unprivileged_user_and_a_root_only_device_keeps_it_root(self):
        chr_ = 0o020000
        nvidia = (chr_ | 0o666, 0)       # crw-rw-rw- root root
        kfd = (chr_ | 0o660, 109)         # crw-rw---- root render
        render = (chr_ | 0o660, 44)       # crw-rw---- root video
        self.assertEqual(sandbox.device_groups([nvidia]), ([], True))
        self.assertEqual(sandbox.device_groups([kfd, render, nvidia]), ([44, 109], True))
        self.assertEqual(sandbox.device_groups([kfd, (chr_ | 0o600, 0)]), ([109], False))
        self.assertEqual(sandbox.device_groups([(chr_ | 0o660, 0)]), ([], False))

    def test_a_confined_child_has_no_core_dumps_bounded_processes_and_no_new_privileges(self):
        probe = ("import json, resource\n"
                 "status = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
                 "print(json.dumps({'core': resource.getrlimit(resource.RLIMIT_CORE),"
                 " 'nproc': resource.getrlimit(resource.RLIMIT_NPROC)[0],"
                 " 'nofile': resource.getrlimit(resource.RLIMIT_NOFILE)[0],"
                 " 'no_new_privs': status.get('NoNewPrivs', '').strip(), 'uid': __import__('os').getuid()}))\n")
        # As root the child runs as nobody, who may not enter root's own folders (a pyenv under /root, say).
        python = "/usr/bin/python3" if os.geteuid() == 0 and os.path.exists("/usr/bin/python3") else sys.executable
        done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=30,
                              preexec_fn=sandbox.confine, cwd="/")
        seen = json.loads(done.stdout)
        self.assertEqual(seen["core"], [0, 0])
        self.assertLessEqual(seen["nproc"], 4096)
        self.assertLessEqual(seen["nofile"], 4096)
        self.assertEqual(seen["no_new_privs"], "1")
        if sandbox.can_drop():
            self.assertEqual(seen["uid"], sandbox.UNPRIVILEGED[1], "as root the child runs as nobody")


if __name__ == "__main__":
    unittest.main()
