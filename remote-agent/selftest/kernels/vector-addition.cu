// Convention (a): a host function that launches its own kernel.
__global__ void add(const float* A, const float* B, float* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}
extern "C" void solution(const float* A, const float* B, float* C, size_t N) {
  add<<<(unsigned)((N + 255) / 256), 256>>>(A, B, C, N);
}
