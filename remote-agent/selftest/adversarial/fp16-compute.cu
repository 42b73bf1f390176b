// Matrix multiplication computed in half precision (inputs rounded to fp16, products accumulated in fp16): faster
// on paper, and wrong for a float32 problem. Verdict: WRONG_ANSWER.
#include <cuda_fp16.h>
__global__ void mm(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {
  size_t row = blockIdx.y * 16 + threadIdx.y, col = blockIdx.x * 16 + threadIdx.x;
  if (row >= M || col >= N) return;
  __half acc = __float2half(0.0f);
  for (size_t k = 0; k < K; k++) acc = __hfma(__float2half(A[row * K + k]), __float2half(B[k * N + col]), acc);
  C[row * N + col] = __half2float(acc);
}
extern "C" void solution(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {
  dim3 block(16, 16), grid((unsigned)((N + 15) / 16), (unsigned)((M + 15) / 16));
  mm<<<grid, block>>>(A, B, C, M, N, K);
}
