#include <hip/hip_runtime.h>
// A known-correct solution of max-over-dim (the catalog's check; not shown to users): one thread per output.
__global__ void solution(const float* input, float* output, size_t B, size_t D, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= B * N) return;
  const float* x = input + (i / N) * D * N + i % N;  // input[b][0][n]
  float m = x[0];
  for (size_t d = 1; d < D; ++d) m = fmaxf(m, x[d * N]);
  output[i] = m;
}
