"""The child process that runs user code: loads the compiled library, checks it against the reference,
benchmarks it. ``python3 -m remote_agent.worker JOB_FILE``.

It speaks to the agent on its original stdout, one ``{"event": TYPE, ...}`` JSON line per message; fd 1 is
pointed at stderr before any user code is loaded, so whatever the user prints goes to the log instead.
A crash, an illegal memory access or a hang here takes down this process only; the agent reports it."""
import ctypes
import json
import os
import sys
import time
import traceback

from remote_agent import catalog, events, stats

_protocol = None


def send(event, **fields):
    fields["event"] = event
    _protocol.write(json.dumps(events.finite(fields), allow_nan=False, default=str) + "\n")
    _protocol.flush()


def _redirect_stdout():
    global _protocol
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _protocol = os.fdopen(saved, "w", buffering=1)


class Nvml:
    """SM clock readings through NVML (microseconds a call); absent on machines without it."""
    SM = 1

    def __init__(self):
        self.lib = None
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() == 0:
                handle = ctypes.c_void_p()
                if lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(handle)) == 0:
                    self.lib, self.handle = lib, handle
        except OSError:
            pass

    def _clock(self, fn):
        if self.lib is None:
            return None
        value = ctypes.c_uint()
        return value.value if fn(self.handle, self.SM, ctypes.byref(value)) == 0 else None

    def sm_clock(self):
        return self._clock(self.lib.nvmlDeviceGetClockInfo) if self.lib else None

    def max_sm_clock(self):
        return self._clock(self.lib.nvmlDeviceGetMaxClockInfo) if self.lib else None


CTYPES = {"float": ctypes.c_float, "int": ctypes.c_int, "size_t": ctypes.c_size_t}


