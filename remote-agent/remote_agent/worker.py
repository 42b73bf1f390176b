"""The child process that runs user code: loads the compiled library, checks it against the reference,
benchmarks it. ``python3 -m remote_agent.worker JOB_FILE``.

It speaks to the agent on its original stdout, one ``{"event": TYPE, ...}`` JSON line per message; fd 1 is
pointed at stderr before any user code is loaded, so whatever the user prints goes to the log instead.
A crash, an illegal memory access or a hang here takes down this process only; the agent reports it."""
import base64
import contextlib
import ctypes
import dataclasses
import json
import os
import pickle
import secrets
import sys
import time
import traceback

from remote_agent import (baseline, catalog, device, events, gate, landlock, profiler, replay, room, stats,
                          verification)

_protocol = None


def send(event, **fields):
    fields["event"] = event
    _protocol.write(json.dumps(events.finite(fields), allow_nan=False, default=str) + "\n")
    _protocol.flush()


def _redirect_stdout():
    """The protocol goes to the original stdout (or, under the profiler, to the descriptor that
    profiler.Output.PROTOCOL_FD names: the process's stdout is then the profiler's output, which the agent reads its
    figures from); fd 1 is pointed at stderr before any user code is loaded, so whatever the user prints goes to
    the log."""
    global _protocol
    named = os.environ.get(profiler.Output.PROTOCOL_FD)
    saved = int(named) if named else os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _protocol = os.fdopen(saved, "w", buffering=1)


def _persisting_l2_reset():
    """cuCtxResetPersistingL2Cache of the driver (NVIDIA): a kernel that set an access-policy window keeps no
    persisting lines from one timed run into the next. None where there is no such call: HIP has no persisting
    L2 at all (hip_runtime_api.h, ROCm 5.2, line 432: hipDeviceAttributePersistingL2CacheMaxSize is "Cuda11
    only")."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_int
    return fn


CTYPES = {"float": ctypes.c_float, "int": ctypes.c_int, "size_t": ctypes.c_size_t}


@dataclasses.dataclass
class Answer:
    """The reference's output for an input set, made before the call (a judge's set made ahead): flattened, in the
    reference's dtype (float64; int64 for an index), and how far from each value an answer may be (``bound``)."""
    want: object
    bounds: object


@dataclasses.dataclass
class InputSet:
    """One call's inputs (fresh contents), their private copies, its poisoned outputs and its arguments;
    ``answers``: the reference's outputs for them by output name, made before (``refill_from``), or None where
    the check computes them."""
    seed: int
    inputs: dict
    copies: dict
    outputs: dict
    args: list
    answers: "dict[str, Answer] | None" = None


def _wrong_message(case, debug, timed=False):
    where = "test " + str(case["test_id"]) + " (" + case["name"] + ")"
    if "modified_input" in debug:
        return where + ": the solution modified its inputs ('" + debug["modified_input"] + "' changed)"
    if timed:
        return where + " gave a wrong result in timed run " + str(debug.get("sample", "?")) + " (each timed run has " \
            "inputs of its own, and every output is checked)"
    return where + " does not match the reference"


def bound(want, atol, rtol):
    """How far from each value of ``want`` (flattened) an answer may be: ``atol + rtol * |want|``."""
    return atol + rtol * want.reshape(-1).abs()


def outside(got, want, atol=None, rtol=None, bounds=None):
    """Which values of ``got`` are not within ``bound(want, atol, rtol)`` of ``want`` (both flattened, compared in
    float64): the one tolerance rule of every check; ``bounds``: that bound, made before. NaN compares false, so it
    never passes."""
    want = want.reshape(-1)
    bounds = bound(want, atol, rtol) if bounds is None else bounds
    return ~((got.double().reshape(-1) - want).abs() <= bounds)


def load_solution(library, symbol, problem):
    """The solution's function in ``library``, typed after the problem's parameters."""
    fn = getattr(ctypes.CDLL(library), symbol)
    fn.restype = None
    fn.argtypes = [ctypes.c_void_p if p["pointer"] else CTYPES[p["type"]] for p in problem.parameters]
    return fn


