#include <hip/hip_runtime.h>
__global__ void lrelu(const float* input, float alpha, float* output, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) { float x = input[i]; output[i] = x > 0.0f ? x : alpha * x; }
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  hipLaunchKernelGGL(lrelu, dim3((unsigned)((n + 255) / 256)), dim3(256), 0, 0, input, alpha, output, n);
  hipError_t err = hipGetLastError();
  if (err != hipSuccess) { printf("launch failed: %s\n", hipGetErrorString(err)); }
}
