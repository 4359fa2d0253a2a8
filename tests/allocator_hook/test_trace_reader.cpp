// The trace reader, summary and exporters on traces written record by record here, so every expected number
// follows from the records below by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hook_test_support.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/trace_format.hpp"
#include "preflight/log_parse/trace_export.hpp"
#include "preflight/log_parse/trace_reader.hpp"
#include "preflight/log_parse/trace_summary.hpp"

namespace preflight::test {
namespace {

using trace::Kind;
using trace::Phase;

// Builds a trace file slot by slot.
class SyntheticTrace {
 public:
  SyntheticTrace() : bytes_(trace::kHeaderBytes, 0) {
    trace::TraceHeader h{};
    std::memcpy(h.magic, trace::kMagic, sizeof h.magic);
    h.version = trace::kVersion;
    h.header_bytes = trace::kHeaderBytes;
    h.record_bytes = trace::kRecordBytes;
    h.flags = trace::kFlagExited | trace::kFlagHostEnabled | trace::kFlagCudaEnabled;
    h.pid = 4242;
    h.ppid = 1;
    h.rank = 3;
    h.local_rank = 1;
    h.world_size = 8;
    h.start_monotonic_ns = 1000;
    h.end_monotonic_ns = 1000 + 5'000'000'000ull;
    std::strcpy(h.host, "node7");
    std::strcpy(h.cmdline, "python train.py");
    std::memcpy(bytes_.data(), &h, sizeof h);
  }
  trace::TraceHeader& header() { return *reinterpret_cast<trace::TraceHeader*>(bytes_.data()); }

  void rec(Kind kind, std::uint64_t t_ns, std::uint64_t addr, std::uint64_t size, std::uint32_t marker = 0,
           int device = trace::kHostDevice, std::uint32_t thread = 7) {
    trace::TraceRecord r{addr, size, thread, marker, trace::pack_head(kind, device, t_ns)};
    append(&r);
  }
  void payload(const void* data, std::size_t n) {
    for (std::size_t off = 0; off < n; off += trace::kContinuationPayload) {
      trace::TraceRecord r{};
      std::memcpy(&r, static_cast<const char*>(data) + off, std::min<std::size_t>(24, n - off));
      r.head = trace::pack_head(Kind::kContinuation, trace::kHostDevice, 0);
      append(&r);
    }
  }
  void name(std::uint32_t id, const std::string& s) {
    rec(Kind::kString, 0, id, s.size());
    payload(s.data(), s.size());
  }
  void cuda(Kind kind, std::uint64_t t_ns, std::uint64_t addr, std::uint64_t size, int device,
            std::uint64_t stream, std::uint32_t marker = 0) {
    rec(kind, t_ns, addr, size, marker, device);
    payload(&stream, sizeof stream);
  }
  void phase(std::uint64_t t_ns, Phase p, std::uint64_t iteration) {
    rec(Kind::kPhase, t_ns, iteration, static_cast<std::uint64_t>(p));
  }
  void empty() {
    trace::TraceRecord r{};
    append(&r);
  }
  std::uint64_t slots() const { return (bytes_.size() - trace::kHeaderBytes) / trace::kRecordBytes; }
  void write(const std::string& path, std::size_t spare_slots = 0) const {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(bytes_.size()));
    std::vector<char> zeros(spare_slots * trace::kRecordBytes, 0);
    out.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }

