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

/// Writes a pickled snapshot `{"segments": [], "device_traces": [[entry…]…]}` (pickle protocol 2, memoized
/// frames) that pytorch.org/memory_viz ("Active Memory Timeline") and torch.cuda._memory_viz load.
/// @return the number of entries.  @throws InputError (also when `space` selects memory the trace lacks)
std::uint64_t export_trace_memory_viz(const std::string& path, std::ostream& out, TraceSpace space);

}  // namespace preflight::log_parse
