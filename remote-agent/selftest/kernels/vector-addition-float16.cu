#include <cuda_fp16.h>
__global__ void solution(const __half* A, const __half* B, __half* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) C[i] = __hadd(A[i], B[i]);
}
