/* THREADS threads x PAIRS malloc/free pairs (argv[1], argv[2]); thread i allocates 16 + (j % 64) * 8 bytes
 * in its j-th pair under marker "stress<i>". */
#include <pthread.h>
#include <stdlib.h>

#include "markers.h"

static long pairs;

static void* run(void* arg) {
  int i = (int)(intptr_t)arg;
  char name[16] = "stress";
  name[6] = (char)('0' + i / 10);
  name[7] = (char)('0' + i % 10);
  name[8] = 0;
  push(name);
  for (long j = 0; j < pairs; ++j) {
    char* p = malloc(16 + (size_t)(j % 64) * 8);
    p[0] = (char)j;
    keep(p);
    free(p);
  }
  pop();
  return NULL;
}

int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 8;
  pairs = argc > 2 ? atol(argv[2]) : 1000000;
  if (threads < 1 || threads > 64) return 2;
  pthread_t t[64];
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], NULL, run, (void*)(intptr_t)i);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], NULL);
  return 0;
}
