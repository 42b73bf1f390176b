// A known-correct solution of conv-3d-square (the catalog's check; not shown to users): one thread per output
// element, a direct convolution accumulated in float.
__global__ void solution(const float* input, const float* weight, float* output, size_t B, size_t C_in, size_t C_out,
                         size_t S) {
  const size_t OZ = S - 2, OY = S - 2, OX = S - 2;
  const size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (e >= B * C_out * OZ * OY * OX) return;
  const size_t x = e % OX, y = e / OX % OY, z = e / OX / OY % OZ, o = e / OX / OY / OZ % C_out,
               b = e / OX / OY / OZ / C_out;
  float acc = 0.0f;
  for (size_t c = 0; c < C_in; ++c) {
    const float* src = input + (b * C_in + c) * S * S * S;
    const float* filt = weight + (o * C_in + c) * 27;
    for (int i = 0; i < 3; ++i) {
      const size_t pz = z + i;
      for (int j = 0; j < 3; ++j) {
        const size_t py = y + j;
        for (int k = 0; k < 3; ++k) {
          const size_t px = x + k;
          acc += src[(pz * S + py) * S + px] * filt[(i * 3 + j) * 3 + k];
        }
      }
    }
  }
  output[e] = acc;
}
