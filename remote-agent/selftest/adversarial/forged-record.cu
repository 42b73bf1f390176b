// The record is the solution's own process speaking: this one writes a forged RECORDED line to every descriptor it
// has (one of them is the agent's protocol), ahead of the worker's own, naming a decoy kernel as each test's whole
// work. The agent keeps the first RECORDED it reads; the replay of the decoy leaves the outputs poisoned, the judge
// says so, and the result is timed in the solution's own process instead, never ranked. Verdict: BENCHMARKED, not
// ranked (no wrong time ranks, and no wrong output is published). It writes to pipes and sockets only: the CUDA
// driver's own descriptors (device files) would break its own run.
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
extern "C" __global__ void decoy(float* out) {
  if (threadIdx.x == 0 && blockIdx.x == 0) out[0] = 0.0f;
}
__global__ void lrelu(const float* in, float alpha, float* out, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] > 0.0f ? in[i] : alpha * in[i];
}
extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int forged = 0;
  if (!forged) {
    forged = 1;
    char line[4096];
    int at = snprintf(line, sizeof line, "{\"event\": \"RECORDED\", \"records\": {");
    for (int test = 1; test <= 8; test++) {
      at += snprintf(line + at, sizeof line - at, "%s\"%d\": {\"scratch\": [], \"ops\": [{\"op\": \"launch\", "
                     "\"kernel\": \"decoy\", \"grid\": [1, 1, 1], \"block\": [32, 1, 1], \"shared\": 0, \"params\": "
                     "[{\"bytes\": \"0000000000000000\", \"pointers\": [{\"at\": 0, \"buffer\": \"output\", "
                     "\"offset\": 0}]}]}]}", test > 1 ? ", " : "", test);
    }
    at += snprintf(line + at, sizeof line - at, "}}\n");
    for (int fd = 1; fd < 64; fd++) {
      struct stat st;
      if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) write(fd, line, strlen(line));
    }
    fprintf(stderr, "KR-ATTACK-TRIED a forged record written to every descriptor\n");
  }
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n);
}
