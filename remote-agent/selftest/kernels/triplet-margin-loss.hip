#include <hip/hip_runtime.h>
// A known-correct solution of triplet-margin-loss (the catalog's check; not shown to users), kernel-only (the agent
// launches one thread per row, 256 to a block): each thread sums the squares of (a - p + 1e-6) and (a - n + 1e-6)
// along its row (each difference in float, the sums in double) and takes its row's clamped loss; each block adds its
// rows' losses by a shared-memory tree, adds that to a global sum and counts itself done; the last block to finish
// writes the sum over B, then zeroes the sum and the count for the next call. (triplet-margin-loss.cu is the host
// form: one block per row.)
__device__ double kr_sum;
__device__ unsigned long long kr_blocks_done;

__global__ void solution(const float* anchor, const float* positive, const float* negative, float* output, size_t B,
                         size_t D) {
  __shared__ double partial[256];
  __shared__ bool last;
  size_t row = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  double loss = 0.0;
  if (row < B) {
    const float* a = anchor + row * D;
    const float* p = positive + row * D;
    const float* n = negative + row * D;
    double sp = 0.0, sn = 0.0;
    for (size_t d = 0; d < D; ++d) {
      float dp = a[d] - p[d] + 1e-6f, dn = a[d] - n[d] + 1e-6f;
      sp += (double)dp * dp;
      sn += (double)dn * dn;
    }
    loss = fmax(0.0, sqrt(sp) - sqrt(sn) + 1.0);
  }
  partial[threadIdx.x] = loss;
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
  output[0] = (float)(atomicAdd(&kr_sum, 0.0) / (double)B);  // read through the atomic: every block's sum
  kr_sum = 0.0;
  kr_blocks_done = 0;
}
