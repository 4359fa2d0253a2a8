/* A known allocation pattern (test_hook_programs.cpp asserts these numbers):
 *   workers  4 threads, marker "worker<i>": 100 blocks of (i+1)*4 KiB each, all held, then all freed
 *   phase_a  8 x 1 MiB (malloc)
 *   phase_b  free 4 of phase_a; calloc 3 MiB, realloc it to 5 MiB, posix_memalign 2 MiB, aligned_alloc,
 *            memalign, valloc, pvalloc 1 MiB each, reallocarray(NULL, 4, 256 KiB) = 1 MiB
 *            -> peak of 16 MiB at the reallocarray
 *   cleanup  free everything but the pvalloc block (the leak)
 *   phase_c  12 x 1 MiB allocated then freed (live 13 MiB, below the peak)
 *   small    1000 x 100 bytes, freed (not recorded with PREFLIGHT_TRACE_MIN_BYTES=4096)
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>

#include "markers.h"

#define MiB (1024u * 1024u)

static pthread_barrier_t barrier;

static void* worker(void* arg) {
  int i = (int)(intptr_t)arg;
  char name[16] = "worker0";
  name[6] = (char)('0' + i);
  void* blocks[100];
  push(name);
  for (int k = 0; k < 100; ++k) {
    blocks[k] = malloc((size_t)(i + 1) * 4096);
    keep(blocks[k]);
  }
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < 100; ++k) free(blocks[k]);
  pop();
  return NULL;
}

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

int main(void) {
  pthread_t threads[4];
  pthread_barrier_init(&barrier, NULL, 4);
  for (int i = 0; i < 4; ++i) pthread_create(&threads[i], NULL, worker, (void*)(intptr_t)i);
  for (int i = 0; i < 4; ++i) pthread_join(threads[i], NULL);

  void* a[8];
  push("phase_a");
  for (int i = 0; i < 8; ++i) {
    a[i] = malloc(MiB);
    keep(a[i]);
  }
  pop();

  push("phase_b");
  for (int i = 0; i < 4; ++i) free(a[i]);
  void* b = calloc(3, MiB);
  keep(b);
  b = realloc(b, 5 * MiB);
  keep(b);
  void* pm = NULL;
  if (posix_memalign(&pm, 64, 2 * MiB) != 0) return 1;
  void* aa = aligned_alloc(4096, MiB);
  void* ma = memalign(256, MiB);
  void* va = valloc(MiB);
  void* pv = pvalloc(MiB);
  void* ra = reallocarray(NULL, 4, MiB / 4);
  keep(aa);
  keep(ma);
  keep(va);
  keep(pv);
  keep(ra);
  pop();

  for (int i = 4; i < 8; ++i) free(a[i]);
  free(b);
  free(pm);
  free(aa);
  free(ma);
  free(va);
  free(ra);

  push("phase_c");
  void* c[12];
  for (int i = 0; i < 12; ++i) {
    c[i] = malloc(MiB);
    keep(c[i]);
  }
  for (int i = 0; i < 12; ++i) free(c[i]);
  pop();

  push("small");
  for (int i = 0; i < 1000; ++i) {
    void* s = malloc(100);
    keep(s);
    free(s);
  }
  pop();
  return 0;
}
