#!/usr/bin/env bash
# Probe (device machine) for profile mode: what Nsight Compute prints for one call of a kernel, how big its report
# is, and how long it takes. bash ncu_profile_probe.sh OUT_DIR
set -u
out="$1"; mkdir -p "$out"; cd "$(dirname "$0")"
cat > "$out/k.cu" <<'CU'
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) { float x = in[i]; out[i] = x > 0.0f ? x : alpha * x; }
}
extern "C" void honest(const float* in, float alpha, float* out, size_t M, size_t N) {
  size_t n = M * N; lrelu<<<(unsigned)((n + 255) / 256), 256>>>(in, alpha, out, n);
}
CU
nvcc -O3 -shared -Xcompiler -fPIC -arch=sm_90 -lineinfo -o "$out/k.so" "$out/k.cu"
cat > "$out/call.py" <<'PY'
import ctypes, sys, torch
f = ctypes.CDLL(sys.argv[1]).honest; f.restype = None
f.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
for M, N in [(1000, 1000), (8192, 8192)]:
    x = torch.randn(M, N, device="cuda"); y = torch.empty_like(x); torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("kr-test-%dx%d" % (M, N))
    f(x.data_ptr(), 0.1, y.data_ptr(), M, N)
    torch.cuda.nvtx.range_pop(); torch.cuda.synchronize()
PY
metrics="gpu__time_duration.sum,dram__bytes.sum.per_second,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__grid_size,launch__block_size"
start=$(date +%s%N)
ncu --nvtx --nvtx-include "regex:kr-test-.*/" --kernel-name lrelu --metrics "$metrics" --csv python3 "$out/call.py" "$out/k.so" > "$out/metrics.csv" 2> "$out/metrics.err"
echo "metrics run: $(( ($(date +%s%N) - start) / 1000000 )) ms"
head -5 "$out/metrics.csv" | cut -c1-400
start=$(date +%s%N)
ncu --nvtx --nvtx-include "regex:kr-test-.*/" --section SpeedOfLight --section Occupancy --section LaunchStats -o "$out/report" -f python3 "$out/call.py" "$out/k.so" > "$out/report.log" 2>&1
echo "report run: $(( ($(date +%s%N) - start) / 1000000 )) ms"; ls -la "$out"/report*
ncu --import "$out/report.ncu-rep" --csv --page details --print-rule-details > "$out/details.csv" 2>&1
wc -l "$out/details.csv"; grep -i "rule\|OPT\|INF\|WRN" "$out/details.csv" | head -8 | cut -c1-500
ncu --import "$out/report.ncu-rep" --page details --print-rule-details 2>&1 | sed -n 1,60p
# The agent's own command lines (remote_agent/profiler.py) over the same calls: the raw page its parser reads.
PYTHONPATH=../.. python3 - "$out" <<'PY'
import subprocess, sys
from remote_agent import profiler
out = sys.argv[1]
argv = profiler.ncu_command("ncu", out + "/agent", out + "/agent-ncu.log", ["python3", out + "/call.py", out + "/k.so"])
subprocess.run(argv, check=True)
raw, details = profiler.ncu_import_commands("ncu", out + "/agent.ncu-rep")
open(out + "/raw.csv", "w").write(subprocess.run(raw, capture_output=True, text=True).stdout)
open(out + "/details-agent.csv", "w").write(subprocess.run(details, capture_output=True, text=True).stdout)
print(profiler.ncu_tests(open(out + "/raw.csv").read(), open(out + "/details-agent.csv").read()))
PY
