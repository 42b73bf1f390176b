// A known-correct solution of gemm-divide-sum-scaling (the catalog's check; not shown to users): a host solution()
// that launches one block of 256 threads per row; each group of 32 threads takes the row's products n = group,
// group + 8, ... in turn, its threads splitting the K-long dot product (reading weight rows coalesced) and a
// shuffle tree adding their shares; the group's first thread keeps a running sum of the products / 2, and the
// groups' sums, added in order and times 1.5, are the output.
#define THREADS 256
#define GROUP 32  // threads that share one dot product
#define GROUPS (THREADS / GROUP)
// The sum of v over a group of 32 consecutive threads, in the group's first thread (a shuffle tree; the other
// threads' results are not used).
__device__ float kr_group_sum(float v) {
  for (int o = GROUP / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}

__global__ void kr_gemm_sum_rows(const float* input, const float* weight, float* output, size_t N, size_t K) {
  __shared__ float partial[GROUPS];
  const float* x = input + blockIdx.x * K;
  const unsigned lane = threadIdx.x % GROUP, group = threadIdx.x / GROUP;
  float row_sum = 0.0f;
  for (size_t n = group; n < N; n += GROUPS) {
    const float* w = weight + n * K;
    float acc = 0.0f;
    for (size_t k = lane; k < K; k += GROUP) acc += x[k] * w[k];
    row_sum += kr_group_sum(acc) / 2.0f;
  }
  if (lane == 0) partial[group] = row_sum;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int g = 0; g < GROUPS; ++g) s += partial[g];
    output[blockIdx.x] = s * 1.5f;
  }
}

extern "C" void solution(const float* input, const float* weight, float* output, size_t M, size_t N, size_t K) {
  if (M) kr_gemm_sum_rows<<<(unsigned)M, THREADS>>>(input, weight, output, N, K);
}
