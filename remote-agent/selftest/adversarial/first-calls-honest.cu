// Honest for its first six calls (the check and the warm-up), then returns at once: a fast time, and the output
// of a call that is not checked would stay as it was. Verdict: WRONG_ANSWER in its own process (every timed output
// is checked); replayed, BENCHMARKED at the honest kernel's time (the recorded call is an honest one, and the replay
// runs no host code to count calls).
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int calls = 0;
  if (calls++ >= 6) return;
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
