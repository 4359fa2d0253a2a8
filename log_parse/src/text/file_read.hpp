#pragma once
// Reading whole files into a reusable buffer (internal to log_parse).
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string_view>
#include <utility>

namespace preflight::log_parse::detail {

/// A growable byte buffer that is not zero-filled on growth (reused across thousands of files).
class ByteBuffer {
 public:
  friend void swap(ByteBuffer& a, ByteBuffer& b) noexcept {
    std::swap(a.data_, b.data_);
    std::swap(a.capacity_, b.capacity_);
    std::swap(a.size_, b.size_);
  }
  std::string_view view() const { return {data_.get(), size_}; }
  /// Makes room for at least `n` bytes, keeping the first size() bytes.
  void reserve(std::size_t n);
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  std::size_t capacity() const { return capacity_; }
  void set_size(std::size_t n) { size_ = n; }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
  std::size_t size_ = 0;
};

/// Replaces the contents of `buffer` with the bytes of `file`, read to EOF (a log that grows while it is
/// read is taken as far as it got).  Throws InputError(file, reason) when the file cannot be opened or read.
void read_whole_file(const std::filesystem::path& file, ByteBuffer& buffer);

}  // namespace preflight::log_parse::detail
