#!/usr/bin/env python3
"""A fake `dstack` CLI for tests, built from shared/reference/dstack-cli.md: the commands the runner uses,
their output formats (0.20 JSON mode, or a 0.19 table-only mode), statuses, and faults.

State lives in the folder $FAKE_DSTACK_HOME: state.json (runs, fleets) and config.json (the test's knobs):
  {"mode": "json" | "table", "banner": bool, "hang": [command...], "error": {command: message},
   "no_capacity": bool, "apply_noop": bool, "lose_tail": bool, "step_seconds": 0.3,
   "ignore_columns": bool (tables cut at 80 columns whatever COLUMNS says)}
A task that names `fleets` fails with "no fleets" when none of them exists (dstack 0.20+).
A run's "container" is a real local process: the task's `commands`, run by sh in the run's folder, with the
task's `files` copied in. Configurations are JSON documents (valid YAML), as the runner writes them.
"""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HOME = os.environ.get("FAKE_DSTACK_HOME", "/tmp/fake-dstack")
STATE = os.path.join(HOME, "state.json")
CONFIG = os.path.join(HOME, "config.json")
FINAL = ("terminated", "failed", "done")


def load(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


class Locked:
    def __enter__(self):
        os.makedirs(HOME, exist_ok=True)
        self.f = open(os.path.join(HOME, "lock"), "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        self.state = load(STATE, {"runs": {}, "fleets": {}})
        return self.state

    def __exit__(self, *exc):
        with open(STATE + ".tmp", "w") as f:
            json.dump(self.state, f)
        os.replace(STATE + ".tmp", STATE)
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


config = load(CONFIG, {})


def version():
    """The CLI version this fake plays: 0.21.2 in JSON mode, 0.19.30 (no JSON output) in table mode."""
    return (0, 21, 2) if config.get("mode", "json") == "json" else (0, 19, 30)


def fail(message, code=1):
    print("[error]" + message)
    sys.exit(code)


def banner():
    if config.get("banner"):
        print("A new version of dstack is available: 0.21.9\nRun `pip install dstack==0.21.9` to update")


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def container_members(root, known=()):
    """The live processes of the "container" started as root: its process group and session, every descendant,
    and the groups and sessions those started (the agent starts a session of its own), as a container's cgroup
    would hold them all. Zombies do not count. known: members seen before (a member whose parent died
    is found through them)."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            procs[int(entry)] = (int(fields[1]), int(fields[2]), int(fields[3]))
    ids = {root} | set(known)
    members = set()
    changed = True
    while changed:
        changed = False
        for pid, (ppid, pgid, sid) in procs.items():
            if pid not in members and (pid in ids or ppid in ids or pgid in ids or sid in ids):
                members.add(pid)
                ids.add(pid)
                changed = True
    return members


def group_alive(run):
    """Whether any process of the run's container is left (and remembers who is in it)."""
    members = container_members(run["pid"], run.get("members", ()))
    run["members"] = sorted(members | set(run.get("members", ())))
    return bool(members)


def advance(run, fleets):
    """Moves a run along its statuses with time, starting and watching its container."""
    if run["status"] in FINAL:
        return
    step = config.get("step_seconds", 0.3)
    age = time.time() - run["created"]
    if run.get("stopping"):
        if run.get("pid") and group_alive(run):
            return
        run.update(status="terminated", job_status="terminated", status_message="stopped",
                   termination_reason="stopped_by_user", job_termination_reason="terminated_by_user")
        return
    if run.get("fleets") and not any(f in fleets for f in run["fleets"]) and age > step:
        run.update(status="failed", job_status="failed", status_message="no fleets", termination_reason="job_failed",
                   job_termination_reason="failed_to_start_due_to_no_capacity",
                   job_message="No fleets found. Create a fleet before submitting runs.")
        return
    if config.get("no_capacity") and age > step:
        # "no offers" until 0.21.1, "no capacity" from then on.
        message = "no capacity" if version() >= (0, 21, 1) else "no offers"
        run.update(status="failed", job_status="failed", status_message=message, termination_reason="job_failed",
                   job_termination_reason="failed_to_start_due_to_no_capacity")
        return
    if age < step:
        run.update(status="submitted", job_status="submitted", status_message="submitted")
    elif age < 2 * step:
        run.update(status="provisioning", job_status="provisioning", status_message="provisioning")
    elif run.get("pid") is None:
        folder = run["folder"]
        log = open(os.path.join(folder, "container.log"), "w")
        # The shell records the container's exit status itself, so nothing has to wait for it.
        script = "( " + " && ".join(run["commands"]) + " ); echo $? > exit_status"
        child = subprocess.Popen(["sh", "-c", script], cwd=folder, stdout=log, stderr=subprocess.STDOUT,
                                 start_new_session=True)
        run.update(pid=child.pid, status="running", job_status="running", status_message="running")
    else:
        exit_file = os.path.join(run["folder"], "exit_status")
        if os.path.exists(exit_file):
            code = int(open(exit_file).read().strip() or "1")
            if code == 0:
                run.update(status="done", job_status="done", status_message="exited (0)",
                           termination_reason="all_jobs_done", job_termination_reason="done_by_runner",
                           exit_status=0, cost=0.0123)
            else:
                run.update(status="failed", job_status="failed", status_message="exited (%d)" % code,
                           termination_reason="job_failed", job_termination_reason="container_exited_with_error",
                           exit_status=code, cost=0.0123, job_message="Container exited with exit code %d" % code)


def run_json(name, run):
    job = {"id": "job-" + name, "submitted_at": "2026-11-22T10:00:00+00:00", "status": run["job_status"],
           "status_message": run["status_message"], "termination_reason": run.get("job_termination_reason"),
           "termination_reason_message": run.get("job_message"), "exit_status": run.get("exit_status"),
           "job_provisioning_data": None if run["status"] in ("submitted", "pending") else {
               "backend": "amddevcloud", "instance_type": {"name": "gpu-mi300x1-192gb", "resources": {}},
               "region": "atl1", "price": 1.99, "hostname": "10.0.0.1"}}
    return {"id": "id-" + name, "project_name": "main", "user": "runner", "fleet": {"id": "f", "name": "fleet"},
            "submitted_at": "2026-11-22T10:00:00+00:00", "status": run["status"],
            "status_message": run["status_message"], "termination_reason": run.get("termination_reason"),
            "run_spec": {"run_name": name, "configuration": {"type": "task"}},
            "jobs": [{"job_spec": {"job_name": name + "-0-0"}, "job_submissions": [job]}],
            "latest_job_submission": job, "cost": run.get("cost", 0.0), "error": None, "deleted": False}


def table(rows, header):
    width = 80 if config.get("ignore_columns") else int(os.environ.get("COLUMNS", "80"))
    widths = [max(len(h), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = []
    for cells in [header] + [[str(c) for c in r] for r in rows]:
        line = " " + "  ".join(c.ljust(w) for c, w in zip(cells, widths))
        lines.append(line if len(line) <= width else line[:width - 1] + "…")
    print("\n".join(lines))


def main(argv):
    os.makedirs(HOME, exist_ok=True)
    with open(os.path.join(HOME, "calls.log"), "a") as calls:  # what was asked, for the tests
        calls.write(" ".join(argv) + "\n")
    if argv[:1] == ["--version"]:
        print(".".join(map(str, version())))
        return
    command = argv[0] if argv else ""
    key = " ".join(argv[:2]) if command in ("run", "fleet") else command
    if key in config.get("hang", []):
        time.sleep(3600)
    if key in config.get("error", {}):
        fail(config["error"][key])
    json_mode = config.get("mode", "json") == "json"
    wants_json = "--json" in argv or ("--format" in argv and "json" in argv)
    if wants_json and not json_mode:
        print("usage: dstack [-h] [-v] {apply,ps,stop,logs,fleet,offer} ...", file=sys.stderr)
        print("dstack: error: unrecognized arguments: --json", file=sys.stderr)
        sys.exit(2)
    banner()
    with Locked() as state:
        for name, run in state["runs"].items():
            advance(run, state["fleets"])
        if command == "apply":
            path = argv[argv.index("-f") + 1]
            conf = json.load(open(path))
            if conf["type"] == "fleet":
                known = state["fleets"].get(conf["name"])
                if known and known["conf"] == conf:
                    print("No configuration changes detected.")
                else:
                    state["fleets"][conf["name"]] = {"conf": conf, "status": "active"}
                    print("Fleet configuration submitted. Exiting...")
                return
            name = conf["name"]
            existing = state["runs"].get(name)
            if config.get("apply_noop") or (existing and existing["status"] not in FINAL):
                print(" Project main\n Configuration %s\n\nUse --force to apply anyway." % path)
                return
            folder = os.path.join(HOME, "runs", name)
            shutil.rmtree(folder, ignore_errors=True)
            os.makedirs(folder)
            for entry in conf.get("files", []):
                target = os.path.join(folder, entry["path"])
                os.makedirs(os.path.dirname(target), exist_ok=True)
                if os.path.isdir(entry["local_path"]):
                    shutil.copytree(entry["local_path"], target)
                else:
                    shutil.copyfile(entry["local_path"], target)
            state["runs"][name] = {"created": time.time(), "status": "submitted", "job_status": "submitted",
                                   "status_message": "submitted", "commands": conf["commands"], "folder": folder,
                                   "fleets": conf.get("fleets", [])}
            print(" #  BACKEND      RESOURCES           PRICE\n 1  amddevcloud  MI300X:192GB:1      $1.99\n")
            print("Run %s submitted, detaching..." % name)
        elif command == "run" and argv[1:2] == ["get"]:
            name = argv[2]
            if name not in state["runs"]:
                fail("Run %s not found" % name)
            print(json.dumps(run_json(name, state["runs"][name]), indent=2))
        elif command == "ps":
            runs = [(n, r) for n, r in state["runs"].items() if "-a" in argv or r["status"] not in FINAL]
            if wants_json:
                print(json.dumps({"project": "main", "runs": [run_json(n, r) for n, r in runs]}))
            else:
                table([[n, "amddevcloud", "MI300X:192GB:1", "$1.99", r["status_message"], "now"] for n, r in runs],
                      ["NAME", "BACKEND", "GPU", "PRICE", "STATUS", "SUBMITTED"])
        elif command == "logs":
            name = argv[1]
            run = state["runs"].get(name)
            if run is None:
                fail("Run %s not found" % name)
            log = os.path.join(run["folder"], "container.log")
            if run.get("pid") and os.path.exists(log):
                lines = open(log).read().splitlines()
                if config.get("lose_tail") and run.get("stopping"):
                    lines = lines[: max(0, len(lines) - 3)]
                print("\n".join(lines))
        elif command == "stop":
            name = argv[1]
            run = state["runs"].get(name)
            if run is None:
                fail("Run %s not found" % name)
            if run["status"] not in FINAL:
                run["stopping"] = True
                if run.get("pid"):
                    group_alive(run)
                    for pid in container_members(run["pid"], run["members"]):
                        try:
                            os.kill(pid, signal.SIGKILL if "-x" in argv else signal.SIGTERM)
                        except OSError:
                            pass
            print("Aborted" if "-x" in argv else "Stopped")
        elif command == "fleet" and argv[1:2] == ["get"]:
            fleet = state["fleets"].get(argv[2])
            if fleet is None:
                fail("Fleet %s not found" % argv[2])
            # One instance, once a run has used the fleet: busy while one runs, idle after.
            used = [r for r in state["runs"].values() if argv[2] in r.get("fleets", []) and r.get("pid")]
            instances = [] if not used else [{
                "name": argv[2] + "-0", "backend": "amddevcloud", "region": "atl1", "price": 1.99,
                "instance_type": {"name": "gpu-mi300x1-192gb"},
                "status": "busy" if any(r["status"] not in FINAL for r in used) else "idle"}]
            print(json.dumps({"name": argv[2], "status": fleet["status"], "instances": instances}))
        elif command == "fleet" and argv[1:2] == ["list"]:
            table([[n, "amddevcloud", "0..1", f["status"]] for n, f in state["fleets"].items()],
                  ["FLEET", "BACKEND", "NODES", "STATUS"])
        else:
            print("usage: dstack [-h] [-v] {apply,ps,stop,logs,fleet,offer} ...", file=sys.stderr)
            sys.exit(2)


if __name__ == "__main__":
    main(sys.argv[1:])
