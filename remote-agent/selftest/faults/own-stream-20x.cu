// leaky-relu doing 20 times the work on a non-blocking stream of its own, returning at once (KernelBench PR #82's
// exploit): the agent must time it at >= 10x the honest kernel (KR_DEFAULT_STREAM: one launch, default stream).
__global__ void lrelu(const float* input, float alpha, float* output, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) { float x = input[i]; output[i] = x > 0.0f ? x : alpha * x; }
}
#ifndef KR_DEFAULT_STREAM
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static cudaStream_t stream = nullptr;
  if (!stream) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  size_t n = M * N;
  for (int r = 0; r < 20; ++r) lrelu<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(input, alpha, output, n);
}
#else
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
#endif
