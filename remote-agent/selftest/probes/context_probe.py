"""Probe (device machine): how much another process making its CUDA context disturbs a benchmark timed on the same
GPU, and which part of making it: the bare driver context, PyTorch's CUDA initialisation, or the first kernels it
loads (worker.warm_kernels). A ~2.4 us kernel timed beside a warm worker's prestarted processes spreads.

    cd remote-agent && python3 selftest/probes/context_probe.py OUT.json [--seconds 3] [--repeats 3] [--only A,B] [--dry-run]

Times leaky-relu as Timer.time_once does, a 1-element and a 1000x1000 tensor alternately, while children (imports
done, unsampled) make a context on `go`: scenarios none (baseline), driver (libcuda alone: cuInit, primary context,
2 MiB cuMemAlloc), torch (torch.zeros on cuda), torch+warm (then warm_kernels), five (five torch+warm), in rounds.
Each sample is labelled with the children's phases in progress ("exit": a child's last line to its exit; "window": go
to the last phase line); import and import5 (PyTorch's import alone, CPU only, one or five at once, after go).
Writes OUT.json (figures per scenario and size, phase durations, raw samples) and prints a
summary. About 65 s at the defaults."""
import argparse, contextlib, ctypes, json, os, statistics  # noqa: E401
import subprocess, sys, tempfile, threading, time, traceback  # noqa: E401
from dataclasses import asdict, dataclass, field

AGENT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCENARIOS = {"none": [], "driver": ["driver"], "torch": ["torch"], "torch+warm": ["torch+warm"],
             "five": ["torch+warm"] * 5, "import": ["import"], "import5": ["import"] * 5}
PHASES = ("import", "init", "context", "alloc", "warm", "exit")
SIZES = ("1", "1000x1000")
PRE_GO_S, TAIL_S = 0.3, 0.3  # sampled before go; after the last child exited
OVER = 1.2  # a sample over OVER x the none scenario's median counts as disturbed


def child(kind: str) -> int:
    """A disturber: imports, `imported`, then on `go` its phases, a `<phase> <monotonic>` line after each."""
    try:
        if kind == "import":  # PyTorch's import itself (CPU only), after go: what a warm worker's spare agent does
            print("imported", flush=True)
            if sys.stdin.readline().strip() != "go":
                return 0
            print("go", time.monotonic(), flush=True)
            import torch  # noqa: F401
            sys.path.insert(0, AGENT_ROOT)
            from remote_agent import worker  # noqa: F401
            print("import", time.monotonic(), flush=True)
            return 0
        if kind == "driver":  # libcuda alone, no PyTorch
            cuda, r = ctypes.CDLL("libcuda.so.1"), ctypes.byref
            dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
            steps = [("init", [("cuInit", 0)]),
                     ("context", [("cuDeviceGet", r(dev), 0), ("cuDevicePrimaryCtxRetain", r(ctx), dev),
                                  ("cuCtxSetCurrent", ctx)]),  # dev and ctx are read when called
                     ("alloc", [("cuMemAlloc_v2", r(ptr), ctypes.c_size_t(2 << 20))])]
        else:
            import torch
            sys.path.insert(0, AGENT_ROOT)
            from remote_agent import worker
        print("imported", flush=True)
        if sys.stdin.readline().strip() != "go":
            return 0
        print("go", time.monotonic(), flush=True)
        if kind == "driver":
            for phase, calls in steps:
                for name, *call_args in calls:
                    if (rc := getattr(cuda, name)(*call_args)) != 0:
                        raise RuntimeError(f"{name}: CUresult {rc}")
                print(phase, time.monotonic(), flush=True)
        else:
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            print("context", time.monotonic(), flush=True)
            if kind == "torch+warm":
                worker.warm_kernels(torch)
                print("warm", time.monotonic(), flush=True)
        return 0
    except BaseException:
        traceback.print_exc()
        return 1


@dataclass
class ChildRecord:
    kind: str
    returncode: int | None = None
    killed: bool = False
    phases: dict[str, float] = field(default_factory=dict)  # "go" (read), then phases: seconds after the parent's go
    exit_s: float | None = None  # seconds after go at which the parent saw it exited
    stderr_tail: str = ""


@dataclass
class Run:
    scenario: str
    repeat: int
    capped: bool  # a child still ran --seconds after go
    children: list[ChildRecord]
    samples: list[list]  # [seconds after go, size index, ms, label]


@dataclass
class Figures:
    count: int
    median_ms: float | None = None
    p90_ms: float | None = None
    max_ms: float | None = None
    over_share: float | None = None  # of samples over OVER x the none scenario's median


class Live:
    """A running child: stdout read by a thread (`imported` awaited), its exit seen by the sampling loop."""
    def __init__(self, kind: str) -> None:
        self.record, self.err, self.lines = ChildRecord(kind), tempfile.TemporaryFile(), []
        self.ready, self.exited_at = threading.Event(), None
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", kind], cwd=AGENT_ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.split())
            if line.strip() == "imported":
                self.ready.set()
        self.ready.set()


