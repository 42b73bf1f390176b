// A known-correct solution of selu (the catalog's check; not shown to users).
__global__ void solution(const float* input, float* output, size_t M, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < M * N) {
    float x = input[i];
    output[i] = 1.0507009873554805f * (x > 0.0f ? x : 1.6732632423543772f * expm1f(x));
  }
}
