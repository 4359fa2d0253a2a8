#pragma once
// The recording half of the preload library (hooks.cpp is the hooking half): the trace file behind a
// shared mapping, per-thread marker stacks, the marker-name table, fork and exit handling.
//
// Everything here runs inside malloc/free of an arbitrary program, so it never allocates through malloc
// (only mmap), never throws, keeps errno, and takes a lock only to grow the file or intern a name.
#include <cstdint>

#include "config.hpp"
#include "preflight/common/trace_format.hpp"

namespace preflight::hook {

inline constexpr std::uint32_t kMaxMarkerDepth = 32;

/// Per-thread state, in initial-exec TLS (no allocation on first access, zero-initialised).
struct ThreadState {
  std::uint32_t tid;    ///< cached gettid(), 0 until first use (reset in a fork child)
  std::uint32_t busy;   ///< non-zero while this thread is inside the recorder (re-entrancy guard)
  std::uint32_t depth;  ///< marker stack depth; may exceed kMaxMarkerDepth
  std::uint32_t stack[kMaxMarkerDepth];
};
ThreadState& thread_state();

/// Innermost marker of the calling thread (0 = none).
std::uint32_t current_marker();

/// Starts recording as `config` says (opens the trace when tracing is enabled).  Call once, after the real
/// allocator functions are resolved; registers the fork handlers.
void recorder_start(const Config& config);

/// The configuration read at start (also when tracing is off).
const Config& active_config();

/// Marks the trace as exited normally (recording continues for late frees).
void recorder_exit();

/// True when host (CUDA) allocations of `bytes` bytes must be recorded.
bool want_host(std::uint64_t bytes);
bool want_cuda(std::uint64_t bytes);
/// True when frees of host blocks must be recorded at all (host recording is on).
bool want_host_frees();
/// PREFLIGHT_TRACE_MIN_BYTES.
std::uint64_t min_bytes();

/// Appends one record (plus continuation slots carrying `payload`) stamped with the calling thread's id
/// and the current time.  Safe to call from any thread; a record that cannot be written is counted in the
/// header's `dropped` field.  Must be called with the thread's `busy` guard held (see RecordGuard).
void record(trace::Kind kind, int device, std::uint64_t addr, std::uint64_t size, std::uint32_t marker,
            const void* payload = nullptr, std::uint32_t payload_bytes = 0);

/// Counts a record that was not written (for example a malloc from a signal handler that interrupted the
/// recorder on the same thread).
void count_dropped();

/// Holds the per-thread re-entrancy guard; `ok()` is false when the thread is already inside the recorder.
class RecordGuard {
 public:
  RecordGuard() : ts_(thread_state()), ok_(ts_.busy == 0) {
    if (ok_) ts_.busy = 1;
  }
  ~RecordGuard() {
    if (ok_) ts_.busy = 0;
  }
  RecordGuard(const RecordGuard&) = delete;
  RecordGuard& operator=(const RecordGuard&) = delete;
  bool ok() const { return ok_; }

 private:
  ThreadState& ts_;
  bool ok_;
};

/// Marker API behind preflight_hook.h.
std::uint32_t marker_intern(const char* name);
void marker_push(std::uint32_t id);
void marker_pop();
void marker_set(std::uint32_t id);
void set_phase(int phase, std::uint64_t iteration);
bool trace_active();
const char* trace_path();

}  // namespace preflight::hook
