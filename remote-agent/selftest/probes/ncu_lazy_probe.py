"""Probe (device machine): can an audit's worker under Nsight Compute be started ahead of its job, as a warm agent
starts its other processes, without its device context until the job comes; and what does that save?

    cd remote-agent && python3 selftest/probes/ncu_lazy_probe.py OUT.json [--rounds 3]

A child under the agent's verify command line (profiler.verify_command) imports PyTorch, says ``ready`` on its
stderr and waits for a line (stdin, or a pipe passed to it: whichever comes, which tells whether ncu hands its stdin
on); then it makes its context, loads the common kernels and calls five leaky-relus, each in an NVTX range
``kr-test-<i>``, and ends. Measured per round:

- ``cold``: the line given at ncu's start: the whole of it (what an audit's worker costs now);
- ``lazy``: ncu and the child started, waited for ``ready`` plus 2 s, then the line: from the line to the end;
- while a lazy child waits: the processes with a device context (nvidia-smi), the sockets listening in this
  network namespace (/proc/net/tcp*, /proc/net/unix), new files in /tmp and /dev/shm;
- beside: a 1-element leaky-relu timed as Timer.time_once does (events, 2 us), 3 s with nothing else, then 3 s
  while a lazy child is started (ncu's start, the import): the samples' median and p90 each way.

Writes OUT.json and prints a summary."""
import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import threading
import time

AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, AGENT_ROOT)
from remote_agent import profiler  # noqa: E402

CHILD = r"""
import os, select, sys, time
began = time.monotonic()
import torch
sys.path.insert(0, %(root)r)
from remote_agent import worker
print("ready %%.2f" %% (time.monotonic() - began), file=sys.stderr, flush=True)
go = int(os.environ["GO_FD"])
readable, _, _ = select.select([sys.stdin, go], [], [], 60)
via = "stdin" if sys.stdin in readable else ("pipe" if readable else "none")
t0 = time.monotonic()
torch.zeros(1, device="cuda")
t1 = time.monotonic()
worker.warm_kernels(torch)
t2 = time.monotonic()
calls = []
for i, n in enumerate((1, 1000, 100000, 1000000, 16000000)):
    x = torch.randn(n, device="cuda")
    torch.cuda.synchronize()
    at = time.monotonic()
    torch.cuda.nvtx.range_push("kr-test-%%d" %% (i + 1))
    y = torch.where(x > 0, x, x * 0.01)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    calls.append(round(time.monotonic() - at, 3))
print("done via=%%s context=%%.3f warm=%%.3f calls=%%s" %% (via, t1 - t0, t2 - t1, calls), file=sys.stderr,
      flush=True)
os._exit(0)
""" % {"root": AGENT_ROOT}


def start_child(ncu):
    go_read, go_write = os.pipe()
    argv = profiler.verify_command(ncu, [sys.executable, "-c", CHILD])
    began = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            pass_fds=(go_read,), env=dict(os.environ, GO_FD=str(go_read)))
    os.close(go_read)
    lines = []
    ready = threading.Event()

    def read_err():
        for line in proc.stderr:
            lines.append((time.monotonic(), line.rstrip()))
            if line.startswith("ready"):
                ready.set()
    threading.Thread(target=read_err, daemon=True).start()
    out = []
    threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True).start()
    return proc, go_write, began, ready, lines, out


def finish(proc, go_write, lines, out):
    at = time.monotonic()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    deadline = at + 5
    while time.monotonic() < deadline and not any(l.startswith("done") for _, l in lines) and proc.poll() is None:
        time.sleep(0.01)
    if not any(l.startswith("done") for _, l in lines) and proc.poll() is None:
        os.write(go_write, b"go\n")
    proc.wait(timeout=120)
    ended = time.monotonic()
    os.close(go_write)
    time.sleep(0.2)
    text = out[0] if out else ""
    done = next((l for _, l in lines if l.startswith("done")), None)
    done_at = next((t for t, l in lines if l.startswith("done")), None)
    figures = {k: [round(x["duration_ms"] * 1000, 2) for x in v]
               for k, v in profiler.read_verify_text(text).items()}
    return {"go_to_exit_s": round(ended - at, 3), "go_to_done_s": round(done_at - at, 3) if done_at else None,
            "done": done, "ncu_us": figures, "exit_code": proc.returncode,
            "stderr_tail": [l for _, l in lines][-8:]}


