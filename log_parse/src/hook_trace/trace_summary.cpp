// Summaries of hook traces; see trace_summary.hpp.  Two passes over the mapped file: the first replays
// everything (counters, peaks, iterations, forward passes, live at end), the second stops at each space's
// peak record to break down what was live there.
#include "preflight/log_parse/trace_summary.hpp"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "hook_trace/trace_replay.hpp"

namespace preflight::log_parse {

using detail::Block;
using detail::Replay;
using trace::Phase;

namespace {

double seconds(std::uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

struct MarkerCounters {
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_blocks = 0;
};

struct PassInfo {
  std::uint64_t iteration = 0;
  std::uint64_t pass = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint32_t number = 0;  // Replay::forward_passes() of this pass
};

struct SpaceState {
  bool seen = false;
  SpaceSummary out;
  std::uint64_t live_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::uint64_t peak_bytes = 0;
  std::uint64_t peak_blocks = 0;
  bool has_peak = false;
  std::map<std::int64_t, IterationStats> iterations;
  std::vector<MarkerCounters> markers;  // by marker id
  // the forward pass in progress
  std::uint64_t pass_live_start = 0;
  struct Retained {
    std::uint64_t bytes = 0;
    std::uint64_t blocks = 0;
  };
  std::unordered_map<std::uint32_t, Retained> pass_retained;  // by marker id
  struct Pass {
    std::uint64_t live_start = 0;
    std::uint64_t live_end = 0;
    std::vector<std::pair<std::uint32_t, Retained>> retained;  // by marker id
  };
  std::map<std::size_t, Pass> passes;  // by index into FirstPass::passes

  MarkerCounters& marker(std::uint32_t id) {
    if (markers.size() <= id) markers.resize(id + 1);
    return markers[id];
  }
};

class FirstPass : public detail::ReplayVisitor {
 public:
  explicit FirstPass(const Replay& replay) : replay_(replay) {}

  std::vector<SpaceState> spaces;
  std::unordered_set<std::uint32_t> threads;
  bool pass_open = false;
  std::vector<PassInfo> passes;  // all forward passes; the last one is open when pass_open
  std::map<std::uint64_t, std::uint64_t> passes_per_iteration;

  SpaceState& space(int s) {
    if (spaces.size() <= static_cast<std::size_t>(s)) spaces.resize(static_cast<std::size_t>(s) + 1);
    SpaceState& st = spaces[static_cast<std::size_t>(s)];
    if (!st.seen) {
      st.seen = true;
      st.out.device = s - 1;
      st.out.space = s == 0 ? "host" : "cuda:" + std::to_string(s - 1);
      st.pass_live_start = 0;
    }
    return st;
  }

  IterationStats& iteration(SpaceState& st, std::uint64_t t) {
    const std::int64_t it = replay_.phase_seen() ? static_cast<std::int64_t>(replay_.iteration()) : -1;
    auto [pos, inserted] = st.iterations.try_emplace(it);
    IterationStats& s = pos->second;
    if (inserted) {
      s.iteration = it;
      s.start_s = seconds(t);
    }
    s.end_s = seconds(t);
    return s;
  }

  void on_alloc(const TraceEvent& e, const Block& b) override {
    SpaceState& st = space(b.space);
    threads.insert(e.thread);
    if (e.kind == trace::Kind::kReallocFailed) {  // the block freed by the failed realloc lives on
      restore(st, b);
      return;
    }
    st.out.allocs++;
    if (e.kind == trace::Kind::kRealloc) st.out.reallocs++;
    st.out.bytes_allocated += b.size;
    st.live_bytes += b.size;
    st.live_blocks++;
    MarkerCounters& m = st.marker(b.marker);
    m.allocs++;
    m.bytes_allocated += b.size;
    m.live_bytes += b.size;
    m.live_blocks++;
    IterationStats& it = iteration(st, e.time_ns);
    it.allocs++;
    it.bytes_allocated += b.size;
    if (st.live_bytes > it.peak_live_bytes) it.peak_live_bytes = st.live_bytes;
    if (pass_open && b.forward_pass == passes.back().number) retain(st, b);
    update_peak(st, e);
  }

  void restore(SpaceState& st, const Block& b) {
    st.out.frees--;
    auto it = st.iterations.find(replay_.phase_seen() ? static_cast<std::int64_t>(replay_.iteration()) : -1);
    if (it != st.iterations.end()) it->second.frees--;
    st.live_bytes += b.size;
    st.live_blocks++;
    MarkerCounters& m = st.marker(b.marker);
    m.frees--;
    m.live_bytes += b.size;
    m.live_blocks++;
    if (pass_open && b.forward_pass == passes.back().number) retain(st, b);
  }

  static void retain(SpaceState& st, const Block& b) {
    SpaceState::Retained& r = st.pass_retained[b.marker];
    r.bytes += b.size;
    r.blocks++;
  }

  void update_peak(SpaceState& st, const TraceEvent& e) {
    if (st.has_peak && st.live_bytes <= st.peak_bytes) return;
    st.has_peak = true;
    st.peak_bytes = st.live_bytes;
    st.peak_blocks = st.live_blocks;
    st.out.peak_record = e.slot;
    st.out.peak_time_s = seconds(e.time_ns);
    st.out.peak_iteration = replay_.iteration();
    st.out.peak_phase = phase_name(replay_.phase());
  }

  void on_free(const TraceEvent& e, int s, const Block* b) override {
    SpaceState& st = space(s);
    threads.insert(e.thread);
    if (!b) {
      st.out.unknown_frees++;
      return;
    }
    st.out.frees++;
    st.live_bytes -= b->size;
    st.live_blocks--;
    MarkerCounters& m = st.marker(b->marker);
    m.frees++;
    m.live_bytes -= b->size;
    m.live_blocks--;
    iteration(st, e.time_ns).frees++;
    if (pass_open && b->forward_pass == passes.back().number) {
      auto it = st.pass_retained.find(b->marker);
      if (it != st.pass_retained.end()) {
        it->second.bytes -= b->size;
        it->second.blocks--;
      }
    }
  }

  void on_oom(const TraceEvent& e) override {
    space(detail::space_of_device(e.device)).out.ooms++;
    threads.insert(e.thread);
  }

  void on_phase(const TraceEvent& e, Phase old) override {
    threads.insert(e.thread);
    if (pass_open && replay_.phase() != Phase::kForward) close_pass(e.time_ns);
    if (replay_.phase() == Phase::kForward && old != Phase::kForward) {
      pass_open = true;
      PassInfo p;
      p.iteration = replay_.iteration();
      p.pass = passes_per_iteration[p.iteration]++;
      p.start_ns = e.time_ns;
      p.number = replay_.forward_passes();
      passes.push_back(p);
      for (SpaceState& st : spaces) {
        st.pass_live_start = st.live_bytes;
        st.pass_retained.clear();
      }
    }
  }

  void close_pass(std::uint64_t end_ns) {
    pass_open = false;
    passes.back().end_ns = end_ns;
    for (SpaceState& st : spaces) {
      if (!st.seen) continue;
      SpaceState::Pass& p = st.passes[passes.size() - 1];
      p.live_start = st.pass_live_start;
      p.live_end = st.live_bytes;
      for (const auto& [marker, r] : st.pass_retained)
        if (r.blocks != 0) p.retained.emplace_back(marker, r);
      st.pass_retained.clear();
    }
  }

 private:
  const Replay& replay_;
};

class NoVisitor : public detail::ReplayVisitor {
 public:
  void on_alloc(const TraceEvent&, const Block&) override {}
  void on_free(const TraceEvent&, int, const Block*) override {}
};

void sort_bytes(std::vector<BytesBy>& v) {
  std::sort(v.begin(), v.end(), [](const BytesBy& a, const BytesBy& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.key < b.key;
  });
}

// Breaks down the live blocks of space `s`.
LiveBreakdown breakdown(const Replay& replay, int s, const TraceReader& reader,
                        const std::vector<int>& layers) {
  std::unordered_map<std::uint32_t, BytesBy> by_marker;
  std::map<int, BytesBy> by_layer;
  BytesBy by_phase[trace::kPhaseCount];
  LiveBreakdown out;
  for (const auto& [key, b] : replay.live()) {
    if (b.space != s) continue;
    out.live_bytes += b.size;
    out.live_blocks++;
    BytesBy& m = by_marker[b.marker];
    m.bytes += b.size;
    m.blocks++;
    const int layer = b.marker < layers.size() ? layers[b.marker] : -1;
    BytesBy& l = by_layer[layer];
    l.bytes += b.size;
    l.blocks++;
    BytesBy& p = by_phase[static_cast<int>(b.phase)];
    p.bytes += b.size;
    p.blocks++;
  }
  for (auto& [id, m] : by_marker) {
    m.key = reader.marker_name(id);
    m.layer = id < layers.size() ? layers[id] : -1;
    out.by_marker.push_back(m);
  }
  for (auto& [layer, l] : by_layer) {
    l.key = layer < 0 ? "" : std::to_string(layer);
    l.layer = layer;
    out.by_layer.push_back(l);
  }
  for (int p = 0; p < trace::kPhaseCount; ++p) {
    if (by_phase[p].blocks == 0) continue;
    by_phase[p].key = phase_name(static_cast<Phase>(p));
    out.by_phase.push_back(by_phase[p]);
  }
  sort_bytes(out.by_marker);
  sort_bytes(out.by_layer);
  sort_bytes(out.by_phase);
  return out;
}

}  // namespace

TraceSummary summarize_trace(const std::string& path) {
  TraceReader reader(path);
  TraceSummary summary;

  Replay replay;
  FirstPass first(replay);
  TraceEvent e;
  while (reader.next(e)) replay.apply(e, first);
  if (first.pass_open) first.close_pass(reader.info().end_ns);

  summary.process = reader.info();
  summary.records = reader.records();
  summary.incomplete_slots = reader.incomplete_slots();
  summary.marker_count = reader.marker_names().size() - 1;
  summary.thread_count = first.threads.size();
  summary.overwritten = replay.overwritten();

  std::vector<int> layers(reader.marker_names().size(), -1);
  for (std::size_t id = 1; id < layers.size(); ++id) layers[id] = layer_of_marker(reader.marker_names()[id]);

  // live at end, iterations, passes, marker totals
  for (std::size_t s = 0; s < first.spaces.size(); ++s) {
    SpaceState& st = first.spaces[s];
    if (!st.seen) continue;
    SpaceSummary& out = st.out;
    out.at_end = breakdown(replay, static_cast<int>(s), reader, layers);
    for (auto& [it, stats] : st.iterations) out.iterations.push_back(stats);
    for (std::size_t i = 0; i < first.passes.size(); ++i) {
      const PassInfo& info = first.passes[i];
      ForwardPass fp;
      fp.iteration = info.iteration;
      fp.pass = info.pass;
      fp.start_s = seconds(info.start_ns);
      fp.end_s = seconds(info.end_ns);
      auto found = st.passes.find(i);
      if (found != st.passes.end()) {  // else the space had no allocations yet: all zero
        fp.live_bytes_start = found->second.live_start;
        fp.live_bytes_end = found->second.live_end;
        for (const auto& [marker, r] : found->second.retained) {
          BytesBy b;
          b.key = reader.marker_name(marker);
          b.layer = marker < layers.size() ? layers[marker] : -1;
          b.bytes = r.bytes;
          b.blocks = r.blocks;
          fp.retained_bytes += r.bytes;
          fp.retained_by_marker.push_back(b);
        }
        sort_bytes(fp.retained_by_marker);
      }
      out.forward_passes.push_back(std::move(fp));
    }
    for (std::uint32_t id = 0; id < st.markers.size(); ++id) {
      const MarkerCounters& m = st.markers[id];
      if (m.allocs == 0 && m.frees == 0) continue;
      MarkerTotals t;
      t.marker = reader.marker_name(id);
      t.layer = id < layers.size() ? layers[id] : -1;
      t.allocs = m.allocs;
      t.frees = m.frees;
      t.bytes_allocated = m.bytes_allocated;
      t.live_bytes_end = m.live_bytes;
      t.live_blocks_end = m.live_blocks;
      out.markers.push_back(t);
    }
    std::sort(out.markers.begin(), out.markers.end(), [](const MarkerTotals& a, const MarkerTotals& b) {
      return a.bytes_allocated != b.bytes_allocated ? a.bytes_allocated > b.bytes_allocated
                                                    : a.marker < b.marker;
    });
  }

  // second pass: stop at each space's peak
  std::map<std::uint64_t, std::vector<int>> peaks;  // record -> spaces
  for (std::size_t s = 0; s < first.spaces.size(); ++s)
    if (first.spaces[s].seen && first.spaces[s].has_peak)
      peaks[first.spaces[s].out.peak_record].push_back(static_cast<int>(s));
  if (!peaks.empty()) {
    reader.rewind();
    Replay again;
    NoVisitor none;
    auto next_peak = peaks.begin();
    while (next_peak != peaks.end() && reader.next(e)) {
      again.apply(e, none);
      if (e.slot != next_peak->first) continue;
      for (int s : next_peak->second)
        first.spaces[static_cast<std::size_t>(s)].out.at_peak = breakdown(again, s, reader, layers);
      ++next_peak;
    }
  }

  for (SpaceState& st : first.spaces)
    if (st.seen) summary.spaces.push_back(std::move(st.out));
  return summary;
}

}  // namespace preflight::log_parse
