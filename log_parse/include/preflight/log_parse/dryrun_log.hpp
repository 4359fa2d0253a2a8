#pragma once
/// @file dryrun_log.hpp
/// Reading one MindSpore dryrun (or training) log: the device-memory summary block and what went wrong.
///
/// MindSpore prints, when `MS_MEMORY_STATISTIC` is set (and at INFO level), from
/// `AscendDynamicMemAdapter::DevMemStatistics()` (mindspore-ai/mindspore,
/// `mindspore/ccsrc/plugin/device/ascend/hal/device/ascend_dynamic_mem_adapter.cc`):
///
///     Device MOC memory size: 65536M          (older builds: "Device HBM memory size: …M")
///     MindSpore Used memory size: 59392M
///     MindSpore memory base address: 0        (some builds)
///     Used peak memory usage (without fragments): 23716M
///     Actual peak memory usage (with fragments): 26244M
///
/// Each value is an integer number of MiB (bytes / 2^20) followed by `M` (the `M` is optional here).
/// A line matches wherever the key starts, so glog/MindFormers prefixes are allowed; anything but blanks
/// after the number makes the line not match.  Reference: shared/notes/ecosystem.md §2.2, sapp.md §12.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight::log_parse {

/// An integer read from a log line.
struct LogValue {
  std::int64_t value = 0;
  std::int64_t line = 0;      ///< 1-based line number in the file
  bool unterminated = false;  ///< read from a last line without '\n': the number may have been cut
};

/// A text line of a log.
struct LogLine {
  std::int64_t line = 0;  ///< 1-based line number
  std::string text;       ///< without the line ending; at most 400 bytes (longer lines are cut, with "…")
};

/// One memory summary block.  Values are MiB (2^20 bytes), as printed.
struct DryrunMemoryBlock {
  std::optional<LogValue> device_memory_mib;  ///< "Device MOC memory size" / "Device HBM memory size"
  std::optional<LogValue>
      used_memory_mib;  ///< "MindSpore Used memory size" (the usable pool, max_device_memory)
  std::optional<LogValue> used_peak_mib;    ///< "Used peak memory usage (without fragments)"
  std::optional<LogValue> actual_peak_mib;  ///< "Actual peak memory usage (with fragments)"
  std::string device_spelling;              ///< "MOC" or "HBM" (empty when that line is absent)

  /// All four values present and none read from an unterminated last line.
  bool complete() const;
  /// Names of the values that are absent, in print order ("Device memory size", "Used memory size",
  /// "Used peak", "Actual peak"), plus "<name> (cut)" for an unterminated one.
  std::vector<std::string> missing() const;
  /// First and last line numbers of the values present.
  std::int64_t first_line() const;
  std::int64_t last_line() const;
};

/// MindSpore's allocation failure (`mindspore/ccsrc/common/mem_reuse/mem_dynamic_allocator.cc`):
///
///     RuntimeError: Out of Memory!!! Request memory size: 1073741824B, Memory Statistic: Device HBM memory
///     size: 62432M
///
/// followed by the rest of the memory statistic (often cut: the process dies).  The device size is read
/// from that line or the statistic after it.
struct DryrunOutOfMemory {
  std::int64_t requested_bytes = 0;        ///< "Request memory size: <N>B"
  std::optional<std::int64_t> device_mib;  ///< "Device <HBM|MOC> memory size: <N>M"
  std::int64_t line = 0;
};

/// Everything read from one log file.
struct DryrunLogScan {
  std::string file;                        ///< the path as given
  std::uint64_t bytes = 0;                 ///< size read
  std::int64_t lines = 0;                  ///< number of lines (an unterminated last line counts)
  bool partial_last_line = false;          ///< the file does not end with '\n' (a log still being written?)
  std::int64_t first_nul_offset = -1;      ///< byte offset of the first NUL byte (binary data), or -1
  std::optional<DryrunMemoryBlock> block;  ///< the last memory block of the file, if any
  bool block_at_end = false;               ///< only blank lines follow the block (with an incomplete block:
                                           ///< the log was cut inside it)
  /// The last error-like line: a line starting with "<Name>Error:"/"<Name>Exception:", "Traceback (most
  /// recent call last)", "[ERROR]"/"[CRITICAL]"/" - ERROR - " log levels, "Out of Memory"/"out of memory",
  /// "Segmentation fault", "Killed".  With a block, only lines after it are considered.
  std::optional<LogLine> last_error;
  /// The last "Out of Memory!!! Request memory size" of the log, if any.
  std::optional<DryrunOutOfMemory> out_of_memory;
  /// Identity lines, read only with DryrunScanOptions::identity: msrun's "Global rank id … N" and
  /// MindFormers' "Pipeline parallel was opened: pipeline_stages = N" (mindformers/trainer/base_trainer.py).
  std::optional<LogValue> global_rank;
  std::optional<LogValue> pipeline_stages;
};

struct DryrunScanOptions {
  bool identity = false;  ///< also look for the rank and pipeline-stage lines (one more pass over the file)
};

/// Reads `file` and returns its last memory block, error line and line statistics.  The block is first
/// looked for in the last 256 KiB (where MindSpore prints it); the whole file is read line by line only
/// when it is not there.  Thread-safe.  Throws InputError(file, …) when the file cannot be read; a
/// malformed or binary log is not an error here (see the fields), the caller decides.
DryrunLogScan scan_dryrun_log(const std::filesystem::path& file, const DryrunScanOptions& options = {});

/// The same on text already in memory; `file` is only used to label the result.
DryrunLogScan scan_dryrun_text(std::string_view text, std::string file,
                               const DryrunScanOptions& options = {});

}  // namespace preflight::log_parse
