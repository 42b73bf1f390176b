"""Probe (device machine): run-to-run spread of leaky-relu's figure over 10 processes, three ways.
A: events less the empty window, one call per sample after a read-flush, median of 100 (the agent's way now).
C: the device span CUPTI records (PyTorch profiler) around one call per sample after the same flush, median of 100.
E: C, but the median of the kernel-only durations (sum of the call's kernels), without the span's gaps.
python3 span_spread_probe.py OUT_DIR [child]"""
import ctypes, json, os, statistics, subprocess, sys, time
OUT = sys.argv[1]
SIZES = [(1, 1), (33, 257), (1000, 1000), (4096, 4097)]
N_SAMPLES = 100
if len(sys.argv) > 2:
    import torch
    from torch.profiler import ProfilerActivity, profile
    lib = ctypes.CDLL(os.path.join(OUT, "probe.so"))
    f = lib.honest
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    src = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    sink = torch.empty((), dtype=torch.int64, device="cuda")

    def events(call):
        torch.sum(src, dim=0, out=sink)
        torch.cuda._sleep(400000)
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); call(); e.record(); torch.cuda.synchronize()
        return s.elapsed_time(e) * 1000

    def span(call):
        torch.sum(src, dim=0, out=sink)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            call(); torch.cuda.synchronize()
        dev = [e for e in prof.events() if e.device_type.name != "CPU"]
        s = min(e.time_range.start for e in dev); e_ = max(e.time_range.end for e in dev)
        kern = sum(e.time_range.end - e.time_range.start for e in dev)
        return float(e_ - s), float(kern)

    t0 = time.time()
    span(lambda: None if False else torch.cuda._sleep(10))  # CUPTI start-up
    startup = time.time() - t0
    empty = statistics.median(events(lambda: None) for _ in range(51))
    out = {"empty": empty, "cupti_startup_s": startup}
    for M, N in SIZES:
        x = torch.randn(M, N, device="cuda"); y = torch.empty_like(x)
        call = lambda: f(x.data_ptr(), 0.1, y.data_ptr(), M, N)
        call(); torch.cuda.synchronize()
        # Raw samples, the call and an empty window interleaved, for the estimators compared offline.
        pairs = [(events(call), events(lambda: None)) for _ in range(2 * N_SAMPLES)]
        out["raw_%dx%d" % (M, N)] = pairs
        a = statistics.median(max(0, c - empty) for c, _ in pairs[:N_SAMPLES])
        t0 = time.time()
        spans = [span(call) for _ in range(N_SAMPLES)]
        out["%dx%d" % (M, N)] = {"A": a, "C": statistics.median(s for s, _ in spans),
                                 "E": statistics.median(k for _, k in spans),
                                 "span_sample_ms": (time.time() - t0) * 1000 / N_SAMPLES}
    print(json.dumps(out))
    sys.exit(0)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "probe.cu"), "w") as f:
    f.write(r'''
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) { float x = in[i]; out[i] = x > 0.0f ? x : alpha * x; }
}
extern "C" void honest(const float* in, float alpha, float* out, size_t M, size_t N) {
  size_t n = M * N; lrelu<<<(unsigned)((n + 255) / 256), 256>>>(in, alpha, out, n);
}
''')
subprocess.run(["nvcc", "-O3", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-o", os.path.join(OUT, "probe.so"),
                os.path.join(OUT, "probe.cu")], check=True)
runs = []
for i in range(10):
    p = subprocess.run([sys.executable, __file__, OUT, "child"], capture_output=True, text=True)
    line = [l for l in p.stdout.splitlines() if l.startswith("{")]
    runs.append(json.loads(line[-1]) if line else {"error": p.stderr[-300:]})
with open(os.path.join(OUT, "span-spread.json"), "w") as fh:
    json.dump(runs, fh, indent=1)
print(json.dumps(runs[0]))
for M, N in SIZES:
    key = "%dx%d" % (M, N)
    for way in ("A", "C", "E"):
        v = [r[key][way] for r in runs if key in r]
        med = statistics.median(v)
        print("%-10s %s  median %.3f us  min %.3f  max %.3f  spread %.1f%%" % (key, way, med, min(v), max(v),
                                                                           100 * (max(v) - min(v)) / med))
def iqm(v):
    v = sorted(v); q = len(v) // 4
    return statistics.mean(v[q:len(v) - q])
ways = {"median(call)-median(window)": lambda p: statistics.median(c for c, _ in p) - statistics.median(w for _, w in p),
        "iqm(call)-iqm(window)": lambda p: iqm([c for c, _ in p]) - iqm([w for _, w in p]),
        "median(call-window) paired": lambda p: statistics.median(c - w for c, w in p),
        "iqm(call-window) paired": lambda p: iqm([c - w for c, w in p]),
        "mean(call)-mean(window)": lambda p: statistics.mean(c for c, _ in p) - statistics.mean(w for _, w in p)}
for M, N in SIZES:
    key = "raw_%dx%d" % (M, N)
    for label, fn in ways.items():
        v = [fn(r[key]) for r in runs if key in r]
        med = statistics.median(v)
        print("%-10s %-30s median %.3f us  min %.3f  max %.3f  spread %.1f%%" % (
            key[4:], label, med, min(v), max(v), 100 * (max(v) - min(v)) / med))
print("empty windows:", [round(r.get("empty", 0), 3) for r in runs])
print("span sample cost ms:", [round(r["1x1"]["span_sample_ms"], 2) for r in runs if "1x1" in r])
