#include "preflight/log_parse/dryrun_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "preflight/common/error.hpp"

#include "text/byte_scan.hpp"
#include "text/file_read.hpp"
#include "text/log_text.hpp"

namespace preflight::log_parse {

namespace {

using detail::for_each_line;

constexpr std::size_t kTailWindow = 64 * 1024;  // MindSpore prints the block at exit: the last lines
constexpr std::size_t kChunk =
    32 * 1024;  // prefix read in L1-sized pieces (measured: 96+ KiB pieces cost 4x the kernel copy time)
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

// Every key ends in "memory size:" or "memory usage (": find those with memmem (long needles skip fast) and
// only look at their lines.
BlockFinder find_blocks(std::string_view text, std::size_t from, std::int64_t first_line) {
  static constexpr std::string_view kAnchors[] = {"memory size:", "memory usage ("};
  std::vector<std::size_t> hits;
  for (std::string_view anchor : kAnchors)
    for (std::size_t pos = from; pos < text.size();) {
      const void* hit = memmem(text.data() + pos, text.size() - pos, anchor.data(), anchor.size());
      if (!hit) break;
      std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
      hits.push_back(at);
      pos = at + anchor.size();
    }
  // "MindSpore memory base address:" belongs to the block without being a value.
  for (std::size_t pos = from; pos < text.size();) {
    static constexpr std::string_view kBase = "memory base address:";
    const void* hit = memmem(text.data() + pos, text.size() - pos, kBase.data(), kBase.size());
    if (!hit) break;
    std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
    hits.push_back(at);
    pos = at + kBase.size();
  }
  std::sort(hits.begin(), hits.end());
  BlockFinder f;
  std::size_t counted_to = from, done_to = from;
  std::int64_t n = first_line;
  for (std::size_t at : hits) {
    if (at < done_to) continue;  // same line as the previous hit
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
    done_to = terminated ? le + 1 : le;
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

namespace {

/// The last `Out of Memory!!! Request memory size: <N>B` in `text` (lines counted from `first_line` at
/// offset `from`); the device size from its line or from `block` when the statistic starts there.
std::optional<DryrunOutOfMemory> find_out_of_memory(std::string_view text, std::size_t from,
                                                    std::int64_t first_line,
                                                    const std::optional<DryrunMemoryBlock>& block) {
  static constexpr std::string_view kKey = "Out of Memory!!! Request memory size:";
  std::size_t last = std::string_view::npos;
  for (std::size_t pos = from; pos < text.size();) {
    const void* hit = memmem(text.data() + pos, text.size() - pos, kKey.data(), kKey.size());
    if (!hit) break;
    last = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
    pos = last + kKey.size();
  }
  if (last == std::string_view::npos) return std::nullopt;
  DryrunOutOfMemory oom;
  oom.line = first_line + static_cast<std::int64_t>(detail::count_newlines(text.data() + from, last - from));
  std::size_t i = last + kKey.size();
  while (i < text.size() && text[i] == ' ') ++i;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && oom.requested_bytes < (std::int64_t{1} << 58))
    oom.requested_bytes = oom.requested_bytes * 10 + (text[i++] - '0');
  if (block && block->device_memory_mib && block->device_memory_mib->line >= oom.line)
    oom.device_mib = block->device_memory_mib->value;
  return oom;
}

}  // namespace

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
  scan.out_of_memory =
      find_out_of_memory(text, tail_start, 1 + static_cast<std::int64_t>(head.newlines), scan.block);
  if (!scan.out_of_memory && tail_start > 0) scan.out_of_memory = find_out_of_memory(text, 0, 1, scan.block);
  if (options.identity) read_identity(text, scan);
  return scan;
}

namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

std::size_t read_at(int fd, char* dst, std::size_t n, std::uint64_t offset, const std::string& name) {
  std::size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, dst + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0) {
      if (errno == EINTR) continue;
      throw InputError(name, std::string("cannot read: ") + std::strerror(errno));
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return got;
}

}  // namespace

// Large logs: the tail is read first and searched; the rest is only streamed through a cache-sized buffer
// to count lines (what grep -n pays too).  Anything unusual falls back to reading the whole file.
DryrunLogScan scan_dryrun_log(const std::filesystem::path& file, const DryrunScanOptions& options) {
  thread_local detail::ByteBuffer buffer;
  auto whole = [&] {
    detail::read_whole_file(file, buffer);
    return scan_dryrun_text(buffer.view(), file.string(), options);
  };
  if (options.identity) return whole();
  Fd f;
  f.fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw InputError(file.string(), std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return whole();
  std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  if (size <= 4 * kTailWindow) return whole();

  std::uint64_t tail_at = size - kTailWindow;
  buffer.reserve(std::max(kTailWindow, kChunk));
  std::size_t got = read_at(f.fd, buffer.data(), kTailWindow, tail_at, file.string());
  if (got != kTailWindow) return whole();  // shrank while we read
  std::string_view tail(buffer.data(), got);
  std::size_t region = tail.find('\n');
  if (region == std::string_view::npos) return whole();
  ++region;
  detail::ByteStats tail_stats = detail::byte_stats(tail.data(), tail.size());
  std::uint64_t tail_nl_before_region = 1;  // the '\n' ending the cut first line
  BlockFinder blocks = find_blocks(tail, region, 1);
  if (!blocks.last || !blocks.last->complete() || tail_stats.first_nul >= 0) return whole();
  if (find_out_of_memory(tail, region, 1, blocks.last)) return whole();

  DryrunLogScan scan;
  scan.file = file.string();
  scan.bytes = size;
  scan.partial_last_line = tail.back() != '\n';
  scan.block = blocks.last;
  bool only_blank_after = true;
  for_each_line(tail.substr(blocks.last_end), blocks.last_end_line + 1,
                [&](std::string_view line, std::int64_t n, bool) {
                  if (!detail::is_blank(line)) only_blank_after = false;
                  if (detail::looks_like_error(line)) scan.last_error = LogLine{n, detail::clip_line(line)};
                  return true;
                });
  scan.block_at_end = only_blank_after;

  // Lines before the tail, streamed.
  std::uint64_t prefix_nl = 0;
  std::int64_t first_nul = -1;
  for (std::uint64_t at = 0; at < tail_at;) {
    std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, tail_at - at));
    std::size_t n = read_at(f.fd, buffer.data(), want, at, file.string());
    if (n != want) return whole();
    detail::ByteStats st_chunk = detail::byte_stats(buffer.data(), n);
    prefix_nl += st_chunk.newlines;
    if (first_nul < 0 && st_chunk.first_nul >= 0)
      first_nul = static_cast<std::int64_t>(at) + st_chunk.first_nul;
    at += n;
  }
  scan.first_nul_offset = first_nul;
  // Relative line r (1 = the first whole line of the tail) is absolute line prefix_nl + tail_nl_before_region
  // + r.
  std::int64_t shift = static_cast<std::int64_t>(prefix_nl + tail_nl_before_region) + 0;
  for (auto* v : {&scan.block->device_memory_mib, &scan.block->used_memory_mib, &scan.block->used_peak_mib,
                  &scan.block->actual_peak_mib})
    if (*v) (*v)->line += shift;
  if (scan.last_error) scan.last_error->line += shift;
  scan.lines = static_cast<std::int64_t>(prefix_nl + tail_stats.newlines) + (scan.partial_last_line ? 1 : 0);
  return scan;
}

}  // namespace preflight::log_parse
