// Matrix multiplication by cuBLAS, which the problem does not allow (PyTorch has it loaded in the same process, so
// without a rule the call would simply work). Verdict: COMPILE_ERROR naming cuBLAS.
#include <cublas_v2.h>
extern "C" void solution(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {
  static cublasHandle_t handle = nullptr;
  if (!handle) cublasCreate(&handle);
  const float one = 1.0f, zero = 0.0f;
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, (int) N, (int) M, (int) K, &one, B, (int) N, A, (int) K, &zero, C,
              (int) N);
}
