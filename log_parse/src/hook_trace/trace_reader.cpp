// Decoding of hook traces; see trace_reader.hpp.
#include "preflight/log_parse/trace_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "preflight/common/error.hpp"

namespace preflight::log_parse {

using trace::Kind;

namespace {

std::string cstr(const char* s, std::size_t cap) {
  return std::string(s, strnlen(s, cap));
}

template <typename T>
T load(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

TraceReader::TraceReader(const std::string& path) : path_(path) {
  info_.file = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, std::string("cannot open trace: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path, "not a regular file");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  if (size_ < trace::kHeaderBytes) {
    ::close(fd);
    throw InputError(path, "too short for a trace header (" + std::to_string(size_) + " bytes, need " +
                               std::to_string(trace::kHeaderBytes) + ")");
  }
  void* m = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED) throw InputError(path, std::string("cannot map trace: ") + std::strerror(errno));
  data_ = static_cast<const unsigned char*>(m);
  ::madvise(m, size_, MADV_SEQUENTIAL);

  trace::TraceHeader h;
  std::memcpy(&h, data_, sizeof h);
  auto fail = [&](const std::string& what) {
    ::munmap(const_cast<unsigned char*>(data_), size_);
    data_ = nullptr;
    throw InputError(path, what);
  };
  if (std::memcmp(h.magic, trace::kMagic, sizeof h.magic) != 0)
    fail("not a preflight allocation trace (bad magic; expected a file written by libpreflight_hook.so)");
  if (h.version != trace::kVersion)
    fail("trace format version " + std::to_string(h.version) + ", this preflight reads version " +
         std::to_string(trace::kVersion));
  if (h.header_bytes != trace::kHeaderBytes || h.record_bytes != trace::kRecordBytes)
    fail("unexpected header/record size " + std::to_string(h.header_bytes) + "/" +
         std::to_string(h.record_bytes));
  slots_ = (size_ - trace::kHeaderBytes) / trace::kRecordBytes;
  // The file grows in chunks: the empty slots after the last written one are spare space, not lost records.
  while (slots_ > 0) {
    const unsigned char* last = data_ + trace::kHeaderBytes + (slots_ - 1) * trace::kRecordBytes;
    if (load<std::uint64_t>(last + offsetof(trace::TraceRecord, head)) != 0) break;
    --slots_;
  }

  info_.pid = h.pid;
  info_.ppid = h.ppid;
  info_.rank = h.rank;
  info_.local_rank = h.local_rank;
  info_.world_size = h.world_size;
  info_.host = cstr(h.host, sizeof h.host);
  info_.exe = cstr(h.exe, sizeof h.exe);
  info_.cmdline = cstr(h.cmdline, sizeof h.cmdline);
  while (!info_.cmdline.empty() && info_.cmdline.back() == ' ') info_.cmdline.pop_back();
  info_.start_realtime_ns = h.start_realtime_ns;
  info_.exited = (h.flags & trace::kFlagExited) != 0;
  info_.fork_child = (h.flags & trace::kFlagForkChild) != 0;
  info_.truncated = (h.flags & trace::kFlagTruncated) != 0;
  info_.host_enabled = (h.flags & trace::kFlagHostEnabled) != 0;
  info_.cuda_enabled = (h.flags & trace::kFlagCudaEnabled) != 0;
  info_.min_bytes = h.min_bytes;
  info_.dropped = h.dropped;
  if (info_.exited && h.end_monotonic_ns >= h.start_monotonic_ns)
    info_.end_ns = h.end_monotonic_ns - h.start_monotonic_ns;
  names_.emplace_back();
}

TraceReader::~TraceReader() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
}

void TraceReader::rewind() {
  pos_ = 0;
  last_raw_time_ = 0;
  time_epoch_ = 0;
  incomplete_ = 0;
  records_ = 0;
}

std::string TraceReader::marker_name(std::uint32_t id) const {
  if (id == 0) return "";
  if (id < names_.size() && !names_[id].empty()) return names_[id];
  return "marker#" + std::to_string(id);
}

bool TraceReader::next(TraceEvent& e) {
  while (pos_ < slots_) {
    const std::uint64_t slot = pos_++;
    const unsigned char* p = data_ + trace::kHeaderBytes + slot * trace::kRecordBytes;
    const auto head = load<std::uint64_t>(p + offsetof(trace::TraceRecord, head));
    const Kind kind = trace::head_kind(head);
    if (kind == Kind::kEmpty) {
      ++incomplete_;
      continue;
    }
    if (static_cast<std::uint8_t>(kind) > trace::kLastKind) {
      throw InputError(path_ + "@" + std::to_string(trace::kHeaderBytes + slot * trace::kRecordBytes),
                       "unknown record kind " + std::to_string(static_cast<int>(kind)));
    }
    if (kind == Kind::kContinuation) {
      ++incomplete_;  // the continuation of a main record that was never completed
      continue;
    }
    e.slot = slot;
    e.kind = kind;
    e.device = trace::head_device(head);
    e.addr = load<std::uint64_t>(p + offsetof(trace::TraceRecord, addr));
    e.size = load<std::uint64_t>(p + offsetof(trace::TraceRecord, size));
    e.thread = load<std::uint32_t>(p + offsetof(trace::TraceRecord, thread));
    e.marker = load<std::uint32_t>(p + offsetof(trace::TraceRecord, marker));
    e.stream = 0;
    const std::uint64_t raw = trace::head_time(head);
    if (raw < last_raw_time_ && last_raw_time_ - raw > (1ull << (trace::kTimeBits - 1)))
      time_epoch_ += 1ull << trace::kTimeBits;
    last_raw_time_ = raw;
    e.time_ns = time_epoch_ + raw;

    const std::uint64_t extra = trace::continuation_slots(kind, e.size);
    if (extra > slots_ - pos_) {
      throw InputError(
          path_ + "@" + std::to_string(trace::kHeaderBytes + slot * trace::kRecordBytes),
          "record needs " + std::to_string(extra) + " continuation slots past the end of the file");
    }
    std::string payload;
    for (std::uint64_t i = 0; i < extra; ++i) {
      const unsigned char* c = data_ + trace::kHeaderBytes + (pos_ + i) * trace::kRecordBytes;
      if (trace::head_kind(load<std::uint64_t>(c + offsetof(trace::TraceRecord, head))) !=
          Kind::kContinuation) {
        throw InputError(path_ + "@" + std::to_string(trace::kHeaderBytes + (pos_ + i) * trace::kRecordBytes),
                         "continuation slot expected after the record at slot " + std::to_string(slot));
      }
      payload.append(reinterpret_cast<const char*>(c), trace::kContinuationPayload);
    }
    pos_ += extra;
    if (kind == Kind::kString) {
      if (e.size > trace::kMaxMarkerNameBytes || e.addr == 0 || e.addr > 0xffffffffull) {
        throw InputError(path_ + "@" + std::to_string(trace::kHeaderBytes + slot * trace::kRecordBytes),
                         "bad marker name record (id " + std::to_string(e.addr) + ", " +
                             std::to_string(e.size) + " bytes)");
      }
      const std::size_t id = static_cast<std::size_t>(e.addr);
      if (names_.size() <= id) names_.resize(id + 1);
      names_[id] = payload.substr(0, e.size);
      continue;
    }
    if (extra > 0) std::memcpy(&e.stream, payload.data(), sizeof e.stream);
    if (!info_.exited && e.time_ns > info_.end_ns) info_.end_ns = e.time_ns;
    ++records_;
    return true;
  }
  return false;
}

const char* phase_name(trace::Phase phase) {
  switch (phase) {
    case trace::Phase::kOther:
      return "other";
    case trace::Phase::kForward:
      return "forward";
    case trace::Phase::kBackward:
      return "backward";
    case trace::Phase::kOptimizer:
      return "optimizer";
  }
  return "other";
}

int layer_of_marker(const std::string& path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    if (end > start && end - start <= 9) {
      bool digits = true;
      for (std::size_t i = start; i < end; ++i) digits = digits && path[i] >= '0' && path[i] <= '9';
      if (digits) return std::stoi(path.substr(start, end - start));
    }
    start = end + 1;
  }
  return -1;
}

}  // namespace preflight::log_parse
