#include <hip/hip_runtime.h>
// One block per row, warp-shuffle reductions.
__device__ float block_reduce(float v, bool is_max) {
  __shared__ float partial[32];
  for (int o = 16; o > 0; o >>= 1) {
    float other = __shfl_down(v, o);
    v = is_max ? fmaxf(v, other) : v + other;
  }
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = threadIdx.x < blockDim.x / 32 ? partial[lane] : (is_max ? -INFINITY : 0.0f);
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) {
      float other = __shfl_down(v, o);
      v = is_max ? fmaxf(v, other) : v + other;
    }
  __shared__ float result;
  if (threadIdx.x == 0) result = v;
  __syncthreads();
  return result;
}
__global__ void softmax_rows(const float* in, float* out, size_t N) {
  const float* x = in + blockIdx.x * N;
  float* y = out + blockIdx.x * N;
  float m = -INFINITY;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) m = fmaxf(m, x[j]);
  m = block_reduce(m, true);
  float s = 0.0f;
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) s += __expf(x[j] - m);
  s = block_reduce(s, false);
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) y[j] = __expf(x[j] - m) / s;
}
extern "C" void solution(const float* input, float* output, size_t M, size_t N) {
  if (M) softmax_rows<<<(unsigned)M, 256>>>(input, output, N);
}
