"""Probe (device machine): run-to-run spread of small-kernel figures, two ways, over 10 processes.
A: one call per sample after a read-flush, events less the empty window, median of 100 (the agent's way now).
B: a batch of 10 back-to-back calls per sample after one read-flush, (events - window) / 10, median of 30.
python3 small_spread_probe.py OUT_DIR [child]"""
import ctypes, json, os, statistics, subprocess, sys
OUT = sys.argv[1]
SIZES = [(1, 1), (33, 257), (1000, 1000)]
if len(sys.argv) > 2:
    import torch
    lib = ctypes.CDLL(os.path.join(OUT, "probe.so"))
    f = lib.honest
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    src = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    sink = torch.empty((), dtype=torch.int64, device="cuda")

    def window(k, call):
        torch.sum(src, dim=0, out=sink)
        torch.cuda._sleep(400000)
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(k):
            call()
        e.record(); torch.cuda.synchronize()
        return s.elapsed_time(e) * 1000

    empty = statistics.median(window(1, lambda: None) for _ in range(51))
    out = {"empty": empty}
    for M, N in SIZES:
        x = torch.randn(M, N, device="cuda"); y = torch.empty_like(x)
        call = lambda: f(x.data_ptr(), 0.1, y.data_ptr(), M, N)
        call(); torch.cuda.synchronize()
        a = statistics.median(max(0, window(1, call) - empty) for _ in range(100))
        b = statistics.median(max(0, window(10, call) - empty) / 10 for _ in range(30))
        out["%dx%d" % (M, N)] = {"A": a, "B": b}
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
print(json.dumps(runs[0]))
for M, N in SIZES:
    key = "%dx%d" % (M, N)
    for way in ("A", "B"):
        v = [r[key][way] for r in runs if key in r]
        med = statistics.median(v)
        print("%-10s %s  median %.3f us  min %.3f  max %.3f  spread %.1f%%" % (key, way, med, min(v), max(v),
                                                                           100 * (max(v) - min(v)) / med))
print("empty windows:", [round(r.get("empty", 0), 3) for r in runs])
