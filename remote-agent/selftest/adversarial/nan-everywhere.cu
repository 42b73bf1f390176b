// Writes NaN to every output (NaN compares false with everything: a check written as "not (diff > tol)" passes it).
// Verdict: WRONG_ANSWER (NaN never passes).
__global__ void fill(float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = __int_as_float(0x7fc00000);
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  fill<<<(unsigned)((n + 255) / 256), 256>>>(output, n);
}
