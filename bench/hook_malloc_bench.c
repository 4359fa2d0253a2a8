/* malloc-heavy microbenchmark for bench/hook_overhead.py: THREADS threads (argv[1]) each run ROUNDS
 * (argv[2]) rounds of: allocate 64 blocks of mixed sizes (16 B … 64 KiB), touch them, free them in a
 * different order.  Prints the wall time and the process CPU time (user + system) in seconds. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long rounds;

static void* run(void* arg) {
  uint32_t seed = (uint32_t)(uintptr_t)arg * 2654435761u + 1;
  void* blocks[64];
  for (long r = 0; r < rounds; ++r) {
    for (int i = 0; i < 64; ++i) {
      seed = seed * 1664525u + 1013904223u;
      size_t n = (size_t)16 << ((seed >> 24) % 13); /* 16 B .. 64 KiB */
      char* p = malloc(n);
      p[0] = (char)i;
      blocks[i] = p;
    }
    for (int i = 0; i < 64; ++i) free(blocks[(i * 37) % 64]);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  rounds = argc > 2 ? atol(argv[2]) : 100000;
  if (threads < 1 || threads > 64) return 2;
  struct timespec a, b, ca, cb;
  clock_gettime(CLOCK_MONOTONIC, &a);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ca);
  pthread_t t[64];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, run, (void*)(uintptr_t)i);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  clock_gettime(CLOCK_MONOTONIC, &b);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cb);
  printf("%.6f %.6f\n", (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9,
         (double)(cb.tv_sec - ca.tv_sec) + (double)(cb.tv_nsec - ca.tv_nsec) * 1e-9);
  return 0;
}
