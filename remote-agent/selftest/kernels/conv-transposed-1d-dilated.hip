#include <hip/hip_runtime.h>
// Transposed 1-D convolution, kernel 5, dilated (KernelBench level 1, 74): kernel 5, stride 1, padding 0,
// output_padding 0, dilation 3, groups 1. One output element per thread, gathering from the input positions that
// reach it (for each tap, (out + padding - tap * dilation) / stride where divisible and in range): no atomics.
#define KL 5
#define SL 1
#define PL 0
#define OPL 0
#define DILL 3
#define GROUPS 1

__global__ void solution(const float* input, const float* weight, float* output, size_t N, size_t C_in, size_t C_out,
                         size_t L) {
  const size_t L_out = (size_t)(((long long)L - 1) * SL - 2 * PL + DILL * (KL - 1) + OPL + 1);
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * C_out * L_out) return;
  size_t t = i;
  const long long ol = (long long)(t % L_out);
  t /= L_out;
  const size_t co = t % C_out, n = t / C_out;
  const size_t cin_g = C_in / GROUPS, cout_g = C_out / GROUPS;
  const size_t g = co / cout_g, j = co % cout_g;
  const size_t in_plane = L;  // one channel's input elements
  const size_t w_stride = cout_g * KL;  // from one input channel's weights to the next
  const float* in_n = input + (n * C_in + g * cin_g) * in_plane;
  const float* w_co = weight + (g * cin_g * cout_g + j) * (KL);
  float acc = 0.0f;
  for (int kl = 0; kl < KL; ++kl) {
    const long long tl = ol + PL - (long long)kl * DILL;  // il * SL if this tap reaches ol
    if (tl < 0 || tl % SL != 0 || tl / SL >= (long long)L) continue;
    const size_t il = (size_t)(tl / SL);
    const float* x = in_n + il;
    const float* w = w_co + kl;
    for (size_t c = 0; c < cin_g; ++c) acc += x[c * in_plane] * w[c * w_stride];
  }
  output[i] = acc;
}
