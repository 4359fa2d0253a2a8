/* The CUDAPluggableAllocator entry points against the stand-in runtime (fake_cudart.c):
 *   p0 = 1 MiB on device 0, stream 0x10;  p1 = 2 MiB on device 1, stream 0x20;  p2 = 3 MiB on device 0,
 *   stream 0x20;  free p0;  a 1 GiB request on device 0 fails (the stand-in's limit is 512 MiB);
 *   reset the peak of device 0;  free p1, p2.
 * Prints the runtime's device at each cudaMalloc and the counters of preflight_cuda_memory_stats. */
#include <stdlib.h>

#include "markers.h"

int fake_cuda_last_malloc_device(void); /* from the stand-in runtime this program links */
int fake_cuda_current_device(void);

#define MiB (1024 * 1024)

static void stats(const char* prefix, int device) {
  uint64_t s[4] = {0, 0, 0, 0};
  if (preflight_cuda_memory_stats(device, s) != 0) return;
  char key[64];
  const char* names[4] = {"live", "peak", "allocs", "ooms"};
  for (int i = 0; i < 4; ++i) {
    size_t n = strlen(prefix);
    memcpy(key, prefix, n);
    key[n] = '_';
    strcpy(key + n + 1, names[i]);
    say(key, s[i]);
  }
}

int main(void) {
  if (!preflight_cuda_malloc) return 3;
  preflight_cuda_stream_t s10 = (preflight_cuda_stream_t)(uintptr_t)0x10;
  preflight_cuda_stream_t s20 = (preflight_cuda_stream_t)(uintptr_t)0x20;
  push("cuda_test");
  void* p0 = preflight_cuda_malloc(MiB, 0, s10);
  say("device_p0", (uint64_t)fake_cuda_last_malloc_device());
  void* p1 = preflight_cuda_malloc(2 * MiB, 1, s20);
  say("device_p1", (uint64_t)fake_cuda_last_malloc_device());
  say("current_after_p1", (uint64_t)fake_cuda_current_device());
  void* p2 = preflight_cuda_malloc(3 * MiB, 0, s20);
  if (!p0 || !p1 || !p2) return 4;
  stats("dev0_before_free", 0);
  preflight_cuda_free(p0, MiB, 0, s10);
  void* big = preflight_cuda_malloc((ssize_t)1 << 30, 0, s10);
  say("big_is_null", big == NULL);
  preflight_cuda_reset_peak(0);
  stats("dev0_after_reset", 0);
  stats("dev1", 1);
  preflight_cuda_free(p1, 2 * MiB, 1, s20);
  preflight_cuda_free(p2, 3 * MiB, 0, s20);
  pop();
  return 0;
}
