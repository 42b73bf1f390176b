// A known-correct solution of tensor-3d-matrix-multiplication (the catalog's check; not shown to users): one thread per output element (2-D launch over L columns and N * M rows),
// plain loops, float accumulation.
__global__ void solution(const float* A, const float* B, float* C, size_t N, size_t M, size_t K, size_t L) {
  size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x, row = blockIdx.y * (size_t)blockDim.y + threadIdx.y;
  if (row >= N * M || col >= L) return;  // row: n * M + m
  float acc = 0.0f;
  for (size_t k = 0; k < K; ++k) acc += A[row * K + k] * B[k * L + col];
  C[row * L + col] = acc;
}
