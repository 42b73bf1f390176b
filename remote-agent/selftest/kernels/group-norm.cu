// A known-correct solution of group-norm (the catalog's check; not shown to users): one thread per group of each
// sample (C / G consecutive channels of H x W: contiguous), two passes in float.
__global__ void solution(const float* input, const float* gamma, const float* beta, float* output, size_t B, size_t C,
                         size_t G, size_t H, size_t W) {
  size_t q = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (q >= B * G) return;
  size_t per = C / G, hw = H * W, n = per * hw;
  const float* x = input + q * n;
  float s = 0.0f;
  for (size_t j = 0; j < n; ++j) s += x[j];
  float mean = s / (float)n;
  float v = 0.0f;
  for (size_t j = 0; j < n; ++j) { float d = x[j] - mean; v += d * d; }
  float inv = 1.0f / sqrtf(v / (float)n + 1e-5f);
  size_t c0 = (q % G) * per;  // the group's first channel
  for (size_t j = 0; j < n; ++j) {
    size_t c = c0 + j / hw;
    output[q * n + j] = (x[j] - mean) * inv * gamma[c] + beta[c];
  }
}
