#include <hip/hip_runtime.h>
// A known-correct solution of l1-norm (the catalog's check; not shown to users): one thread per row.
__global__ void solution(const float* input, float* output, size_t M, size_t N) {
  size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (r >= M) return;
  const float* x = input + r * N;
  float s = 0.0f;
  for (size_t j = 0; j < N; ++j) s += fabsf(x[j]);
  float mean = s / (float)N;
  for (size_t j = 0; j < N; ++j) output[r * N + j] = x[j] / mean;
}
