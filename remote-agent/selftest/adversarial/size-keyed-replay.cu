// Computes each problem size once and replays that output for every later call of the same size: what a solution
// that regenerates its inputs from a public seed (or assumes they repeat) gets away with. Verdict: WRONG_ANSWER
// (every call has inputs of its own, drawn from a secret or fresh randomness) in its own process; replayed,
// BENCHMARKED no faster than the honest kernel (its recorded call computed and saved: the replay does both).
#include <cuda_runtime.h>
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
struct Entry { size_t n; float* saved; };
static Entry seen[16];
static int used = 0;
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  for (int i = 0; i < used; i++) {
    if (seen[i].n == n) {
      cudaMemcpyAsync(output, seen[i].saved, n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
      return;
    }
  }
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
  if (used < 16) {
    cudaMalloc(&seen[used].saved, n * sizeof(float));
    cudaMemcpyAsync(seen[used].saved, output, n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
    seen[used++].n = n;
  }
}
