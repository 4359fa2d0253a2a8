#ifndef PREFLIGHT_ALLOCATOR_HOOK_PREFLIGHT_HOOK_H
#define PREFLIGHT_ALLOCATOR_HOOK_PREFLIGHT_HOOK_H
/**
 * @file preflight_hook.h
 * The C interface exported by `libpreflight_hook.so`, besides the interposed allocator functions
 * (malloc free calloc realloc reallocarray posix_memalign aligned_alloc memalign valloc pvalloc).
 *
 * Programs (and the Python glue, through ctypes) call these to label allocations; everything is a no-op
 * returning 0 when tracing is off (PREFLIGHT_TRACE_DIR unset).  All functions are thread safe, never
 * allocate through malloc, and may be called before the library saw its first malloc.
 *
 * Markers: each thread has a stack of marker ids; every allocation record carries the innermost one.
 * Marker names are interned once (preflight_marker_id) and written to the trace's string table.
 * Stacks deeper than 32 keep counting but label allocations with the 32nd marker.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque CUDA stream handle (the `cudaStream_t` of the CUDA runtime). */
typedef struct CUstream_st* preflight_cuda_stream_t;

/**
 * CUDA allocation for `torch.cuda.memory.CUDAPluggableAllocator(path, "preflight_cuda_malloc",
 * "preflight_cuda_free")` (ABI: pytorch torch/csrc/cuda/CUDAPluggableAllocator.h).  Forwards to cudaMalloc
 * on `device` (switching the current device for the call if needed) and records address, size, device and
 * stream.  cudaMalloc/cudaFree/cudaGetDevice/cudaSetDevice are found at first use: in the process
 * (dlsym RTLD_DEFAULT), else in PREFLIGHT_TRACE_CUDART, else libcudart.so, libcudart.so.12, .so.11.0.
 * @return the device pointer, or NULL when cudaMalloc fails (recorded as an OOM record) or no CUDA
 *         runtime can be found.
 */
void* preflight_cuda_malloc(ssize_t size, int device, preflight_cuda_stream_t stream);

/** Frees `ptr` (from preflight_cuda_malloc of `size` bytes) with cudaFree; recorded before the call. */
void preflight_cuda_free(void* ptr, ssize_t size, int device, preflight_cuda_stream_t stream);

/**
 * Live and peak bytes of preflight_cuda_malloc on `device` (0..63), kept whether or not tracing is on, so
 * that torch.cuda.memory_allocated()/max_memory_allocated() can be answered under a pluggable allocator.
 * @param out  out[0] live bytes, out[1] peak live bytes since start or the last reset, out[2] number of
 *             successful allocations, out[3] number of failed cudaMalloc calls
 * @return 0, or -1 if `device` is out of range (out untouched)
 */
int preflight_cuda_memory_stats(int device, uint64_t out[4]);

/** Sets the peak of `device` to its current live bytes (torch.cuda.reset_peak_memory_stats). */
void preflight_cuda_reset_peak(int device);

/**
 * Interns `name` (cut to 4096 bytes) and returns its marker id (>= 1); the same name always gives the same
 * id.  Returns 0 when tracing is off or the table (65,535 names) is full.
 */
uint32_t preflight_marker_id(const char* name);

/** Pushes marker `name` on this thread's stack (preflight_marker_id + preflight_marker_push_id). */
void preflight_marker_push(const char* name);

/** Pushes marker `id` (from preflight_marker_id) on this thread's stack. */
void preflight_marker_push_id(uint32_t id);

/** Pops this thread's innermost marker (no-op on an empty stack). */
void preflight_marker_pop(void);

/** Replaces this thread's marker stack by [id] (by [] when id is 0).  Used for backward passes. */
void preflight_marker_set_id(uint32_t id);

/**
 * Sets the process-wide training phase (0 other, 1 forward, 2 backward, 3 optimizer; see
 * preflight::trace::Phase) and iteration; recorded only when either changes.
 */
void preflight_phase(int phase, uint64_t iteration);

/** 1 when this process is writing a trace, else 0. */
int preflight_trace_active(void);

/** Path of this process's trace file ("" when none is open yet or tracing is off). */
const char* preflight_trace_path(void);

/** Path of the loaded libpreflight_hook.so (what CUDAPluggableAllocator must open). */
const char* preflight_hook_library_path(void);

#ifdef __cplusplus
}
#endif

#endif  // PREFLIGHT_ALLOCATOR_HOOK_PREFLIGHT_HOOK_H