 private:
  void append(const trace::TraceRecord* r) {
    const auto* p = reinterpret_cast<const unsigned char*>(r);
    bytes_.insert(bytes_.end(), p, p + sizeof *r);
  }
  std::vector<unsigned char> bytes_;
};

constexpr std::uint64_t kMs = 1'000'000;

// The scenario of the summary tests (host unless noted; marker 1 = "decoder.layers.0.mlp"):
//   forward (iteration 0): alloc A 1000 [m1], alloc B 500 [none], free B
//   backward:              alloc C 3000 [m1]  -> host peak 4000 (A forward + C backward)
//                          (one slot left incomplete)
//                          realloc of A fails: ReallocFree A, ReallocFailed A -> A lives on
//                          free C
//   optimizer:             cuda alloc D 1 MiB on device 1, stream 7 [m2 = "optimizer.state"]
//   forward (iteration 1): alloc E 200 [m1], free of an address never allocated
//   end: live A + E = 1200 bytes host, D on cuda:1
SyntheticTrace scenario() {
  SyntheticTrace t;
  t.name(1, "decoder.layers.0.mlp");
  t.phase(1 * kMs, Phase::kForward, 0);
  t.rec(Kind::kAlloc, 2 * kMs, 0xA000, 1000, 1);
  t.rec(Kind::kAlloc, 3 * kMs, 0xB000, 500, 0);
  t.rec(Kind::kFree, 4 * kMs, 0xB000, 0, 0);
  t.phase(5 * kMs, Phase::kBackward, 0);
  t.rec(Kind::kAlloc, 6 * kMs, 0xC000, 3000, 1);
  t.empty();
  t.rec(Kind::kReallocFree, 7 * kMs, 0xA000, 0, 1);
  t.rec(Kind::kReallocFailed, 8 * kMs, 0xA000, 0, 1);
  t.rec(Kind::kFree, 9 * kMs, 0xC000, 0, 1);
  t.phase(10 * kMs, Phase::kOptimizer, 0);
  t.name(2, "optimizer.state");
  t.cuda(Kind::kCudaAlloc, 11 * kMs, 0xD000, 1 << 20, 1, 7, 2);
  t.phase(12 * kMs, Phase::kForward, 1);
  t.rec(Kind::kAlloc, 13 * kMs, 0xE000, 200, 1);
  t.rec(Kind::kFree, 14 * kMs, 0xF000, 0, 1);
  return t;
}

TEST(TraceReader, DecodesHeaderAndRecords) {
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path, 1000);  // spare zero slots at the end, as the writer leaves them
  log_parse::TraceReader r(path);
  EXPECT_EQ(r.info().pid, 4242);
  EXPECT_EQ(r.info().rank, 3);
  EXPECT_EQ(r.info().local_rank, 1);
  EXPECT_EQ(r.info().world_size, 8);
  EXPECT_EQ(r.info().host, "node7");
  EXPECT_EQ(r.info().cmdline, "python train.py");
  EXPECT_TRUE(r.info().exited);
  EXPECT_EQ(r.info().end_ns, 5'000'000'000ull);
  log_parse::TraceEvent e;
  std::vector<log_parse::TraceEvent> events;
  while (r.next(e)) events.push_back(e);
  // 14 records: strings and continuations are not returned
  ASSERT_EQ(events.size(), 14u);
  EXPECT_EQ(r.records(), 14u);
  EXPECT_EQ(r.incomplete_slots(), 1u);  // the empty slot in the middle, not the spare ones at the end
  EXPECT_EQ(r.marker_name(1), "decoder.layers.0.mlp");
  EXPECT_EQ(r.marker_name(2), "optimizer.state");
  EXPECT_EQ(r.marker_name(9), "marker#9");
  const log_parse::TraceEvent& d = events[10];
  EXPECT_EQ(d.kind, Kind::kCudaAlloc);
  EXPECT_EQ(d.device, 1);
  EXPECT_EQ(d.stream, 7u);
  EXPECT_EQ(d.size, 1u << 20);
  EXPECT_EQ(d.time_ns, 11 * kMs);
  EXPECT_EQ(events[1].addr, 0xA000u);
  EXPECT_EQ(events[1].marker, 1u);
}

TEST(TraceReader, UndoesTheTimeWrap) {
  TempDir dir;
  SyntheticTrace t;
  const std::uint64_t wrap = 1ull << trace::kTimeBits;
  t.rec(Kind::kAlloc, wrap - 10, 0x10, 1);
  t.rec(Kind::kFree, wrap + 5, 0x10, 0);  // stored as 5
  t.write(dir.str() + "/w.pftrace");
  log_parse::TraceReader r(dir.str() + "/w.pftrace");
  log_parse::TraceEvent e;
  ASSERT_TRUE(r.next(e));
  EXPECT_EQ(e.time_ns, wrap - 10);
  ASSERT_TRUE(r.next(e));
  EXPECT_EQ(e.time_ns, wrap + 5);
}

TEST(TraceSummary, ScenarioNumbers) {
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path, 100);
  const log_parse::TraceSummary s = log_parse::summarize_trace(path);
  EXPECT_EQ(s.records, 14u);
  EXPECT_EQ(s.incomplete_slots, 1u);
  EXPECT_EQ(s.marker_count, 2u);
  ASSERT_EQ(s.spaces.size(), 2u);

