// The exported marker / phase / status functions of preflight_hook.h.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <atomic>
#include <cstdint>

#include "preflight/allocator_hook/preflight_hook.h"
#include "recorder.hpp"

#define PREFLIGHT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace preflight::hook;

PREFLIGHT_EXPORT uint32_t preflight_marker_id(const char* name) {
  RecordGuard guard;
  if (!guard.ok()) return 0;
  return marker_intern(name);
}

PREFLIGHT_EXPORT void preflight_marker_push(const char* name) {
  RecordGuard guard;
  if (!guard.ok()) return;
  marker_push(marker_intern(name));
}

PREFLIGHT_EXPORT void preflight_marker_push_id(uint32_t id) {
  RecordGuard guard;
  if (guard.ok()) marker_push(id);
}

PREFLIGHT_EXPORT void preflight_marker_pop(void) {
  RecordGuard guard;
  if (guard.ok()) marker_pop();
}

PREFLIGHT_EXPORT void preflight_marker_set_id(uint32_t id) {
  RecordGuard guard;
  if (guard.ok()) marker_set(id);
}

PREFLIGHT_EXPORT void preflight_phase(int phase, uint64_t iteration) {
  RecordGuard guard;
  if (guard.ok()) set_phase(phase, iteration);
}

PREFLIGHT_EXPORT int preflight_trace_active(void) {
  return trace_active() ? 1 : 0;
}

PREFLIGHT_EXPORT const char* preflight_trace_path(void) {
  return trace_path();
}

PREFLIGHT_EXPORT const char* preflight_hook_library_path(void) {
  static char path[PATH_MAX];
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_acquire)) return path;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&preflight_hook_library_path), &info) && info.dli_fname) {
    char resolved[PATH_MAX];
    const char* src = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
    std::size_t i = 0;
    for (; src[i] && i + 1 < sizeof path; ++i) path[i] = src[i];
    path[i] = 0;
  }
  done.store(true, std::memory_order_release);
  return path;
}
