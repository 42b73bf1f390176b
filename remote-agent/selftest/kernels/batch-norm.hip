#include <hip/hip_runtime.h>
// A known-correct solution of batch-norm (the catalog's check; not shown to users): a host solution() that launches
// one block of 256 threads per channel; the channel's mean, then its biased variance (two passes, per-thread sums in
// double added by a shared-memory tree), then every element normalized, scaled and shifted.
__device__ double kr_block_sum(double v) {
  __shared__ double partial[256];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) partial[threadIdx.x] += partial[threadIdx.x + o];
    __syncthreads();
  }
  double result = partial[0];
  __syncthreads();  // every thread has read the result before the next sum writes over it
  return result;
}

__global__ void kr_batch_norm_channels(const float* input, const float* gamma, const float* beta, float* output,
                                       size_t N, size_t C, size_t HW) {
  size_t c = blockIdx.x, count = N * HW;
  double s = 0.0;
  for (size_t k = threadIdx.x; k < count; k += blockDim.x) s += input[((k / HW) * C + c) * HW + k % HW];
  double mean = kr_block_sum(s) / (double)count;
  double v = 0.0;
  for (size_t k = threadIdx.x; k < count; k += blockDim.x) {
    double d = input[((k / HW) * C + c) * HW + k % HW] - mean;
    v += d * d;
  }
  double var = kr_block_sum(v) / (double)count;
  float scale = (float)(gamma[c] / sqrt(var + 1e-5)), shift = (float)(beta[c] - mean * scale);
  for (size_t k = threadIdx.x; k < count; k += blockDim.x) {
    size_t at = ((k / HW) * C + c) * HW + k % HW;
    output[at] = input[at] * scale + shift;
  }
}

extern "C" void solution(const float* input, const float* gamma, const float* beta, float* output, size_t N, size_t C,
                         size_t H, size_t W) {
  if (C) kr_batch_norm_channels<<<(unsigned)C, 256>>>(input, gamma, beta, output, N, C, H * W);
}