  const log_parse::SpaceSummary& host = s.spaces[0];
  EXPECT_EQ(host.space, "host");
  EXPECT_EQ(host.allocs, 4u);  // A B C E; the failed realloc is not an allocation
  EXPECT_EQ(host.frees, 2u);   // B C
  EXPECT_EQ(host.bytes_allocated, 1000u + 500 + 3000 + 200);
  EXPECT_EQ(host.unknown_frees, 1u);
  EXPECT_EQ(host.at_peak.live_bytes, 4000u);
  EXPECT_EQ(host.at_peak.live_blocks, 2u);
  EXPECT_EQ(host.peak_record, 7u);  // slots 0-1 name, 2 phase, 3-5 A B free, 6 phase, 7 C
  EXPECT_DOUBLE_EQ(host.peak_time_s, 0.006);
  EXPECT_EQ(host.peak_iteration, 0u);
  EXPECT_EQ(host.peak_phase, "backward");
  ASSERT_EQ(host.at_peak.by_marker.size(), 1u);
  EXPECT_EQ(host.at_peak.by_marker[0].key, "decoder.layers.0.mlp");
  EXPECT_EQ(host.at_peak.by_marker[0].layer, 0);
  EXPECT_EQ(host.at_peak.by_marker[0].bytes, 4000u);
  ASSERT_EQ(host.at_peak.by_layer.size(), 1u);
  EXPECT_EQ(host.at_peak.by_layer[0].layer, 0);
  ASSERT_EQ(host.at_peak.by_phase.size(), 2u);
  EXPECT_EQ(host.at_peak.by_phase[0].key, "backward");
  EXPECT_EQ(host.at_peak.by_phase[0].bytes, 3000u);
  EXPECT_EQ(host.at_peak.by_phase[1].key, "forward");
  EXPECT_EQ(host.at_peak.by_phase[1].bytes, 1000u);
  EXPECT_EQ(host.at_end.live_bytes, 1200u);
  EXPECT_EQ(host.at_end.live_blocks, 2u);

  // iterations: 0 has A B C (+ frees B, C), 1 has E
  ASSERT_EQ(host.iterations.size(), 2u);
  EXPECT_EQ(host.iterations[0].iteration, 0);
  EXPECT_EQ(host.iterations[0].allocs, 3u);
  EXPECT_EQ(host.iterations[0].frees, 2u);
  EXPECT_EQ(host.iterations[0].bytes_allocated, 4500u);
  EXPECT_EQ(host.iterations[0].peak_live_bytes, 4000u);
  EXPECT_EQ(host.iterations[1].allocs, 1u);
  EXPECT_EQ(host.iterations[1].peak_live_bytes, 1200u);

