#include <hip/hip_runtime.h>
// A known-correct solution of tall-skinny-matrix-multiplication (the catalog's check; not shown to users): one thread per output element (2-D launch over M columns and M rows),
// plain loops, float accumulation.
__global__ void solution(const float* A, const float* B, float* C, size_t M, size_t N) {
  size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x, row = blockIdx.y * (size_t)blockDim.y + threadIdx.y;
  if (row >= M || col >= M) return;
  float acc = 0.0f;
  for (size_t k = 0; k < N; ++k) acc += A[row * N + k] * B[k * M + col];
  C[row * M + col] = acc;
}
