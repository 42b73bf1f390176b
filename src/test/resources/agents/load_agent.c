/*
 * The load benchmark's agent in C: the same protocol and directives as load_agent.py, without Python's
 * ~100 ms start-up, so that 200 agents starting at once measure the service rather than the interpreter.
 *   cc -O2 -o load_agent load_agent.c ; load_agent --payload <file>
 * Events are signed as the real agent signs them: JSON_EVENT:<hex HMAC-SHA256(event_key, json)>:<json>, with a
 * small SHA-256 of its own (FIPS 180-4, HMAC per RFC 2104), so that the benchmark pays the service's check.
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

/* ---- SHA-256 (FIPS 180-4) and HMAC (RFC 2104) */
typedef struct { unsigned int h[8]; unsigned char block[64]; size_t used; unsigned long long bits; } sha256;
static const unsigned int K[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2};
#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
static void sha_block(sha256 *s) {
  unsigned int w[64], a[8];
  for (int i = 0; i < 16; i++) {
    w[i] = (unsigned) s->block[4 * i] << 24 | (unsigned) s->block[4 * i + 1] << 16 | s->block[4 * i + 2] << 8 |
           s->block[4 * i + 3];
  }
  for (int i = 16; i < 64; i++) {
    unsigned s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
    unsigned s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  memcpy(a, s->h, sizeof a);
  for (int i = 0; i < 64; i++) {
    unsigned t1 = a[7] + (ROR(a[4], 6) ^ ROR(a[4], 11) ^ ROR(a[4], 25)) + ((a[4] & a[5]) ^ (~a[4] & a[6])) + K[i] + w[i];
    unsigned t2 = (ROR(a[0], 2) ^ ROR(a[0], 13) ^ ROR(a[0], 22)) + ((a[0] & a[1]) ^ (a[0] & a[2]) ^ (a[1] & a[2]));
    memmove(a + 1, a, 7 * sizeof a[0]);
    a[4] += t1;
    a[0] = t1 + t2;
  }
  for (int i = 0; i < 8; i++) s->h[i] += a[i];
}
static void sha_init(sha256 *s) {
  static const unsigned int h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c,
                                     0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, h0, sizeof h0);
  s->used = 0;
  s->bits = 0;
}
static void sha_update(sha256 *s, const unsigned char *data, size_t len) {
  for (size_t i = 0; i < len; i++) {
    s->block[s->used++] = data[i];
    s->bits += 8;
    if (s->used == 64) { sha_block(s); s->used = 0; }
  }
}
static void sha_final(sha256 *s, unsigned char out[32]) {
  unsigned long long bits = s->bits;
  unsigned char pad = 0x80, zero = 0;
  sha_update(s, &pad, 1);
  while (s->used != 56) sha_update(s, &zero, 1);
  for (int i = 7; i >= 0; i--) s->block[s->used++] = (unsigned char) (bits >> (8 * i));
  sha_block(s);
  for (int i = 0; i < 32; i++) out[i] = (unsigned char) (s->h[i / 4] >> (24 - 8 * (i % 4)));
}
static unsigned char key_block[64];
static void hmac_hex(const char *msg, char hex[65]) {
  unsigned char pad[64], inner[32], mac[32];
  sha256 s;
  for (int i = 0; i < 64; i++) pad[i] = key_block[i] ^ 0x36;
  sha_init(&s); sha_update(&s, pad, 64); sha_update(&s, (const unsigned char *) msg, strlen(msg)); sha_final(&s, inner);
  for (int i = 0; i < 64; i++) pad[i] = key_block[i] ^ 0x5c;
  sha_init(&s); sha_update(&s, pad, 64); sha_update(&s, inner, 32); sha_final(&s, mac);
  for (int i = 0; i < 32; i++) sprintf(hex + 2 * i, "%02x", mac[i]);
}
/* The payload's "event_key" (base64 of 32 bytes) into key_block; 0 when absent. */
static int read_key(const char *payload) {
  const char *at = strstr(payload, "\"event_key\"");
  if (!at || !(at = strchr(at + 11, '"'))) return 0;
  static const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned int acc = 0;
  int bits = 0, n = 0;
  for (at++; *at && *at != '"' && *at != '='; at++) {
    const char *p = strchr(alphabet, *at);
    if (!p) return 0;
    acc = acc << 6 | (unsigned) (p - alphabet);
    bits += 6;
    if (bits >= 8) { bits -= 8; if (n < 64) key_block[n++] = (unsigned char) (acc >> bits); }
  }
  return n;
}

static void emit(const char *type, const char *fields) {
  static char json[512];
  char mac[65];
  snprintf(json, sizeof json, "{\"type\": \"%s\", \"sent_ns\": %lld%s%s}", type, now_ns(), fields[0] ? ", " : "",
           fields);
  hmac_hex(json, mac);
  printf("JSON_EVENT:%s:%s\n", mac, json);
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
  if (!read_key(text)) {
    fprintf(stderr, "no event_key in the payload\n");
    return 2;
  }
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
