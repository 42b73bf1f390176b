"""Probe (device machine): is the per-process offset of small kernels' times (shared by events, a %globaltimer
bracket and Nsight Compute, front_end_probe.py) a property of the stream (hardware channel) or of the loaded
module (the kernel's code address)? In each of 10 processes: leaky-relu timed the agent's way (events less the
empty window, read-flush + spin, median of 40) on each of 8 fresh streams x 3 copies of the library (each copy a
module of its own). Per process: the spread between its 24 cells, and the median of them (the estimator).
python3 channel_probe.py OUT_DIR [child]"""
import ctypes, json, os, shutil, statistics, subprocess, sys
OUT = sys.argv[1]
SIZES = [(1, 1), (33, 257), (1000, 1000), (4096, 4097)]
STREAMS, COPIES, SAMPLES = 8, 3, 40
if len(sys.argv) > 2:
    import torch
    fns = []
    for c in range(COPIES):
        lib = ctypes.CDLL(os.path.join(OUT, "probe%d.so" % c))
        fn = lib.honest
        fn.restype = None
        fn.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
        fns.append(fn)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    src = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
    sink = torch.empty((), dtype=torch.int64, device="cuda")
    streams = [torch.cuda.Stream() for _ in range(STREAMS)]

    def events(call, stream):
        with torch.cuda.stream(stream):
            torch.sum(src, dim=0, out=sink)
            torch.cuda._sleep(400000)
            s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
            s.record(); call(stream); e.record()
        torch.cuda.synchronize()
        return s.elapsed_time(e) * 1000

    out = {}
    empties = [statistics.median(events(lambda st: None, st) for _ in range(SAMPLES)) for st in streams]
    out["empty"] = empties
    for M, N in SIZES:
        x = torch.randn(M, N, device="cuda"); y = torch.empty_like(x)
        cells = []
        for c, fn in enumerate(fns):
            for i, st in enumerate(streams):
                # honest() takes the stream, so each cell's kernel runs on that cell's stream.
                call = lambda s_, fn=fn: fn(x.data_ptr(), 0.1, y.data_ptr(), M, N, ctypes.c_void_p(s_.cuda_stream))
                call(st); torch.cuda.synchronize()
                cells.append(statistics.median(events(call, st) for _ in range(SAMPLES)) - empties[i])
        out["%dx%d" % (M, N)] = cells
    print(json.dumps(out))
    sys.exit(0)
os.makedirs(OUT, exist_ok=True)
with open(os.path.join(OUT, "probe.cu"), "w") as fh:
    fh.write(r'''
#include <cuda_runtime.h>
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) { float x = in[i]; out[i] = x > 0.0f ? x : alpha * x; }
}
extern "C" void honest(const float* in, float alpha, float* out, size_t M, size_t N, cudaStream_t s) {
  size_t n = M * N; lrelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(in, alpha, out, n);
}
''')
subprocess.run(["nvcc", "-O3", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-o", os.path.join(OUT, "probe0.so"),
                os.path.join(OUT, "probe.cu")], check=True)
for c in range(1, COPIES):
    shutil.copy(os.path.join(OUT, "probe0.so"), os.path.join(OUT, "probe%d.so" % c))
runs = []
for _ in range(10):
    p = subprocess.run([sys.executable, __file__, OUT, "child"], capture_output=True, text=True)
    line = [l for l in p.stdout.splitlines() if l.startswith("{")]
    runs.append(json.loads(line[-1]) if line else {"error": p.stderr[-500:]})
with open(os.path.join(OUT, "channels.json"), "w") as fh:
    json.dump(runs, fh, indent=1)
print([r["error"] for r in runs if "error" in r][:1])
for M, N in SIZES:
    key = "%dx%d" % (M, N)
    per = [r[key] for r in runs if key in r]
    inside = [100 * (max(c) - min(c)) / statistics.median(c) for c in per]
    by_stream = [[statistics.median(c[s::STREAMS]) for s in range(STREAMS)] for c in per]
    by_copy = [[statistics.median(c[k * STREAMS:(k + 1) * STREAMS]) for k in range(COPIES)] for c in per]
    meds = [statistics.median(c) for c in per]
    firsts = [c[0] for c in per]
    m = statistics.median(meds)
    f = statistics.median(firsts)
    print("%-10s within a process: cells spread %s%%" % (key, [round(v, 1) for v in inside]))
    print("%-10s   process 0 by stream %s  by copy %s" % (key, [round(v, 3) for v in by_stream[0]],
                                                          [round(v, 3) for v in by_copy[0]]))
    print("%-10s one cell per process (the agent's way): median %.3f  spread %.1f%%" % (
        key, f, 100 * (max(firsts) - min(firsts)) / f))
    print("%-10s median of 24 cells per process:          median %.3f  spread %.1f%%" % (
        key, m, 100 * (max(meds) - min(meds)) / m))
print("empty windows by stream, process 0:", [round(v, 3) for v in runs[0].get("empty", [])])
