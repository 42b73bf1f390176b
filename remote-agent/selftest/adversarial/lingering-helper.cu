// A replay that does nothing, helped by a process that ran the solution's host code. A warm agent's judge serves
// the verdict's worker, then the replay's (one device context fewer a job), and the verdict's worker, which ran this
// code, stays until the benchmark is over. Here every call remembers its buffers (in the verdict's worker: the
// judge's, mapped through CUDA IPC), and a thread of the library's computes relu on every buffer it ever saw, over
// and over, for as long as the process lives. The device code computes only where the host code vouched for it
// (replay-detect.cu): the replay, which loads only the device code, writes nothing, fast. Were the replay's buffers
// in memory the verdict's worker mapped (the judge's freed blocks handed out again by its memory pool), that thread
// would write the replay's outputs for it, and a replay that did nothing would be ranked. The thread starts its work
// 0.2 s after the last call, so that no launch of its own is in a recorded call (the solution's process records its
// check's calls, then ends). relu: no scalar, whose value differs per job, to get wrong. Verdict: BENCHMARKED, not
// ranked (the replay's outputs are wrong, so its own process times it).
#include <stdio.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include <atomic>
#include <mutex>
#include <vector>
static std::atomic<bool> set{false};
static std::atomic<long long> last_call{0};
static long long now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}
__device__ int vouched = 0;
__global__ void relu_vouched(const float* in, float* out, size_t n) {
  if (!vouched) return;  // "the replay": do nothing, fast
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
__global__ void relu_helper(const float* in, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}
struct Seen { const float* in; float* out; size_t n; };
static std::mutex lock;
static std::vector<Seen> seen;
static void* help(void*) {
  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  bool told = false;
  for (;;) {
    std::vector<Seen> now;
    if (now_us() - last_call > 200000) {
      std::lock_guard<std::mutex> hold(lock);
      now = seen;
    }
    for (const Seen& s : now) relu_helper<<<(unsigned)((s.n + 255) / 256), 256, 0, stream>>>(s.in, s.out, s.n);
    cudaStreamSynchronize(stream);
    if (!now.empty() && !told) {
      fprintf(stderr, "lingering-helper: computing the outputs of every buffer seen\n");
      told = true;
    }
    if (now.empty()) usleep(1000);
  }
  return nullptr;
}
static void* vouch(void*) {
  int one = 1;
  for (int i = 0; i < 20000 && cudaMemcpyToSymbol(vouched, &one, sizeof one) != cudaSuccess; i++) usleep(100);
  set = true;
  // Said now: the agent may end this process before the helper's first pass (it ends the processes that ran the
  // host code before the timing).
  fprintf(stderr, "KR-ATTACK-TRIED lingering-helper: a helper thread computes the outputs of every buffer seen\n");
  pthread_t helper;
  pthread_create(&helper, nullptr, help, nullptr);
  pthread_detach(helper);
  return nullptr;
}
__attribute__((constructor)) static void start() {
  pthread_t thread;
  pthread_create(&thread, nullptr, vouch, nullptr);
  pthread_detach(thread);
}
extern "C" void solution(const float* input, float* output, size_t M, size_t N) {
  for (int i = 0; i < 20000 && !set; i++) usleep(100);
  last_call = now_us();
  size_t n = M * N;
  relu_vouched<<<(unsigned)((n + 255) / 256), 256>>>(input, output, n);
  std::lock_guard<std::mutex> hold(lock);
  for (const Seen& s : seen)
    if (s.in == input && s.out == output) return;
  seen.push_back({input, output, n});
}
