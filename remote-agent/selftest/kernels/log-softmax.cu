// A known-correct solution of log-softmax (the catalog's check; not shown to users): a host solution() that launches
// one block of 256 threads per row; the row's maximum and its sum of exp(x - max) by shared-memory trees, then
// output = x - max - log(sum).
__device__ float kr_block_reduce(float v, bool is_max) {
  __shared__ float partial[256];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o)
      partial[threadIdx.x] = is_max ? fmaxf(partial[threadIdx.x], partial[threadIdx.x + o])
                                    : partial[threadIdx.x] + partial[threadIdx.x + o];
    __syncthreads();
  }
  float result = partial[0];
  __syncthreads();  // every thread has read the result before the next reduction writes over it
  return result;
}

__global__ void kr_log_softmax_rows(const float* input, float* output, size_t N) {
  const float* x = input + blockIdx.x * N;
  float* y = output + blockIdx.x * N;
  float m = -INFINITY;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, x[j]);
  m = kr_block_reduce(m, true);
  float s = 0.0f;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) s += expf(x[j] - m);
  float shift = m + logf(kr_block_reduce(s, false));
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) y[j] = x[j] - shift;
}

extern "C" void solution(const float* input, float* output, size_t M, size_t N) {
  if (M) kr_log_softmax_rows<<<(unsigned)M, 256>>>(input, output, N);
}
