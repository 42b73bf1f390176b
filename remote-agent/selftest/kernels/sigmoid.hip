#include <hip/hip_runtime.h>
// A known-correct solution of sigmoid (the catalog's check; not shown to users).
__global__ void solution(const float* input, float* output, size_t M, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < M * N) { float x = input[i]; output[i] = 1.0f / (1.0f + expf(-x)); }
}