class Sampler:
    """Timer.time_once's sample: read-flush, the spin, start event, the call, end event, a device sync."""
    def __init__(self, torch) -> None:
        self.torch, props = torch, torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
        self.flush_source = torch.ones(max(1, 2 * l2 // 4), dtype=torch.int32, device="cuda")
        self.sink = torch.empty((), dtype=torch.int64, device="cuda")
        self.lead_cycles = int((getattr(props, "clock_rate", 0) or 2_000_000) * 1000 * 100e-6)
        self.spin, self.calls, self.how = getattr(torch.cuda, "_sleep", None), [], []
        for shape in ((1,), (1000, 1000)):
            x, y = torch.randn(*shape, device="cuda"), torch.empty(*shape, device="cuda")
            try:  # one kernel into a preallocated output
                torch._C._nn.leaky_relu(x, 0.01, out=y)
                self.calls.append(lambda x=x, y=y: torch._C._nn.leaky_relu(x, 0.01, out=y))
                self.how.append("torch._C._nn.leaky_relu(x, 0.01, out=y)")
            except (AttributeError, TypeError, RuntimeError):
                self.calls.append(lambda x=x: torch.nn.functional.leaky_relu(x, 0.01, inplace=False))
                self.how.append("torch.nn.functional.leaky_relu(x, 0.01, inplace=False)")
        torch.cuda.synchronize()

    def once(self, size: int) -> tuple[float, float, int]:
        """(the sample's monotonic midpoint, its milliseconds, size)."""
        torch, began = self.torch, time.monotonic()
        torch.sum(self.flush_source, dim=0, out=self.sink)
        if self.spin is not None:
            self.spin(self.lead_cycles)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        self.calls[size]()
        end.record()
        torch.cuda.synchronize()
        return (began + time.monotonic()) / 2, start.elapsed_time(end), size


def run_once(sampler: Sampler, scenario: str, repeat: int, seconds: float) -> Run:
    live: list[Live] = []
    raw: list[tuple[float, float, int]] = []
    capped, go = False, time.monotonic()
    try:
        for kind in SCENARIOS[scenario]:
            live.append(Live(kind))
        deadline = time.monotonic() + 120
        for c in live:
            c.ready.wait(max(0.0, deadline - time.monotonic()))
        end = time.monotonic() + PRE_GO_S
        while time.monotonic() < end:
            raw.append(sampler.once(len(raw) % 2))
        for c in live:
            with contextlib.suppress(OSError):  # one that died before go: its stderr says why
                c.proc.stdin.write("go\n")
                c.proc.stdin.flush()
        go = time.monotonic()
        while True:
            raw.append(sampler.once(len(raw) % 2))
            now = time.monotonic()
            for c in live:
                if c.exited_at is None and c.proc.poll() is not None:
                    c.exited_at = now
            if now - go >= seconds:
                capped = any(c.exited_at is None for c in live)
                break
            if all(c.exited_at is not None for c in live) and now >= max((c.exited_at for c in live), default=go) \
                    + TAIL_S:
                break
        deadline = time.monotonic() + 5  # capped children get 5 s more to finish on their own, unsampled
        for c in live:
            with contextlib.suppress(subprocess.TimeoutExpired):
                c.proc.wait(max(0.0, deadline - time.monotonic()))
    finally:
        for c in live:
            if c.proc.poll() is None:
                c.proc.kill()
                c.record.killed = True
            c.proc.wait()
            c.exited_at = c.exited_at or time.monotonic()
            with contextlib.suppress(OSError):
                c.proc.stdin.close()
    spans = []  # (phase, from, to), seconds after go
    for c in live:
        c.reader.join(2)
        c.record.returncode, c.record.exit_s, prev = c.proc.returncode, c.exited_at - go, 0.0
        for words in list(c.lines):
            if len(words) == 2 and words[1].replace(".", "", 1).isdigit():
                c.record.phases[words[0]] = float(words[1]) - go
                if words[0] != "go":
                    spans.append((words[0], prev, c.record.phases[words[0]]))
                    prev = c.record.phases[words[0]]
        spans.append(("exit", prev, c.record.exit_s))
        c.err.seek(0)
        c.record.stderr_tail = c.err.read().decode(errors="replace")[-3000:]
        c.err.close()
    samples = []
    for t, ms, size in raw:
        rel = t - go
        active = {name for name, a, b in spans if a <= rel < b}
        label = "before" if rel < 0 else "+".join(n for n in PHASES if n in active) or "after"
        samples.append([round(rel, 6), size, round(ms, 6), label])
    return Run(scenario, repeat, capped, [c.record for c in live], samples)


def figures(values: list[float], base: float) -> Figures:
    v = sorted(values)
    over = sum(x > OVER * base for x in v) / len(v) if base and v else None
    return Figures(len(v), statistics.median(v), v[-(-9 * len(v) // 10) - 1], v[-1], over) if v else Figures(0)


def report(runs: list[Run]) -> dict:
    base = [statistics.median([x[2] for r in runs if r.scenario == "none" for x in r.samples if x[1] == s] or [0])
            for s in range(len(SIZES))]
    out = {}
    for scenario in dict.fromkeys(r.scenario for r in runs):
        mine, per_size, durations = [r for r in runs if r.scenario == scenario], {}, {}
        for s, size in enumerate(SIZES):
            groups: dict[str, list[float]] = {"all": [], "window": [], "window+exit": []}
            for r in mine:
                last_line = max((t for c in r.children for n, t in c.phases.items() if n != "go"), default=0.0)
                last_exit = max((c.exit_s for c in r.children), default=0.0)
                for rel, size_index, ms, label in r.samples:
                    if size_index == s:
                        groups["all"].append(ms)
                        groups.setdefault(label, []).append(ms)
                        if 0 <= rel < last_line:
                            groups["window"].append(ms)
                        if 0 <= rel < last_exit:
                            groups["window+exit"].append(ms)
            per_size[size] = {k: asdict(figures(v, base[s])) for k, v in groups.items()}
        for c in (c for r in mine for c in r.children):
            prev = c.phases.get("go")
            if prev is not None:  # "wake": from the parent's go to the child's reading it
                durations.setdefault("wake", []).append(prev)
                for name, t in c.phases.items():
                    if name != "go":
                        durations.setdefault(name, []).append(t - prev)
                        prev = t
                durations.setdefault("exit", []).append(c.exit_s - prev)
        out[scenario] = {"sizes": per_size, "failed_children": sum(c.returncode != 0 for r in mine for c in r.children),
                         "capped_runs": sum(r.capped for r in mine),
                         "phase_s": {k: {"median": statistics.median(v), "max": max(v)} for k, v in durations.items()}}
    return {"none_median_ms": dict(zip(SIZES, base)), "scenarios": out}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", nargs="?", help="the JSON file to write")
    ap.add_argument("--seconds", type=float, default=3.0, help="sampling cap after go (s)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds over the scenarios")
    ap.add_argument("--child", choices=("driver", "torch", "torch+warm", "import"), help=argparse.SUPPRESS)
    ap.add_argument("--only", help="these scenarios (comma-separated; none is always run)")
    ap.add_argument("--dry-run", action="store_true", help="print the plan only (no PyTorch, no device)")
    args = ap.parse_args()
    if args.child:
        return child(args.child)
    chosen = [s for s in SCENARIOS if not args.only or s == "none" or s in args.only.split(",")]
    plan = [(s, i) for i in range(args.repeats) for s in chosen]
    if args.dry_run:
        print("\n".join(f"round {i}: {s} ({len(SCENARIOS[s])} children)" for s, i in plan))
        return 0
    if not args.out:
        ap.error("OUT.json is needed")
    import torch
    sampler = Sampler(torch)
    for i in range(400):  # the sampled kernels loaded, clocks up
        sampler.once(i % 2)
    cuda, version = ctypes.CDLL("libcuda.so.1"), ctypes.c_int()
    cuda.cuDriverGetVersion(ctypes.byref(version))
    runs, began = [], time.monotonic()
    for scenario, repeat in plan:
        runs.append(run_once(sampler, scenario, repeat, args.seconds))
        print(f"{scenario} #{repeat}: {len(runs[-1].samples)} samples, children's exit codes "
              f"{[c.returncode for c in runs[-1].children]}", flush=True)
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
              "driver_version": version.value, "calls": dict(zip(SIZES, sampler.how)), "lead_cycles":
              sampler.lead_cycles, "seconds": args.seconds, "repeats": args.repeats, "over": OVER,
              "wall_s": round(time.monotonic() - began, 1), **report(runs), "runs": [asdict(r) for r in runs]}
    with open(args.out, "w") as f:
        json.dump(result, f)
    print(f"{result['device']}, torch {result['torch']}, driver {version.value}, {result['wall_s']} s; times in us, "
          f"over: share of samples over {OVER}x none's median")
    for scenario, rep in result["scenarios"].items():
        phases = ", ".join(f"{k} {v['median']:.3f} s (max {v['max']:.3f})" for k, v in rep["phase_s"].items())
        print(f"{scenario}: failed children {rep['failed_children']}, capped runs {rep['capped_runs']}; {phases}")
        for size, groups in rep["sizes"].items():
            for name, g in groups.items():
                if g["count"]:
                    print(f"  {size:>9} {name:<20} n {g['count']:>6}  median {1000 * g['median_ms']:8.3f}  p90 "
                          f"{1000 * g['p90_ms']:8.3f}  max {1000 * g['max_ms']:9.3f}  over {g['over_share'] or 0:.1%}")
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
