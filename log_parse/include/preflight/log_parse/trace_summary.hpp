#pragma once
/// @file trace_summary.hpp
/// `preflight trace summarize`: per process and memory space (host, cuda:N) — peak live bytes and when,
/// the live bytes at the peak broken down by marker (module path), layer and phase of allocation, bytes
/// allocated per iteration, the bytes each forward pass allocated and still held at its end (the
/// activations kept for backward), and what was live at exit (leaks).
///
/// All byte counts are bytes as requested from the allocator (not rounded to the allocator's block size);
/// times are seconds since the trace started.  "Live" means allocated and not yet freed, as recorded:
/// allocations smaller than the trace's min_bytes and blocks allocated before tracing started are not
/// seen (their frees are counted as unknown_frees).
///
/// The JSON form (summary_json) is a stable interface; its keys are listed in allocator_hook/README.md
/// ("trace summarize --json").

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/log_parse/trace_reader.hpp"

namespace preflight::log_parse {

/// Bytes and blocks under one key (a marker, a layer or a phase).
struct BytesBy {
  std::string key;  ///< marker path ("" = no marker), layer number as text ("" = none), or phase name
  int layer = -1;   ///< layer of the marker (layer_of_marker), -1 when none
  std::uint64_t bytes = 0;
  std::uint64_t blocks = 0;
};

/// A set of live blocks broken down three ways, each sorted by bytes (largest first, ties by key).
struct LiveBreakdown {
  std::uint64_t live_bytes = 0;
  std::uint64_t live_blocks = 0;
  std::vector<BytesBy> by_marker;
  std::vector<BytesBy> by_layer;  ///< key = layer number, "" for blocks outside any numbered layer
  std::vector<BytesBy> by_phase;  ///< phase the block was allocated in
};

struct IterationStats {
  std::int64_t iteration = 0;  ///< -1: start-up, before the first phase record (before the first forward)
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t peak_live_bytes = 0;  ///< highest live bytes while this iteration was current
  double start_s = 0;                 ///< first record of the iteration
  double end_s = 0;                   ///< last record of the iteration
};

/// One forward pass (a phase change to forward until the phase changes again).
struct ForwardPass {
  std::uint64_t iteration = 0;
  std::uint64_t pass = 0;  ///< 0-based index of the pass within its iteration (micro batch order)
  double start_s = 0;
  double end_s = 0;
  std::uint64_t live_bytes_start = 0;
  std::uint64_t live_bytes_end = 0;
  /// Bytes allocated during the pass and still live at its end, by marker.
  std::uint64_t retained_bytes = 0;
  std::vector<BytesBy> retained_by_marker;
};

/// Totals of one marker over the whole trace.
struct MarkerTotals {
  std::string marker;
  int layer = -1;
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;  ///< frees of blocks this marker allocated
  std::uint64_t bytes_allocated = 0;
  std::uint64_t live_bytes_end = 0;
  std::uint64_t live_blocks_end = 0;
};

struct SpaceSummary {
  std::string space;         ///< "host" or "cuda:<device>"
  int device = -1;           ///< -1 for host
  std::uint64_t allocs = 0;  ///< including realloc results
  std::uint64_t frees = 0;   ///< frees of known blocks, including blocks released by realloc
  std::uint64_t reallocs = 0;
  std::uint64_t bytes_allocated = 0;
  std::uint64_t unknown_frees = 0;
  std::uint64_t ooms = 0;  ///< failed cudaMalloc calls

  std::uint64_t peak_record = 0;  ///< slot index of the record that reached the peak
  double peak_time_s = 0;
  std::uint64_t peak_iteration = 0;
  std::string peak_phase;  ///< phase current at the peak
  LiveBreakdown at_peak;   ///< live_bytes = the peak
  LiveBreakdown at_end;    ///< live at the end of the trace (leaks when the process exited)
  std::vector<IterationStats> iterations;
  std::vector<ForwardPass> forward_passes;
  std::vector<MarkerTotals> markers;  ///< sorted by bytes_allocated, largest first
};

struct TraceSummary {
  TraceProcessInfo process;
  std::uint64_t records = 0;
  std::uint64_t incomplete_slots = 0;
  std::uint64_t marker_count = 0;
  std::uint64_t thread_count = 0;
  std::uint64_t overwritten = 0;     ///< allocations at an address already live (a free was lost)
  std::vector<SpaceSummary> spaces;  ///< host first, then CUDA devices in order; only spaces with records
};

/// Reads `path` (two passes) and summarizes it.  @throws InputError (see trace_reader.hpp)
TraceSummary summarize_trace(const std::string& path);

/// The JSON object of one process (see allocator_hook/README.md for the keys).
nlohmann::json summary_json(const TraceSummary& s);

/// Human-readable report of several processes; `top` rows per breakdown table.
std::string render_summaries(const std::vector<TraceSummary>& summaries, int top);

}  // namespace preflight::log_parse