  // forward passes: the first keeps A (B was freed inside it), the second keeps E
  ASSERT_EQ(host.forward_passes.size(), 2u);
  const log_parse::ForwardPass& f0 = host.forward_passes[0];
  EXPECT_EQ(f0.iteration, 0u);
  EXPECT_EQ(f0.pass, 0u);
  EXPECT_EQ(f0.live_bytes_start, 0u);
  EXPECT_EQ(f0.live_bytes_end, 1000u);
  EXPECT_EQ(f0.retained_bytes, 1000u);
  ASSERT_EQ(f0.retained_by_marker.size(), 1u);
  EXPECT_EQ(f0.retained_by_marker[0].key, "decoder.layers.0.mlp");
  EXPECT_EQ(f0.retained_by_marker[0].blocks, 1u);
  EXPECT_DOUBLE_EQ(f0.start_s, 0.001);
  EXPECT_DOUBLE_EQ(f0.end_s, 0.005);
  const log_parse::ForwardPass& f1 = host.forward_passes[1];
  EXPECT_EQ(f1.iteration, 1u);
  EXPECT_EQ(f1.live_bytes_start, 1000u);
  EXPECT_EQ(f1.live_bytes_end, 1200u);
  EXPECT_EQ(f1.retained_bytes, 200u);

  const log_parse::MarkerTotals* m1 = find_marker(host, "decoder.layers.0.mlp");
  ASSERT_NE(m1, nullptr);
  EXPECT_EQ(m1->allocs, 3u);
  EXPECT_EQ(m1->frees, 1u);
  EXPECT_EQ(m1->bytes_allocated, 4200u);
  EXPECT_EQ(m1->live_bytes_end, 1200u);

  const log_parse::SpaceSummary& cuda = s.spaces[1];
  EXPECT_EQ(cuda.space, "cuda:1");
  EXPECT_EQ(cuda.device, 1);
  EXPECT_EQ(cuda.allocs, 1u);
  EXPECT_EQ(cuda.at_peak.live_bytes, 1u << 20);
  EXPECT_EQ(cuda.peak_phase, "optimizer");
  ASSERT_EQ(cuda.at_peak.by_marker.size(), 1u);
  EXPECT_EQ(cuda.at_peak.by_marker[0].key, "optimizer.state");
  // both passes are listed for every space; the device had nothing in the first
  ASSERT_EQ(cuda.forward_passes.size(), 2u);
  EXPECT_EQ(cuda.forward_passes[0].live_bytes_end, 0u);
  EXPECT_EQ(cuda.forward_passes[1].live_bytes_start, 1u << 20);
  EXPECT_EQ(cuda.forward_passes[1].retained_bytes, 0u);
}

// Allocations before the glue's first phase record (interpreter and torch start-up) are kept apart from
// iteration 0.
TEST(TraceSummary, StartUpIsNotIterationZero) {
  TempDir dir;
  SyntheticTrace t;
  t.rec(Kind::kAlloc, 1 * kMs, 0x10, 700);
  t.phase(2 * kMs, Phase::kForward, 0);
  t.rec(Kind::kAlloc, 3 * kMs, 0x20, 50);
  t.write(dir.str() + "/s.pftrace");
  const log_parse::TraceSummary s = log_parse::summarize_trace(dir.str() + "/s.pftrace");
  const auto& its = s.spaces.at(0).iterations;
  ASSERT_EQ(its.size(), 2u);
  EXPECT_EQ(its[0].iteration, -1);
  EXPECT_EQ(its[0].bytes_allocated, 700u);
  EXPECT_EQ(its[1].iteration, 0);
  EXPECT_EQ(its[1].bytes_allocated, 50u);
  EXPECT_EQ(its[1].peak_live_bytes, 750u);
  EXPECT_TRUE(log_parse::summary_json(s)["spaces"][0]["iterations"][0]["iteration"].is_null());
}

