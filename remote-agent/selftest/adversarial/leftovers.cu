// What one job leaves for the next: a System V shared-memory segment and message queue, a POSIX message queue, a
// file in /run/lock, a file below a world-writable folder of /tmp, files in /dev/shm and /var/tmp, a process that
// left its session by a double fork, and a child in a user namespace of its own. Each call first looks for an
// earlier job's, then leaves its own; anything found is a "KR-ATTACK-SUCCEEDED" line and NaN in its output
// (WRONG_ANSWER). The self-test runs it as two jobs in a row. Verdict: CHECKED both times.
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

#define SHM_KEY 0x4B520025
#define MSG_KEY 0x4B520026
static const char* FILES[] = {"/run/lock/kr-leftover", "/tmp/kr-open/kr-leftover", "/dev/shm/kr-leftover",
                              "/var/tmp/kr-leftover"};
static int breaches = 0;

static void found(const char* what) {
  fprintf(stderr, "KR-ATTACK-SUCCEEDED an earlier job left %s\n", what);
  breaches++;
}

static void look(void) {
  if (shmget(SHM_KEY, 0, 0) >= 0) found("a System V segment");
  if (msgget(MSG_KEY, 0) >= 0) found("a System V message queue");
  mqd_t q = mq_open("/kr-leftover", O_RDONLY);
  if (q != (mqd_t) -1) { found("a POSIX message queue"); mq_close(q); }
  for (int i = 0; i < 4; i++)
    if (access(FILES[i], F_OK) == 0) found(FILES[i]);
  DIR* proc = opendir("/proc");
  struct dirent* entry;
  while (proc && (entry = readdir(proc))) {
    char path[64], name[32] = {0};
    snprintf(path, sizeof path, "/proc/%s/comm", entry->d_name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) continue;
    ssize_t n = read(fd, name, sizeof name - 1);
    close(fd);
    if (n > 0 && strncmp(name, "krleftover", 10) == 0) found("a process");
  }
  if (proc) closedir(proc);
}

static void sleeper(const char* name) {
  prctl(PR_SET_NAME, name, 0, 0, 0);
  for (int fd = 0; fd < 1024; fd++) close(fd);
  for (;;) pause();
}

static void leave(void) {
  shmget(SHM_KEY, 4096, IPC_CREAT | 0666);
  msgget(MSG_KEY, IPC_CREAT | 0666);
  struct mq_attr attr = {0, 1, 64, 0};
  mqd_t q = mq_open("/kr-leftover", O_CREAT | O_RDWR, 0666, &attr);
  if (q != (mqd_t) -1) mq_close(q);
  mkdir("/tmp/kr-open", 0777);
  chmod("/tmp/kr-open", 0777);
  for (int i = 0; i < 4; i++) {
    int fd = open(FILES[i], O_CREAT | O_WRONLY, 0666);
    if (fd >= 0) close(fd);
  }
  if (fork() == 0) {  // out of the job's session, by a double fork
    setsid();
    if (fork() == 0) sleeper("krleftover-a");
    _exit(0);
  }
  if (fork() == 0) {  // into a user namespace of its own
    if (unshare(CLONE_NEWUSER) == 0) fprintf(stderr, "KR-ATTACK-NOTE entered a user namespace\n");
    sleeper("krleftover-b");
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
    fprintf(stderr, "KR-ATTACK-TRIED leftovers in pid %d\n", (int) getpid());
    look();
    leave();
  }
  size_t n = M * N;
  if (n) lrelu<<<(unsigned)((n + 255) / 256), 256>>>(input, alpha, output, n, breaches);
}
