// A kernel that behaves only where its host code vouches for it: the host sets a device flag (cudaMemcpyToSymbol)
// once, at its first call, before any call is recorded; the device code computes honestly when the flag is set and
// writes nothing (fast) when it is not, as in a replay that loads only the device code. The replay's outputs are
// then wrong and the judge says so: the result falls back to the solution's own process, and never ranks.
// Verdict: BENCHMARKED, not ranked.
#include <stdio.h>
__device__ int vouched = 0;
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  if (!vouched) return;  // "the replay": do nothing, fast
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
__attribute__((constructor)) static void vouch() {
  int one = 1;
  cudaMemcpyToSymbol(vouched, &one, sizeof one);  // at load: outside any recorded call
  fprintf(stderr, "KR-ATTACK-TRIED the device flag set at load\n");
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
