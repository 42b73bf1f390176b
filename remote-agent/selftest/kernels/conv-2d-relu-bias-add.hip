#include <hip/hip_runtime.h>
// A known-correct solution of conv-2d-relu-bias-add (the catalog's check; not shown to users): one thread per output
// element, a direct 3 x 3 convolution accumulated in float from the conv bias, then max(0, .) + bias.
__global__ void solution(const float* input, const float* weight, const float* conv_bias, const float* bias,
                         float* output, size_t B, size_t C_in, size_t C_out, size_t H, size_t W) {
  const size_t OH = H - 2, OW = W - 2;
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= B * C_out * OH * OW) return;
  const size_t x = e % OW, y = e / OW % OH, o = e / OW / OH % C_out, b = e / OW / OH / C_out;
  float acc = conv_bias[o];
  for (size_t c = 0; c < C_in; ++c) {
    const float* src = input + (b * C_in + c) * H * W;
    const float* filt = weight + (o * C_in + c) * 9;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) acc += src[(y + i) * W + x + j] * filt[i * 3 + j];
  }
  output[e] = fmaxf(acc, 0.0f) + bias[o];
}