TEST(TraceSummary, JsonHasTheDocumentedKeys) {
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path);
  const nlohmann::json j = log_parse::summary_json(log_parse::summarize_trace(path));
  for (const char* key : {"file", "pid", "rank", "world_size", "host", "cmdline", "duration_s", "exited",
                          "records", "incomplete_records", "dropped_records", "markers", "threads", "spaces"})
    EXPECT_TRUE(j.contains(key)) << key;
  const nlohmann::json& host = j["spaces"][0];
  EXPECT_EQ(host["peak"]["live_bytes"], 4000);
  EXPECT_EQ(host["peak"]["phase"], "backward");
  EXPECT_EQ(host["peak"]["by_marker"][0]["marker"], "decoder.layers.0.mlp");
  EXPECT_EQ(host["peak"]["by_marker"][0]["layer"], 0);
  EXPECT_EQ(host["peak"]["by_layer"][0]["layer"], 0);
  EXPECT_EQ(host["end"]["live_bytes"], 1200);
  EXPECT_EQ(host["forward_passes"][0]["retained_by_marker"][0]["bytes"], 1000);
  EXPECT_EQ(host["iterations"][1]["iteration"], 1);
  EXPECT_TRUE(j["local_rank"].is_number());
  EXPECT_EQ(j["rank"], 3);
}

TEST(TraceExport, JsonlFollowsTheSnapshotVocabulary) {
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path);
  std::ostringstream out;
  // A B freeB C free(A, realloc) alloc(A, restored) freeC D E  (the unknown free is left out)
  EXPECT_EQ(log_parse::export_trace_jsonl(path, out), 9u);
  std::istringstream lines(out.str());
  std::vector<nlohmann::json> v;
  for (std::string line; std::getline(lines, line);) v.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(v.size(), 9u);
  EXPECT_EQ(v[0]["action"], "alloc");
  EXPECT_EQ(v[0]["addr"], 0xA000);
  EXPECT_EQ(v[0]["size"], 1000);
  EXPECT_EQ(v[0]["device"], -1);
  EXPECT_EQ(v[0]["time_us"], 2000);
  EXPECT_EQ(v[0]["marker"], "decoder.layers.0.mlp");
  EXPECT_EQ(v[0]["phase"], "forward");
  EXPECT_EQ(v[0]["rank"], 3);
  ASSERT_EQ(v[0]["frames"].size(), 4u);  // decoder.layers.0.mlp, decoder.layers.0, decoder.layers, decoder
  EXPECT_EQ(v[0]["frames"][0]["name"], "decoder.layers.0.mlp");
  EXPECT_EQ(v[0]["frames"][3]["name"], "decoder");
  EXPECT_EQ(v[0]["frames"][0]["filename"], "forward");
  EXPECT_EQ(v[2]["action"], "free_completed");
  EXPECT_EQ(v[2]["size"], 500);  // the freed block's size
  EXPECT_EQ(v[7]["action"], "alloc");
  EXPECT_EQ(v[7]["device"], 1);
  EXPECT_EQ(v[7]["stream"], 7);
  EXPECT_EQ(v[7]["phase"], "optimizer");
}

// The pickle is checked by Python's own unpickler, which also replays it the way memory_viz does.
TEST(TraceExport, MemoryVizPickleLoadsInPython) {
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path);
  for (const char* space : {"host", "cuda"}) {
    const std::string pickle = dir.str() + "/" + space + ".pickle";
    {
      std::ofstream out(pickle, std::ios::binary);
      log_parse::export_trace_memory_viz(
          path, out,
          std::string(space) == "host" ? log_parse::TraceSpace::kHost : log_parse::TraceSpace::kCuda);
    }
    const std::string py = R"(
import pickle, sys
s = pickle.load(open(sys.argv[1], 'rb'))
assert s['segments'] == []
live = peak = 0
blocks = {}
for device, entries in enumerate(s['device_traces']):
    for e in entries:
        if e['action'] == 'alloc':
            blocks[e['addr']] = e['size']; live += e['size']; peak = max(peak, live)
        elif e['action'] == 'free_completed':
            live -= blocks.pop(e['addr'])
    print(device, len(entries), peak, live, entries[0]['frames'][0]['name'] if entries else '-', entries[0]['stream'] if entries else '-')
)";
    RunResult r = run_shell("/usr/bin/python3 -c " + shell_quote(py) + " " + shell_quote(pickle));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    if (std::string(space) == "host")
      EXPECT_EQ(r.out, "0 8 4000 1200 decoder.layers.0.mlp 0\n");
    else  // devices 0 (empty) and 1
      EXPECT_EQ(r.out, "0 0 0 0 - -\n1 1 1048576 1048576 optimizer.state 7\n");
  }
}

