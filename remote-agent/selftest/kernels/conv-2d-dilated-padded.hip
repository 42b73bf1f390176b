#include <hip/hip_runtime.h>
// A known-correct solution of conv-2d-dilated-padded (the catalog's check; not shown to users): one thread per output
// element, a direct convolution accumulated in float.
__global__ void solution(const float* input, const float* weight, float* output, size_t B, size_t C_in, size_t C_out,
                         size_t S) {
  const size_t OY = S - 4, OX = S - 16;
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= B * C_out * OY * OX) return;
  const size_t x = e % OX, y = e / OX % OY, o = e / OX / OY % C_out, b = e / OX / OY / C_out;
  float acc = 0.0f;
  for (size_t c = 0; c < C_in; ++c) {
    const float* src = input + (b * C_in + c) * S * S;
    const float* filt = weight + (o * C_in + c) * 45;
    for (int i = 0; i < 5; ++i) {
      const long long py = (long long)y + i * 2 - 2;
      if (py < 0 || py >= (long long)S) continue;
      for (int j = 0; j < 9; ++j) {
        const long long px = (long long)x + j * 3 - 4;
        if (px < 0 || px >= (long long)S) continue;
        acc += src[py * S + px] * filt[i * 9 + j];
      }
    }
  }
  output[e] = acc;
}
