#include <hip/hip_runtime.h>
// A known-correct solution of hinge-loss (the catalog's check; not shown to users), kernel-only (the agent launches one
// thread per term, 256 to a block): each block adds its terms (max(0, 1 - p t), the targets indexed by column, each in
// float) in double by a shared-memory tree, adds that to a global sum and counts itself done; the last block to finish
// writes the output, then zeroes the sum and the count for the next call. (hinge-loss.cu is the host form: a
// grid-stride kernel, then one block that adds the blocks' sums.)
__device__ double kr_sum;
__device__ unsigned long long kr_blocks_done;

__global__ void solution(const float* predictions, const float* targets, float* output, size_t B, size_t D) {
  __shared__ double partial[256];
  __shared__ bool last;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  double term = 0.0;
  if (i < B * D) {
    term = (double)fmaxf(0.0f, 1.0f - predictions[i] * targets[i % D]);
  }
  partial[threadIdx.x] = term;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) partial[threadIdx.x] += partial[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&kr_sum, partial[0]);
    __threadfence();
    last = atomicAdd(&kr_blocks_done, 1ULL) == (unsigned long long)gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  output[0] = (float)(atomicAdd(&kr_sum, 0.0) / (double)(B * D));  // read through the atomic: every block's sum
  kr_sum = 0.0;
  kr_blocks_done = 0;
}
