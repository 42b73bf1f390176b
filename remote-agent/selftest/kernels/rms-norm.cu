// A known-correct solution of rms-norm (the catalog's check; not shown to users): one thread per (b, n), over d.
__global__ void solution(const float* input, float* output, size_t B, size_t D, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= B * N) return;
  size_t start = (i / N) * D * N + i % N;  // input[b][0][n]
  float s = 0.0f;
  for (size_t d = 0; d < D; ++d) { float v = input[start + d * N]; s += v * v; }
  float rms = sqrtf(s / (float)D + 1e-5f);
  for (size_t d = 0; d < D; ++d) output[start + d * N] = input[start + d * N] / rms;
}
