// A known-correct solution of mse-loss (the catalog's check; not shown to users): a host solution() that launches a
// grid-stride kernel of at most 1024 blocks (each term, (predictions - targets)^2, in float; each thread's sum in
// double; each block's sum by a shared-memory tree into kr_partial), then one block that adds the blocks' sums and
// writes the output (it does not rely on the output's being zeroed).
#define KR_MAX_BLOCKS 1024
__device__ double kr_partial[KR_MAX_BLOCKS];

__device__ double kr_block_sum(double v) {
  __shared__ double partial[256];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) partial[threadIdx.x] += partial[threadIdx.x + o];
    __syncthreads();
  }
  return partial[0];
}

__global__ void kr_partial_sums(const float* predictions, const float* targets, size_t N) {
  double v = 0.0;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < N; i += (size_t)gridDim.x * blockDim.x) {
    float d = predictions[i] - targets[i];
    v += (double)(d * d);
  }
  double sum = kr_block_sum(v);
  if (threadIdx.x == 0) kr_partial[blockIdx.x] = sum;
}

__global__ void kr_finish(float* output, unsigned blocks, double divisor) {
  double v = 0.0;
  for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) v += kr_partial[b];
  double sum = kr_block_sum(v);
  if (threadIdx.x == 0) output[0] = (float)(sum / divisor);
}

extern "C" void solution(const float* predictions, const float* targets, float* output, size_t N) {
  size_t blocks = (N + 255) / 256;
  if (blocks == 0) return;
  if (blocks > KR_MAX_BLOCKS) blocks = KR_MAX_BLOCKS;
  kr_partial_sums<<<(unsigned)blocks, 256>>>(predictions, targets, N);
  kr_finish<<<1, 256>>>(output, (unsigned)blocks, (double)N);
}
