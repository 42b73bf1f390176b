__global__ void solution(const float* input, float* output, size_t N) {
  __shared__ float s[256];
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < N ? input[i] : 0.0f;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(output, s[0]);
}
