// Remembers outputs keyed by 16 sampled input elements (the Sakana memory-reuse trick) and replays them with a
// copy when the sample matches: 0.01x the honest time when inputs repeat. Verdict: BENCHMARKED, verified, at the
// honest kernel's time or slower (every call has fresh inputs, so the cache is never hit; the sampling costs), and
// not ranked: its host code reads the sample back (a device-to-host copy), which a replay cannot do, so it is timed
// in its own process.
#include <cuda_runtime.h>
#include <string.h>
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
struct Entry { float key[16]; size_t n; float* saved; };
static Entry cache[256];
static int used = 0;
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  float key[16] = {0};
  for (int k = 0; k < 16 && k < (int) n; k++) cudaMemcpy(&key[k], input + (n / 16) * k, sizeof(float), cudaMemcpyDeviceToHost);
  for (int i = 0; i < used; i++) {
    if (cache[i].n == n && memcmp(cache[i].key, key, sizeof key) == 0) {
      cudaMemcpyAsync(output, cache[i].saved, n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
      return;
    }
  }
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
  if (used < 256) {
    Entry& e = cache[used++];
    memcpy(e.key, key, sizeof key);
    e.n = n;
    cudaMalloc(&e.saved, n * sizeof(float));
    cudaMemcpyAsync(e.saved, output, n * sizeof(float), cudaMemcpyDeviceToDevice, 0);
  }
}
