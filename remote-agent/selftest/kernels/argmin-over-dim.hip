#include <hip/hip_runtime.h>
__global__ void solution(const float* input, long long* output, size_t B, size_t D, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= B * N) return;
  size_t b = i / N, n = i % N;
  const float* column = input + b * D * N + n;
  float best = column[0];
  long long at = 0;
  for (size_t d = 1; d < D; ++d) {
    float v = column[d * N];
    if (v < best) {
      best = v;
      at = (long long)d;
    }
  }
  output[i] = at;
}
