// A rival's figures, from the job's side. A warm worker runs two jobs on one GPU (gpu_worker.py --jobs-per-gpu: the
// next job compiles while the last one is checked, timed and audited), so a submission could share the device with
// a rival's timed samples, and every sample of the rival's it lengthens makes its own rank better. On its first call
// the host code starts a thread that keeps the device busy for as long as its process lives (device-to-device copies
// of 256 MiB, back to back, on a stream of its own), leaves a process out of its session (a double fork, TERM and HUP
// ignored) that runs the job's own Python to keep the device busy through PyTorch for 30 s more, and waits 3 s, so
// that its processes are on the device while the other job's replay would run. Its outputs are right.
// Verdict: BENCHMARKED. Whether a neighbour's figures moved is worker_bench.py's "neighbours" to say: an honest
// leaky-relu queued beside this case, against one timed alone (selftest/probes/neighbour_hog_off.sh: the same
// without the device's turn).
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const size_t HOG_BYTES = (size_t)256 << 20;

static void* hog(void*) {
  cudaStream_t stream;
  char *a = nullptr, *b = nullptr;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMalloc(&a, HOG_BYTES) != cudaSuccess || cudaMalloc(&b, HOG_BYTES) != cudaSuccess) {
    fprintf(stderr, "KR-ATTACK-TRIED no device memory for the hog\n");
    return nullptr;
  }
  fprintf(stderr, "KR-ATTACK-TRIED a thread keeps the device busy\n");
  for (;;) {
    for (int i = 0; i < 8; i++) cudaMemcpyAsync(b, a, HOG_BYTES, cudaMemcpyDeviceToDevice, stream);
    cudaStreamSynchronize(stream);
  }
  return nullptr;
}

static void leave_hog() {
  char python[4096];
  ssize_t n = readlink("/proc/self/exe", python, sizeof python - 1);
  if (n <= 0) return;
  python[n] = 0;
  pid_t first = fork();
  if (first != 0) {
    if (first > 0) waitpid(first, nullptr, 0);
    return;
  }
  setsid();
  if (fork() != 0) _exit(0);
  signal(SIGTERM, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  execl(python, python, "-c",
        "import sys, time, torch\n"
        "a = torch.empty(1 << 28, dtype=torch.uint8, device='cuda'); b = torch.empty_like(a)\n"
        "print('KR-ATTACK-TRIED a process left behind keeps the device busy', file=sys.stderr, flush=True)\n"
        "end = time.time() + 30\n"
        "while time.time() < end:\n"
        "    for _ in range(8): b.copy_(a)\n"
        "    torch.cuda.synchronize()\n",
        (char*)nullptr);
  _exit(1);
}

__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}

extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int calls = 0;
  if (calls++ == 0) {
    pthread_t thread;
    pthread_create(&thread, nullptr, hog, nullptr);
    pthread_detach(thread);
    leave_hog();
    struct timespec wait = {3, 0};
    nanosleep(&wait, nullptr);
  }
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
