#include <hip/hip_runtime.h>
// A known-correct solution of gemm-sigmoid-logsumexp (the catalog's check; not shown to users): a host solution()
// that launches one block of 256 threads per row. The row's H hidden values go to shared memory: each group of 32
// threads takes j = group, group + 8, ... in turn, its threads splitting the K-long dot product with weight1's row j
// and a shuffle tree adding their shares, then the bias and the sigmoid. Then the N outputs of the second layer the
// same way, each group's first thread keeping an online log-sum-exp of its outputs (the largest so far and the sum
// of exp(z - largest)); thread 0 combines the groups' pairs. Shared memory: H floats (H <= 12288).
#define THREADS 256
#define GROUP 32  // threads that share one dot product
#define GROUPS (THREADS / GROUP)
// The sum of v over a group of 32 consecutive threads, in the group's first thread (a shuffle tree; the other
// threads' results are not used; on a 64-wide wavefront each half is a group of its own).
__device__ float kr_group_sum(float v) {
  for (int o = GROUP / 2; o > 0; o >>= 1) v += __shfl_down(v, o);
  return v;
}

__global__ void kr_gemm_sigmoid_gemm_lse_rows(const float* input, const float* weight1, const float* bias1,
                                              const float* weight2, const float* bias2, float* output, size_t K,
                                              size_t H, size_t N) {
  extern __shared__ float hidden[];  // H floats
  __shared__ float group_max[GROUPS], group_sum[GROUPS];
  const float* x = input + blockIdx.x * K;
  const unsigned lane = threadIdx.x % GROUP, group = threadIdx.x / GROUP;
  for (size_t j = group; j < H; j += GROUPS) {
    const float* w = weight1 + j * K;
    float acc = 0.0f;
    for (size_t k = lane; k < K; k += GROUP) acc += x[k] * w[k];
    acc = kr_group_sum(acc);
    if (lane == 0) hidden[j] = 1.0f / (1.0f + expf(-(acc + bias1[j])));
  }
  __syncthreads();
  float largest = -INFINITY, sum = 0.0f;  // this group's online log-sum-exp (its first thread's)
  for (size_t n = group; n < N; n += GROUPS) {
    const float* w = weight2 + n * H;
    float acc = 0.0f;
    for (size_t j = lane; j < H; j += GROUP) acc += hidden[j] * w[j];
    const float z = kr_group_sum(acc) + bias2[n];
    if (z > largest) {
      sum = sum * expf(largest - z) + 1.0f;
      largest = z;
    } else {
      sum += expf(z - largest);
    }
  }
  if (lane == 0) {
    group_max[group] = largest;
    group_sum[group] = sum;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float m = -INFINITY;
    for (int g = 0; g < GROUPS; ++g) m = fmaxf(m, group_max[g]);
    float total = 0.0f;
    for (int g = 0; g < GROUPS; ++g)
      if (group_sum[g] > 0.0f) total += group_sum[g] * expf(group_max[g] - m);  // a group with no outputs: skipped
    output[blockIdx.x] = m + logf(total);
  }
}

extern "C" void solution(const float* input, const float* weight1, const float* bias1, const float* weight2,
                         const float* bias2, float* output, size_t M, size_t K, size_t H, size_t N) {
  if (M) kr_gemm_sigmoid_gemm_lse_rows<<<(unsigned)M, THREADS, H * sizeof(float)>>>(input, weight1, bias1, weight2,
                                                                                    bias2, output, K, H, N);
}
