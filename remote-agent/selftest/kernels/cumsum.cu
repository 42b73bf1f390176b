// A known-correct solution of cumsum (the catalog's check; not shown to users): one thread per row,
// plain loops, float accumulation.
__global__ void solution(const float* input, float* output, size_t B, size_t N) {
  size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (r >= B) return;
  const float* x = input + r * N;
  float* y = output + r * N;
  float s = 0.0f;
  for (size_t i = 0; i < N; ++i) { s += x[i]; y[i] = s; }
}
