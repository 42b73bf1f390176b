// A known-correct solution of tensor-4d-matrix-multiplication (the catalog's check; not shown to users): one thread
// per output element (2-D launch over K columns and N * I * J rows), plain loops, float accumulation.
__global__ void solution(const float* A, const float* B, float* C, size_t N, size_t I, size_t J, size_t L, size_t K) {
  size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x, row = blockIdx.y * (size_t)blockDim.y + threadIdx.y;
  if (row >= N * I * J || col >= K) return;  // row: (n * I + i) * J + j
  float acc = 0.0f;
  for (size_t l = 0; l < L; ++l) acc += A[row * L + l] * B[l * K + col];
  C[row * K + col] = acc;
}
