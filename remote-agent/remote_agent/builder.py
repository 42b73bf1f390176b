"""The solution's build, started into the room from a small process of the agent's.

Each step of a build is started into the job's room by Room.preexec, Python code run in the child between fork and
exec, so Python forks the whole agent for it (there is no vfork with a ``preexec_fn``), and the room's preexec forks
once more inside (``room._split``). A fork copies the page tables of the process's own memory, and a warm agent has
imported PyTorch to fork its job's processes from (forked.py). A warm agent therefore forks a ``Builder`` first,
while it is still small, and its builds' steps are started from there (``build``: the same steps, the same room).
``selftest/probes/spawn_probe.py`` measures what a step's start costs from each."""
import multiprocessing
import os
import signal
import subprocess

from remote_agent import nvcc_steps

PR_SET_PDEATHSIG = 1
MARGIN_SECONDS = 30.0  # past the build's own limit, the agent stops waiting for its builder


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
    """The builder ended or stopped answering: the agent builds itself."""


class Builder:
    """A fork of the agent made before it imports anything large (``start``), that runs its builds (``build``) one
    at a time. It holds what the agent held then: the room, no payload (the agent reads it later); its stdin is
    /dev/null and its stdout the agent's stderr. It ends with the agent (its parent's death, or ``close``)."""

    def __init__(self, process, connection):
        self.process = process
        self.connection = connection

    @classmethod
    def start(cls, job_room, beside_threads=False):
        """The builder, or None where another thread runs (a fork copies the locks it holds: not ``beside_threads``,
        which a test's process has). A warm agent starts it before it imports PyTorch (Prestarted)."""
        import threading
        if threading.active_count() != 1 and not beside_threads:
            return None
        context = multiprocessing.get_context("fork")
        ours, its = context.Pipe()
        process = context.Process(target=_serve, args=(job_room, its, ours, os.getpid()), daemon=True,
                                  name="builder")
        process.start()
        its.close()
        return cls(process, ours)

    def build(self, steps, argv, folder, limit, env):
        """``build`` run by the builder; BuilderGone where it did not answer."""
        try:
            self.connection.send({"steps": vars(steps) if steps is not None else None, "argv": argv,
                                  "folder": folder, "limit": limit, "env": env})
            if not self.connection.poll(limit + MARGIN_SECONDS):
                raise BuilderGone("no answer in %.0f s" % (limit + MARGIN_SECONDS))
            answer = self.connection.recv()
        except (OSError, EOFError, ValueError) as e:
            raise BuilderGone(repr(e)) from None
        if "timeout" in answer:
            raise subprocess.TimeoutExpired(argv, limit)
        if "error" in answer:
            raise BuilderGone(answer["error"])
        return answer["code"], answer["output"]

    def close(self):
        self.connection.close()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def _serve(job_room, connection, parents, agent):
    """The builder (in the fork): each request built, its answer sent, until the agent closes its end."""
    parents.close()
    import ctypes
    try:
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != agent:
        os._exit(0)  # the agent ended before the line above
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(number, signal.SIG_DFL)
    os.dup2(2, 1)  # the agent's stdout is its event stream: nothing of this process's goes there
    while True:
        try:
            request = connection.recv()
        except (EOFError, OSError):
            return
        steps = nvcc_steps.Plan(**request["steps"]) if request["steps"] is not None else None
        try:
            code, output = build(job_room, steps, request["argv"], request["folder"], request["limit"],
                                 request["env"])
            answer = {"code": code, "output": output}
        except subprocess.TimeoutExpired:
            answer = {"timeout": True}
        except Exception as e:  # noqa: the agent builds itself, and says why in its log
            answer = {"error": repr(e)[:500]}
        connection.send(answer)
