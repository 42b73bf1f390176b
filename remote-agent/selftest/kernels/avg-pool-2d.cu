// A known-correct solution of avg-pool-2d (the catalog's check; not shown to users): one thread per output element,
// its 11 x 11 window (no padding, stride 11) added in float, then divided by 121.
__global__ void solution(const float* input, float* output, size_t N, size_t C, size_t H, size_t W) {
  size_t ho = H / 11, wo = W / 11;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * C * ho * wo) return;
  size_t x = i % wo, y = (i / wo) % ho, plane = i / (wo * ho);
  const float* in = input + plane * H * W + (11 * y) * W + 11 * x;
  float s = 0.0f;
  for (int a = 0; a < 11; ++a)
    for (int b = 0; b < 11; ++b) s += in[a * W + b];
  output[i] = s / 121.0f;
}