class Runner:
    def __init__(self, job, torch):
        self.job = job
        self.torch = torch
        self.problem = catalog.load(job["problem"], job.get("problems_dir", catalog.PROBLEMS_DIR))
        self.dtype = getattr(torch, job["dtype"])
        self.rule = stats.StoppingRule.from_settings(job.get("benchmark"))
        lib = ctypes.CDLL(job["library"])
        self.fn = getattr(lib, job["symbol"])
        self.fn.restype = None
        self.fn.argtypes = [ctypes.c_void_p if p["pointer"] else CTYPES[p["type"]]
                            for p in self.problem.parameters]
        self.nvml = Nvml()
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
        # Twice the device's own L2, written before every timed run, evicts everything the last run left.
        self.flush_buffer = torch.empty(max(1, 2 * l2 // 4), dtype=torch.int32, device="cuda")
        self.device_name = props.name
        # A GPU-side spin queued after the flush keeps the GPU busy while the host reaches the call, however
        # slow the host is that moment (seen: 30 us gaps), so no launch gap is ever timed. ~200 us of cycles.
        clock_khz = getattr(props, "clock_rate", 0) or 2_000_000
        self.lead_cycles = int(clock_khz * 1000 * 200e-6)
        self.spin = getattr(torch.cuda, "_sleep", None)

    # ---- inputs, outputs, calls

    def case_data(self, case):
        torch = self.torch
        seed = self.problem.seed(case["test_id"])
        gen = torch.Generator(device="cuda")
        gen.manual_seed(seed)
        inputs = self.problem.module.make_inputs(case["sizes"], self.dtype, gen, torch)
        wide = {k: (v.double() if torch.is_tensor(v) else v) for k, v in inputs.items()}
        expected = self.problem.module.reference(wide, torch)
        outputs = {name: torch.empty(tuple(expected[name].shape), dtype=self.dtype, device="cuda")
                   for name in self.problem.outputs()}
        return seed, inputs, expected, outputs

    def poison(self, outputs):
        for tensor in outputs.values():
            tensor.fill_(self.problem.output_init())

    def call_args(self, case, inputs, outputs):
        args = []
        for p in self.problem.parameters:
            name = p["name"]
            if p["pointer"]:
                tensor = outputs[name] if name in outputs else inputs[name]
                args.append(tensor.data_ptr())
            elif name in case["sizes"]:
                args.append(case["sizes"][name])
            else:
                args.append(inputs[name])
        return args

    def compare(self, case, expected, outputs, seed, sample=None):
        """None when every output is within tolerance, else the debug info of the first mismatch."""
        torch = self.torch
        atol, rtol = self.problem.tolerance(case["sizes"], self.job["dtype"])
        for name in self.problem.outputs():
            got = outputs[name].double().reshape(-1)
            want = expected[name].reshape(-1)
            if sample is not None and got.numel() > sample:
                idx = torch.randint(0, got.numel(), (sample,), device="cuda")
                got, want = got[idx], want[idx]
            diff = (got - want).abs()
            bad = ~(diff <= atol + rtol * want.abs())  # NaN compares false, so it never passes
            mismatches = int(bad.sum().item())
            if mismatches:
                first = int(bad.nonzero()[0].item())
                finite = torch.where(torch.isfinite(diff), diff, torch.full_like(diff, float("inf")))
                rel = finite / want.abs().clamp_min(1e-12)
                return {
                    "output": name,
                    "max_abs_error": float(finite.max().item()),
                    "max_rel_error": float(rel.max().item()),
                    "mismatches": mismatches,
                    "checked": int(got.numel()),
                    "first_mismatch": {"index": first, "expected": float(want[first].item()),
                                       "actual": float(got[first].item())},
                    "atol": atol, "rtol": rtol, "seed": seed,
                }
        return None

    # ---- phases

    def check(self):
        cases = self.problem.cases
        total = len(cases)
        send("CHECKING", total_tests=total)
        for case in cases:
            seed, inputs, expected, outputs = self.case_data(case)
            self.poison(outputs)
            self.torch.cuda.synchronize()
            self.fn(*self.call_args(case, inputs, outputs))
            self.torch.cuda.synchronize()
            debug = self.compare(case, expected, outputs, seed)
            result = {"test_id": case["test_id"], "name": case["name"], "status": "FAILED" if debug else "PASSED"}
            send("TEST_RESULT", result=result, total_tests=total)
            if debug:
                send("WRONG_ANSWER", message="test " + str(case["test_id"]) + " (" + case["name"]
                     + ") does not match the reference", debug_info=debug,
                     passed_tests=case["test_id"] - 1, total_tests=total)
                return False
        send("CHECKED", passed_tests=total, total_tests=total)
        return True

    def time_once(self, run, outputs):
        """One timed run, as triton's do_bench does it: poisoning the outputs and flushing L2 are queued ahead
        of the start event, so the GPU is still busy with them while the host reaches the call, and no idle
        launch gap is timed. GPU events on the legacy default stream (which waits for blocking streams), then
        a device-wide sync. Returns (event ms, host ms from the start event to the end of the sync)."""
        torch = self.torch
        self.poison(outputs)
        self.flush_buffer.zero_()
        if self.spin is not None:
            self.spin(self.lead_cycles)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        host_start = time.perf_counter()
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end), (time.perf_counter() - host_start) * 1000.0

    def measure(self, run, outputs, check_after=None):
        torch = self.torch
        max_clock = self.nvml.max_sm_clock()
        throttled = [0]
        run()  # warm-up, not timed
        torch.cuda.synchronize()
        # The host time of an empty run with the same poisoning and flush: what a real run's host time
        # carries on top of the kernel's own.
        overhead = stats.median([self.time_once(lambda: None, outputs)[1] for _ in range(11)])

        host_derived = []

        def sample():
            event_ms, host_ms = self.time_once(run, outputs)
            host_derived.append(host_ms - overhead)
            clock = self.nvml.sm_clock()
            if max_clock and clock is not None and clock < 0.75 * max_clock:
                throttled[0] += 1
            if check_after is not None:
                check_after()
            return event_ms

        samples = stats.collect(sample, self.rule)
        timing = "events"
        # Work on a non-blocking stream of its own escapes the events but not the device-wide sync: when the
        # host's times, less the empty run's, clearly exceed the events' (compared by medians, so one jittery
        # sample decides nothing), they are the figures.
        if stats.median(host_derived) > 1.5 * stats.median(samples) + 0.02:
            samples, timing = host_derived, "host"
        summary = stats.summary(samples, throttled[0])
        summary["timing"] = timing
        return summary

    def benchmark(self):
        torch = self.torch
        cases = self.problem.cases
        send("BENCHMARKING", total_tests=len(cases))
        results = []
        for case in cases:
            seed, inputs, expected, outputs = self.case_data(case)
            args = self.call_args(case, inputs, outputs)
            tampered = []

            def verify():
                debug = self.compare(case, expected, outputs, seed, sample=4096)
                if debug and not tampered:
                    tampered.append(debug)

            clock_before = self.nvml.sm_clock()
            ours = self.measure(lambda: self.fn(*args), outputs, verify)
            clock_after = self.nvml.sm_clock()
            if tampered:
                send("WRONG_ANSWER", message="test " + str(case["test_id"]) + " (" + case["name"]
                     + ") gave a wrong result in a timed run (outputs are reset before each run)",
                     debug_info=tampered[0], passed_tests=case["test_id"] - 1, total_tests=len(cases))
                return None
            reference = self.measure(lambda: self.problem.module.reference(inputs, torch), {})
            median = ours["median"]
            flops = self.problem.flops(case["sizes"])
            moved = self.problem.bytes_moved(case["sizes"], self.job["dtype"])
            result = {
                "test_id": case["test_id"], "name": case["name"], "runtime_ms": median,
                "runtime_stats": ours,
                "gflops": flops / (median * 1e6) if median > 0 else None,
                "bandwidth_gbs": moved / (median * 1e6) if median > 0 else None,
                "reference_runtime_ms": reference["median"],
                "speedup": reference["median"] / median if median > 0 else None,
                "sm_clock_mhz": {"before": clock_before, "after": clock_after},
            }
            results.append(result)
            send("BENCHMARK_RESULT", result=result)
        medians = [r["runtime_ms"] for r in results]
        gflops = [r["gflops"] for r in results if r["gflops"] is not None]
        send("SUMMARY", avg_runtime_ms=stats.mean(medians), geomean_runtime_ms=stats.geomean(medians),
             avg_gflops=stats.mean(gflops) if gflops else None,
             geomean_speedup=stats.geomean([r["speedup"] for r in results]),
             test_results=[{k: v for k, v in r.items() if k != "runtime_stats"} for r in results],
             runtime={"torch": torch.__version__, "cuda": torch.version.cuda,
                      "hip": getattr(torch.version, "hip", None), "device": self.device_name})
        return results


def main(argv):
    _redirect_stdout()
    try:
        with open(argv[1], encoding="utf-8") as f:
            job = json.load(f)
        import torch  # noqa: imported here so the agent itself runs without it
        if not torch.cuda.is_available():
            send("ERROR", message="no GPU is visible to PyTorch on this machine")
            return 0
        runner = Runner(job, torch)
        send("PHASE", name="check")
        if not runner.check():
            return 0
        if job["mode"] == "benchmark":
            send("PHASE", name="benchmark")
            runner.benchmark()
        send("DONE")
        return 0
    except ImportError as e:
        send("ERROR", message="PyTorch is not installed on this machine", details=str(e))
        return 0
    except Exception as e:  # noqa: everything the user's kernel can do wrong ends here
        text = traceback.format_exc()
        kind = "RUNTIME_ERROR"
        send(kind, message="the kernel failed: " + str(e).strip().splitlines()[0][:300] if str(e).strip()
             else "the kernel failed", details=text[-6000:])
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
