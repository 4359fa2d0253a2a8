#pragma once
// Fast whole-buffer byte statistics used by the log readers (internal to log_parse).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace preflight::log_parse::detail {

struct ByteStats {
  std::uint64_t newlines = 0;   ///< number of '\n' bytes
  std::int64_t first_nul = -1;  ///< offset of the first NUL byte, or -1 (a NUL means "not a text log")
};

/// Counts '\n' and finds the first NUL in [data, data+size).  AVX2 when the CPU has it, SSE2 otherwise
/// (scalar off x86); memory-bandwidth bound.
ByteStats byte_stats(const char* data, std::size_t size);

/// Number of '\n' in [data, data+size).
inline std::uint64_t count_newlines(const char* data, std::size_t size) {
  return byte_stats(data, size).newlines;
}

/// Iterates the lines of `text`, calling f(line, line_number, terminated) for each; `line` excludes the
/// '\n' and a trailing '\r'; `terminated` is false only for a last line without '\n'.
template <class F>
void for_each_line(std::string_view text, std::int64_t first_line_number, F&& f) {
  std::size_t pos = 0;
  std::int64_t n = first_line_number;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    bool terminated = nl != std::string_view::npos;
    std::size_t end = terminated ? nl : text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!f(line, n, terminated)) return;
    ++n;
    pos = terminated ? nl + 1 : text.size();
  }
}

}  // namespace preflight::log_parse::detail
