"""nvcc's build of a solution as its own steps, the host side beside the device side.

nvcc runs its steps one after another (``nvcc --dryrun`` lists them): the host side's preprocessing and cudafe++,
then the device side's preprocessing, cicc, ptxas and fatbinary, then the host compile that embeds the device code,
the device link and the final link. The two sides depend on each other only through the module id that cudafe++
writes and cicc reads (``--gen_module_id_file`` / ``--module_id_file_name``); written here first, in nvcc's own form
(``_<8 hex>_<length of the source's name>_<its name, dots as underscores>_<8 hex>``), the two sides run at once. On
the H100's host the sides are 0.51 s and 0.45 s of nvcc's 1.16 s (nvcc --time, selftest/probes/compile_probe.py);
built so, a solution took 1.01 s in a warm worker, where nvcc took 1.35-1.6 s (docs/evidence/worker-h100/run37).

Only the shape this was written against is split (the steps and tools in nvcc 12-13's order for one ``.cu`` built
into a shared library); anything else is built by nvcc itself. Every step is nvcc's own command line, run without a
shell; the output of a failed build is the failing tool's, as nvcc passes it on."""
import os
import re
import secrets
import shlex
import string
import subprocess
import threading
import time

KEEP = "nvcc-steps"  # nvcc's intermediate files, in the build's folder
HOST = ("gcc", "cudafe++")
DEVICE = ("gcc", "cicc", "ptxas", "fatbinary")
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
PASSED_ON = ("PATH", "LD_LIBRARY_PATH", "CICC_PATH", "NVVMIR_LIBRARY_DIR")  # what the steps read from nvcc's setup


class Plan:
    """The steps of one build: (host side, device side, the rest), each a list of argv, and their environment."""

    def __init__(self, host, device, rest, env, module_id_file, source_name):
        self.host, self.device, self.rest = host, device, rest
        self.env = env
        self.module_id_file = module_id_file
        self.source_name = source_name


def plan(argv, cwd, env=None, timeout=30):
    """nvcc's steps for ``argv`` (an nvcc command line run in ``cwd`` with ``env``), split into the two sides, or
    None where its dry run is not the shape this knows. The dry run reads no source: it runs as the agent."""
    try:
        done = subprocess.run([argv[0], "--dryrun", "--keep", "--keep-dir", KEEP] + argv[1:], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return parse(done.stdout + done.stderr, env)


def parse(text, base_env=None):
    """A Plan from nvcc's ``--dryrun`` lines (``#$ ``), or None where they are not the expected shape."""
    env = dict(os.environ if base_env is None else base_env)
    steps = []
    for line in text.splitlines():
        if not line.startswith("#$ "):
            continue
        line = line[3:].strip()
        assignment = ASSIGNMENT.match(line)
        if assignment:
            if assignment.group(1) in PASSED_ON:
                env[assignment.group(1)] = assignment.group(2)
            continue
        try:
            argv = [string.Template(token).safe_substitute(env) for token in shlex.split(line)]
        except ValueError:
            return None
        if argv and os.path.basename(argv[0]) != "rm":  # nvcc's tidying; the build's folder goes whole
            steps.append(argv)
    tools = [os.path.basename(step[0]) for step in steps]
    if tools[:6] != list(HOST + DEVICE) or "-E" not in steps[0] or "-E" not in steps[2]:
        return None
    cudafe, cicc = steps[1], steps[3]
    module_id = _value(cudafe, "--module_id_file_name")
    if "--gen_module_id_file" not in cudafe or module_id is None or _value(cicc, "--module_id_file_name") != module_id:
        return None
    if "--gen_module_id_file" in cicc or not all(os.path.basename(s[0]) in ("gcc", "g++", "nvlink", "fatbinary")
                                                  for s in steps[6:]):
        return None
    source = _value(cudafe, "--orig_src_file_name")
    if not source:
        return None
    host = [steps[0], [token for token in cudafe if token != "--gen_module_id_file"]]
    return Plan(host, steps[2:6], steps[6:], env, module_id, source)


def _value(argv, flag):
    return argv[argv.index(flag) + 1] if flag in argv and argv.index(flag) + 1 < len(argv) else None


def module_id(source_name):
    """A module id in nvcc's form, new for each build."""
    return "_%s_%d_%s_%s" % (secrets.token_hex(4), len(source_name), re.sub(r"[^A-Za-z0-9]", "_", source_name),
                             secrets.token_hex(4))


def run(build, cwd, timeout, preexec=None, env=None):
    """Runs a Plan: the two sides at once, then the rest, each step started with ``preexec`` (into the job's room)
    and ``env`` (with what nvcc's setup gives its steps). (returncode, output): the first failing step's output in
    nvcc's order (the host side's before the device side's), or all the steps' output. Past ``timeout`` seconds:
    subprocess.TimeoutExpired, as subprocess.run would."""
    os.makedirs(os.path.join(cwd, KEEP), exist_ok=True)
    fd = os.open(os.path.join(cwd, build.module_id_file), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                 0o644)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(module_id(build.source_name))
    if env is not None:
        env = dict(env, **{k: v for k, v in build.env.items() if k in PASSED_ON})
    steps_env = build.env if env is None else env
    deadline = time.monotonic() + timeout
    results = {}
    running = {}
    lock = threading.Lock()

    def side(name, steps):
        results[name] = _steps(steps, cwd, steps_env, deadline, running, lock, name, preexec)

    device = threading.Thread(target=side, args=("device", build.device))
    device.start()
    side("host", build.host)
    if results["host"][0] is None or results.get("device", (0,))[0] is None:
        device.join()
        raise subprocess.TimeoutExpired(build.host[-1], timeout)
    if results["host"][0] != 0:
        with lock:
            process = running.get("device")
        if process is not None:
            _kill(process)
        device.join()
        return results["host"]
    device.join()
    if results["device"][0] is None:
        raise subprocess.TimeoutExpired(build.device[-1], timeout)
    if results["device"][0] != 0:
        return results["device"]
    code, output = _steps(build.rest, cwd, steps_env, deadline, running, lock, "rest", preexec)
    if code is None:
        raise subprocess.TimeoutExpired(build.rest[-1], timeout)
    return code, results["host"][1] + results["device"][1] + output


def _steps(steps, cwd, env, deadline, running, lock, name, preexec=None):
    output = []
    for argv in steps:
        left = deadline - time.monotonic()
        if left <= 0:
            return None, "".join(output)  # the time limit
        try:
            process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True, preexec_fn=preexec, start_new_session=True)
        except OSError as e:
            return -1, "".join(output) + str(e)
        with lock:
            running[name] = process
        try:
            out, _ = process.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            _kill(process)
            process.communicate()
            return None, "".join(output)
        output.append(out)
        if process.returncode != 0:
            return process.returncode, "".join(output)
    return 0, "".join(output)


def _kill(process):
    """The step and whatever it started (its session's group: a step started into the room is a process that waits
    for its child there)."""
    try:
        os.killpg(process.pid, 9)
    except (ProcessLookupError, PermissionError):
        process.kill()
