#include <hip/hip_runtime.h>
// A known-correct solution of matmul-gelu-softmax (the catalog's check; not shown to users): a host solution() that
// launches two kernels: a shared-memory tiled product (one output element per thread in 16 x 16 blocks, input rows
// and weight rows staged 16 x 16 at a time, the sum kept in float) that writes gelu(z) into the output, then one
// block of 256 threads per row that turns the row into its softmax in place (the row's maximum and its sum of
// exp(g - max) by shared-memory trees).
#define TILE 16
#define THREADS 256
__device__ float kr_gelu(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__global__ void kr_linear_gelu(const float* input, const float* weight, const float* bias, float* output, size_t M,
                               size_t N, size_t K) {
  __shared__ float in_tile[TILE][TILE + 1];
  __shared__ float w_tile[TILE][TILE + 1];  // w_tile[j][k]: weight row blockIdx.x * TILE + j
  const size_t row = blockIdx.y * (size_t)TILE + threadIdx.y, col = blockIdx.x * (size_t)TILE + threadIdx.x;
  const size_t w_row = blockIdx.x * (size_t)TILE + threadIdx.y;  // the weight row this thread stages
  float acc = 0.0f;
  for (size_t t = 0; t < K; t += TILE) {
    in_tile[threadIdx.y][threadIdx.x] = (row < M && t + threadIdx.x < K) ? input[row * K + t + threadIdx.x] : 0.0f;
    w_tile[threadIdx.y][threadIdx.x] = (w_row < N && t + threadIdx.x < K) ? weight[w_row * K + t + threadIdx.x] : 0.0f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += in_tile[threadIdx.y][k] * w_tile[threadIdx.x][k];
    __syncthreads();
  }
  if (row < M && col < N) output[row * N + col] = kr_gelu(acc + bias[col]);
}

__device__ float kr_block_reduce(float v, bool is_max) {
  __shared__ float partial[THREADS];
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

__global__ void kr_softmax_rows_in_place(float* output, size_t N) {
  float* y = output + blockIdx.x * N;
  float m = -INFINITY;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, y[j]);
  m = kr_block_reduce(m, true);
  float s = 0.0f;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) s += expf(y[j] - m);
  s = kr_block_reduce(s, false);
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) y[j] = expf(y[j] - m) / s;
}

extern "C" void solution(const float* input, const float* weight, const float* bias, float* output, size_t M,
                         size_t N, size_t K) {
  if (M == 0 || N == 0) return;
  dim3 block(TILE, TILE), grid((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE));
  kr_linear_gelu<<<grid, block>>>(input, weight, bias, output, M, N, K);
  kr_softmax_rows_in_place<<<(unsigned)M, THREADS>>>(output, N);
}
