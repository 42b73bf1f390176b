// Right outputs, but it also writes into its input (as an in-place kernel would). Verdict: WRONG_ANSWER, "modified
// its inputs" (inputs are compared after every call).
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) {
    float x = in[i];
    out[i] = x > 0.0f ? x : alpha * x;
    ((float*) in)[i] = 0.0f;
  }
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
