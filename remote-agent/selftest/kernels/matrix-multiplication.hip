#include <hip/hip_runtime.h>
#define TILE 16
__global__ void mm(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  size_t row = hipBlockIdx_y * TILE + hipThreadIdx_y, col = hipBlockIdx_x * TILE + hipThreadIdx_x;
  float acc = 0.0f;
  for (size_t t = 0; t < K; t += TILE) {
    As[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? A[row * K + t + threadIdx.x] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (col < N && t + threadIdx.y < K) ? B[(t + threadIdx.y) * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
extern "C" void solution(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {
  dim3 block(TILE, TILE), grid((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE));
  hipLaunchKernelGGL(mm, grid, block, 0, 0, A, B, C, M, N, K);
}