def listening():
    found = []
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/net/" + name) as f:
                found += [name + " " + l.split()[1] for l in f.readlines()[1:] if l.split()[3] == "0A"]
        except OSError:
            pass
    try:
        with open("/proc/net/unix") as f:
            found += ["unix " + l.split()[-1] for l in f.readlines()[1:]
                      if len(l.split()) >= 8 and l.split()[5] == "01" and l.split()[3] == "00010000"]
    except OSError:
        pass
    return found


def contexts():
    done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader"],
                          capture_output=True, text=True)
    return done.stdout.strip().splitlines()


def files():
    return {d: sorted(os.listdir(d)) for d in ("/tmp", "/dev/shm") if os.path.isdir(d)}


def sampler(torch, seconds):
    x = torch.randn(1, device="cuda")
    out = torch.empty_like(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples, stop = [], time.monotonic() + seconds
    while time.monotonic() < stop:
        torch.cuda.synchronize()
        start.record()
        torch.where(x > 0, x, x * 0.01, out=out)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000)
    return samples


def summary(samples):
    s = sorted(samples)
    return {"n": len(s), "median_us": round(statistics.median(s), 3), "p90_us": round(s[int(0.9 * len(s))], 3),
            "over_1.2x": round(sum(1 for v in s if v > 1.2 * statistics.median(s)) / len(s), 4)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    ncu = profiler.find_tool("nvcc")
    result = {"ncu": ncu, "cold": [], "lazy": [], "waiting": [], "beside": []}
    before = files()
    for _ in range(args.rounds):
        proc, go_write, began, ready, lines, out = start_child(ncu)
        round_ = finish(proc, go_write, lines, out)  # its line at once: read once PyTorch is imported
        round_["ready_after_s"] = round(next((t for t, l in lines if l.startswith("ready")), began) - began, 3)
        result["cold"].append(round_)
        proc, go_write, began, ready, lines, out = start_child(ncu)
        ready.wait(60)
        ready_after = time.monotonic() - began
        time.sleep(2)
        waiting = {"ready_after_s": round(ready_after, 3), "contexts": contexts(), "listening": listening(),
                   "new_files": {d: [f for f in v if f not in before.get(d, [])] for d, v in files().items()}}
        result["waiting"].append(waiting)
        result["lazy"].append(finish(proc, go_write, lines, out))
        print("round: cold %s; lazy ready %.2f s, go to exit %.2f s; waiting: %s" % (
            result["cold"][-1]["go_to_exit_s"], ready_after, result["lazy"][-1]["go_to_exit_s"],
            json.dumps(waiting)), flush=True)
    import torch
    torch.zeros(1, device="cuda")
    for _ in range(args.rounds):
        alone = sampler(torch, 3.0)
        proc, go_write, began, ready, lines, out = start_child(ncu)
        beside = sampler(torch, 3.0)
        ready_in = ready.wait(60)
        proc.kill()
        proc.wait()
        os.close(go_write)
        result["beside"].append({"alone": summary(alone), "beside_start": summary(beside),
                                 "ready_within_window": bool(ready_in and next(
                                     (t for t, l in lines if l.startswith("ready")), 1e18) - began < 3.0)})
        print("beside:", json.dumps(result["beside"][-1]), flush=True)
    for kind in ("cold", "lazy"):
        print(kind, "go->exit s:", [r["go_to_exit_s"] for r in result[kind]], "done:",
              [r["done"] for r in result[kind]], "ncu us:", [r["ncu_us"] for r in result[kind]])
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
