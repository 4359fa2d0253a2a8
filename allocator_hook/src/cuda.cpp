// The CUDAPluggableAllocator entry points: forward to the CUDA runtime found at first use (no CUDA at build
// time), record device and stream, and keep per-device live/peak bytes for torch.cuda.memory_* queries.
#include <dlfcn.h>
#include <sched.h>

#include <atomic>
#include <cstdint>

#include "preflight/allocator_hook/preflight_hook.h"
#include "preflight/common/trace_format.hpp"
#include "recorder.hpp"

#define PREFLIGHT_EXPORT extern "C" __attribute__((visibility("default")))

namespace preflight::hook {
namespace {

using trace::Kind;
using cudaError_t = int;

struct CudaRuntime {
  cudaError_t (*malloc)(void**, size_t) = nullptr;
  cudaError_t (*free)(void*) = nullptr;
  cudaError_t (*get_device)(int*) = nullptr;
  cudaError_t (*set_device)(int) = nullptr;
};
constinit CudaRuntime g_rt;

enum : int { kUnresolved = 0, kResolving = 1, kResolved = 2, kMissing = 3 };
constinit std::atomic<int> g_rt_state{kUnresolved};

constexpr int kMaxDevices = 64;
struct DeviceStats {
  std::atomic<std::uint64_t> live{0};
  std::atomic<std::uint64_t> peak{0};
  std::atomic<std::uint64_t> allocs{0};
  std::atomic<std::uint64_t> ooms{0};
};
constinit DeviceStats g_stats[kMaxDevices];

// `handle` may be RTLD_DEFAULT (a null pointer): the runtime already in the process.
bool bind(void* handle, bool loaded = true) {
  if (!loaded) return false;
  auto m = reinterpret_cast<decltype(g_rt.malloc)>(dlsym(handle, "cudaMalloc"));
  auto f = reinterpret_cast<decltype(g_rt.free)>(dlsym(handle, "cudaFree"));
  if (!m || !f) return false;
  g_rt.malloc = m;
  g_rt.free = f;
  g_rt.get_device = reinterpret_cast<decltype(g_rt.get_device)>(dlsym(handle, "cudaGetDevice"));
  g_rt.set_device = reinterpret_cast<decltype(g_rt.set_device)>(dlsym(handle, "cudaSetDevice"));
  return true;
}

// PREFLIGHT_TRACE_CUDART first (an explicit choice), then a runtime already in the process, then the
// usual sonames.
bool resolve_runtime() {
  int st = g_rt_state.load(std::memory_order_acquire);
  if (st == kResolved) return true;
  if (st == kMissing) return false;
  int expected = kUnresolved;
  if (!g_rt_state.compare_exchange_strong(expected, kResolving, std::memory_order_acq_rel)) {
    while ((st = g_rt_state.load(std::memory_order_acquire)) == kResolving) sched_yield();
    return st == kResolved;
  }
  static const char* const kSonames[] = {"libcudart.so.12", "libcudart.so.11.0", "libcudart.so"};
  const char* explicit_path = active_config().cudart;
  auto open = [](const char* so, int flags) {
    void* h = dlopen(so, flags);
    return bind(h, h != nullptr);
  };
  bool ok = explicit_path && *explicit_path && open(explicit_path, RTLD_NOW | RTLD_GLOBAL);
  if (!ok) ok = bind(RTLD_DEFAULT);
  for (const char* so : kSonames)
    if (!ok) ok = open(so, RTLD_NOW | RTLD_NOLOAD);
  for (const char* so : kSonames)
    if (!ok) ok = open(so, RTLD_NOW | RTLD_GLOBAL);
  g_rt_state.store(ok ? kResolved : kMissing, std::memory_order_release);
  return ok;
}

void record_cuda(Kind kind, int device, std::uint64_t addr, std::uint64_t size, void* stream) {
  RecordGuard guard;
  if (!guard.ok()) {
    count_dropped();
    return;
  }
  const std::uint64_t s = reinterpret_cast<std::uint64_t>(stream);
  record(kind, device, addr, size, current_marker(), &s, sizeof s);
}

DeviceStats* stats_of(int device) {
  return device >= 0 && device < kMaxDevices ? &g_stats[device] : nullptr;
}

}  // namespace
}  // namespace preflight::hook

using namespace preflight::hook;

PREFLIGHT_EXPORT void* preflight_cuda_malloc(ssize_t size, int device, preflight_cuda_stream_t stream) {
  if (size < 0 || !resolve_runtime()) return nullptr;
  int previous = -1;
  bool switched = false;
  if (g_rt.get_device && g_rt.set_device && g_rt.get_device(&previous) == 0 && previous != device)
    switched = g_rt.set_device(device) == 0;
  void* p = nullptr;
  const cudaError_t err = g_rt.malloc(&p, static_cast<size_t>(size));
  if (switched) g_rt.set_device(previous);
  DeviceStats* st = stats_of(device);
  if (err != 0) {
    if (st) st->ooms.fetch_add(1, std::memory_order_relaxed);
    if (want_cuda(0))
      record_cuda(Kind::kCudaOom, device, static_cast<std::uint64_t>(err), static_cast<std::uint64_t>(size),
                  stream);
    return nullptr;
  }
  if (!p) return nullptr;
  const auto bytes = static_cast<std::uint64_t>(size);
  if (st) {
    st->allocs.fetch_add(1, std::memory_order_relaxed);
    const std::uint64_t live = st->live.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::uint64_t peak = st->peak.load(std::memory_order_relaxed);
    while (live > peak && !st->peak.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
  }
  if (want_cuda(bytes))
    record_cuda(Kind::kCudaAlloc, device, reinterpret_cast<std::uint64_t>(p), bytes, stream);
  return p;
}

PREFLIGHT_EXPORT void preflight_cuda_free(void* ptr, ssize_t size, int device,
                                          preflight_cuda_stream_t stream) {
  if (!ptr) return;
  const auto bytes = static_cast<std::uint64_t>(size < 0 ? 0 : size);
  if (DeviceStats* st = stats_of(device)) st->live.fetch_sub(bytes, std::memory_order_relaxed);
  if (want_cuda(bytes))
    record_cuda(Kind::kCudaFree, device, reinterpret_cast<std::uint64_t>(ptr), bytes, stream);
  if (resolve_runtime()) g_rt.free(ptr);
}

PREFLIGHT_EXPORT int preflight_cuda_memory_stats(int device, uint64_t out[4]) {
  DeviceStats* st = stats_of(device);
  if (!st) return -1;
  out[0] = st->live.load(std::memory_order_relaxed);
  out[1] = st->peak.load(std::memory_order_relaxed);
  out[2] = st->allocs.load(std::memory_order_relaxed);
  out[3] = st->ooms.load(std::memory_order_relaxed);
  return 0;
}

PREFLIGHT_EXPORT void preflight_cuda_reset_peak(int device) {
  if (DeviceStats* st = stats_of(device)) st->peak.store(st->live.load(std::memory_order_relaxed));
}
