#include <cuda_bf16.h>
__global__ void solution(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) C[i] = __hadd(A[i], B[i]);
}
