__global__ void solution(const float* A, const float* B, float* C, size_t N) {
  C[0] = undefined_symbol + 1;
}
