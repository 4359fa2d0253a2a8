#include "text/byte_source.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "preflight/common/error.hpp"

namespace preflight::log_parse::detail {

namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(const std::filesystem::path& file) : name_(file.string()) {
    fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw InputError(name_, std::string("cannot open: ") + std::strerror(errno));
  }
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  std::size_t read(char* dst, std::size_t cap) {
    std::size_t got = 0;
    while (got < cap) {
      ssize_t n = ::read(fd_, dst + got, cap - got);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw InputError(name_, std::string("cannot read: ") + std::strerror(errno));
      }
      if (n == 0) break;
      got += static_cast<std::size_t>(n);
    }
    return got;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int fd_ = -1;
};

class PlainSource : public ByteSource {
 public:
  PlainSource(std::unique_ptr<FileDescriptor> fd, std::string head)
      : fd_(std::move(fd)), head_(std::move(head)) {}
  std::size_t read(char* dst, std::size_t cap) override {
    if (head_pos_ < head_.size()) {
      std::size_t n = std::min(cap, head_.size() - head_pos_);
      std::memcpy(dst, head_.data() + head_pos_, n);
      head_pos_ += n;
      return n;
    }
    return fd_->read(dst, cap);
  }

 private:
  std::unique_ptr<FileDescriptor> fd_;
  std::string head_;
  std::size_t head_pos_ = 0;
};

class GzipSource : public ByteSource {
 public:
  GzipSource(std::unique_ptr<FileDescriptor> fd, std::string head) : fd_(std::move(fd)), in_(1 << 20) {
    std::memset(&z_, 0, sizeof z_);
    if (inflateInit2(&z_, 15 + 32) != Z_OK) throw InputError(fd_->name(), "cannot start gzip decompression");
    std::memcpy(in_.data(), head.data(), head.size());
    z_.next_in = reinterpret_cast<Bytef*>(in_.data());
    z_.avail_in = static_cast<uInt>(head.size());
  }
  ~GzipSource() override { inflateEnd(&z_); }
  bool gzip() const override { return true; }

  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t produced = 0;
    while (produced < cap && !done_) {
      if (z_.avail_in == 0) {
        std::size_t n = fd_->read(in_.data(), in_.size());
        compressed_ += n;
        if (n == 0) {
          throw InputError(fd_->name() + "@" + std::to_string(compressed_),
                           "the gzip stream ends early (truncated file)");
        }
        z_.next_in = reinterpret_cast<Bytef*>(in_.data());
        z_.avail_in = static_cast<uInt>(n);
      }
      z_.next_out = reinterpret_cast<Bytef*>(dst + produced);
      z_.avail_out = static_cast<uInt>(std::min<std::size_t>(cap - produced, 1u << 30));
      uInt before = z_.avail_out;
      int rc = inflate(&z_, Z_NO_FLUSH);
      produced += before - z_.avail_out;
      if (rc == Z_STREAM_END) {
        // Concatenated gzip members are allowed (gzip -c a b > c).
        if (z_.avail_in > 0 || peek_more()) {
          inflateReset(&z_);
        } else {
          done_ = true;
        }
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        throw InputError(fd_->name() + "@" + std::to_string(compressed_ - z_.avail_in),
                         std::string("corrupt gzip data: ") + (z_.msg ? z_.msg : "inflate failed"));
      }
    }
    return produced;
  }

 private:
  bool peek_more() {
    std::size_t n = fd_->read(in_.data(), in_.size());
    compressed_ += n;
    z_.next_in = reinterpret_cast<Bytef*>(in_.data());
    z_.avail_in = static_cast<uInt>(n);
    return n > 0;
  }

  std::unique_ptr<FileDescriptor> fd_;
  std::vector<char> in_;
  z_stream z_;
  std::uint64_t compressed_ = 0;
  bool done_ = false;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view text) : text_(text) {}
  std::size_t read(char* dst, std::size_t cap) override {
    std::size_t n = std::min(cap, text_.size() - pos_);
    std::memcpy(dst, text_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

std::unique_ptr<ByteSource> open_byte_source(const std::filesystem::path& file) {
  auto fd = std::make_unique<FileDescriptor>(file);
  std::string head(2, '\0');
  head.resize(fd->read(head.data(), 2));
  if (head.size() == 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
      static_cast<unsigned char>(head[1]) == 0x8b)
    return std::make_unique<GzipSource>(std::move(fd), std::move(head));
  return std::make_unique<PlainSource>(std::move(fd), std::move(head));
}

std::unique_ptr<ByteSource> memory_byte_source(std::string_view text) {
  return std::make_unique<MemorySource>(text);
}

}  // namespace preflight::log_parse::detail