/// torch's version as /usr/bin/python3 imports it; "" without torch.
std::string local_torch() {
  RunResult r = run_shell("/usr/bin/python3 -c 'import torch, sys; sys.stdout.write(torch.__version__)'");
  return r.exit_code == 0 ? r.out : "";
}

std::string export_viz(const std::string& dir, const std::string& trace, const std::string& version) {
  const std::string pickle = dir + "/viz_" + version + ".pickle";
  RunResult r = run_preflight("trace export --format memory-viz --space host --memory-viz-version " +
                              version + " -o " + shell_quote(pickle) + " " + shell_quote(trace));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return pickle;
}

// The torch 1.13 layout (Debian 12's python3-torch) read by that torch's own torch.cuda._memory_viz: the
// blocks live at the host peak (4000 bytes at 6 ms: 0xA000, 1000 bytes in the forward pass, and 0xC000,
// 3000 in the backward pass, both under decoder.layers.0.mlp), as `stats` and `memory` see them.
TEST(TraceExport, MemoryVizTorch113LayoutLoadsInTorchsReader) {
  const std::string torch = local_torch();
  if (torch.empty()) GTEST_SKIP() << "no torch for /usr/bin/python3 here: torch's own reader cannot be run";
  if (log_parse::memory_viz_layout_for_torch(torch) != log_parse::MemoryVizLayout::kSegments)
    GTEST_SKIP() << "torch " << torch << " here reads the 2.1 layout (checked by the next test)";
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path);
  const std::string pickle = export_viz(dir.str(), path, "1.13");
  const std::string py = R"(
import pickle, sys
import torch.cuda._memory_viz as mv
s = pickle.load(open(sys.argv[1], 'rb'))
st = mv.stats(s)
print(st['segments'], st['total_size'].value, st['active_allocated'].value)
print(mv.memory(s, format_flamegraph=lambda lines: lines), end='')
)";
  RunResult r = run_shell("/usr/bin/python3 -c " + shell_quote(py) + " " + shell_quote(pickle));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(
      r.out,
      "2 4000 4000\n"
      "stream_0;active_allocated;forward:0:decoder;forward:0:decoder.layers;forward:0:decoder.layers.0;"
      "forward:0:decoder.layers.0.mlp 1000\n"
      "stream_0;active_allocated;backward:0:decoder;backward:0:decoder.layers;backward:0:decoder.layers.0;"
      "backward:0:decoder.layers.0.mlp 3000\n");
  // auto picks the layout of the torch found here.
  RunResult a = run_preflight("trace export --format memory-viz --space host -o " +
                              shell_quote(dir.str() + "/a.pickle") + " " + shell_quote(path));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.err.find("the layout torch " + torch + " reads (1.13"), std::string::npos) << a.err;
  EXPECT_EQ(read_file(dir.str() + "/a.pickle"), read_file(pickle));
}

