__global__ void solution(const float* A, const float* B, float* C, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) C[i] = A[i] - B[i];
}
