#pragma once
/// @file trace_export.hpp
/// `preflight trace export`: hook traces in PyTorch's memory-snapshot vocabulary
/// (pytorch torch/cuda/memory.py `_snapshot` TraceEntry: `action`, `addr`, `size`, `stream`, `device`,
/// `time_us`, `frames`).
///
/// Each allocation becomes an `alloc` entry, each free of a block the trace saw allocated a
/// `free_completed` entry with that block's size (a realloc is a `free_completed` of the old block and an
/// `alloc` of the new one); frees of blocks allocated before tracing or below min_bytes are left out.
/// `frames` turn the marker path into a stack, innermost first: for `decoder.layers.3.mlp` in the forward
/// pass of iteration 2, `[{name: "decoder.layers.3.mlp", filename: "forward", line: 2},
/// {name: "decoder.layers.3", ...}, {name: "decoder.layers", ...}, {name: "decoder", ...}]`
/// (memory_viz shows `forward:2:decoder.layers.3.mlp`); an allocation outside any marker has one frame
/// named "(no marker)".

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace preflight::log_parse {

/// Writes one JSON object per line for every alloc / free_completed / oom entry of the trace at `path`,
/// in record order.  Besides the snapshot keys each line has `marker`, `phase`, `iteration`, `thread`,
/// `pid` and `rank` (null when unknown); `device` is -1 for host memory; `oom` lines carry `size` and
/// `error` (the cudaError_t).  @return the number of lines.  @throws InputError
std::uint64_t export_trace_jsonl(const std::string& path, std::ostream& out);

/// Which memory a memory_viz snapshot shows.
enum class TraceSpace {
  kAuto,  ///< CUDA when the trace has CUDA records, else host
  kHost,  ///< host allocations, as device 0
  kCuda,  ///< CUDA allocations, `device_traces[d]` for device d
};

/// The snapshot layout, by the torch.cuda._memory_viz that reads it.
enum class MemoryVizLayout {
  /// torch ≥ 2.1 (and pytorch.org/memory_viz): `{"segments": [], "device_traces": [[entry…]…]}`, the whole
  /// allocation history ("Active Memory Timeline").
  kDeviceTraces,
  /// torch 1.13 (Debian 12's python3-torch): what `torch.cuda.memory_snapshot()` returned then, a list of
  /// segments — here the blocks live at the peak of the chosen memory, one segment each: `{"device",
  /// "address", "total_size", "allocated_size", "active_size", "stream", "segment_type", "blocks":
  /// [{"size", "state": "active_allocated", "history": [{"addr", "real_size", "frames"}]}]}` (its
  /// `stats`, `memory` and `segments` commands read it).
  kSegments,
};

/// Writes a pickled snapshot (pickle protocol 2, memoized frames) in `layout`.
/// @return the number of entries (history entries; kSegments: blocks).  @throws InputError (also when
/// `space` selects memory the trace lacks)
std::uint64_t export_trace_memory_viz(const std::string& path, std::ostream& out, TraceSpace space,
                                      MemoryVizLayout layout = MemoryVizLayout::kDeviceTraces);

/// The layout for a reader of torch version `version` ("1.13.0a0+gitunknown", "2.3.1"): kSegments before
/// 2.1, else kDeviceTraces.  nullopt when `version` is not a torch version.
std::optional<MemoryVizLayout> memory_viz_layout_for_torch(const std::string& version);

}  // namespace preflight::log_parse