class Harness:
    """A problem's tests as calls: fresh input sets, poisoned outputs, arguments, and the check against the
    reference. Shared by the worker (which runs the solution) and the judge (which never loads it)."""

    def __init__(self, job, torch):
        self.job = job
        self.torch = torch
        self.problem = catalog.load(job["problem"], job.get("problems_dir", catalog.PROBLEMS_DIR))
        self.dtype = getattr(torch, job["dtype"])
        self._shapes = {}

    # ---- inputs, outputs, calls

    def input_set(self, case, seed=None, shared=contextlib.nullcontext):
        """A fresh input set for one call: new random contents from a seed nobody could know before (the
        submission's code included), a private copy of every input tensor (to find a call that modified its
        inputs, and to compute the reference from), and output buffers allocated now and poisoned. The reference
        is computed only after the call (``verify``): while the solution runs there is no answer anywhere in
        memory to find. The inputs and outputs are allocated inside ``shared()`` (the judge's: a memory pool of
        their own, which another process may map), the copies outside it."""
        torch = self.torch
        seed = secrets.randbits(63) if seed is None else seed
        shapes = self.problem.module.output_shapes(case["sizes"]) if hasattr(self.problem.module, "output_shapes") \
            else None
        shapes = {name: shapes[name] if shapes else self._output_shape(case, name) for name in self.problem.outputs()}
        with shared():
            inputs = self.fresh_inputs(case, seed)
            outputs = {name: torch.empty(shape, device="cuda",
                                         dtype=getattr(torch, self.problem.buffer_dtype(name, self.job["dtype"])))
                       for name, shape in shapes.items()}
        copies = {k: v.clone() for k, v in inputs.items() if torch.is_tensor(v)}
        self.poison(outputs)
        return InputSet(seed, inputs, copies, outputs, self.call_args(case, inputs, outputs))

    def refill(self, case, data, seed):
        """The same buffers with a fresh input set (new contents from ``seed``, copies to match) and poisoned
        outputs: a timed call's next sample, on buffers another process already holds. Scalar inputs stay as the
        call's arguments have them."""
        torch = self.torch
        if data.answers is not None:  # the copies were a set's made ahead (``refill_from``): never written here
            data.copies, data.answers = {name: torch.empty_like(copy) for name, copy in data.copies.items()}, None
        fresh = self.fresh_inputs(case, seed)
        for name, tensor in data.inputs.items():
            if torch.is_tensor(tensor):
                tensor.copy_(fresh[name])
                data.copies[name].copy_(fresh[name])
        del fresh
        self.poison(data.outputs)
        data.seed = seed

    def refill_from(self, data, ready):
        """``refill`` with a set made before (``ready``, a judge.SampleSet: the inputs ``refill`` would make from its
        seed, in memory no other process maps, and the reference's answers for them): its inputs copied into the same
        buffers, the outputs poisoned. The set's inputs are the copies the check compares with, its answers what the
        outputs must be."""
        for name, tensor in data.inputs.items():
            if self.torch.is_tensor(tensor):
                tensor.copy_(ready.inputs[name])
        self.poison(data.outputs)
        data.copies, data.answers, data.seed = ready.inputs, ready.answers, ready.seed

    def fresh_inputs(self, case, seed):
        """The case's inputs made from ``seed`` by a generator of their own: the same contents wherever they are made
        from the same seed (a judge's sets made ahead are those ``refill`` would make)."""
        gen = self.torch.Generator(device="cuda")
        gen.manual_seed(seed)
        return self.problem.module.make_inputs(case["sizes"], self.dtype, gen, self.torch)

    def reference_outputs(self, args):
        """The reference's outputs for ``args`` (the inputs' tensors and the call's scalars), computed in float64:
        (outputs by name, the float64 arguments), both the caller's to scrub."""
        torch = self.torch
        wide = {k: (v.double() if torch.is_tensor(v) else v) for k, v in args.items()}
        return self.problem.module.reference(wide, torch), wide

    def _output_shape(self, case, name):
        """The output's shape where the problem gives none (``output_shapes``): from the reference run once per case in
        this process, on inputs of the case's own sizes in float64 (cached)."""
        key = (case["test_id"], name)
        if key not in self._shapes:
            outputs, wide = self.reference_outputs(self.fresh_inputs(case, 0))
            for out, value in outputs.items():
                self._shapes[(case["test_id"], out)] = tuple(value.shape)
                value.zero_()
            del outputs, wide
        return self._shapes[key]

    def verify(self, case, data, sample=None):
        """After a call (the device synchronized): the inputs as they were, then every output against the
        reference computed now from the private copies. None, or the debug info of the first mismatch."""
        torch = self.torch
        for name, copy in data.copies.items():
            if not torch.equal(data.inputs[name], copy):
                return {"modified_input": name, "seed": data.seed, "sample": sample,
                        "message": "the solution modified its input '" + name + "' (inputs are read-only)"}
        with self.expected(data) as expected:
            debug = self.compare(case, expected, data.outputs, data.seed)
        if debug is not None and sample is not None:
            debug["sample"] = sample
        return debug

    def passes(self, case, data):
        """``verify``'s answer with one device sync, not one per input and output (a timed test's ~101 samples are
        each checked between two timed runs): True when the inputs are as they were and every output is within
        tolerance; where not, ``verify`` says why."""
        torch = self.torch
        flags = [(data.inputs[name] != copy).any() for name, copy in data.copies.items()]
        if data.answers is not None:  # made before the sample (a judge's set made ahead)
            flags += [outside(data.outputs[name], answer.want, bounds=answer.bounds).any()
                      for name, answer in data.answers.items()]
            return not any(torch.stack(flags).tolist())
        atol, rtol = self.problem.tolerance(case["sizes"], self.job["dtype"])
        with self.expected(data) as expected:
            flags += [outside(data.outputs[name], expected[name], atol, rtol).any() for name in self.problem.outputs()]
            return not any(torch.stack(flags).tolist())

    @contextlib.contextmanager
    def expected(self, data):
        """The reference's outputs, computed in float64 from the private copies of the inputs; scrubbed (with the
        copies' float64 twins) as the block ends, so no later call finds an answer in freed memory."""
        torch = self.torch
        expected, wide = self.reference_outputs(dict(data.copies, **{k: v for k, v in data.inputs.items()
                                                                     if not torch.is_tensor(v)}))
        try:
            yield expected
        finally:
            for value in list(expected.values()) + list(wide.values()):
                if torch.is_tensor(value):
                    value.zero_()

    def poison(self, outputs):
        """Every output filled with what no answer is: NaN (the problem's OUTPUT_INIT if it says), the least value
        of an integer output's type."""
        for tensor in outputs.values():
            tensor.fill_(self.problem.output_init() if tensor.is_floating_point()
                         else self.torch.iinfo(tensor.dtype).min)

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

    def compare(self, case, expected, outputs, seed):
        """None when every output is within tolerance, else the debug info of the first mismatch."""
        torch = self.torch
        atol, rtol = self.problem.tolerance(case["sizes"], self.job["dtype"])
        for name in self.problem.outputs():
            got = outputs[name].double().reshape(-1)
            want = expected[name].reshape(-1)
            diff = (got - want).abs()
            bad = outside(got, want, atol, rtol)
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

    def scalars(self, case, args):
        """A call's random scalar arguments (not its sizes) as a kernel parameter holds them: {name: bytes}."""
        return {p["name"]: replay.scalar_bytes(p["type"], value) for p, value in zip(self.problem.parameters, args)
                if not p["pointer"] and p["name"] not in case["sizes"] and p["type"] in replay.SCALAR_FORMATS}


