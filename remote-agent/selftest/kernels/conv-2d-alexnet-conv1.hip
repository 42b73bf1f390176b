#include <hip/hip_runtime.h>
// A known-correct solution of conv-2d-alexnet-conv1 (the catalog's check; not shown to users): one thread per output
// element, a direct convolution accumulated in float.
__global__ void solution(const float* input, const float* weight, const float* bias, float* output, size_t B,
                         size_t S) {
  const size_t OY = (S - 7) / 4 + 1, OX = (S - 7) / 4 + 1;
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= B * 96 * OY * OX) return;
  const size_t x = e % OX, y = e / OX % OY, o = e / OX / OY % 96, b = e / OX / OY / 96;
  float acc = bias[o];
  for (size_t c = 0; c < 3; ++c) {
    const float* src = input + (b * 3 + c) * S * S;
    const float* filt = weight + (o * 3 + c) * 121;
    for (int i = 0; i < 11; ++i) {
      const long long py = (long long)y * 4 + i - 2;
      if (py < 0 || py >= (long long)S) continue;
      for (int j = 0; j < 11; ++j) {
        const long long px = (long long)x * 4 + j - 2;
        if (px < 0 || px >= (long long)S) continue;
        acc += src[py * S + px] * filt[i * 11 + j];
      }
    }
  }
  output[e] = acc;
}
