// A known-correct solution of avg-pool-1d (the catalog's check; not shown to users): one thread per output element,
// the window's positions o - 4 .. o + 3 that fall inside the row added in float, then divided by 8 (the padding
// counted).
__global__ void solution(const float* input, float* output, size_t N, size_t C, size_t L) {
  size_t lo = L + 1;  // (L + 2 * 4 - 8) / 1 + 1
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * C * lo) return;
  size_t o = i % lo;
  const float* x = input + (i / lo) * L;
  float s = 0.0f;
  for (int k = 0; k < 8; ++k) {
    long long pos = (long long)o - 4 + k;
    if (pos >= 0 && pos < (long long)L) s += x[pos];
  }
  output[i] = s / 8.0f;
}