// The torch >= 2.1 layout read by torch's own trace_plot (the Active Memory Timeline of memory_viz).
TEST(TraceExport, MemoryVizTorch21LayoutLoadsInTorchsReader) {
  const std::string torch = local_torch();
  if (torch.empty() ||
      log_parse::memory_viz_layout_for_torch(torch) != log_parse::MemoryVizLayout::kDeviceTraces)
    GTEST_SKIP() << "torch >= 2.1 is not installed here (found: " << (torch.empty() ? "none" : torch)
                 << "); the 2.1 layout is checked by Python's unpickler in MemoryVizPickleLoadsInPython";
  TempDir dir;
  const std::string path = dir.str() + "/t.pftrace";
  scenario().write(path);
  const std::string pickle = export_viz(dir.str(), path, "2.1");
  const std::string py = R"(
import pickle, sys
import torch.cuda._memory_viz as mv
s = pickle.load(open(sys.argv[1], 'rb'))
html = mv.trace_plot(s)
print(len(s['device_traces'][0]), 'decoder.layers.0.mlp' in html)
)";
  RunResult r = run_shell("/usr/bin/python3 -c " + shell_quote(py) + " " + shell_quote(pickle));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "8 True\n");
}

std::string error_of(const std::string& path) {
  try {
    log_parse::summarize_trace(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TraceReader, BadInputNamesFileAndOffset) {
  TempDir dir;
  const std::string p = dir.str() + "/bad.pftrace";
  EXPECT_NE(error_of(dir.str() + "/missing.pftrace").find("missing.pftrace: cannot open trace"),
            std::string::npos);

  std::ofstream(p) << "short";
  EXPECT_NE(error_of(p).find("too short for a trace header (5 bytes"), std::string::npos) << error_of(p);

  SyntheticTrace t = scenario();
  t.header().magic[0] = 'X';
  t.write(p);
  EXPECT_NE(error_of(p).find("not a preflight allocation trace"), std::string::npos);

  t = scenario();
  t.header().version = 99;
  t.write(p);
  EXPECT_NE(error_of(p).find("trace format version 99"), std::string::npos);

  t = scenario();
  t.rec(static_cast<Kind>(77), 1, 0, 0);
  t.write(p);
  const std::string where =
      p + "@" + std::to_string(trace::kHeaderBytes + (t.slots() - 1) * trace::kRecordBytes);
  EXPECT_NE(error_of(p).find(where + ": unknown record kind 77"), std::string::npos) << error_of(p);

  SyntheticTrace cut;
  cut.rec(Kind::kString, 0, 1, 30);  // needs two continuation slots
  cut.payload("0123456789012345678901234", 24);
  cut.write(p);
  EXPECT_NE(error_of(p).find("continuation slots past the end of the file"), std::string::npos)
      << error_of(p);
}

TEST(TraceCli, BadFileExitsTwoWithTheFileName) {
  TempDir dir;
  const std::string p = dir.str() + "/junk.pftrace";
  std::ofstream(p) << std::string(5000, 'x');
  RunResult r = run_preflight("trace summarize " + shell_quote(p));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: " + p + ": not a preflight allocation trace"), std::string::npos)
      << r.err;
  r = run_preflight("trace summarize " + shell_quote(dir.str() + "/none.pftrace"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot open trace"), std::string::npos) << r.err;
  r = run_preflight("trace export --format memory-viz " + shell_quote(p));
  EXPECT_EQ(r.exit_code, 2);
}

TEST(TraceCli, SummarizeAndExportScenario) {
  TempDir dir;
  const std::string path = dir.str() + "/rank3.pid4242.pftrace";
  scenario().write(path);
  RunResult r = run_preflight("trace summarize --json " + shell_quote(dir.str()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["format"], "preflight-trace-summary");
  ASSERT_EQ(j["processes"].size(), 1u);
  EXPECT_EQ(j["processes"][0]["spaces"][0]["peak"]["live_bytes"], 4000);

  r = run_preflight("trace summarize " + shell_quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rank 3 of 8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decoder.layers.0.mlp"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.91 KiB"), std::string::npos) << r.out;  // the 4000-byte peak

  r = run_preflight("trace export --format jsonl " + shell_quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 9);
  r = run_preflight("trace export --format memory-viz -o " + shell_quote(dir.str() + "/s.pickle") + " " +
                    shell_quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::file_size(dir.str() + "/s.pickle") > 100);
}

}  // namespace
}  // namespace preflight::test
