/*
 * The load benchmark's agent in C: the same protocol and directives as load_agent.py, without Python's
 * ~100 ms start-up, so that 200 agents starting at once measure the service rather than the interpreter.
 *   cc -O2 -o load_agent load_agent.c ; load_agent --payload <file>
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (long long) ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void emit(const char *type, const char *fields) {
  printf("JSON_EVENT:{\"type\": \"%s\", \"sent_ns\": %lld%s%s}\n", type, now_ns(), fields[0] ? ", " : "", fields);
  fflush(stdout);
}

static int directive(const char *text, const char *name, int fallback) {
  const char *at = strstr(text, name);
  return at ? atoi(at + strlen(name)) : fallback;
}

int main(int argc, char **argv) {
  setsid(); /* the agent leads its own process group: the service stops it with one signal */
  const char *path = NULL;
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--payload") == 0) {
      path = argv[i + 1];
    }
  }
  FILE *file = path ? fopen(path, "rb") : NULL;
  if (!file) {
    fprintf(stderr, "no payload\n");
    return 2;
  }
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof text - 1, file);
  text[n] = 0;
  fclose(file);
  if (strstr(text, "load: hang")) {
    emit("COMPILING", "");
    for (;;) {
      pause();
    }
  }
  int events = directive(text, "events=", 50);
  int interval_us = directive(text, "interval_ms=", 20) * 1000;
  int rest = events > 5 ? events - 5 : 0;
  int tests = rest / 2, benches = rest - tests;
  char fields[256];
  emit("COMPILING", "");
  usleep(interval_us);
  snprintf(fields, sizeof fields, "\"total_tests\": %d", tests);
  emit("CHECKING", fields);
  for (int i = 1; i <= tests; i++) {
    usleep(interval_us);
    snprintf(fields, sizeof fields, "\"result\": {\"test_id\": %d, \"name\": \"t%d\", \"status\": \"PASSED\"}", i, i);
    emit("TEST_RESULT", fields);
  }
  usleep(interval_us);
  snprintf(fields, sizeof fields, "\"passed_tests\": %d, \"total_tests\": %d", tests, tests);
  emit("CHECKED", fields);
  usleep(interval_us);
  snprintf(fields, sizeof fields, "\"total_tests\": %d", benches);
  emit("BENCHMARKING", fields);
  for (int i = 1; i <= benches; i++) {
    usleep(interval_us);
    snprintf(fields, sizeof fields,
             "\"result\": {\"test_id\": %d, \"name\": \"t%d\", \"runtime_ms\": 0.1, \"gflops\": 1.0}", i, i);
    emit("BENCHMARK_RESULT", fields);
  }
  usleep(interval_us);
  emit("BENCHMARKED", "\"avg_runtime_ms\": 0.1, \"avg_gflops\": 1.0, \"test_results\": []");
  return 0;
}
