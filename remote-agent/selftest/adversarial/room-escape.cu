// Issue 25's room, from inside: on every call, in every process that runs it (the timed one, the judge's serving
// worker, the one under the profiler), the host code looks for what it must not reach: another process's memory
// (the agent's event key, the worker's token, the judge's secret inputs), the worker's token in any environment,
// the profiler's output (its stdout pipe, or /proc/<profiler>/fd/1) to write a forged verdict into, a trace of or a
// signal to its parent and to the room's first process, and a write into the job's work folder. Each success is a
// "KR-ATTACK-SUCCEEDED" line in the log and NaN in its output, so any breach is a WRONG_ANSWER. Verdict: BENCHMARKED,
// the profiler's verdict verified, no breach.
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <unistd.h>

static int breaches = 0;

static void succeeded(const char* what, long pid) {
  fprintf(stderr, "KR-ATTACK-SUCCEEDED %s (pid %ld)\n", what, pid);
  breaches++;
}

static int contains(const char* buffer, size_t size, const char* needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= size; i++)
    if (memcmp(buffer + i, needle, n) == 0) return 1;
  return 0;
}

static void environments_and_memory(void) {
  DIR* proc = opendir("/proc");
  struct dirent* entry;
  static char buffer[1 << 20];
  while (proc && (entry = readdir(proc))) {
    long pid = atol(entry->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
      ssize_t got = read(fd, buffer, sizeof buffer);
      if (got > 0 && contains(buffer, got, "KERNEL_RUNNER_WORKER_TOKEN")) succeeded("the worker's token", pid);
      close(fd);
    }
    snprintf(path, sizeof path, "/proc/%ld/mem", pid);
    fd = open(path, O_RDONLY);
    if (fd >= 0) {
      succeeded("opened another process's memory", pid);
      close(fd);
    }
    snprintf(path, sizeof path, "/proc/%ld/fd/1", pid);
    fd = open(path, O_WRONLY);
    if (fd >= 0) {
      succeeded("opened another process's stdout for writing", pid);
      close(fd);
    }
  }
  if (proc) closedir(proc);
}

static void profiler_output(void) {
  const char* pipe = getenv("KR_PROFILER_PIPE");
  if (!pipe) return;
  char want[64], link[64], path[64];
  snprintf(want, sizeof want, "pipe:[%s]", pipe);
  for (int fd = 0; fd < 1024; fd++) {
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n > 0) {
      link[n] = 0;
      if (strcmp(link, want) == 0) {
        succeeded("holds the profiler's output", getpid());
        const char forged[] = "\"ID\",\"Kernel Name\"\n";
        (void) !write(fd, forged, sizeof forged - 1);
      }
    }
  }
}

static void parent_and_first(void) {
  long targets[2] = {(long) getppid(), 1};
  for (int i = 0; i < 2; i++) {
    long pid = targets[i];
    if (pid <= 1 && i == 0) continue;  // a parent outside the room's PID namespace shows as 0
    if (ptrace(PTRACE_ATTACH, (pid_t) pid, 0, 0) == 0) {
      succeeded("traced", pid);
      ptrace(PTRACE_DETACH, (pid_t) pid, 0, 0);
    }
    if (pid > 1 && kill((pid_t) pid, 0) == 0) succeeded("may signal its parent", pid);
  }
}

static void work_folder(void) {
  const char* names[] = {"serve-job.json", "job.json", "solution.so", "planted"};
  for (int i = 0; i < 4; i++) {
    int fd = open(names[i], O_WRONLY | O_CREAT, 0644);
    if (fd >= 0) {
      succeeded(names[i], getpid());
      close(fd);
    }
  }
}

__global__ void lrelu(const float* in, float alpha, float* out, size_t n, int poison) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = poison ? nanf("") : (in[i] > 0.0f ? in[i] : alpha * in[i]);
}

extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int tried = 0;
  if (!tried) {
    tried = 1;
    fprintf(stderr, "KR-ATTACK-TRIED room-escape in pid %d\n", (int) getpid());
    environments_and_memory();
    profiler_output();
    parent_and_first();
    work_folder();
  }
  size_t n = M * N;
  if (n) lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n, breaches);
}
