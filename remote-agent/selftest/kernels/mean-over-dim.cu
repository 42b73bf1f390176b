// A known-correct solution of mean-over-dim (the catalog's check; not shown to users): one thread per output.
__global__ void solution(const float* input, float* output, size_t B, size_t D, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= B * N) return;
  const float* x = input + (i / N) * D * N + i % N;  // input[b][0][n]
  float s = 0.0f;
  for (size_t d = 0; d < D; ++d) s += x[d * N];
  output[i] = s / (float)D;
}
