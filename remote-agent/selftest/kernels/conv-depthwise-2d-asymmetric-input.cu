// A known-correct solution of conv-depthwise-2d-asymmetric-input (the catalog's check; not shown to users): one
// thread per output element, a direct convolution accumulated in float.
__global__ void solution(const float* input, const float* weight, float* output, size_t B, size_t C, size_t H,
                         size_t W) {
  const size_t OY = H - 2, OX = W - 2;
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= B * C * OY * OX) return;
  const size_t x = e % OX, y = e / OX % OY, c = e / OX / OY % C, b = e / OX / OY / C;
  float acc = 0.0f;
  const float* src = input + (b * C + c) * H * W;
  const float* filt = weight + c * 9;
  for (int i = 0; i < 3; ++i) {
    const size_t py = y + i;
    for (int j = 0; j < 3; ++j) {
      const size_t px = x + j;
      acc += src[py * W + px] * filt[i * 3 + j];
    }
  }
  output[e] = acc;
}
