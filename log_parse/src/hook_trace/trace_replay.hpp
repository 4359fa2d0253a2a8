#pragma once
// Replays a trace's records into the set of live blocks (private to log_parse; shared by the summary and
// the exporters).  Host and each CUDA device are separate memory spaces.
#include <cstdint>
#include <unordered_map>

#include "preflight/log_parse/trace_reader.hpp"

namespace preflight::log_parse::detail {

/// Space index: 0 = host, 1 + d = CUDA device d.
inline int space_of_device(int device) {
  return device < 0 ? 0 : device + 1;
}

/// A live block and the context it was allocated in.
struct Block {
  std::uint64_t size = 0;
  std::uint64_t time_ns = 0;
  std::uint64_t stream = 0;
  std::uint32_t marker = 0;
  std::uint32_t iteration = 0;
  std::uint32_t forward_pass = 0;  ///< 1-based index of the forward pass it was allocated in, 0 = none
  trace::Phase phase = trace::Phase::kOther;
  std::uint8_t space = 0;
};

/// What the replay tells its visitor.  `block` stays valid only during the call.
class ReplayVisitor {
 public:
  virtual ~ReplayVisitor() = default;
  virtual void on_alloc(const TraceEvent& e, const Block& block) = 0;
  /// `block` is nullptr when the address was not live (allocated before tracing or below min_bytes).
  virtual void on_free(const TraceEvent& e, int space, const Block* block) = 0;
  virtual void on_oom(const TraceEvent& /*e*/) {}
  /// The process-wide phase or iteration changed (forward pass numbers are already updated).
  virtual void on_phase(const TraceEvent& /*e*/, trace::Phase /*old_phase*/) {}
};

class Replay {
 public:
  trace::Phase phase() const { return phase_; }
  std::uint32_t iteration() const { return iteration_; }
  /// False until the first kPhase record (start-up of the process, before the glue saw a forward).
  bool phase_seen() const { return phase_seen_; }
  /// Number of forward passes begun so far (the current one when phase() is kForward).
  std::uint32_t forward_passes() const { return forward_passes_; }
  /// Allocations at an address that was already live (a lost free); the old block is dropped.
  std::uint64_t overwritten() const { return overwritten_; }

  void apply(const TraceEvent& e, ReplayVisitor& v);

  const std::unordered_map<std::uint64_t, Block>& live() const { return live_; }

 private:
  static std::uint64_t key(int space, std::uint64_t addr) {
    return addr ^ (static_cast<std::uint64_t>(space) << 56);
  }
  void alloc(const TraceEvent& e, ReplayVisitor& v);
  void free(const TraceEvent& e, ReplayVisitor& v, bool stash);

  std::unordered_map<std::uint64_t, Block> live_;
  std::unordered_map<std::uint32_t, std::pair<std::uint64_t, Block>> realloc_stash_;  // by thread
  trace::Phase phase_ = trace::Phase::kOther;
  std::uint32_t iteration_ = 0;
  bool phase_seen_ = false;
  std::uint32_t forward_passes_ = 0;
  std::uint64_t overwritten_ = 0;
};

}  // namespace preflight::log_parse::detail
