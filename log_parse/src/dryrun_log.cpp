#include "preflight/log_parse/dryrun_log.hpp"

#include <algorithm>
#include <cstring>

#include "byte_scan.hpp"
#include "file_read.hpp"
#include "log_text.hpp"

namespace preflight::log_parse {

namespace {

using detail::for_each_line;

constexpr std::size_t kTailWindow = 256 * 1024;
constexpr std::int64_t kMaxGapInBlock = 8;  // lines allowed between two values of one block

enum Key { kDevice, kUsed, kUsedPeak, kActualPeak, kNoKey };

struct KeyText {
  Key key;
  std::string_view text;
};

constexpr KeyText kKeys[] = {
    {kDevice, "Device MOC memory size:"},
    {kDevice, "Device HBM memory size:"},
    {kUsed, "MindSpore Used memory size:"},
    {kUsedPeak, "Used peak memory usage (without fragments):"},
    {kActualPeak, "Actual peak memory usage (with fragments):"},
};

std::optional<LogValue>& slot(DryrunMemoryBlock& b, Key k) {
  switch (k) {
    case kDevice:
      return b.device_memory_mib;
    case kUsed:
      return b.used_memory_mib;
    case kUsedPeak:
      return b.used_peak_mib;
    default:
      return b.actual_peak_mib;
  }
}

// "<key> 1234M" (blanks allowed around, M optional) → value.
std::optional<std::int64_t> parse_mib(std::string_view rest) {
  std::size_t i = 0;
  while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
  std::size_t d = i;
  std::int64_t v = 0;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9' && i - d < 18) v = v * 10 + (rest[i++] - '0');
  if (i == d) return std::nullopt;
  if (i < rest.size() && rest[i] == 'M') ++i;
  while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
  if (i != rest.size()) return std::nullopt;
  return v;
}

struct BlockFinder {
  std::optional<DryrunMemoryBlock> current;
  std::optional<DryrunMemoryBlock> last;  // the most recent block
  std::size_t last_end = 0;               // offset just past the last line of `last`
  std::int64_t last_end_line = 0;         // number of that line

  void line(std::string_view text, std::int64_t n, bool terminated, std::size_t line_end) {
    if (current && last && text.find("MindSpore memory base address:") != std::string_view::npos) {
      last_end = line_end;  // part of the block, not a value
      last_end_line = n;
      return;
    }
    for (const KeyText& k : kKeys) {
      std::size_t at = text.find(k.text);
      if (at == std::string_view::npos) continue;
      auto v = parse_mib(text.substr(at + k.text.size()));
      if (!v) return;
      if (current) {
        std::int64_t gap = n - current->last_line();
        if (slot(*current, k.key) || gap > kMaxGapInBlock) current.reset();
      }
      if (!current) current.emplace();
      slot(*current, k.key) = LogValue{*v, n, !terminated};
      if (k.key == kDevice) current->device_spelling = std::string(k.text.substr(7, 3));
      last = current;
      last_end = line_end;
      last_end_line = n;
      return;
    }
  }
};

// Every key contains " memory ": find those with memmem and only look at their lines.
BlockFinder find_blocks(std::string_view text, std::size_t from, std::int64_t first_line) {
  static constexpr std::string_view kAnchor = " memory ";
  BlockFinder f;
  std::size_t pos = from, counted_to = from;
  std::int64_t n = first_line;
  while (pos < text.size()) {
    const void* hit = memmem(text.data() + pos, text.size() - pos, kAnchor.data(), kAnchor.size());
    if (!hit) break;
    std::size_t at = static_cast<const char*>(hit) - text.data();
    std::size_t ls = at;
    while (ls > from && text[ls - 1] != '\n') --ls;
    std::size_t le = text.find('\n', at);
    bool terminated = le != std::string_view::npos;
    if (!terminated) le = text.size();
    n += static_cast<std::int64_t>(detail::count_newlines(text.data() + counted_to, ls - counted_to));
    counted_to = ls;
    std::string_view line = text.substr(ls, le - ls);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    f.line(line, n, terminated, terminated ? le + 1 : le);
    pos = terminated ? le + 1 : le;
  }
  return f;
}

void read_identity(std::string_view text, DryrunLogScan& scan) {
  auto find_number_after = [&](std::string_view needle, std::size_t max_skip) -> std::optional<LogValue> {
    std::size_t at = text.find(needle);
    if (at == std::string_view::npos) return std::nullopt;
    std::size_t i = at + needle.size();
    std::size_t skip_end = std::min(text.size(), i + max_skip);
    while (i < skip_end && !(text[i] >= '0' && text[i] <= '9') && text[i] != '\n') ++i;
    if (i >= text.size() || !(text[i] >= '0' && text[i] <= '9')) return std::nullopt;
    std::int64_t v = 0;
    std::size_t d = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i - d < 12) v = v * 10 + (text[i++] - '0');
    LogValue lv;
    lv.value = v;
    lv.line = 1 + static_cast<std::int64_t>(detail::count_newlines(text.data(), at));
    lv.unterminated = text.find('\n', at) == std::string_view::npos;
    return lv;
  };
  scan.global_rank = find_number_after("Global rank id", 8);
  scan.pipeline_stages = find_number_after("pipeline_stages = ", 0);
}

}  // namespace

