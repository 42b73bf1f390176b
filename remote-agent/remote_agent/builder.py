"""The solution's build, started into the room from a small process of the agent's.

Each step of a build is started into the job's room by Room.preexec, Python code run in the child between fork and
exec, so Python forks the whole agent for it (there is no vfork with a ``preexec_fn``), and the room's preexec forks
once more inside (``room._split``). A fork copies the page tables of the process's own memory, and a warm agent has
imported PyTorch to fork its job's processes from (forked.py). A warm agent therefore forks a ``Builder`` first,
while it is still small, and its builds' steps are started from there (``build``: the same steps, the same room).
``selftest/probes/spawn_probe.py`` measures what a step's start costs from each."""
import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass

from remote_agent import forked, nvcc_steps

PR_SET_PDEATHSIG = 1
MARGIN_SECONDS = 30.0  # past the build's own limit, the agent stops waiting for its builder
LINE_LIMIT = 16 << 20  # the longest answer read (a build's output is cut far shorter by the events)


def build(job_room, steps, argv, folder, limit, env):
    """The build in ``folder``, each step started into ``job_room`` as the compiler's (it writes ``folder`` alone):
    nvcc's ``steps`` (nvcc_steps.Plan) where there are, else ``argv``. (returncode, output);
    subprocess.TimeoutExpired past ``limit`` seconds."""
    preexec = job_room.preexec("compile", folder, own=[folder])
    if steps is not None:
        return nvcc_steps.run(steps, folder, limit, preexec=preexec, env=env)
    done = subprocess.run(argv, cwd=folder, env=env, preexec_fn=preexec, capture_output=True, text=True,
                          timeout=limit)
    return done.returncode, done.stdout + done.stderr


class BuilderGone(Exception):
    """The builder ended or did not answer. ``taken``: whether it had taken the build (then its steps may still be
    running, and the build is not made again); else the agent builds itself."""

    def __init__(self, why, taken):
        super().__init__(why)
        self.taken = taken


@dataclass
class Builder:
    """A fork of the agent made before it imports anything large (``start``), that runs its builds (``build``) one
    at a time. It keeps only its end of their socket, the room's namespaces, and standard error: its stdin is
    /dev/null, its stdout the agent's stderr, every other descriptor of the agent's closed (the payload's pipe, the job
    user's lock, the room keeper's pipes). It ends with the agent (its parent's death, or ``close``)."""
    pid: int
    channel: socket.socket
    reader: object

    @classmethod
    def start(cls, job_room, beside_threads=False):
        """The builder, or None where another thread runs (a fork copies the locks it holds: not ``beside_threads``,
        which a test's process has) or the fork failed."""
        if threading.active_count() != 1 and not beside_threads:
            return None
        ours, its = socket.socketpair()
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            its.close()
            return None
        if pid == 0:
            try:
                ours.close()
                _serve(job_room, its, os.getppid())
            finally:
                os._exit(0)
        its.close()
        return cls(pid, ours, ours.makefile("rb"))

    def build(self, steps, argv, folder, limit, env):
        """``build`` run by the builder; BuilderGone where it did not answer."""
        request = {"steps": vars(steps) if steps is not None else None, "argv": argv, "folder": folder,
                   "limit": limit, "env": env}
        try:
            self.channel.sendall((json.dumps(request) + "\n").encode())
        except OSError as e:
            raise BuilderGone(repr(e), taken=False) from None
        self.channel.settimeout(limit + MARGIN_SECONDS)
        try:
            line = self.reader.readline(LINE_LIMIT)
        except (OSError, socket.timeout) as e:
            raise BuilderGone("no answer in %.0f s (%r)" % (limit + MARGIN_SECONDS, e), taken=True) from None
        if not line:
            raise BuilderGone("it ended during the build", taken=True)
        answer = json.loads(line)
        if "timeout" in answer:
            raise subprocess.TimeoutExpired(argv, limit)
        if "error" in answer:
            raise BuilderGone(answer["error"], taken=False)
        return answer["code"], answer["output"]

    def close(self):
        """Its end: its socket closed (it ends once it reads that), then KILLed if it has not within a second."""
        for end in (self.reader, self.channel):
            try:
                end.close()
            except OSError:
                pass
        deadline = time.monotonic() + 1.0
        while True:
            try:
                if os.waitpid(self.pid, os.WNOHANG)[0] != 0:
                    return
            except ChildProcessError:
                return
            if time.monotonic() > deadline:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
                return
            time.sleep(0.005)


def _serve(job_room, channel, agent):
    """The builder (in the fork, never returns): each request built and answered, until the agent's end closes."""
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != agent:
        os._exit(0)  # the agent ended before the line above
    for number in forked.DEFAULT_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # not the agent's stdin, which its payload comes on
    os.dup2(2, 1)  # the agent's stdout is its event stream: nothing of this process's goes there
    forked._close_all_but({0, 1, 2, channel.fileno()} | {fd for fd, _ in job_room.ns_fds})
    requests = channel.makefile("rb")
    for line in requests:
        request = json.loads(line)
        steps = nvcc_steps.Plan(**request["steps"]) if request["steps"] is not None else None
        try:
            code, output = build(job_room, steps, request["argv"], request["folder"], request["limit"],
                                 request["env"])
            answer = {"code": code, "output": output}
        except subprocess.TimeoutExpired:
            answer = {"timeout": True}
        except Exception as e:  # noqa: the agent builds itself, and says why in its log
            answer = {"error": repr(e)[:500]}
        channel.sendall((json.dumps(answer) + "\n").encode())
    os._exit(0)
