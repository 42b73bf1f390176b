// Computes once, then returns without work: the tamper guard must catch it.
static int calls = 0;
__global__ void add(const float* A, const float* B, float* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) C[i] = A[i] + B[i];
}
extern "C" void solution(const float* A, const float* B, float* C, size_t N) {
  if (calls++ < 5) add<<<(unsigned)((N + 255) / 256), 256>>>(A, B, C, N);
}
