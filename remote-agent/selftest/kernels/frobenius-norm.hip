#include <hip/hip_runtime.h>
// A known-correct solution of frobenius-norm (the catalog's check; not shown to users), kernel-only (the agent
// launches one thread per element, 256 to a block): each block adds its squares (in double) to a global sum and
// counts itself done; the last block to finish scales every element, then zeroes the sum and the count for the next
// call. (frobenius-norm.cu is the host form: a reduction kernel, then one thread per element.)
__device__ double kr_sum_of_squares;
__device__ unsigned long long kr_blocks_done;

__global__ void solution(const float* input, float* output, size_t N) {
  __shared__ double partial[256];
  __shared__ bool last;
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < N ? (double)input[i] * input[i] : 0.0;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) partial[threadIdx.x] += partial[threadIdx.x + o];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(&kr_sum_of_squares, partial[0]);
    __threadfence();
    last = atomicAdd(&kr_blocks_done, 1ULL) == (unsigned long long)gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  float norm = (float)sqrt(atomicAdd(&kr_sum_of_squares, 0.0));  // read through the atomic: every block's sum
  for (size_t j = threadIdx.x; j < N; j += blockDim.x) output[j] = input[j] / norm;
  __syncthreads();
  if (threadIdx.x == 0) {
    kr_sum_of_squares = 0.0;
    kr_blocks_done = 0;
  }
}
