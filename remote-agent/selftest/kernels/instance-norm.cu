// A known-correct solution of instance-norm (the catalog's check; not shown to users): one thread per H x W plane,
// two passes in float.
__global__ void solution(const float* input, float* output, size_t B, size_t C, size_t H, size_t W) {
  size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (p >= B * C) return;
  size_t n = H * W;
  const float* x = input + p * n;
  float s = 0.0f;
  for (size_t j = 0; j < n; ++j) s += x[j];
  float mean = s / (float)n;
  float v = 0.0f;
  for (size_t j = 0; j < n; ++j) { float d = x[j] - mean; v += d * d; }
  float inv = 1.0f / sqrtf(v / (float)n + 1e-5f);
  for (size_t j = 0; j < n; ++j) output[p * n + j] = (x[j] - mean) * inv;
}
