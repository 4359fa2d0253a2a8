/* Marker calls for the test programs: weak references to libpreflight_hook.so's functions, so the programs
 * also run (unlabelled) without the library preloaded. */
#ifndef PREFLIGHT_TEST_MARKERS_H
#define PREFLIGHT_TEST_MARKERS_H
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "preflight/allocator_hook/preflight_hook.h"

#pragma weak preflight_marker_push
#pragma weak preflight_marker_pop
#pragma weak preflight_phase
#pragma weak preflight_cuda_malloc
#pragma weak preflight_cuda_free
#pragma weak preflight_cuda_memory_stats
#pragma weak preflight_cuda_reset_peak

static inline void push(const char* name) {
  if (preflight_marker_push) preflight_marker_push(name);
}
static inline void pop(void) {
  if (preflight_marker_pop) preflight_marker_pop();
}
/* Keeps the compiler from dropping an allocation it can see is unused. */
static inline void keep(void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

/* Writes a line to stdout without stdio (stdio would allocate its buffer inside the trace). */
static inline void say(const char* key, uint64_t value) {
  char buf[96];
  size_t n = strlen(key);
  if (n > 60) n = 60;
  memcpy(buf, key, n);
  buf[n++] = ' ';
  char digits[24];
  int d = 0;
  do {
    digits[d++] = (char)('0' + value % 10);
    value /= 10;
  } while (value);
  while (d) buf[n++] = digits[--d];
  buf[n++] = '\n';
  ssize_t w = write(1, buf, n);
  (void)w;
}
#endif
