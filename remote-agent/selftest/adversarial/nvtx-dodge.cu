// Issue 26's first attack: Nsight Compute timed only the kernels inside the NVTX range kr-test-<id> that the
// solution's own process opened; this one closes the range, runs its real kernel outside it, opens it again and
// leaves a 2 us decoy inside. Before the replay it was published at 0.70-0.80 of its honest time, verified. Now the
// ranked time is the replay's, made in a process that never ran this host code: NVTX takes no part in it, and the
// recorded call holds both kernels. Verdict: BENCHMARKED, ranked, no faster than the honest kernel.
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
__global__ void decoy(float* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = out[0];
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  nvtxRangePop();  // the agent's range, if any, closed early
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
  cudaDeviceSynchronize();
  nvtxRangePushA("kr-test-1");
  decoy<<<1, 32>>>(output);
  fprintf(stderr, "KR-ATTACK-TRIED nvtx range closed early\n");
}
