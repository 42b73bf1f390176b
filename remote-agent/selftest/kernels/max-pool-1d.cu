// A known-correct solution of max-pool-1d (the catalog's check; not shown to users): one thread per output element,
// the window's 8 positions (o - 4 + 3k) read where they fall inside the row.
__global__ void solution(const float* input, float* output, size_t N, size_t C, size_t L) {
  size_t lo = L - 13;  // (L + 2 * 4 - 3 * (8 - 1) - 1) / 1 + 1
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * C * lo) return;
  size_t o = i % lo;
  const float* x = input + (i / lo) * L;
  float m = -INFINITY;
  for (int k = 0; k < 8; ++k) {
    long long pos = (long long)o - 4 + 3 * k;
    if (pos >= 0 && pos < (long long)L) m = fmaxf(m, x[pos]);
  }
  output[i] = m;
}
