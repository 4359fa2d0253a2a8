#pragma once
// Sequential byte sources for streaming readers: a plain file or a gzip file (internal to log_parse).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace preflight::log_parse::detail {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  /// Fills up to `cap` bytes; returns 0 only at the end.  Throws InputError on read or inflate errors.
  virtual std::size_t read(char* dst, std::size_t cap) = 0;
  /// True when the bytes are inflated from gzip.
  virtual bool gzip() const { return false; }
};

/// Opens `file`, inflating it when it starts with the gzip magic (1f 8b).  Throws InputError(file, …).
std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& file);

/// A source over bytes in memory (tests, small inputs); `text` must outlive the source.
std::unique_ptr<ByteSource> memory_byte_source(std::string_view text);

}  // namespace preflight::log_parse::detail
