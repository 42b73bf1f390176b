// A known-correct solution of diagonal-matrix-multiplication (the catalog's check; not shown to users): one thread per output element,
// plain loops, float accumulation.
__global__ void solution(const float* A, const float* B, float* C, size_t N, size_t M) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * M) return;
  C[i] = A[i / M] * B[i];
}
