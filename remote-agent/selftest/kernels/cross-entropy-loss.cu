// A known-correct solution of cross-entropy-loss (the catalog's check; not shown to users): a host solution() that
// launches one block per row at a time over a grid of at most 1024 blocks (each row's maximum and sum of exp(x - max)
// by a shared-memory tree in float, the row's loss in double into the block's sum), then one block that adds the
// blocks' sums and writes the mean (it does not rely on the output's being zeroed).
#define KR_MAX_BLOCKS 1024
__device__ double kr_partial[KR_MAX_BLOCKS];

template <class T, class Op>
__device__ T kr_block_reduce(T v, Op op) {
  __shared__ T partial[256];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) partial[threadIdx.x] = op(partial[threadIdx.x], partial[threadIdx.x + o]);
    __syncthreads();
  }
  T result = partial[0];
  __syncthreads();
  return result;
}

struct kr_max { __device__ float operator()(float a, float b) const { return a > b ? a : b; } };
struct kr_addf { __device__ float operator()(float a, float b) const { return a + b; } };
struct kr_addd { __device__ double operator()(double a, double b) const { return a + b; } };

__global__ void kr_row_losses(const float* predictions, const long long* targets, size_t B, size_t C) {
  double block_sum = 0.0;
  for (size_t row = blockIdx.x; row < B; row += gridDim.x) {
    const float* x = predictions + row * C;
    float m = -INFINITY;
    for (size_t c = threadIdx.x; c < C; c += blockDim.x) m = fmaxf(m, x[c]);
    m = kr_block_reduce(m, kr_max());
    float s = 0.0f;
    for (size_t c = threadIdx.x; c < C; c += blockDim.x) s += expf(x[c] - m);
    s = kr_block_reduce(s, kr_addf());
    if (threadIdx.x == 0) block_sum += (double)m + log((double)s) - (double)x[targets[row]];
  }
  if (threadIdx.x == 0) kr_partial[blockIdx.x] = block_sum;
}

__global__ void kr_finish(float* output, unsigned blocks, double rows) {
  double v = 0.0;
  for (unsigned b = threadIdx.x; b < blocks; b += blockDim.x) v += kr_partial[b];
  double sum = kr_block_reduce(v, kr_addd());
  if (threadIdx.x == 0) output[0] = (float)(sum / rows);
}

extern "C" void solution(const float* predictions, const long long* targets, float* output, size_t B, size_t C) {
  if (B == 0) return;
  unsigned blocks = (unsigned)(B < KR_MAX_BLOCKS ? B : KR_MAX_BLOCKS);
  kr_row_losses<<<blocks, 256>>>(predictions, targets, B, C);
  kr_finish<<<1, 256>>>(output, blocks, (double)B);
}
