/* A stand-in libcudart for tests without a GPU: cudaMalloc hands out anonymous mappings (not malloc, so
 * they do not appear as host allocations), refuses more than 512 MiB at once (cudaErrorMemoryAllocation),
 * and remembers the current device per thread as the real runtime does. */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

enum { kSuccess = 0, kErrorMemoryAllocation = 2, kErrorInvalidDevice = 101, kErrorInvalidValue = 1 };

static __thread int current_device = 0;
static int last_malloc_device = -1;

struct Block {
  void* p;
  size_t n;
};
static struct Block blocks[256];

int cudaGetDevice(int* device) {
  *device = current_device;
  return kSuccess;
}

int cudaSetDevice(int device) {
  if (device < 0 || device > 7) return kErrorInvalidDevice;
  current_device = device;
  return kSuccess;
}

int cudaMalloc(void** out, size_t n) {
  if (n > ((size_t)512 << 20)) return kErrorMemoryAllocation;
  void* p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return kErrorMemoryAllocation;
  for (int i = 0; i < 256; ++i) {
    if (!blocks[i].p) {
      blocks[i].p = p;
      blocks[i].n = n ? n : 1;
      last_malloc_device = current_device;
      *out = p;
      return kSuccess;
    }
  }
  munmap(p, n ? n : 1);
  return kErrorMemoryAllocation;
}

int cudaFree(void* p) {
  if (!p) return kSuccess;
  for (int i = 0; i < 256; ++i) {
    if (blocks[i].p == p) {
      munmap(p, blocks[i].n);
      blocks[i].p = NULL;
      return kSuccess;
    }
  }
  return kErrorInvalidValue;
}

int fake_cuda_last_malloc_device(void) {
  return last_malloc_device;
}
int fake_cuda_current_device(void) {
  return current_device;
}
