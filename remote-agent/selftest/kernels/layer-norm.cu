// One thread per row (the agent's default launch for this problem): simple and correct.
__global__ void solution(const float* input, const float* gamma, const float* beta, float* output, size_t M, size_t N) {
  size_t r = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (r >= M) return;
  const float* x = input + r * N;
  double mean = 0.0, var = 0.0;
  for (size_t j = 0; j < N; ++j) mean += x[j];
  mean /= N;
  for (size_t j = 0; j < N; ++j) { double d = x[j] - mean; var += d * d; }
  var /= N;
  float inv = (float)(1.0 / sqrt(var + 1e-5));
  for (size_t j = 0; j < N; ++j) output[r * N + j] = ((float)(x[j] - mean)) * inv * gamma[j] + beta[j];
}
