// Never ends: reads global memory each turn, so the compiler cannot drop the loop.
__global__ void solution(const float* A, const float* B, float* C, size_t N) {
  volatile const float* a = A;
  while (a[0] == a[0]) { }
  C[0] = B[0];
}
