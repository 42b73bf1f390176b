// A known-correct solution of avg-pool-3d (the catalog's check; not shown to users): one thread per output element,
// the 3 x 3 x 3 window (positions 2o - 1 + k in each dimension) that falls inside the volume added in float, then
// divided by 27 (the padding counted).
__global__ void solution(const float* input, float* output, size_t N, size_t C, size_t D, size_t H, size_t W) {
  size_t dout = (D - 1) / 2 + 1, hout = (H - 1) / 2 + 1, wout = (W - 1) / 2 + 1;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * C * dout * hout * wout) return;
  size_t x = i % wout, y = (i / wout) % hout, z = (i / (wout * hout)) % dout, volume = i / (wout * hout * dout);
  const float* in = input + volume * D * H * W;
  float s = 0.0f;
  for (int a = 0; a < 3; ++a) {
    long long p = 2 * (long long)z - 1 + a;
    if (p < 0 || p >= (long long)D) continue;
    for (int b = 0; b < 3; ++b) {
      long long q = 2 * (long long)y - 1 + b;
      if (q < 0 || q >= (long long)H) continue;
      for (int e = 0; e < 3; ++e) {
        long long r = 2 * (long long)x - 1 + e;
        if (r >= 0 && r < (long long)W) s += in[(p * H + q) * W + r];
      }
    }
  }
  output[i] = s / 27.0f;
}
