#include <hip/hip_runtime.h>
__global__ void solution(const float* input, const float* kernel, float* output, size_t N, size_t K) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N) return;
  long long half = (long long)(K - 1) / 2;
  float acc = 0.0f;
  for (size_t j = 0; j < K; ++j) {
    long long p = (long long)i + (long long)j - half;
    if (p >= 0 && p < (long long)N) acc += input[p] * kernel[j];
  }
  output[i] = acc;
}
