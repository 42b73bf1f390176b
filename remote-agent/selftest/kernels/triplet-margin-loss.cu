// A known-correct solution of triplet-margin-loss (the catalog's check; not shown to users): a host solution() that
// zeroes a global sum, launches one block of 256 threads per row (the two sums of squares of (a - p + 1e-6) and
// (a - n + 1e-6), each difference in float, summed in double by a shared-memory tree; thread 0 adds the row's
// clamped loss to the sum), then one thread that writes the sum over B (it does not rely on the output's being
// zeroed).
__device__ double kr_sum;

__global__ void kr_zero() { kr_sum = 0.0; }

__global__ void kr_rows(const float* anchor, const float* positive, const float* negative, size_t D) {
  __shared__ double sp[256], sn[256];
  size_t base = blockIdx.x * D;
  double p = 0.0, n = 0.0;
  for (size_t d = threadIdx.x; d < D; d += blockDim.x) {
    float a = anchor[base + d];
    float dp = a - positive[base + d] + 1e-6f, dn = a - negative[base + d] + 1e-6f;
    p += (double)dp * dp;
    n += (double)dn * dn;
  }
  sp[threadIdx.x] = p;
  sn[threadIdx.x] = n;
  __syncthreads();
  for (unsigned o = blockDim.x / 2; o > 0; o >>= 1) {
    if (threadIdx.x < o) {
      sp[threadIdx.x] += sp[threadIdx.x + o];
      sn[threadIdx.x] += sn[threadIdx.x + o];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(&kr_sum, fmax(0.0, sqrt(sp[0]) - sqrt(sn[0]) + 1.0));
}

__global__ void kr_finish(float* output, size_t B) { output[0] = (float)(kr_sum / (double)B); }

extern "C" void solution(const float* anchor, const float* positive, const float* negative, float* output, size_t B,
                         size_t D) {
  if (B == 0) return;
  kr_zero<<<1, 1>>>();
  kr_rows<<<(unsigned)B, 256>>>(anchor, positive, negative, D);
  kr_finish<<<1, 1>>>(output, B);
}
