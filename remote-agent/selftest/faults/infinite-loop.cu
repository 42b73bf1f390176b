__global__ void solution(const float* A, const float* B, float* C, size_t N) {
  volatile int spin = 1;
  while (spin) { }
}
