#pragma once
// Small text predicates shared by the log readers (internal to log_parse).
#include <string>
#include <string_view>

namespace preflight::log_parse::detail {

/// Only spaces, tabs or '\r'.
bool is_blank(std::string_view line);

/// A line that reports a failure: "<Name>Error: …"/"<Name>Exception: …" (Python), "Traceback (most recent
/// call last):", "[ERROR]"/"[CRITICAL]" (glog/MindSpore), " - ERROR - " (MindFormers), "Out of Memory" /
/// "out of memory", "Segmentation fault", a line starting with "Killed".
bool looks_like_error(std::string_view line);

/// The line for a report: at most 400 bytes, cut on a UTF-8 boundary with "…" appended when cut.
std::string clip_line(std::string_view line);

/// Leading and trailing blanks removed.
std::string_view trim(std::string_view s);

}  // namespace preflight::log_parse::detail
