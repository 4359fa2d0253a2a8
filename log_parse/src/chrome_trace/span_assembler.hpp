#pragma once
// Complete spans from a Chrome-trace event stream: 'X' events as they come, 'B'/'E' pairs matched per
// (pid, tid) as a stack (internal to log_parse).
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "preflight/log_parse/chrome_trace.hpp"

namespace preflight::log_parse::detail {

struct Span {
  std::string_view name;
  std::string_view cat;
  TraceId pid, tid;
  std::int64_t ts = 0;                ///< ns
  std::int64_t dur = 0;               ///< ns
  const TraceEvent* event = nullptr;  ///< the X or E event that completed the span
};

class SpanAssembler {
 public:
  /// Feeds one event; calls on_span(const Span&) when a span completes.
  template <class F>
  void add(const TraceEvent& e, F&& on_span) {
    if (e.ph == 'X') {
      if (!e.ts_ns || !e.dur_ns) return;
      Span s{e.name, e.cat, e.pid, e.tid, *e.ts_ns, *e.dur_ns, &e};
      on_span(s);
    } else if (e.ph == 'B') {
      if (!e.ts_ns) return;
      open_[key(e)].push_back(Open{std::string(e.name), std::string(e.cat), *e.ts_ns});
      ++open_count_;
    } else if (e.ph == 'E') {
      if (!e.ts_ns) return;
      auto it = open_.find(key(e));
      if (it == open_.end() || it->second.empty()) {
        ++unmatched_ends_;
        return;
      }
      Open o = std::move(it->second.back());
      it->second.pop_back();
      --open_count_;
      Span s{o.name, o.cat, e.pid, e.tid, o.ts, *e.ts_ns - o.ts, &e};
      on_span(s);
    }
  }
  /// 'B' events never closed, and 'E' events with no open 'B'.
  std::size_t unclosed_begins() const { return open_count_; }
  std::size_t unmatched_ends() const { return unmatched_ends_; }

 private:
  struct Open {
    std::string name, cat;
    std::int64_t ts;
  };
  using Key = std::pair<std::pair<std::int64_t, std::string>, std::pair<std::int64_t, std::string>>;
  static Key key(const TraceEvent& e) {
    auto part = [](const TraceId& id) {
      return id.numeric ? std::pair(id.number, std::string())
                        : std::pair(std::int64_t{0}, std::string(id.text));
    };
    return {part(e.pid), part(e.tid)};
  }
  std::map<Key, std::vector<Open>> open_;
  std::size_t open_count_ = 0;
  std::size_t unmatched_ends_ = 0;
};

}  // namespace preflight::log_parse::detail
