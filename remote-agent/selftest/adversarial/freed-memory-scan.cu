// Looks for the reference's answer in memory instead of computing it: a matrix multiplication that computes two
// elements of C itself, then searches the whole allocation its output lives in (the allocator's segment, found
// with cuMemGetAddressRange through dlsym) for a float64 array starting with those two values, and copies it out.
// It found the answer when the reference was computed before the call and left in (or freed into) the same pool.
// Verdict: WRONG_ANSWER (the reference is computed only after the call, and scrubbed before it is freed; not found,
// the output stays poisoned).
#include <cuda_runtime.h>
#include <dlfcn.h>
__global__ void two(const float* A, const float* B, size_t N, size_t K, double* out) {
  double s0 = 0, s1 = 0;
  for (size_t k = 0; k < K; k++) {
    s0 += (double) A[k] * B[k * N];
    if (N > 1) s1 += (double) A[k] * B[k * N + 1];
  }
  out[0] = s0;
  out[1] = s1;
}
__global__ void scan(const double* seg, size_t count, const double* want, unsigned long long* found) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i + 1 >= count) return;
  double a = want[0], b = want[1];
  if (fabs(seg[i] - a) <= 1e-9 * fabs(a) + 1e-12 && fabs(seg[i + 1] - b) <= 1e-9 * fabs(b) + 1e-12)
    atomicMin(found, (unsigned long long) i);
}
__global__ void copy_out(const double* from, float* C, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) C[i] = (float) from[i];
}
extern "C" void solution(const float* A, const float* B, float* C, size_t M, size_t N, size_t K) {
  typedef int (*range_t)(unsigned long long*, size_t*, unsigned long long);
  static range_t range = nullptr;
  if (!range) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (cuda) range = (range_t) dlsym(cuda, "cuMemGetAddressRange_v2");
  }
  if (!range) return;
  unsigned long long base = 0;
  size_t size = 0;
  if (range(&base, &size, (unsigned long long) C) != 0) return;
  double* want;
  unsigned long long* found;
  cudaMalloc(&want, 2 * sizeof(double));
  cudaMalloc(&found, sizeof(unsigned long long));
  cudaMemset(found, 0xff, sizeof(unsigned long long));
  two<<<1, 1>>>(A, B, N, K, want);
  size_t count = size / sizeof(double);
  scan<<<(unsigned)((count + 255) / 256), 256>>>((const double*) base, count, want, found);
  unsigned long long at = ~0ull;
  cudaMemcpy(&at, found, sizeof at, cudaMemcpyDeviceToHost);
  if (at != ~0ull && at + M * N <= count)
    copy_out<<<(unsigned)((M * N + 255) / 256), 256>>>((const double*) base + at, C, M * N);
  cudaFree(want);
  cudaFree(found);
}
