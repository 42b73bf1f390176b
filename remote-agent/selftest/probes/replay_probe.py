"""The trusted replay's first contact with a GPU (issue 26): which driver callback a runtime launch fires, what
handle and names CUPTI gives, whether the recorder's layout lookups work, and whether a replay in a second process
reproduces the call. ``python3 replay_probe.py OUT``; writes OUT/replay-probe.json and prints it.

Builds three solutions with the machine's nvcc (the agent's own flags): leaky-relu with a random scalar (one
kernel), a two-kernel solution with a cudaMemset and a scratch cudaMalloc, and a kernel with large dynamic shared
memory. Records each call with replay.Recorder, then replays the record in a fresh process (Replayer) on new buffers
and compares the outputs with the reference."""
import ctypes
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from remote_agent import compiler, replay  # noqa: E402

SOURCES = {
    "one-kernel": r'''
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
extern "C" void solution(const float* in, float alpha, float* out, size_t n) {
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(in, alpha, out, n);
}''',
    "two-kernels-memset-scratch": r'''
__global__ void twice(const float* in, float* tmp, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) tmp[i] = 2.0f * in[i];
}
__global__ void add(const float* tmp, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] += tmp[i] * alpha;
}
extern "C" void solution(const float* in, float alpha, float* out, size_t n) {
  static float* tmp = nullptr;
  if (!tmp) cudaMalloc(&tmp, n * sizeof(float));
  cudaMemset(out, 0, n * sizeof(float));
  twice<<<(unsigned)((n + 255) / 256), 256>>>(in, tmp, n);
  add<<<(unsigned)((n + 255) / 256), 256>>>(tmp, alpha, out, n);
}''',
    "big-shared": r'''
__global__ void viaShared(const float* in, float alpha, float* out, size_t n) {
  extern __shared__ float buf[];
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  buf[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = buf[threadIdx.x] > 0.0f ? buf[threadIdx.x] : alpha * buf[threadIdx.x];
}
extern "C" void solution(const float* in, float alpha, float* out, size_t n) {
  cudaFuncSetAttribute(viaShared, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024);
  viaShared<<<(unsigned)((n + 255) / 256), 256, 64 * 1024>>>(in, out == nullptr ? 0 : alpha, out, n);
}''',
}

RECORD = r'''
import ctypes, json, sys, torch
sys.path.insert(0, sys.argv[3])
from remote_agent import replay
seen = []
class Watching(replay.Recorder):
    def _record(self, name, info):
        if self.ops is not None and info.site == replay.API_ENTER and name.startswith(("cuLaunch", "cuMemset",
                                                                                        "cuMemcpy", "cuMemAlloc")):
            seen.append({"function": (info.function_name or b"").decode(), "symbol": (info.symbol_name or b"").decode()})
        super()._record(name, info)
torch.zeros(1, device="cuda")
recorder = Watching(sys.argv[1])
lib = ctypes.CDLL(sys.argv[1])
lib.solution.argtypes = [ctypes.c_void_p, ctypes.c_float, ctypes.c_void_p, ctypes.c_size_t]
n = 1 << 20
x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
torch.cuda.synchronize()
recorder.begin({"input": (x.data_ptr(), 4 * n), "output": (y.data_ptr(), 4 * n)},
               {"alpha": replay.scalar_bytes("float", 0.125)})
lib.solution(x.data_ptr(), 0.125, y.data_ptr(), n)
torch.cuda.synchronize()
record = recorder.end()
recorder.close()
print(json.dumps({"record": record, "seen": seen}))
'''

REPLAY = r'''
import json, sys, torch
sys.path.insert(0, sys.argv[3])
from remote_agent import replay
record = json.loads(sys.argv[2])
n = 1 << 20
torch.zeros(1, device="cuda")
x, y = torch.randn(n, device="cuda"), torch.full((n,), float("nan"), device="cuda")
alpha = 0.3
ops, scratch = replay.parse(record, {"input": 4 * n, "output": 4 * n}, {"alpha": replay.scalar_bytes("float", alpha)})
replayer = replay.Replayer(replay.fatbins(sys.argv[1]), torch)
call = replayer.prepare(ops, scratch, {"input": x.data_ptr(), "output": y.data_ptr()},
                        {"alpha": replay.scalar_bytes("float", alpha)}, torch.cuda.current_stream().cuda_stream)
call.issue()
torch.cuda.synchronize()
want = 2 * x * alpha if sys.argv[4] == "two-kernels-memset-scratch" else torch.where(x > 0, x, x * alpha)
print(json.dumps({"ops": [op["op"] + (":" + op["kernel"] if op["op"] == "launch" else "") for op in ops],
                  "max_error": float((y - want).abs().max().item())}))
'''


def main(out):
    os.makedirs(out, exist_ok=True)
    toolchain = compiler.detect("cuda")
    python = sys.executable
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    results = {"toolchain": toolchain.version if toolchain else None}
    with tempfile.TemporaryDirectory() as folder:
        for name, source in SOURCES.items():
            path = os.path.join(folder, name + ".cu")
            with open(path, "w") as f:
                f.write(source)
            library = os.path.join(folder, name + ".so")
            built = subprocess.run(toolchain.command("cuda", path, library), capture_output=True, text=True)
            entry = {"build": built.returncode, "build_output": built.stderr[-2000:]}
            if built.returncode == 0:
                recorded = subprocess.run([python, "-c", RECORD, library, "", root], capture_output=True, text=True,
                                          timeout=120)
                entry["record_stderr"] = recorded.stderr[-3000:]
                try:
                    entry.update(json.loads(recorded.stdout.strip().splitlines()[-1]))
                except (ValueError, IndexError):
                    entry["record_stdout"] = recorded.stdout[-2000:]
                if isinstance(entry.get("record"), dict) and entry["record"].get("ops"):
                    replayed = subprocess.run([python, "-c", REPLAY, library, json.dumps(entry["record"]), root, name],
                                              capture_output=True, text=True, timeout=120)
                    entry["replay_stderr"] = replayed.stderr[-3000:]
                    try:
                        entry["replay"] = json.loads(replayed.stdout.strip().splitlines()[-1])
                    except (ValueError, IndexError):
                        entry["replay_stdout"] = replayed.stdout[-2000:]
            results[name] = entry
    with open(os.path.join(out, "replay-probe.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/replay-probe")
