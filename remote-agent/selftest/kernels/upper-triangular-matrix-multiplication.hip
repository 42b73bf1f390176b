#include <hip/hip_runtime.h>
// A known-correct solution of upper-triangular-matrix-multiplication (the catalog's check; not shown to users): one thread per output element (2-D launch over N columns and N rows), the products inside the triangles only,
// plain loops, float accumulation.
__global__ void solution(const float* A, const float* B, float* C, size_t N) {
  size_t col = blockIdx.x * (size_t)blockDim.x + threadIdx.x, row = blockIdx.y * (size_t)blockDim.y + threadIdx.y;
  if (row >= N || col >= N) return;
  if (col < row) { C[row * N + col] = 0.0f; return; }
  float acc = 0.0f;
  for (size_t k = row; k <= col; ++k) acc += A[row * N + k] * B[k * N + col];
  C[row * N + col] = acc;
}