class Timer(Harness):
    """How this process times a call (the flush, the spin, events, device spans), with no solution loaded: the
    reference's times are taken so, before the solution's library is (``references``)."""
    GUARDED = True  # the device-span guard on a served call's timing (work on other streams than the events')

    def __init__(self, job, torch):
        super().__init__(job, torch)
        self.rule = stats.StoppingRule.from_settings(job.get("benchmark"))
        self.nvml = device.nvml()
        props = torch.cuda.get_device_properties(0)
        l2 = getattr(props, "L2_cache_size", 0) or 64 * 1024 * 1024
        # Twice the device's own L2, READ before every timed run: it evicts everything the last run left and
        # leaves only clean lines. A flush that writes (as every peer's does) leaves L2 full of dirty lines that
        # the timed kernel must write back first: +9.6% at 56 us on the H100 against Nsight Compute.
        self.flush_source = torch.ones(max(1, 2 * l2 // 4), dtype=torch.int32, device="cuda")
        self.flush_sink = torch.empty((), dtype=torch.int64, device="cuda")
        self.reset_persisting = _persisting_l2_reset() if not getattr(torch.version, "hip", None) else None
        self.device_name = props.name
        # A GPU-side spin queued after the flush keeps the GPU busy while the host reaches the call (on the H100
        # 30 us p50, 95 us p99 from the spin's launch to the call's), so no launch gap is timed. 100 us of cycles,
        # behind the flush's own ~35 us: 200 us gave the same medians and spent ~0.16 s of a ~1 s benchmark
        # (selftest/probes/lead_probe.py).
        clock_khz = getattr(props, "clock_rate", 0) or 2_000_000
        self.lead_cycles = int(clock_khz * 1000 * 100e-6)
        self.spin = getattr(torch.cuda, "_sleep", None)
        self.windows = []  # every empty window this process timed (``measure``): what its figures take off

    def flush(self):
        """Persisting L2 lines reset, then L2 filled with clean lines of our own buffer (read, never written)."""
        if self.reset_persisting is not None:
            self.reset_persisting()
        self.torch.sum(self.flush_source, dim=0, out=self.flush_sink)

    def time_once(self, run):
        """One timed run, as triton's do_bench does it: flushing L2 is queued ahead of the start event, so the GPU
        is still busy with it while the host reaches the call, and no idle launch gap is timed. GPU events on the
        legacy default stream (which waits for blocking streams), then a device-wide sync. Returns the events'
        milliseconds."""
        torch = self.torch
        self.flush()
        if self.spin is not None:
            self.spin(self.lead_cycles)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    def device_spans(self, prepare, calls, check_after=None):
        """How long the device was busy with what one call enqueued, on any stream, for each of ``calls`` calls:
        from the first activity's start to the last one's end, as the GPU's profiling interface (CUPTI, through
        PyTorch's profiler) records them. None where the profiler cannot record device activity."""
        torch = self.torch
        spans = []
        for _ in range(calls):
            run = prepare()
            self.flush()
            torch.cuda.synchronize()
            with device_activity(torch) as prof:
                run()
                torch.cuda.synchronize()
            if check_after is not None:
                check_after()
            device = [e for e in prof.function_events if e.device_type.name != "CPU"]
            if not device:
                return None
            start = min(e.time_range.start for e in device)
            end = max(e.time_range.end for e in device)
            spans.append((end - start) / 1000.0)
        return spans

    def measure(self, prepare, check_after=None, guard=True):
        """One test's timing: CUDA events around the call after a clean flush, less the time of an empty event
        window timed after every other sample (``stats.empty_window``); samples taken while the SM clock was throttled
        are discarded; and a guard: if the device was busy with the call's work (on any stream) clearly longer
        than the events saw, the device spans are the figures instead. ``prepare()`` makes a sample's call (on a
        fresh input set) outside the timed window; ``check_after()`` checks that sample once it is done."""
        torch = self.torch
        max_clock = self.nvml.max_sm_clock()
        run = prepare()
        torch.cuda.synchronize()  # the inputs and the poison are done before the call, on whatever stream it runs
        run()  # warm-up, not timed
        torch.cuda.synchronize()
        if check_after is not None:
            check_after()
        clocks, temperatures, windows = [], [], self.windows

        self.spent = spent = {"prepare": 0.0, "timed": 0.0, "after": 0.0}  # where the samples' time went (the log)

        def sample():
            at = time.monotonic()
            run = prepare()
            prepared = time.monotonic()
            torch.cuda.synchronize()
            event_ms = self.time_once(run)
            # What the events add, as the device is at this sample: timed as the sample is, after it, beside every
            # other sample (0.37 ms each on the H100). A pair queued just before the start event instead (no flush,
            # spin and sync of its own) read 1.54-1.76 us at 1000 x 1000 against 1.22-1.31 us at every other size,
            # and took that test 8% low (docs/evidence/replay-h100/run36-*). Timed once per test before its samples,
            # one read tens of microseconds after a 256 MB poison; these come after the sample's own sync.
            if len(clocks) % 2 == 0:
                windows.append(self.time_once(_nothing))
            timed = time.monotonic()
            clocks.append(self.nvml.sm_clock())
            temperatures.append(self.nvml.temperature())
            if check_after is not None:
                check_after()
            spent["prepare"] += prepared - at
            spent["timed"] += timed - prepared
            spent["after"] += time.monotonic() - timed
            return event_ms

        rule = self.rule
        raw = stats.collect(sample, rule)
        many = stats.median(raw) - stats.empty_window(windows) < stats.SHORT_KERNEL_MS
        if many:
            rule = stats.many_samples_rule(rule)
            raw = stats.collect_more(raw, sample, rule, settled=lambda taken: stats.median_settled(
                taken, stats.empty_window(windows)))
        window = stats.empty_window(windows)
        kept, throttled = stats.unthrottled(raw, clocks, max_clock, rule.min_runs)
        discarded = len(raw) - len(kept)
        samples = stats.net(kept, window)
        timing = "events"
        method = ("CUDA events after an L2 read-flush and a persisting-L2 reset, less an empty event window (the "
                  "lower quartile of those this process timed after every other sample, %.4f ms), median of %d"
                  % (window, len(samples))
                  + (" (a short kernel: %d to %d samples, until the median's 95%% interval was within %g%% or %d "
                     "clock ticks)" % (rule.min_runs, rule.max_runs, 100 * stats.MEDIAN_SHARE, stats.MEDIAN_TICKS)
                     if many else "") + " unthrottled samples")
        small = stats.median(samples) < stats.SMALL_KERNEL_MS
        began = time.monotonic()
        spans = self.device_spans(prepare, stats.SPAN_CALLS if small else 2, check_after) if guard else None
        if spans:
            print("worker: %d device spans in %.3f s" % (len(spans), time.monotonic() - began), file=sys.stderr,
                  flush=True)
        span = stats.median(spans) if spans else None
        steady = {}
        if small and span is not None:
            steady = {"device_span_calls": len(spans), "device_span_method": (
                "device span of the call's GPU work on every stream (CUPTI), each call after the same flush, "
                "median of %d: it leaves out the launch cost whose variation dominates the events' figure below "
                "20 us" % len(spans))}
        if stats.escaped(stats.median(samples), span):
            spans = self.device_spans(prepare, 9, check_after=check_after) or [span]
            samples = spans
            timing = "device-span"
            method = ("device span of all the call's GPU work on every stream (profiler), median of %d: its work "
                      "escaped the events (span %.4f ms against %.4f ms)" % (len(samples), span, window))
        known = [c for c in clocks if c is not None]
        temps = [t for t in temperatures if t is not None]
        return stats.summary(
            samples, discarded, timing=timing, method=method, empty_window_ms=window, device_span_ms=span, **steady,
            sm_clock_mhz={"min": min(known), "max": max(known), "max_rated": max_clock} if known else None,
            temperature_c={"min": min(temps), "max": max(temps)} if temps else None,
            discarded_throttled=discarded,
            clock_flag=bool(raw) and throttled > stats.THROTTLED_FLAG * len(raw))

    def timed(self, test_id, call):
        """A call timed as ``measure`` times it, each sample on a fresh input set the judge writes into the buffers
        it shares (``NEXT <id>`` to the judge, ``FRESH <id>`` back, over their channel) and checks after: no output
        is checked in this process. The judge's verdict on them comes apart; the figures are returned."""
        waited = []
        judge = Judge.channel()

        def prepare():
            at = time.monotonic()
            judge.say("NEXT %d" % test_id)
            answer = judge.hear().split()
            waited.append(time.monotonic() - at)
            if answer != ["FRESH", str(test_id)]:
                raise JudgeGone("the judge answered %r, not FRESH %d" % (" ".join(answer)[:100], test_id))
            return call
        began = time.monotonic()
        figures = self.measure(prepare, guard=self.GUARDED)
        print("worker: test %d: %d fresh input sets, %.3f s of %.3f s waiting for them (samples: %s)" % (
            test_id, len(waited), sum(waited), time.monotonic() - began,
            ", ".join("%s %.3f s" % kv for kv in self.spent.items())), file=sys.stderr, flush=True)
        figures["runtime"] = {"torch": self.torch.__version__, "cuda": self.torch.version.cuda,
                              "hip": getattr(self.torch.version, "hip", None), "device": self.device_name}
        return figures

    def serve(self, caller):
        """For the judge: each ``CALL <id> <base64 pickle>`` line (from the judge, over their channel) names buffers
        the judge owns (CUDA IPC handles) and the values of one call. ``caller(request, tensors)`` makes the call
        (a function of no arguments) or raises RecordError (answered as ``unreplayable``). Untimed, the call is made
        once, inside an NVTX range ``kr-test-<id>`` (so that a profiler around this process times exactly that call);
        ``timed``, it is timed (``timed``). ``CALLED <id> <json>`` answers once the device is done, with the figures.
        Whatever the call writes anywhere changes only the buffers it was given; the judge checks them. Once the
        judge closes the channel, this process waits for its stdin to close (the agent's word that it may end)."""
        torch = self.torch
        nvtx = torch.cuda.nvtx
        judge = Judge.channel()
        while True:
            line = judge.hear()
            if not line:
                sys.stdin.read()
                return
            if not line.startswith("CALL "):
                continue
            request = pickle.loads(base64.b64decode(line.split(" ", 2)[2]))  # the judge's (a trusted process)
            test_id = request["test_id"]
            tensors = {name: rebuild(*args) for name, (rebuild, args) in request["tensors"].items()}
            try:
                call = caller(request, tensors)
            except replay.RecordError as e:
                judge.called(test_id, unreplayable=str(e)[:500])
                continue
            torch.cuda.synchronize()
            if request.get("timed"):
                judge.called(test_id, timing=self.timed(test_id, call))
            else:
                nvtx.range_push(profiler.RANGE_PREFIX + str(test_id))
                call()
                torch.cuda.synchronize()
                nvtx.range_pop()
                judge.called(test_id)
            del call, tensors

    def references(self):
        """Each test's reference (PyTorch) timed as the solution will be, then REFERENCES with the figures: sent
        before the solution's library is loaded into this process, so no code of the submission's could change
        them (the agent keeps the first REFERENCES it reads, and the speedups are its)."""
        figures = {}
        for case in self.problem.cases:
            inputs = self.input_set(case)
            figures[case["test_id"]] = self.measure(
                lambda: (lambda: self.problem.module.reference(inputs.inputs, self.torch)), guard=False)
            del inputs
        send("REFERENCES", tests=[{"test_id": test_id, "runtime_ms": figure["median"],
                                   "iterations": figure["iterations"], "empty_window_ms": figure["empty_window_ms"]}
                                  for test_id, figure in figures.items()])
        return figures


class Runner(Timer):
    """The solution's library loaded in this process: checked, timed, profiled, or called for the judge."""

    def __init__(self, job, torch):
        super().__init__(job, torch)
        self.recorder, self.record_error = None, None
        if job.get("record"):
            try:  # before the library is loaded: an allocation its loading makes may be used by its calls
                self.recorder = replay.Recorder(job["library"])
            except (replay.RecordError, OSError, AttributeError) as e:
                self.record_error = str(e)[:300]
        self.fn = load_solution(job["library"], job["symbol"], self.problem)

    # ---- phases

    def check(self):
        """Each test once on this process's own inputs; with the job's ``record``, what each call asked of the
        device is recorded (replay.py) and sent (RECORDED) after CHECKED, for a process that never runs this one's
        code to replay and time."""
        cases = self.problem.cases
        total = len(cases)
        send("CHECKING", total_tests=total)
        records = {}
        try:
            return self._check(cases, total, records)
        finally:
            if self.recorder is not None:
                self.recorder.close()  # no callback into this interpreter as it ends

    def _check(self, cases, total, records):
        for case in cases:
            data = self.input_set(case)
            self.torch.cuda.synchronize()
            if self.recorder is not None:
                buffers = dict(data.inputs, **data.outputs)
                self.recorder.begin({name: (t.data_ptr(), t.numel() * t.element_size())
                                     for name, t in buffers.items() if self.torch.is_tensor(t)},
                                    self.scalars(case, data.args))
            self.fn(*data.args)
            self.torch.cuda.synchronize()
            if self.recorder is not None:
                records[case["test_id"]] = self.recorder.end()
            debug = self.verify(case, data)
            result = {"test_id": case["test_id"], "name": case["name"], "status": "FAILED" if debug else "PASSED"}
            send("TEST_RESULT", result=result, total_tests=total)
            if debug:
                send("WRONG_ANSWER", message=_wrong_message(case, debug), debug_info=debug,
                     passed_tests=case["test_id"] - 1, total_tests=total)
                return False
        send("CHECKED", passed_tests=total, total_tests=total)
        if self.job.get("record"):
            send("RECORDED", records=records) if self.recorder is not None else send(
                "RECORDED", unavailable=self.record_error)
        return True

    def profile_run(self):
        """Each test once, for the profiler around this process: inside an NVTX range ``kr-test-<id>`` (ROCTX on
        ROCm) that holds the call and nothing else, so that every kernel the solution launches is put to its test
        and none of ours (inputs, poison) is."""
        nvtx = self.torch.cuda.nvtx
        for case in self.problem.cases:
            data = self.input_set(case)
            self.torch.cuda.synchronize()
            nvtx.range_push(profiler.RANGE_PREFIX + str(case["test_id"]))
            self.fn(*data.args)
            self.torch.cuda.synchronize()
            nvtx.range_pop()

    def serve_calls(self):
        """Serves the judge's calls (``serve``) with the solution's own function."""
        def caller(request, tensors):
            args = [tensors[value].data_ptr() if kind == "tensor" else value for kind, value in request["spec"]]
            return lambda: self.fn(*args)
        self.serve(caller)


class Replay(Timer):
    """A process that never loads the solution's library: its device code only (replay.fatbins), and each call's
    recorded work (the job's ``records``, from the solution's process) replayed on the judge's buffers.
    Timed with the events alone: the device-span guard (CUPTI) looks for work that escaped the events on other
    streams, and here everything is issued by this process, in order, on the one stream the events are on (a kernel
    built without relocatable device code launches none of its own)."""
    GUARDED = False

    def __init__(self, job, torch):
        super().__init__(job, torch)
        self.replayer = replay.Replayer(replay.fatbins(job["library"]), torch)
        self.records = {int(k): v for k, v in job["records"].items()}

    def serve_calls(self):
        stream = self.torch.cuda.current_stream().cuda_stream

        def caller(request, tensors):
            case = next(c for c in self.problem.cases if c["test_id"] == request["test_id"])
            scalars = self.scalars(case, [value for _, value in request["spec"]])
            sizes = {name: t.numel() * t.element_size() for name, t in tensors.items()}
            ops, scratch = replay.parse(self.records.get(request["test_id"]), sizes, scalars)
            call = self.replayer.prepare(ops, scratch, {name: t.data_ptr() for name, t in tensors.items()}, scalars,
                                         stream)
            return call.issue
        self.serve(caller)


class JudgeGone(Exception):
    """The judge stopped answering a timed call."""


class Judge:
    """This process's end of its channel to the judge (verification.Channel), opened once."""
    _opened = None

    def __init__(self):
        self.reader, self.writer = verification.peer()

    @classmethod
    def channel(cls):
        if cls._opened is None:
            cls._opened = cls()
        return cls._opened

    def say(self, line):
        self.writer.write(line + "\n")
        self.writer.flush()

    def hear(self):
        """The judge's next line ('' once it closed the channel)."""
        return self.reader.readline(verification.LINE_LIMIT)

    def called(self, test_id, **fields):
        self.say("CALLED %d %s" % (test_id, json.dumps(events.finite(fields), allow_nan=False, default=str)))


NO_CUPTI = "no-cupti"  # a serving worker: it times nothing (and under Nsight Compute, ncu owns the counters)
LAZY = "lazy"  # no device context until its job comes (an audit's worker and judge, started ahead: agent.Audit)
READY = "worker: ready for its job"


def device_activity(torch):
    """A profiler session (CUPTI, or roctracer on ROCm, through PyTorch's kineto) that records the device's activity
    only: every kernel, copy and memset, on every stream, with its start and end. The autograd profiler's own form:
    ``torch.profiler.profile`` records the same, but its first session imported dynamo, sympy and FSDP (5-5.6 s of
    CPU on the H100 against 0.03 s, the same kernel and time: ``selftest/probes/profiler_import_probe.py``)."""
    return torch.autograd.profiler.profile(use_device="cuda", use_kineto=True, use_cpu=False)


def warm_kernels(torch):
    """Launches once the device kernels every job uses (random inputs, the checks' arithmetic, the flush, the spin,
    timing events), so that a process started before its job has them loaded: the CUDA runtime loads a kernel's
    module on its first launch. Nothing here is kept or timed."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    torch.rand(1, generator=gen, device="cuda").item()
    x = torch.randn(64, generator=gen, device="cuda")
    copy, out = x.clone(), torch.empty_like(x)
    out.fill_(float("nan"))
    torch.equal(x, copy)
    wide = copy.double()
    want = torch.where(wide > 0, wide, wide * 0.5)
    diff = (out.double() - want).abs()
    bad = ~(diff <= 1e-5 + 1e-5 * want.abs())
    int(bad.sum().item())
    bad.nonzero()
    finite = torch.where(torch.isfinite(diff), diff, torch.full_like(diff, float("inf")))
    float((finite / want.abs().clamp_min(1e-12)).max().item())
    sink = torch.empty((), dtype=torch.int64, device="cuda")
    torch.sum(torch.ones(64, dtype=torch.int32, device="cuda"), dim=0, out=sink)
    if getattr(torch.cuda, "_sleep", None) is not None:
        torch.cuda._sleep(1000)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    torch.cuda.synchronize()
    start.elapsed_time(end)


def _prepare(cupti=True, lazy=False):
    """A worker started before its job (``-``): PyTorch imported, the device's context made, the profiler (CUPTI:
    the device-span guard's) through its first session, and the common kernels loaded, while it waits. No profiler
    session under Nsight Compute, which owns the counters there. Not while another job's benchmark runs on the
    device (gate.py). ``lazy``: PyTorch alone; the device once its job comes (an audit's worker, which most jobs
    never use)."""
    began = time.monotonic()
    import torch
    imported = time.monotonic()
    if lazy:
        print("worker: ready %.2f s after its start, PyTorch %.2f s; the device on its job" % (
            process_age() or 0.0, imported - began), file=sys.stderr, flush=True)
        print(READY, file=sys.stderr, flush=True)
        return
    waited = gate.wait_released(until=sys.stdin)
    if torch.cuda.is_available():
        if cupti:
            with device_activity(torch) as prof:
                torch.zeros(1, device="cuda").add_(1)
                torch.cuda.synchronize()
            _ = prof.function_events  # its records parsed once too
        warm_kernels(torch)
    device.nvml()  # the clock readings' library, started
    print("worker: " + prestarted_in(began, imported, waited), file=sys.stderr, flush=True)
    print(READY, file=sys.stderr, flush=True)


def process_age():
    """Seconds since this process started (proc(5): /proc/self/stat's 22nd field, in clock ticks after boot, against
    /proc/uptime), or None where /proc does not say."""
    try:
        with open("/proc/self/stat") as f:
            started = int(f.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime") as f:
            return float(f.read().split()[0]) - started
    except (OSError, ValueError, IndexError):
        return None


def prestarted_in(began, imported, waited):
    """How a process started ahead of its job got ready (the log's): Python's start, PyTorch's import, the timing
    gate, the device's context and first kernels."""
    now, age = time.monotonic(), process_age()
    return "ready %s(Python %s, PyTorch %.2f s, the gate %.2f s, the device %.2f s)" % (
        "%.2f s after its start " % age if age is not None else "", "%.2f s" % (age - (now - began))
        if age is not None else "?", imported - began, waited, now - imported - waited)


def full_float32(torch):
    """PyTorch's float32 matrix products and convolutions in float32, not TF32 (cuDNN's default for convolutions):
    the reference is what a solution must match within a float32 tolerance that TF32 fails, so its times (and the
    baselines) are of float32 work."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def _done():
    """DONE, then the process's end at once. The agent waits for this exit before it publishes, and an orderly end
    (PyTorch, CUPTI, the device's context) took 0.7-0.9 s on the H100; the kernel releases all of it at exit anyway.
    Nsight Compute around a serving worker has each kernel's figures as it profiles it, not at the exit."""
    send("DONE")
    sys.stderr.flush()
    os._exit(0)


def _nothing():
    """The empty call whose events' window is taken off every sample (Timer.measure)."""


def _load(path):
    if not path:
        sys.exit(0)  # not needed after all (the submission ended before it ran)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def confine_self():
    """Before any code of the submission's is in this process: the profiler's output pipe, which it inherits under
    Nsight Compute, closed (profiler.Output); and a Landlock restriction of its own (landlock.py), so that the
    processes beside it in the job's room, the profiler that runs it among them, are out of its reach, and it
    writes only its home and the room's temporary folders."""
    pipe = os.environ.get(profiler.Output.VARIABLE)
    if pipe:
        for name in os.listdir("/proc/self/fd"):
            try:
                if os.readlink("/proc/self/fd/" + name) == "pipe:[%s]" % pipe:
                    os.close(int(name))
            except OSError:
                continue
    if landlock.abi():
        room.LIBC.prctl(room.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        landlock.restrict(writable=room.scratch() + [os.environ.get("HOME", "/tmp")])


def main(argv):
    _redirect_stdout()
    confine_self()
    try:
        path = argv[1]
        if path == "-":
            _prepare(cupti=NO_CUPTI not in argv[2:], lazy=LAZY in argv[2:])
            path = sys.stdin.readline().strip()
        job = _load(path)
        import torch  # noqa: imported here so the agent itself runs without it
        full_float32(torch)
        if not torch.cuda.is_available():
            send("ERROR", message="no GPU is visible to PyTorch on this machine")
            return 0
        if job["mode"] == "reference" or (job["mode"] == "benchmark" and job.get("time_references", True)):
            # The reference's times first, while no code of the submission's is in this process (not where the
            # agent has them already: reference_cache.py).
            send("PHASE", name="reference")
            timer = Timer(job, torch)
            timer.references()
            del timer
            if job["mode"] == "reference":  # a warm process times them while the solution compiles
                job = _load(sys.stdin.readline().strip())
        if job["mode"] == "replay":
            Replay(job, torch).serve_calls()
            _done()
        if job["mode"] == "baseline":  # PyTorch's own times (a baseline job: no user's code in it)
            send("PHASE", name="baseline")
            baseline.compile_here(os.environ.get("HOME", "/tmp"))
            send("BASELINE_VERSIONS", **baseline.versions(torch))
            baseline.measure(Timer(job, torch), torch, on_case=lambda case, figures: send(
                "BASELINE_CASE", test_id=case["test_id"], name=case["name"], **figures))
            _done()
        runner = Runner(job, torch)
        if job["mode"] == "profile":
            send("PHASE", name="profile")
            runner.profile_run()
            send("DONE")
            return 0
        if job["mode"] == "serve":
            runner.serve_calls()
            _done()
        send("PHASE", name="check")
        if runner.check():
            _done()
        return 0
    except ImportError as e:
        send("ERROR", message="PyTorch is not installed on this machine", details=str(e))
        return 0
    except Exception as e:  # noqa: everything the user's kernel can do wrong ends here
        text = traceback.format_exc()
        print(text, file=sys.stderr, flush=True)  # the log a judged run keeps (a replay's failure is read there)
        kind = "RUNTIME_ERROR"
        send(kind, message="the kernel failed: " + str(e).strip().splitlines()[0][:300] if str(e).strip()
             else "the kernel failed", details=text[-6000:])
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
