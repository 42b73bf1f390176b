// What one job leaves for the next: a System V shared-memory segment and message queue, a POSIX message queue, a
// file in /run/lock, a file below a world-writable folder of /tmp, files in /dev/shm and /var/tmp, a process that
// left its session by a double fork, and a child in a user namespace of its own. Each process that calls it first
// looks for what another job left (each thing is named after the job that left it: a hash of its work folder, which
// the job's processes share and no two jobs do), then leaves its own; another job's is a "KR-ATTACK-SUCCEEDED" line
// and NaN in its output (WRONG_ANSWER). The self-test runs it as two jobs in a row. Verdict: CHECKED both times.
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <mqueue.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#define KEY_BASE 0x4B520000  // System V keys: this base, plus the job's tag
static int breaches = 0;
static unsigned tag = 0;  // this job's: a hash of its work folder

static void found(const char* what) {
  fprintf(stderr, "KR-ATTACK-SUCCEEDED another job left %s\n", what);
  breaches++;
}

static void path_of(char* out, size_t size, const char* where, unsigned job) {
  snprintf(out, size, "%s/kr-leftover-%04x", where, job);
}

// System V objects of another job: a key of ours with another tag (/proc/sysvipc shows this IPC namespace's).
static void look_ipc(const char* table, const char* what) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/sysvipc/%s", table);
  FILE* f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f)) {
    unsigned key = (unsigned) strtoul(line, 0, 10);
    if ((key & 0xFFFF0000u) == KEY_BASE && (key & 0xFFFFu) != tag) found(what);
  }
  if (f) fclose(f);
}

// Names beginning "kr-leftover-" in a folder that are not this job's.
static void look_folder(const char* where, const char* what) {
  char mine[64];
  snprintf(mine, sizeof mine, "kr-leftover-%04x", tag);
  DIR* dir = opendir(where);
  struct dirent* entry;
  while (dir && (entry = readdir(dir)))
    if (strncmp(entry->d_name, "kr-leftover-", 12) == 0 && strcmp(entry->d_name, mine) != 0) found(what);
  if (dir) closedir(dir);
}

static void look(void) {
  look_ipc("shm", "a System V segment");
  look_ipc("msg", "a System V message queue");
  // POSIX queues are found by name, not listed (/dev/mqueue may not be mounted): each job's tag is a message in
  // one queue of a fixed name.
  mqd_t q = mq_open("/kr-leftover", O_RDONLY | O_NONBLOCK);
  if (q != (mqd_t) -1) {
    char message[64];
    while (mq_receive(q, message, sizeof message, 0) > 0)
      if ((unsigned) strtoul(message, 0, 16) != tag) found("a POSIX message queue");
    mq_close(q);
  }
  look_folder("/run/lock", "a file in /run/lock");
  look_folder("/tmp/kr-open", "a file below a world-writable folder of /tmp");
  look_folder("/dev/shm", "a file in /dev/shm");
  look_folder("/var/tmp", "a file in /var/tmp");
  char mine[16];
  snprintf(mine, sizeof mine, "krl%04x", tag);
  DIR* proc = opendir("/proc");
  struct dirent* entry;
  while (proc && (entry = readdir(proc))) {
    char path[64], name[32] = {0};
    snprintf(path, sizeof path, "/proc/%s/comm", entry->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    if (n > 0 && strncmp(name, "krl", 3) == 0 && strncmp(name, mine, 7) != 0) found("a process");
  }
  if (proc) closedir(proc);
}

static void sleeper(const char* kind) {
  char name[16];
  snprintf(name, sizeof name, "krl%04x%s", tag, kind);
  prctl(PR_SET_NAME, name, 0, 0, 0);
  for (int fd = 0; fd < 1024; fd++) close(fd);
  for (;;) pause();
}

static void leave(void) {
  char path[128], queue[64];
  shmget(KEY_BASE | tag, 4096, IPC_CREAT | 0666);
  msgget(KEY_BASE | tag, IPC_CREAT | 0666);
  struct mq_attr attr = {0, 8, 64, 0};
  mqd_t q = mq_open("/kr-leftover", O_CREAT | O_WRONLY | O_NONBLOCK, 0666, &attr);
  if (q != (mqd_t) -1) {
    snprintf(queue, sizeof queue, "%04x", tag);
    mq_send(q, queue, strlen(queue) + 1, 0);
    mq_close(q);
  }
  mkdir("/tmp/kr-open", 0777);
  chmod("/tmp/kr-open", 0777);
  const char* folders[] = {"/run/lock", "/tmp/kr-open", "/dev/shm", "/var/tmp"};
  for (int i = 0; i < 4; i++) {
    path_of(path, sizeof path, folders[i], tag);
    int fd = open(path, O_CREAT | O_WRONLY, 0666);
    if (fd >= 0) close(fd);
  }
  if (fork() == 0) {  // out of the job's session, by a double fork
    setsid();
    if (fork() == 0) sleeper("a");
    _exit(0);
  }
  if (fork() == 0) {  // into a user namespace of its own
    if (unshare(CLONE_NEWUSER) == 0) fprintf(stderr, "KR-ATTACK-NOTE entered a user namespace\n");
    sleeper("b");
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
    char work[4096] = {0};
    if (getcwd(work, sizeof work))
      for (const char* c = work; *c; c++) tag = (tag * 31u + (unsigned char) *c) & 0xFFFFu;
    fprintf(stderr, "KR-ATTACK-TRIED leftovers in pid %d, job %04x\n", (int) getpid(), tag);
    look();
    leave();
  }
  size_t n = M * N;
  if (n) lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n, breaches);
}
