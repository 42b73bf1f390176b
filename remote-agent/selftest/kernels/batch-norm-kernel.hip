#include <hip/hip_runtime.h>
// Kernel-only batch-norm (the agent launches one thread per channel): the simple form, for the ROCm build test; two
// passes in float over the channel's N x H x W elements.
__global__ void solution(const float* input, const float* gamma, const float* beta, float* output, size_t N, size_t C,
                         size_t H, size_t W) {
  size_t c = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (c >= C) return;
  size_t hw = H * W, count = N * hw;
  float s = 0.0f;
  for (size_t n = 0; n < N; ++n)
    for (size_t j = 0; j < hw; ++j) s += input[(n * C + c) * hw + j];
  float mean = s / (float)count;
  float v = 0.0f;
  for (size_t n = 0; n < N; ++n)
    for (size_t j = 0; j < hw; ++j) { float d = input[(n * C + c) * hw + j] - mean; v += d * d; }
  float inv = 1.0f / sqrtf(v / (float)count + 1e-5f);
  for (size_t n = 0; n < N; ++n)
    for (size_t j = 0; j < hw; ++j) {
      size_t at = (n * C + c) * hw + j;
      output[at] = (input[at] - mean) * inv * gamma[c] + beta[c];
    }
}
