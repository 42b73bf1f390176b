#define KR_DEFAULT_STREAM
// Launches on a non-blocking stream of its own and returns without waiting: timing must still cover it.
__global__ void busy_add(const float* A, const float* B, float* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) {
    float dummy = 0.0f;
    for (int k = 0; k < 4000; ++k) dummy = dummy * 0.5f + A[i];
    C[i] = dummy == 12345.678f ? 0.0f : A[i] + B[i];
  }
}
#ifndef KR_DEFAULT_STREAM
extern "C" void solution(const float* A, const float* B, float* C, size_t N) {
  static cudaStream_t stream = nullptr;
  if (!stream) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  busy_add<<<(unsigned)((N + 255) / 256), 256, 0, stream>>>(A, B, C, N);
}
#else
extern "C" void solution(const float* A, const float* B, float* C, size_t N) {
  busy_add<<<(unsigned)((N + 255) / 256), 256>>>(A, B, C, N);
}
#endif
