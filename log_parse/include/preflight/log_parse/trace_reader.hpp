#pragma once
/// @file trace_reader.hpp
/// Reading the allocation traces written by `libpreflight_hook.so` (format:
/// preflight/common/trace_format.hpp).
///
/// The file is memory-mapped read-only and decoded record by record in slot order (which is the order the
/// process handed out addresses in; see trace_format.hpp).  Slots the writer never completed (SIGKILL, spare
/// space at the end of the file) are skipped and counted.  A trace whose process is still running can be
/// read; records completed after the file was opened are not seen.
///
/// Errors (preflight::InputError, where = `FILE` or `FILE@BYTE_OFFSET`): missing or unreadable file, file
/// shorter than the 4096-byte header, wrong magic, unsupported version or record size, a record of unknown
/// kind, a multi-slot record without its continuation slots.

#include <cstdint>
#include <string>
#include <vector>

#include "preflight/common/trace_format.hpp"

namespace preflight::log_parse {

/// The traced process, from the trace header.
struct TraceProcessInfo {
  std::string file;
  int pid = 0;
  int ppid = 0;
  int rank = -1;        ///< RANK / RANK_ID, -1 when unset
  int local_rank = -1;  ///< LOCAL_RANK, -1 when unset
  int world_size = -1;  ///< WORLD_SIZE / RANK_SIZE, -1 when unset
  std::string host;
  std::string exe;
  std::string cmdline;
  std::uint64_t start_realtime_ns = 0;  ///< wall clock at trace start, ns since the Unix epoch
  std::uint64_t end_ns = 0;             ///< ns after start at exit (exited) or of the last record
  bool exited = false;                  ///< the process ran its exit handlers; else it was killed or exec'd
  bool fork_child = false;              ///< the trace was started in a fork child
  bool truncated = false;               ///< the writer stopped early (disk full, size limit)
  bool host_enabled = false;            ///< host allocations were recorded
  bool cuda_enabled = false;            ///< preflight_cuda_malloc/free were recorded
  std::uint64_t min_bytes = 0;          ///< allocations below this size were not recorded
  std::uint64_t dropped = 0;            ///< records the writer lost (see trace_format.hpp)
};

/// One complete record, with its continuation slots folded in.
struct TraceEvent {
  std::uint64_t slot = 0;     ///< slot index of the main record
  std::uint64_t time_ns = 0;  ///< ns since trace start (48-bit wrap undone)
  trace::Kind kind = trace::Kind::kEmpty;
  int device = trace::kHostDevice;  ///< CUDA device, -1 for host
  std::uint64_t addr = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;  ///< CUDA stream (kCudaAlloc, kCudaFree, kCudaOom)
  std::uint32_t thread = 0;
  std::uint32_t marker = 0;
};

/// Sequential reader over one trace file.
class TraceReader {
 public:
  /// Opens and maps `path`, checks the header.  @throws InputError
  explicit TraceReader(const std::string& path);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const TraceProcessInfo& info() const { return info_; }

  /// Decodes the next complete record; false at the end of the file.  kString records are consumed here
  /// (they fill marker_names()) and not returned.  @throws InputError on a corrupt record
  bool next(TraceEvent& event);

  /// Starts again at the first slot (marker names are kept).
  void rewind();

  /// Marker names by id; [0] is "" (no marker).  Complete after one full pass; an id whose name record
  /// was lost reads "marker#<id>".
  const std::vector<std::string>& marker_names() const { return names_; }
  /// Name of marker `id` ("" for 0, "marker#<id>" when unknown).
  std::string marker_name(std::uint32_t id) const;

  /// Slots passed over because their writer never completed them (seen so far in this pass).
  std::uint64_t incomplete_slots() const { return incomplete_; }
  /// Records returned so far in this pass (strings and continuations not counted).
  std::uint64_t records() const { return records_; }

 private:
  std::string path_;
  TraceProcessInfo info_;
  const unsigned char* data_ = nullptr;
  std::uint64_t size_ = 0;
  std::uint64_t slots_ = 0;
  std::uint64_t pos_ = 0;
  std::uint64_t last_raw_time_ = 0;
  std::uint64_t time_epoch_ = 0;
  std::uint64_t incomplete_ = 0;
  std::uint64_t records_ = 0;
  std::vector<std::string> names_;
};

/// Human name of a phase: "other", "forward", "backward", "optimizer".
const char* phase_name(trace::Phase phase);

/// Layer index of a marker path: the first dot-separated component that is a decimal number
/// ("decoder.layers.3.mlp" → 3), or -1 when there is none.
int layer_of_marker(const std::string& path);

}  // namespace preflight::log_parse
