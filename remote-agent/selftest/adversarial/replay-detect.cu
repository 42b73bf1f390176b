// A kernel that behaves only where its host code vouches for it: the host sets a device flag (cudaMemcpyToSymbol)
// once, as the library loads, before any call is recorded; the device code computes honestly when the flag is set
// and writes nothing (fast) when it is not, as in a replay that loads only the device code. The replay's outputs
// are then wrong and the judge says so: the result falls back to the solution's own process, and never ranks.
// Verdict: BENCHMARKED, not ranked.
// The flag is set from a thread the library starts as it loads: a constructor runs before nvcc's own registration
// of the device code (its constructor comes last in the file), where the symbol is not yet known. The first call
// waits for it (a warm worker checks at once after the load).
#include <stdio.h>
#include <pthread.h>
#include <unistd.h>
#include <atomic>
static std::atomic<bool> set{false};
__device__ int vouched = 0;
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  if (!vouched) return;  // "the replay": do nothing, fast
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
static void* vouch(void*) {
  int one = 1;
  for (int i = 0; i < 20000 && cudaMemcpyToSymbol(vouched, &one, sizeof one) != cudaSuccess; i++) usleep(100);
  fprintf(stderr, "KR-ATTACK-TRIED the device flag set at load (%s)\n", cudaGetErrorString(cudaGetLastError()));
  set = true;
  return nullptr;
}
__attribute__((constructor)) static void start() {
  pthread_t thread;
  pthread_create(&thread, nullptr, vouch, nullptr);
  pthread_detach(thread);
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  for (int i = 0; i < 20000 && !set; i++) usleep(100);
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
