// A known-correct solution of conv-depthwise-separable-2d (the catalog's check; not shown to users): one thread per
// output element, fused: the depthwise 3 x 3 value of each input channel at the output's pixel (recomputed by every
// output channel's thread), times its pointwise weight, accumulated in float.
__global__ void solution(const float* input, const float* depthwise_weight, const float* pointwise_weight,
                         float* output, size_t B, size_t C_in, size_t C_out, size_t H, size_t W) {
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= B * C_out * H * W) return;
  const size_t x = e % W, y = e / W % H, o = e / W / H % C_out, b = e / W / H / C_out;
  float acc = 0.0f;
  for (size_t c = 0; c < C_in; ++c) {
    const float* src = input + (b * C_in + c) * H * W;
    const float* filt = depthwise_weight + c * 9;
    float mid = 0.0f;
    for (int i = 0; i < 3; ++i) {
      const long long py = (long long)y + i - 1;
      if (py < 0 || py >= (long long)H) continue;
      for (int j = 0; j < 3; ++j) {
        const long long px = (long long)x + j - 1;
        if (px < 0 || px >= (long long)W) continue;
        mid += src[py * W + px] * filt[i * 3 + j];
      }
    }
    acc += mid * pointwise_weight[o * C_in + c];
  }
  output[e] = acc;
}
