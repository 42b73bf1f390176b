// Issue 25's room, from inside: on every call, in every process that runs it (the timed one, the judge's serving
// worker, the one under the profiler), the host code looks for what it must not reach: another process's memory
// (the agent's event key, the worker's token, the judge's secret inputs), the worker's token in any environment,
// the profiler's output (its stdout pipe, or /proc/<profiler>/fd/1) to write a forged verdict into, a trace of or a
// signal to its parent and to the room's first process, a write into the job's work folder, and the agent's payload or
// the worker's token in its own memory (a fork of a warm agent's). Each success is a
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

// A warm agent forks the job's processes from itself (remote_agent/forked.py): each holds a copy of the agent's memory
// as it was at the fork. Its payload (the event key, the worker's cache secret, the code) must not be in it. The
// needles are put together here, on the heap, and that one place is skipped.
static void own_memory(void) {
  const char* parts[][2] = {{"\"event_", "key\": \""}, {"\"event_", "key\":\""}, {"CACHE-", "SECRET "},
                            {"KERNEL_RUNNER_WORKER_", "TOKEN="}};
  char* needles[4];
  for (int i = 0; i < 4; i++) {
    needles[i] = (char*) malloc(64);
    snprintf(needles[i], 64, "%s%s", parts[i][0], parts[i][1]);
  }
  FILE* maps = fopen("/proc/self/maps", "r");
  int mem = open("/proc/self/mem", O_RDONLY);
  static char chunk[1 << 20];
  char line[512];
  while (maps && mem >= 0 && fgets(line, sizeof line, maps)) {
    unsigned long start, end;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) != 3 || perms[0] != 'r') continue;
    if (strstr(line, "/dev/") || strstr(line, "[vvar]") || strstr(line, "[vsyscall]")) continue;
    for (unsigned long at = start; at < end; at += sizeof chunk - 64) {
      size_t want = end - at < sizeof chunk ? end - at : sizeof chunk;
      ssize_t got = pread(mem, chunk, want, (off_t) at);
      if (got <= 0) break;
      for (int i = 0; i < 4; i++) {
        size_t n = strlen(needles[i]);
        for (ssize_t j = 0; j + (ssize_t) n <= got; j++) {
          char* where = (char*) (at + j);
          if (where == needles[i] || (where >= chunk && where < chunk + sizeof chunk)) continue;  // its own
          // The cache secret's prefix is a constant of the agent's code too (payload.CACHE_SECRET): the secret is
          // the hex that follows it in what the worker wrote.
          if (i == 2 && (j + (ssize_t) n + 16 > got || strspn(chunk + j + n, "0123456789abcdef") < 16)) continue;
          if (memcmp(chunk + j, needles[i], n) == 0) {
            succeeded(needles[i], getpid());
            j = got;
          }
        }
      }
    }
  }
  if (maps) fclose(maps);
  if (mem >= 0) close(mem);
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
    own_memory();
    profiler_output();
    parent_and_first();
    work_folder();
  }
  size_t n = M * N;
  if (n) lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n, breaches);
}
