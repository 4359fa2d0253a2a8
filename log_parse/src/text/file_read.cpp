#include "text/file_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "preflight/common/error.hpp"

namespace preflight::log_parse::detail {

void ByteBuffer::reserve(std::size_t n) {
  if (n <= capacity_) return;
  std::size_t cap = capacity_ ? capacity_ : 4096;
  while (cap < n) cap *= 2;
  std::unique_ptr<char[]> bigger(new char[cap]);
  if (size_) std::memcpy(bigger.get(), data_.get(), size_);
  data_ = std::move(bigger);
  capacity_ = cap;
}

void read_whole_file(const std::filesystem::path& file, ByteBuffer& buffer) {
  int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(file.string(), std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd);
    throw InputError(file.string(), std::string("cannot read: ") + std::strerror(err));
  }
  buffer.set_size(0);
  // One byte more than the size sees EOF in the first read for a file that is not growing.
  buffer.reserve(static_cast<std::size_t>(st.st_size) + 1);
  std::size_t got = 0;
  for (;;) {
    if (got == buffer.capacity()) {
      buffer.set_size(got);
      buffer.reserve(got * 2);
    }
    ssize_t n = ::read(fd, buffer.data() + got, buffer.capacity() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      throw InputError(file.string(), std::string("cannot read: ") + std::strerror(err));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buffer.set_size(got);
}

}  // namespace preflight::log_parse::detail
