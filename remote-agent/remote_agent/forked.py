"""The job's processes as forks of a warm agent, not new interpreters.

A warm agent starts its job's four processes ahead of the job (the solution's, the judge, its two workers:
agent.py's Prestarted), each ``python3 -m remote_agent.<module>``. Each spent most of its start importing PyTorch:
3.4 s alone on the H100, 4.6 s a process (p50, up to 7.4 s) beside the others a warm worker keeps starting, where a
job takes 2 s (docs/evidence/replay-h100/run14-*, selftest/probes/import_probe.py). Here the agent imports PyTorch
once (its CUDA untouched: a fork after CUDA's start is not safe, one before it is) and forks each process, which then
runs the module as ``python3 -m`` would, with no exec.

A fork holds a copy of the agent's memory, so the agent forks before it has read anything secret: its payload (the
event key, the cache secret, the code) comes on its stdin only after every fork, and none is made from a thread or
later (agent.Prestarted). Otherwise the child gets what Popen's would: its pipes as 0, 1 and 2, ``pass_fds`` and
nothing else open, its own session, ``cwd``, ``env`` (os.environ, and the C library's), the default signal
handlers, and ``preexec_fn`` (Room.preexec: the room, the job's user, Landlock, seccomp) before the module runs.
It stays not dumpable, as the agent is. Its end is ``os._exit``: no handler of the agent's runs in it."""
import io
import os
import runpy
import signal
import subprocess
import sys
import traceback
import warnings

# The agent's handlers (agent.__main__.stop_on_signals) are not the child's.
DEFAULT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2)


def module_of(argv):
    """(module, its arguments) of ``[python, -m, module, args...]``; ValueError for any other command."""
    if len(argv) < 3 or argv[0] != sys.executable or argv[1] != "-m":
        raise ValueError("not a python3 -m command of this interpreter: %r" % (argv[:3],))
    return argv[2], list(argv[3:])


def available():
    """Whether this interpreter can fork its job's processes warm: PyTorch imports here (and its CUDA is not started:
    nothing in the agent starts it)."""
    try:
        import torch  # noqa: F401  (the import is what the children inherit)
    except ImportError:
        return False
    return True


class Forked(subprocess.Popen):
    """A Popen of ``[sys.executable, "-m", module, args...]`` whose child is a fork of this process that runs the
    module with no exec. Its pipes, ``poll``, ``wait``, ``kill`` and ``returncode`` are Popen's: the child is this
    process's own. Always in a session of its own (``start_new_session``)."""

    def __init__(self, argv, **kwargs):
        self._module, self._arguments = module_of(argv)
        super().__init__(argv, **kwargs)

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
                       creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite,
                       restore_signals, *rest):
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(self._module, self._arguments, cwd, env, preexec_fn, pass_fds, (p2cread, c2pwrite, errwrite))
        self.pid = pid
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)


def _child(module, arguments, cwd, env, preexec_fn, pass_fds, standard):
    """In the child (never returns): what _posixsubprocess does between fork and exec, in its order (the
    descriptors, cwd, signals, session, preexec_fn, then every other descriptor closed), then the module."""
    code = 255
    try:
        for target, fd in enumerate(standard):
            if fd != -1 and fd != target:
                os.dup2(fd, target)
        if cwd is not None:
            os.chdir(cwd)
        for number in DEFAULT_SIGNALS:
            signal.signal(number, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python's start sets it
        os.setsid()
        if preexec_fn is not None:
            preexec_fn()
        _close_all_but({0, 1, 2} | set(pass_fds))
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8", errors="replace")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace",
                                      line_buffering=True, write_through=True)
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
                                      line_buffering=True, write_through=True)
        sys.dont_write_bytecode = True
        sys.argv = [module] + arguments
        # The module was imported here before (the agent imports the worker's): run as __main__ it is a second copy,
        # as under python3 -m when another module imports it, and runpy's warning of that says nothing new.
        warnings.filterwarnings("ignore", message=".*found in sys.modules after import of package",
                                category=RuntimeWarning)
        code = 0
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        if not isinstance(e.code, (int, type(None))):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: the child ends here whatever happened
        code = 1
        try:
            traceback.print_exc()
        except BaseException:  # noqa
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa
                pass
        os._exit(code)


def _close_all_but(keep):
    """Every descriptor of this process closed but ``keep`` (as Popen's close_fds)."""
    try:
        opened = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        opened = range(3, 65536)
    for fd in opened:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