bool DryrunMemoryBlock::complete() const {
  for (const auto* v : {&device_memory_mib, &used_memory_mib, &used_peak_mib, &actual_peak_mib})
    if (!*v || (*v)->unterminated) return false;
  return true;
}

std::vector<std::string> DryrunMemoryBlock::missing() const {
  std::vector<std::string> out;
  auto check = [&](const std::optional<LogValue>& v, const char* name) {
    if (!v)
      out.emplace_back(name);
    else if (v->unterminated)
      out.push_back(std::string(name) + " (cut)");
  };
  check(device_memory_mib, "Device memory size");
  check(used_memory_mib, "Used memory size");
  check(used_peak_mib, "Used peak");
  check(actual_peak_mib, "Actual peak");
  return out;
}

std::int64_t DryrunMemoryBlock::first_line() const {
  std::int64_t first = 0;
  for (const auto* v : {&device_memory_mib, &used_memory_mib, &used_peak_mib, &actual_peak_mib})
    if (*v && (first == 0 || (*v)->line < first)) first = (*v)->line;
  return first;
}

std::int64_t DryrunMemoryBlock::last_line() const {
  std::int64_t last = 0;
  for (const auto* v : {&device_memory_mib, &used_memory_mib, &used_peak_mib, &actual_peak_mib})
    if (*v) last = std::max(last, (*v)->line);
  return last;
}

DryrunLogScan scan_dryrun_text(std::string_view text, std::string file, const DryrunScanOptions& options) {
  DryrunLogScan scan;
  scan.file = std::move(file);
  scan.bytes = text.size();
  scan.partial_last_line = !text.empty() && text.back() != '\n';

  // Fast path: the block is printed at the end of the run, so look at the tail first.
  std::size_t tail_start = 0;
  if (text.size() > kTailWindow) {
    std::size_t nl = text.find('\n', text.size() - kTailWindow);
    if (nl != std::string_view::npos) tail_start = nl + 1;
  }
  detail::ByteStats head = detail::byte_stats(text.data(), tail_start);
  detail::ByteStats tail = detail::byte_stats(text.data() + tail_start, text.size() - tail_start);
  scan.lines = static_cast<std::int64_t>(head.newlines + tail.newlines) + (scan.partial_last_line ? 1 : 0);
  scan.first_nul_offset = head.first_nul >= 0   ? head.first_nul
                          : tail.first_nul >= 0 ? static_cast<std::int64_t>(tail_start) + tail.first_nul
                                                : -1;

  BlockFinder f = find_blocks(text, tail_start, 1 + static_cast<std::int64_t>(head.newlines));
  if (tail_start > 0 && (!f.last || !f.last->complete())) f = find_blocks(text, 0, 1);  // slow path

  // Error lines: after the block when there is one, else anywhere.
  std::size_t errors_from = f.last ? f.last_end : 0;
  std::int64_t errors_first_line = f.last ? f.last_end_line + 1 : 1;
  bool only_blank_after = true;
  for_each_line(text.substr(errors_from), errors_first_line,
                [&](std::string_view line, std::int64_t n, bool) {
                  if (!detail::is_blank(line)) only_blank_after = false;
                  if (detail::looks_like_error(line)) scan.last_error = LogLine{n, detail::clip_line(line)};
                  return true;
                });
  if (f.last) {
    scan.block = f.last;
    scan.block_at_end = only_blank_after;
  }
  if (options.identity) read_identity(text, scan);
  return scan;
}

DryrunLogScan scan_dryrun_log(const std::filesystem::path& file, const DryrunScanOptions& options) {
  thread_local detail::ByteBuffer buffer;
  detail::read_whole_file(file, buffer);
  return scan_dryrun_text(buffer.view(), file.string(), options);
}

}  // namespace preflight::log_parse
