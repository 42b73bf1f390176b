#include <hip/hip_runtime.h>
// Transposed 2-D convolution, 3 x 5 kernel (KernelBench level 1, 69): kernel 3 x 5, stride 1, padding 0,
// output_padding 0, dilation 1, groups 1. One output element per thread, gathering from the input positions that
// reach it (for each tap, (out + padding - tap * dilation) / stride where divisible and in range): no atomics.
#define KH 3
#define SH 1
#define PH 0
#define OPH 0
#define DILH 1
#define KW 5
#define SW 1
#define PW 0
#define OPW 0
#define DILW 1
#define GROUPS 1

__global__ void solution(const float* input, const float* weight, float* output, size_t N, size_t C_in, size_t C_out,
                         size_t H, size_t W) {
  const size_t H_out = (size_t)(((long long)H - 1) * SH - 2 * PH + DILH * (KH - 1) + OPH + 1);
  const size_t W_out = (size_t)(((long long)W - 1) * SW - 2 * PW + DILW * (KW - 1) + OPW + 1);
  const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i >= N * C_out * H_out * W_out) return;
  size_t t = i;
  const long long ow = (long long)(t % W_out);
  t /= W_out;
  const long long oh = (long long)(t % H_out);
  t /= H_out;
  const size_t co = t % C_out, n = t / C_out;
  const size_t cin_g = C_in / GROUPS, cout_g = C_out / GROUPS;
  const size_t g = co / cout_g, j = co % cout_g;
  const size_t in_plane = H * W;  // one channel's input elements
  const size_t w_stride = cout_g * KH * KW;  // from one input channel's weights to the next
  const float* in_n = input + (n * C_in + g * cin_g) * in_plane;
  const float* w_co = weight + (g * cin_g * cout_g + j) * (KH * KW);
  float acc = 0.0f;
  for (int kh = 0; kh < KH; ++kh) {
    const long long th = oh + PH - (long long)kh * DILH;  // ih * SH if this tap reaches oh
    if (th < 0 || th % SH != 0 || th / SH >= (long long)H) continue;
    const size_t ih = (size_t)(th / SH);
    for (int kw = 0; kw < KW; ++kw) {
      const long long tw = ow + PW - (long long)kw * DILW;  // iw * SW if this tap reaches ow
      if (tw < 0 || tw % SW != 0 || tw / SW >= (long long)W) continue;
      const size_t iw = (size_t)(tw / SW);
      const float* x = in_n + ih * W + iw;
      const float* w = w_co + kh * KW + kw;
      for (size_t c = 0; c < cin_g; ++c) acc += x[c * in_plane] * w[c * w_stride];
    }
  }
  output[i] = acc;
}
