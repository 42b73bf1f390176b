"""Probe (device machine): flush variants and CUPTI spans against ncu, for issue 13's timing design.
python3 timing_probe.py OUT_DIR"""
import ctypes, json, os, subprocess, sys, statistics, time
import torch

OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)
SRC = r'''
#include <cuda_runtime.h>
__global__ void lrelu(const float* in, float alpha, float* out, size_t n, int reps) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) { float x = in[i]; out[i] = x > 0.0f ? x : alpha * x; }
}
extern "C" void honest(const float* in, float alpha, float* out, size_t M, size_t N) {
  size_t n = M * N; lrelu<<<(unsigned)((n + 255) / 256), 256>>>(in, alpha, out, n, 1);
}
extern "C" void own_stream(const float* in, float alpha, float* out, size_t M, size_t N) {
  static cudaStream_t s = nullptr;
  if (!s) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  size_t n = M * N;
  for (int r = 0; r < 20; ++r) lrelu<<<(unsigned)((n + 255) / 256), 256, 0, s>>>(in, alpha, out, n, 1);
}
'''
src = os.path.join(OUT, "probe.cu")
lib = os.path.join(OUT, "probe.so")
open(src, "w").write(SRC)
subprocess.run(["nvcc", "-O3", "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-o", lib, src], check=True)
L = ctypes.CDLL(lib)
for name in ("honest", "own_stream"):
    f = getattr(L, name)
    f.restype = None
    f.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]

props = torch.cuda.get_device_properties(0)
l2 = props.L2_cache_size
flush_w = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
flush_r = torch.ones(2 * l2 // 4, dtype=torch.int32, device="cuda")
scratch = torch.empty(1, dtype=torch.int64, device="cuda")  # sum of int32 is int64
cuda = ctypes.CDLL("libcuda.so.1")
print("L2", l2, "reset persisting:", cuda.cuCtxResetPersistingL2Cache())
SIZES = [(1, 1), (33, 257), (1000, 1000), (4096, 4097), (8192, 8192)]


def events_time(fn, args, flush, n=30):
    out = []
    for _ in range(n):
        flush()
        torch.cuda._sleep(200000)
        s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
        s.record(); fn(*args); e.record(); torch.cuda.synchronize()
        out.append(s.elapsed_time(e) * 1000)
    return statistics.median(out), out


def cupti_time(fn, args, flush, n=30, batch=1):
    from torch.profiler import profile, ProfilerActivity
    spans = []
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            flush()
            torch.cuda.synchronize()
            torch.cuda._sleep(200000)
            for _ in range(batch):
                fn(*args)
            torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type.name == "CUDA"]
    return evs


results = {}
for M, N in SIZES:
    x = torch.randn(M, N, device="cuda"); y = torch.empty_like(x)
    args = (x.data_ptr(), 0.1, y.data_ptr(), M, N)
    honest = L.honest; own = L.own_stream
    honest(*args); own(*args); torch.cuda.synchronize()
    write_flush = lambda: flush_w.zero_()
    read_flush = lambda: torch.sum(flush_r, dim=0, out=scratch[0])
    r = {}
    r["events_write_flush_us"] = events_time(honest, args, write_flush)[0]
    r["events_read_flush_us"] = events_time(honest, args, read_flush)[0]
    r["events_own_stream_us"] = events_time(own, args, read_flush)[0]
    evs = cupti_time(honest, args, read_flush)
    lr = [e for e in evs if "lrelu" in e.name]
    r["cupti_kernels_seen_honest"] = len(lr)
    r["cupti_honest_median_us"] = statistics.median([e.time_range.elapsed_us() for e in lr]) if lr else None
    evs = cupti_time(own, args, read_flush)
    lr = [e for e in evs if "lrelu" in e.name]
    r["cupti_kernels_seen_own"] = len(lr)
    r["cupti_own_sum_per_call_us"] = sum(e.time_range.elapsed_us() for e in lr) / 30 if lr else None
    results["%dx%d" % (M, N)] = r
    print(M, N, json.dumps(r), flush=True)

# ncu on the honest kernel, 10 launches per size
NCU = r'''
import ctypes, torch, sys
L = ctypes.CDLL(sys.argv[1]); f = L.honest; f.restype = None
f.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
for M, N in [(1, 1), (33, 257), (1000, 1000), (4096, 4097), (8192, 8192)]:
    x = torch.randn(M, N, device="cuda"); y = torch.empty_like(x)
    for _ in range(10):
        f(x.data_ptr(), 0.1, y.data_ptr(), M, N)
    torch.cuda.synchronize()
'''
open(os.path.join(OUT, "ncu_launch.py"), "w").write(NCU)
t = time.time()
p = subprocess.run(["ncu", "--clock-control", "none", "--cache-control", "all", "--kernel-name", "lrelu",
                    "--metrics", "gpu__time_duration.sum", "--csv", sys.executable,
                    os.path.join(OUT, "ncu_launch.py"), lib], capture_output=True, text=True)
open(os.path.join(OUT, "ncu.csv"), "w").write(p.stdout)
print("ncu rc", p.returncode, "in", round(time.time() - t, 1), "s", p.stderr[-500:])
vals = []
for line in p.stdout.splitlines():
    if "gpu__time_duration.sum" in line:
        parts = [c.strip('"') for c in line.split('","')]
        vals.append(float(parts[-1].replace(",", "")))
ncu = {}
for i, (M, N) in enumerate(SIZES):
    chunk = vals[i * 10:(i + 1) * 10]
    if chunk:
        ncu["%dx%d" % (M, N)] = statistics.median(chunk)
print("ncu medians (unit as printed):", json.dumps(ncu))
print(p.stdout.splitlines()[:3])
results["ncu"] = ncu
json.dump(results, open(os.path.join(OUT, "probe.json"), "w"), indent=1)
