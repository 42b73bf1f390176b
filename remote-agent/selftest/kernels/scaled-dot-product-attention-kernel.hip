#include <hip/hip_runtime.h>
// Kernel-only scaled-dot-product-attention (the agent launches one thread per output element, over E columns and
// B * H * S rows): the simple form, for the ROCm build test; each thread computes its row's scores one at a time
// with an online softmax (a running maximum, the sum and its output column rescaled when the maximum grows).
__global__ void solution(const float* Q, const float* K, const float* V, float* output, size_t B, size_t H, size_t S,
                         size_t E) {
  size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x, row = blockIdx.y * (size_t)blockDim.y + threadIdx.y;
  if (row >= B * H * S || e >= E) return;  // row: (b * H + h) * S + s
  const float* q = Q + row * E;
  const float* keys = K + (row / S) * S * E;
  const float* values = V + (row / S) * S * E;
  float scale = 1.0f / sqrtf((float)E);
  float m = -INFINITY, sum = 0.0f, acc = 0.0f;
  for (size_t t = 0; t < S; ++t) {
    float d = 0.0f;
    for (size_t i = 0; i < E; ++i) d += q[i] * keys[t * E + i];
    d *= scale;
    float grown = fmaxf(m, d), rescale = expf(m - grown), w = expf(d - grown);
    sum = sum * rescale + w;
    acc = acc * rescale + w * values[t * E + e];
    m = grown;
  }
  output[row * E + e] = acc / sum;
}
