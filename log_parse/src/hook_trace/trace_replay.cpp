// Replay of hook traces into live blocks; see trace_replay.hpp.
#include "hook_trace/trace_replay.hpp"

namespace preflight::log_parse::detail {

using trace::Kind;

void Replay::alloc(const TraceEvent& e, ReplayVisitor& v) {
  const int space = space_of_device(e.device);
  Block b;
  b.size = e.size;
  b.time_ns = e.time_ns;
  b.stream = e.stream;
  b.marker = e.marker;
  b.iteration = iteration_;
  b.phase = phase_;
  b.forward_pass = phase_ == trace::Phase::kForward ? forward_passes_ : 0;
  b.space = static_cast<std::uint8_t>(space);
  auto [it, inserted] = live_.try_emplace(key(space, e.addr), b);
  if (!inserted) {
    ++overwritten_;
    v.on_free(e, space, &it->second);
    it->second = b;
  }
  v.on_alloc(e, it->second);
}

void Replay::free(const TraceEvent& e, ReplayVisitor& v, bool stash) {
  const int space = space_of_device(e.device);
  auto it = live_.find(key(space, e.addr));
  if (it == live_.end()) {
    v.on_free(e, space, nullptr);
    return;
  }
  v.on_free(e, space, &it->second);
  if (stash) realloc_stash_[e.thread] = {it->first, it->second};
  live_.erase(it);
}

void Replay::apply(const TraceEvent& e, ReplayVisitor& v) {
  switch (e.kind) {
    case Kind::kAlloc:
    case Kind::kCudaAlloc:
      alloc(e, v);
      break;
    case Kind::kRealloc:
      realloc_stash_.erase(e.thread);
      alloc(e, v);
      break;
    case Kind::kFree:
    case Kind::kCudaFree:
      free(e, v, false);
      break;
    case Kind::kReallocFree:
      free(e, v, true);
      break;
    case Kind::kReallocFailed: {
      // the block released by this thread's kReallocFree is still allocated: put it back
      auto it = realloc_stash_.find(e.thread);
      if (it != realloc_stash_.end() && (it->second.first & ((1ull << 56) - 1)) == e.addr) {
        auto [pos, inserted] = live_.try_emplace(it->second.first, it->second.second);
        if (inserted) v.on_alloc(e, pos->second);
        realloc_stash_.erase(it);
      }
      break;
    }
    case Kind::kCudaOom:
      v.on_oom(e);
      break;
    case Kind::kPhase: {
      const trace::Phase old = phase_;
      phase_ = e.size < trace::kPhaseCount ? static_cast<trace::Phase>(e.size) : trace::Phase::kOther;
      iteration_ = static_cast<std::uint32_t>(e.addr);
      phase_seen_ = true;
      if (phase_ == trace::Phase::kForward && old != trace::Phase::kForward) ++forward_passes_;
      v.on_phase(e, old);
      break;
    }
    default:
      break;
  }
}

}  // namespace preflight::log_parse::detail
