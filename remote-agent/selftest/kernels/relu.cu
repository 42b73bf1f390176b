// Convention (b): only the kernel; the agent launches one thread per element.
__global__ void solution(const float* input, float* output, size_t M, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < M * N) output[i] = fmaxf(input[i], 0.0f);
}
