// The workers' check job (README, "Who is trusted with what"): a known kernel for the catalog's vector-addition,
// in HIP, which both vendors' agents build (an NVIDIA one through its HIP-to-CUDA header).
#include <hip/hip_runtime.h>
__global__ void add(const float* A, const float* B, float* C, size_t N) {
  size_t i = hipBlockIdx_x * (size_t)hipBlockDim_x + hipThreadIdx_x;
  if (i < N) C[i] = A[i] + B[i];
}
extern "C" void solution(const float* A, const float* B, float* C, size_t N) {
  hipLaunchKernelGGL(add, dim3((unsigned)((N + 255) / 256)), dim3(256), 0, 0, A, B, C, N);
}
