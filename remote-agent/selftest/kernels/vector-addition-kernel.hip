#include <hip/hip_runtime.h>
// Kernel-only vector addition (the agent launches one thread per element), for the ROCm build test.
__global__ void solution(const float* A, const float* B, float* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}
