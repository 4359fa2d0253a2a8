// Export of hook traces to JSONL and memory_viz pickles; see trace_export.hpp.
#include "preflight/log_parse/trace_export.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "hook_trace/trace_replay.hpp"
#include "preflight/common/error.hpp"

namespace preflight::log_parse {

using detail::Block;
using detail::Replay;

namespace {

std::uint64_t time_us(std::uint64_t ns) {
  return ns / 1000;
}

// Marker path → its prefixes, innermost first ("a.b.c" → "a.b.c", "a.b", "a").
std::vector<std::string> prefixes(const std::string& path) {
  std::vector<std::string> out;
  if (path.empty()) {
    out.emplace_back("(no marker)");
    return out;
  }
  std::string p = path;
  for (;;) {
    out.push_back(p);
    const std::size_t dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p.resize(dot);
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ JSONL

// Lines are formatted by hand (millions of them): marker names are escaped once, frames once per
// (marker, phase, iteration).
class JsonlWriter : public detail::ReplayVisitor {
 public:
  JsonlWriter(const TraceReader& reader, std::ostream& out) : reader_(reader), out_(out) {
    const TraceProcessInfo& p = reader.info();
    tail_ = ",\"pid\":" + std::to_string(p.pid) +
            ",\"rank\":" + (p.rank < 0 ? "null" : std::to_string(p.rank)) + "}\n";
  }
  void set_context(const Replay* replay) { replay_ = replay; }
  std::uint64_t lines = 0;

  void on_alloc(const TraceEvent& e, const Block& b) override { write("alloc", e, b); }
  void on_free(const TraceEvent& e, int, const Block* b) override {
    if (b) write("free_completed", e, *b);
  }
  void on_oom(const TraceEvent& e) override {
    line_.assign("{\"action\":\"oom\"");
    field("size", e.size);
    field("stream", e.stream);
    field("device", e.device);
    field("time_us", time_us(e.time_ns));
    field("error", e.addr);
    line_ += ",\"marker\":";
    line_ += marker_json(e.marker);
    line_ += ",\"phase\":\"";
    line_ += phase_name(replay_->phase());
    line_ += '"';
    field("iteration", replay_->iteration());
    field("thread", e.thread);
    finish();
  }

 private:
  template <typename T>
  void field(const char* key, T v) {
    line_ += ",\"";
    line_ += key;
    line_ += "\":";
    line_ += std::to_string(v);
  }
  const std::string& marker_json(std::uint32_t id) {
    if (markers_.size() <= id) markers_.resize(id + 1);
    if (markers_[id].empty()) markers_[id] = nlohmann::json(reader_.marker_name(id)).dump();
    return markers_[id];
  }
  const std::string& frames_json(const Block& b) {
    const auto key = std::make_tuple(b.marker, static_cast<int>(b.phase), b.iteration);
    auto it = frames_.find(key);
    if (it != frames_.end()) return it->second;
    nlohmann::json frames = nlohmann::json::array();
    for (const std::string& p : prefixes(reader_.marker_name(b.marker)))
      frames.push_back({{"filename", phase_name(b.phase)}, {"line", b.iteration}, {"name", p}});
    return frames_[key] = frames.dump();
  }
  // `marker`, `phase` and `iteration` are where the block was allocated (also on its free)
  void write(const char* action, const TraceEvent& e, const Block& b) {
    line_.assign("{\"action\":\"");
    line_ += action;
    line_ += '"';
    field("addr", e.addr);
    field("size", b.size);
    field("stream", b.stream);
    field("device", e.device);
    field("time_us", time_us(e.time_ns));
    line_ += ",\"frames\":";
    line_ += frames_json(b);
    line_ += ",\"marker\":";
    line_ += marker_json(b.marker);
    line_ += ",\"phase\":\"";
    line_ += phase_name(b.phase);
    line_ += '"';
    field("iteration", b.iteration);
    field("thread", e.thread);
    finish();
  }
  void finish() {
    line_ += tail_;
    out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
    ++lines;
  }

  const TraceReader& reader_;
  std::ostream& out_;
  const Replay* replay_ = nullptr;
  std::string tail_;
  std::string line_;
  std::vector<std::string> markers_;
  std::map<std::tuple<std::uint32_t, int, std::uint32_t>, std::string> frames_;
};

// ------------------------------------------------------------------------------------------------ pickle

// The subset of pickle protocol 2 a snapshot needs (also what memory_viz's JavaScript unpickler reads).
class Pickler {
 public:
  explicit Pickler(std::ostream& out) : out_(out) {}
  void proto() { put("\x80\x02", 2); }
  void stop() { put(".", 1); }
  void mark() { put("(", 1); }
  void empty_dict() { put("}", 1); }
  void empty_list() { put("]", 1); }
  void setitems() { put("u", 1); }
  void appends() { put("e", 1); }
  void integer(std::int64_t v) {
    if (v >= 0 && v < 256) {
      char b[2] = {'K', static_cast<char>(v)};
      put(b, 2);
    } else if (v >= 0 && v < 65536) {
      char b[3] = {'M', static_cast<char>(v & 0xff), static_cast<char>(v >> 8)};
      put(b, 3);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      char b[5] = {'J'};
      const auto u = static_cast<std::uint32_t>(static_cast<std::int32_t>(v));
      for (int i = 0; i < 4; ++i) b[1 + i] = static_cast<char>((u >> (8 * i)) & 0xff);
      put(b, 5);
    } else {  // LONG1: little-endian two's complement, 8 bytes
      char b[10] = {'\x8a', 8};
      const auto u = static_cast<std::uint64_t>(v);
      for (int i = 0; i < 8; ++i) b[2 + i] = static_cast<char>((u >> (8 * i)) & 0xff);
      put(b, 10);
    }
  }
  void unsigned_integer(std::uint64_t v) {
    if (v <= static_cast<std::uint64_t>(INT64_MAX)) {
      integer(static_cast<std::int64_t>(v));
      return;
    }
    char b[11] = {'\x8a', 9};  // 9 bytes so the sign byte stays 0
    for (int i = 0; i < 8; ++i) b[2 + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    b[10] = 0;
    put(b, 11);
  }
  // Strings are memoized: each distinct string is written once.
  void string(const std::string& s) {
    auto it = memo_strings_.find(s);
    if (it != memo_strings_.end()) {
      get(it->second);
      return;
    }
    char b[5] = {'X'};
    const auto n = static_cast<std::uint32_t>(s.size());
    for (int i = 0; i < 4; ++i) b[1 + i] = static_cast<char>((n >> (8 * i)) & 0xff);
    put(b, 5);
    put(s.data(), s.size());
    memo_strings_[s] = memoize();
  }
  std::uint32_t memoize() {
    const std::uint32_t id = next_memo_++;
    char b[5] = {'r'};
    for (int i = 0; i < 4; ++i) b[1 + i] = static_cast<char>((id >> (8 * i)) & 0xff);
    put(b, 5);
    return id;
  }
  void get(std::uint32_t id) {
    char b[5] = {'j'};
    for (int i = 0; i < 4; ++i) b[1 + i] = static_cast<char>((id >> (8 * i)) & 0xff);
    put(b, 5);
  }

 private:
  void put(const char* p, std::size_t n) { out_.write(p, static_cast<std::streamsize>(n)); }
  std::ostream& out_;
  std::uint32_t next_memo_ = 0;
  std::map<std::string, std::uint32_t> memo_strings_;
};

class SnapshotWriter : public detail::ReplayVisitor {
 public:
  SnapshotWriter(const TraceReader& reader, Pickler& p, int space) : reader_(reader), p_(p), space_(space) {}
  std::uint64_t entries = 0;

  void on_alloc(const TraceEvent& e, const Block& b) override {
    if (b.space == space_) entry("alloc", e, b);
  }
  void on_free(const TraceEvent& e, int space, const Block* b) override {
    if (b && space == space_) entry("free_completed", e, *b);
  }
  void finish() {
    if (in_batch_ > 0) p_.appends();
    in_batch_ = 0;
  }
  // A frames list is written once per (marker, phase, iteration) and referenced after that.
  void frames(const Block& b) {
    const auto key = std::make_tuple(b.marker, static_cast<int>(b.phase), b.iteration);
    auto it = memo_.find(key);
    if (it != memo_.end()) {
      p_.get(it->second);
      return;
    }
    p_.empty_list();
    p_.mark();
    for (const std::string& name : prefixes(reader_.marker_name(b.marker))) {
      p_.empty_dict();
      p_.mark();
      p_.string("filename");
      p_.string(phase_name(b.phase));
      p_.string("line");
      p_.unsigned_integer(b.iteration);
      p_.string("name");
      p_.string(name);
      p_.setitems();
    }
    p_.appends();
    memo_[key] = p_.memoize();
  }

 private:
  void entry(const char* action, const TraceEvent& e, const Block& b) {
    if (in_batch_ == 0) p_.mark();
    p_.empty_dict();
    p_.mark();
    p_.string("action");
    p_.string(action);
    p_.string("addr");
    p_.unsigned_integer(e.addr);
    p_.string("size");
    p_.unsigned_integer(b.size);
    p_.string("stream");
    p_.unsigned_integer(b.stream);
    p_.string("device");
    p_.integer(e.device < 0 ? 0 : e.device);
    p_.string("time_us");
    p_.unsigned_integer(time_us(e.time_ns));
    p_.string("frames");
    frames(b);
    p_.setitems();
    ++entries;
    if (++in_batch_ == 1000) finish();
  }

  const TraceReader& reader_;
  Pickler& p_;
  int space_;
  int in_batch_ = 0;
  std::map<std::tuple<std::uint32_t, int, std::uint32_t>, std::uint32_t> memo_;
};

class NoVisitor : public detail::ReplayVisitor {
 public:
  void on_alloc(const TraceEvent&, const Block&) override {}
  void on_free(const TraceEvent&, int, const Block*) override {}
};

}  // namespace

std::uint64_t export_trace_jsonl(const std::string& path, std::ostream& out) {
  TraceReader reader(path);
  // marker names may be defined after their first use (another thread interned them): read them first
  TraceEvent e;
  while (reader.next(e)) {
  }
  reader.rewind();
  Replay replay;
  JsonlWriter writer(reader, out);
  writer.set_context(&replay);
  while (reader.next(e)) replay.apply(e, writer);
  return writer.lines;
}

namespace {

/// Counts live bytes of one space to find the record at which they peak (the first time they reach the
/// maximum).
class PeakFinder : public detail::ReplayVisitor {
 public:
  explicit PeakFinder(int space) : space_(space) {}
  std::uint64_t records = 0, peak_record = 0, live = 0, peak = 0;
  void on_alloc(const TraceEvent&, const Block& b) override {
    if (b.space != space_) return;
    live += b.size;
    if (live > peak) peak = live, peak_record = records;
  }
  void on_free(const TraceEvent&, int space, const Block* b) override {
    if (b && space == space_) live -= b->size;
  }

 private:
  int space_;
};

/// torch 1.13's snapshot: the blocks live at the peak of `space`, one segment each.
std::uint64_t write_segments(TraceReader& reader, Pickler& p, int space, int device) {
  reader.rewind();
  PeakFinder peak(space);
  Replay replay;
  TraceEvent e;
  while (reader.next(e)) {
    replay.apply(e, peak);
    ++peak.records;
  }
  reader.rewind();
  Replay at_peak;
  NoVisitor none;
  for (std::uint64_t n = 0; n <= peak.peak_record && reader.next(e); ++n) at_peak.apply(e, none);
  std::vector<std::pair<std::uint64_t, Block>> blocks;
  for (const auto& [key, b] : at_peak.live())
    if (b.space == space) blocks.emplace_back(key & ((std::uint64_t{1} << 56) - 1), b);
  std::sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  SnapshotWriter frames(reader, p, space);
  p.empty_list();
  std::uint64_t written = 0;
  for (const auto& [addr, b] : blocks) {
    if (written % 1000 == 0) {
      if (written > 0) p.appends();
      p.mark();
    }
    p.empty_dict();
    p.mark();
    p.string("device");
    p.integer(device);
    p.string("address");
    p.unsigned_integer(addr);
    for (const char* k : {"total_size", "allocated_size", "active_size"}) {
      p.string(k);
      p.unsigned_integer(b.size);
    }
    p.string("stream");
    p.unsigned_integer(b.stream);
    p.string("segment_type");
    p.string(b.size <= (1u << 20) ? "small" : "large");
    p.string("blocks");
    p.empty_list();
    p.mark();
    p.empty_dict();
    p.mark();
    p.string("size");
    p.unsigned_integer(b.size);
    p.string("state");
    p.string("active_allocated");
    p.string("history");
    p.empty_list();
    p.mark();
    p.empty_dict();
    p.mark();
    p.string("addr");
    p.unsigned_integer(addr);
    p.string("real_size");
    p.unsigned_integer(b.size);
    p.string("frames");
    frames.frames(b);
    p.setitems();
    p.appends();
    p.setitems();
    p.appends();
    p.setitems();
    ++written;
  }
  if (written > 0) p.appends();
  return written;
}

}  // namespace

std::optional<MemoryVizLayout> memory_viz_layout_for_torch(const std::string& version) {
  int major = 0, minor = 0;
  char dot = 0;
  std::istringstream in(version);
  if (!(in >> major >> dot >> minor) || dot != '.') return std::nullopt;
  return major > 2 || (major == 2 && minor >= 1) ? MemoryVizLayout::kDeviceTraces
                                                 : MemoryVizLayout::kSegments;
}

std::uint64_t export_trace_memory_viz(const std::string& path, std::ostream& out, TraceSpace space,
                                      MemoryVizLayout layout) {
  TraceReader reader(path);
  std::set<int> devices;
  bool host = false;
  TraceEvent e;
  while (reader.next(e)) {
    switch (e.kind) {
      case trace::Kind::kAlloc:
      case trace::Kind::kRealloc:
        host = true;
        break;
      case trace::Kind::kCudaAlloc:
        devices.insert(e.device);
        break;
      default:
        break;
    }
  }
  if (space == TraceSpace::kAuto) space = devices.empty() ? TraceSpace::kHost : TraceSpace::kCuda;
  if (space == TraceSpace::kCuda && devices.empty())
    throw InputError(path, "the trace has no CUDA allocations (export host memory with --space host)");
  if (space == TraceSpace::kHost && !host) throw InputError(path, "the trace has no host allocations");

  // one list per device index 0..max; host memory is shown as device 0
  std::vector<int> spaces;
  if (space == TraceSpace::kHost) {
    spaces.push_back(0);
  } else {
    for (int d = 0; d <= *devices.rbegin(); ++d)
      spaces.push_back(devices.count(d) ? detail::space_of_device(d) : -1);
  }
  Pickler p(out);
  p.proto();
  if (layout == MemoryVizLayout::kSegments) {
    int s = space == TraceSpace::kHost ? 0 : detail::space_of_device(*devices.begin());
    int device = space == TraceSpace::kHost ? 0 : *devices.begin();
    if (space == TraceSpace::kCuda && devices.size() > 1)
      throw InputError(path, "the torch 1.13 snapshot layout holds one device; this trace has " +
                                 std::to_string(devices.size()) + " (use --memory-viz-version 2.1)");
    std::uint64_t n = write_segments(reader, p, s, device);
    p.stop();
    return n;
  }
  p.empty_dict();
  p.mark();
  p.string("segments");
  p.empty_list();
  p.string("device_traces");
  p.empty_list();
  p.mark();
  std::uint64_t entries = 0;
  for (int s : spaces) {
    p.empty_list();
    if (s < 0) continue;
    reader.rewind();
    Replay replay;
    SnapshotWriter writer(reader, p, s);
    while (reader.next(e)) replay.apply(e, writer);
    writer.finish();
    entries += writer.entries;
  }
  p.appends();
  p.setitems();
  p.stop();
  return entries;
}

}  // namespace preflight::log_parse
