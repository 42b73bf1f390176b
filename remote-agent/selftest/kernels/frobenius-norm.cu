// A known-correct solution of frobenius-norm (the catalog's check; not shown to users): a host solution() that sums
// the squares once (in double: per thread, per block, then one atomic per block), then scales one element per thread.
__device__ double kr_sum_of_squares;

__global__ void kr_zero() { kr_sum_of_squares = 0.0; }

__global__ void kr_sum_squares(const float* x, size_t N) {
  __shared__ double partial[256];
  double v = 0.0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N; i += (size_t)gridDim.x * blockDim.x)
    v += (double)x[i] * x[i];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) partial[threadIdx.x] += partial[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(&kr_sum_of_squares, partial[0]);
}

__global__ void kr_scale(const float* x, float* y, size_t N) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < N) y[i] = x[i] / (float)sqrt(kr_sum_of_squares);
}

extern "C" void solution(const float* input, float* output, size_t N) {
  if (N == 0) return;
  kr_zero<<<1, 1>>>();
  kr_sum_squares<<<1024, 256>>>(input, N);
  kr_scale<<<(unsigned)((N + 255) / 256), 256>>>(input, output, N);
}
