// The recording half of the preload library; see recorder.hpp and common/.../trace_format.hpp.
#include "recorder.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace preflight::hook {
namespace {

using trace::Kind;
using trace::TraceHeader;
using trace::TraceRecord;

// A lock that never allocates and can be reset in a fork child.
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) sched_yield();
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

class LockGuard {
 public:
  explicit LockGuard(SpinLock& l) : l_(l) { l_.lock(); }
  ~LockGuard() { l_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  SpinLock& l_;
};

constexpr std::uint64_t kSlotsPerChunk = trace::kChunkBytes / trace::kRecordBytes;
constexpr std::uint64_t kMaxFileBytes = 1ull << 40;  // 1 TiB
constexpr std::uint64_t kMaxChunks = kMaxFileBytes / trace::kChunkBytes;
constexpr std::size_t kPathBytes = 4096;

#ifdef MADV_POPULATE_WRITE
constexpr int kMadvPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kMadvPopulateWrite = 23;  // Linux 5.14 uapi value; glibc 2.36 headers lack it
#endif

enum Status : int { kOff = 0, kOpen = 1, kPendingOpen = 2, kFailed = 3 };

// Writer state.  Constant-initialised: the first malloc of the process may run before any constructor.
struct Writer {
  Config config;
  char dir[kPathBytes] = {};
  char path[kPathBytes + 64] = {};
  int fd = -1;
  TraceHeader* header = nullptr;
  std::atomic<int> status{kOff};
  std::atomic<std::uint64_t> next_slot{0};
  std::uint64_t max_slots = 0;
  std::uint64_t start_ns = 0;
  SpinLock lock;                                // open and grow
  std::uint64_t file_bytes = 0;                 // under lock
  std::int64_t highest_chunk = -1;              // under lock
  std::atomic<std::uint64_t> early_dropped{0};  // dropped while no header is mapped
  bool fork_child = false;
};
constinit Writer g_w;
constinit std::atomic<TraceRecord*> g_chunks[kMaxChunks] = {};

// Marker names: an open-addressing table of ids over an mmap'd arena of [u32 length][bytes][NUL].
constexpr std::uint32_t kMaxNames = 65535;
constexpr std::uint32_t kTableSize = 131072;
constexpr std::uint64_t kArenaBytes = 64ull << 20;
struct Names {
  SpinLock lock;
  std::uint32_t count = 0;
  std::uint32_t* table = nullptr;    // kTableSize ids, 0 = empty
  std::uint32_t* offsets = nullptr;  // id -> arena offset
  char* arena = nullptr;
  std::uint64_t arena_used = 0;
  bool failed = false;
};
constinit Names g_names;

constinit std::atomic<int> g_phase{0};
constinit std::atomic<std::uint64_t> g_iteration{0};

constinit thread_local ThreadState t_state __attribute__((tls_model("initial-exec"))) = {};

std::uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint32_t thread_id() {
  ThreadState& ts = t_state;
  if (ts.tid == 0) ts.tid = static_cast<std::uint32_t>(syscall(SYS_gettid));
  return ts.tid;
}

// Small string helpers (no snprintf: it may allocate).
struct Buf {
  char* p;
  std::size_t cap;
  std::size_t len = 0;
  bool ok = true;
  void add(const char* s) {
    while (*s) add_char(*s++);
  }
  void add_char(char c) {
    if (len + 1 >= cap) {
      ok = false;
      return;
    }
    p[len++] = c;
    p[len] = 0;
  }
  void add_uint(std::uint64_t v) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    while (n) add_char(digits[--n]);
  }
};

void write_stderr(const char* a, const char* b = "", const char* c = "") {
  const char* parts[] = {"preflight_hook: ", a, b, c, "\n"};
  for (const char* s : parts) {
    std::size_t n = std::strlen(s);
    while (n > 0) {
      ssize_t w = ::write(2, s, n);
      if (w <= 0) break;
      s += w;
      n -= static_cast<std::size_t>(w);
    }
  }
}

// mkdir -p with mode 0700 for the directories it creates.
bool make_dirs(const char* dir) {
  char tmp[kPathBytes];
  std::size_t n = std::strlen(dir);
  if (n == 0 || n >= sizeof tmp) return false;
  std::memcpy(tmp, dir, n + 1);
  for (std::size_t i = 1; i <= n; ++i) {
    if (tmp[i] == '/' || tmp[i] == 0) {
      char saved = tmp[i];
      tmp[i] = 0;
      if (mkdir(tmp, 0700) != 0 && errno != EEXIST) return false;
      tmp[i] = saved;
    }
  }
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

void read_small_file(const char* path, char* out, std::size_t cap, bool nul_to_space) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  std::size_t len = 0;
  while (len + 1 < cap) {
    ssize_t r = ::read(fd, out + len, cap - 1 - len);
    if (r <= 0) break;
    len += static_cast<std::size_t>(r);
  }
  ::close(fd);
  if (nul_to_space) {
    while (len > 0 && out[len - 1] == 0) --len;
    for (std::size_t i = 0; i < len; ++i)
      if (out[i] == 0) out[i] = ' ';
  }
  out[len] = 0;
}

void add_dropped(std::uint64_t n) {
  if (g_w.header)
    __atomic_fetch_add(&g_w.header->dropped, n, __ATOMIC_RELAXED);
  else
    g_w.early_dropped.fetch_add(n, std::memory_order_relaxed);
}

void fail_writer(const char* why) {
  g_w.status.store(kFailed, std::memory_order_release);
  if (g_w.header) __atomic_fetch_or(&g_w.header->flags, trace::kFlagTruncated, __ATOMIC_RELAXED);
  write_stderr("trace stopped: ", why, g_w.path);
}

// Maps chunk `c` of the slot area, growing the file.  Returns nullptr when the file cannot grow.
TraceRecord* map_chunk_locked(std::uint64_t c) {
  LockGuard guard(g_w.lock);
  TraceRecord* p = g_chunks[c].load(std::memory_order_acquire);
  if (p) return p;
  if (g_w.status.load(std::memory_order_acquire) != kOpen) return nullptr;
  const std::uint64_t off = trace::kHeaderBytes + c * trace::kChunkBytes;
  const std::uint64_t end = off + trace::kChunkBytes;
  // Reserve the blocks now: a shared mapping of a sparse file raises SIGBUS when the disk is full.
  int rc = ::fallocate(g_w.fd, 0, static_cast<off_t>(off), static_cast<off_t>(trace::kChunkBytes));
  if (rc != 0 && (errno == EOPNOTSUPP || errno == ENOSYS)) {
    rc = end > g_w.file_bytes ? ::ftruncate(g_w.fd, static_cast<off_t>(end)) : 0;
  }
  if (rc != 0) {
    fail_writer("cannot grow ");
    return nullptr;
  }
  if (end > g_w.file_bytes) g_w.file_bytes = end;
  void* m = ::mmap(nullptr, trace::kChunkBytes, PROT_READ | PROT_WRITE, MAP_SHARED, g_w.fd,
                   static_cast<off_t>(off));
  if (m == MAP_FAILED) {
    fail_writer("cannot map ");
    return nullptr;
  }
  // Fault the whole chunk in now, in one call: page faults one by one cost most of a record's time
  // (Linux >= 5.14; older kernels say EINVAL and the pages fault in as they are written).
  ::madvise(m, trace::kChunkBytes, kMadvPopulateWrite);
  p = static_cast<TraceRecord*>(m);
  if (static_cast<std::int64_t>(c) > g_w.highest_chunk) g_w.highest_chunk = static_cast<std::int64_t>(c);
  g_chunks[c].store(p, std::memory_order_release);
  return p;
}

TraceRecord* map_chunk(std::uint64_t c) {
  // fallocate may be a cancellation point: a thread cancelled here must not leave the lock held
  int cancel_state = 0;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
  TraceRecord* p = map_chunk_locked(c);
  pthread_setcancelstate(cancel_state, nullptr);
  return p;
}

TraceRecord* slot_ptr(std::uint64_t slot) {
  const std::uint64_t c = slot / kSlotsPerChunk;
  TraceRecord* base = g_chunks[c].load(std::memory_order_acquire);
  if (!base) base = map_chunk(c);
  return base ? base + (slot % kSlotsPerChunk) : nullptr;
}

void emit_all_names();

// Creates the trace file of this process; called with g_w.lock held.
bool open_trace_locked() {
  const Config& cfg = g_w.config;
  if (!make_dirs(g_w.dir)) {
    write_stderr("cannot create trace directory ", g_w.dir, " (tracing off)");
    return false;
  }
  const pid_t pid = getpid();
  int fd = -1;
  for (unsigned n = 0; n < 1000 && fd < 0; ++n) {
    Buf b{g_w.path, sizeof g_w.path};
    b.add(g_w.dir);
    b.add("/");
    if (cfg.rank >= 0) {
      b.add("rank");
      b.add_uint(static_cast<std::uint64_t>(cfg.rank));
      b.add(".");
    }
    b.add("pid");
    b.add_uint(static_cast<std::uint64_t>(pid));
    if (n > 0) {
      b.add(".");
      b.add_uint(n);
    }
    b.add(trace::kFileSuffix);
    if (!b.ok) {
      write_stderr("trace directory name too long (tracing off)");
      return false;
    }
    fd = ::open(g_w.path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    write_stderr("cannot create trace file ", g_w.path, " (tracing off)");
    g_w.path[0] = 0;
    return false;
  }
  void* m = MAP_FAILED;
  if (::ftruncate(fd, trace::kHeaderBytes) == 0)
    m = ::mmap(nullptr, trace::kHeaderBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) {
    write_stderr("cannot map trace file ", g_w.path, " (tracing off)");
    ::close(fd);
    return false;
  }
  g_w.fd = fd;
  g_w.file_bytes = trace::kHeaderBytes;
  g_w.header = static_cast<TraceHeader*>(m);
  g_w.start_ns = now_ns();
  std::uint64_t limit = cfg.max_bytes ? cfg.max_bytes : kMaxFileBytes;
  if (limit > kMaxFileBytes) limit = kMaxFileBytes;
  g_w.max_slots = limit > trace::kHeaderBytes ? (limit - trace::kHeaderBytes) / trace::kRecordBytes : 0;
  g_w.next_slot.store(0, std::memory_order_relaxed);

  TraceHeader& h = *g_w.header;
  h.version = trace::kVersion;
  h.header_bytes = trace::kHeaderBytes;
  h.record_bytes = trace::kRecordBytes;
  h.flags = (cfg.host ? trace::kFlagHostEnabled : 0u) | (cfg.cuda ? trace::kFlagCudaEnabled : 0u) |
            (g_w.fork_child ? trace::kFlagForkChild : 0u);
  h.pid = pid;
  h.ppid = getppid();
  h.rank = cfg.rank;
  h.local_rank = cfg.local_rank;
  h.world_size = cfg.world_size;
  h.clock_id = CLOCK_MONOTONIC;
  h.start_monotonic_ns = g_w.start_ns;
  h.start_realtime_ns = realtime_ns();
  h.min_bytes = cfg.min_bytes;
  h.dropped = g_w.early_dropped.exchange(0, std::memory_order_relaxed);
  gethostname(h.host, sizeof h.host - 1);
  ssize_t n = ::readlink("/proc/self/exe", h.exe, sizeof h.exe - 1);
  h.exe[n > 0 ? n : 0] = 0;
  read_small_file("/proc/self/cmdline", h.cmdline, sizeof h.cmdline, true);
  std::memcpy(h.magic, trace::kMagic, sizeof h.magic);
  g_w.status.store(kOpen, std::memory_order_release);
  return true;
}

// Opens the trace of a fork child on its first record.
bool open_pending() {
  {
    LockGuard guard(g_w.lock);
    int st = g_w.status.load(std::memory_order_acquire);
    if (st == kOpen) return true;
    if (st != kPendingOpen) return false;
    if (!open_trace_locked()) {
      g_w.status.store(kFailed, std::memory_order_release);
      return false;
    }
  }
  emit_all_names();  // the child's trace needs the names its parent interned
  return true;
}

bool ensure_open() {
  int st = g_w.status.load(std::memory_order_acquire);
  if (st == kOpen) return true;
  return st == kPendingOpen && open_pending();
}

std::uint32_t fnv1a(const char* s, std::size_t n) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 16777619u;
  }
  return h;
}

bool names_init_locked() {
  if (g_names.table) return true;
  if (g_names.failed) return false;
  const std::size_t table_bytes = kTableSize * sizeof(std::uint32_t);
  const std::size_t offsets_bytes = (kMaxNames + 1) * sizeof(std::uint32_t);
  void* t = ::mmap(nullptr, table_bytes + offsets_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  void* a = ::mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (t == MAP_FAILED || a == MAP_FAILED) {
    g_names.failed = true;
    return false;
  }
  g_names.table = static_cast<std::uint32_t*>(t);
  g_names.offsets = reinterpret_cast<std::uint32_t*>(static_cast<char*>(t) + table_bytes);
  g_names.arena = static_cast<char*>(a);
  return true;
}

const char* name_of(std::uint32_t id, std::uint32_t* len) {
  const char* p = g_names.arena + g_names.offsets[id];
  std::memcpy(len, p, sizeof *len);
  return p + sizeof *len;
}

void emit_name(std::uint32_t id) {
  std::uint32_t len = 0;
  const char* s = name_of(id, &len);
  record(Kind::kString, trace::kHostDevice, id, len, 0, s, len);
}

void emit_all_names() {
  LockGuard guard(g_names.lock);
  for (std::uint32_t id = 1; id <= g_names.count; ++id) emit_name(id);
}

void fork_prepare() {
  g_names.lock.lock();
  g_w.lock.lock();
}

void fork_parent() {
  g_w.lock.unlock();
  g_names.lock.unlock();
}

// The child must not write into its parent's shared mapping: drop it and start a trace of its own on the
// first record (a child that only calls exec leaves no file).
void fork_child() {
  ThreadState& ts = t_state;
  ts.tid = 0;
  if (g_w.status.load(std::memory_order_relaxed) == kOpen) {
    for (std::int64_t c = 0; c <= g_w.highest_chunk; ++c) {
      TraceRecord* p = g_chunks[c].load(std::memory_order_relaxed);
      if (p) ::munmap(p, trace::kChunkBytes);
      g_chunks[c].store(nullptr, std::memory_order_relaxed);
    }
    ::munmap(g_w.header, trace::kHeaderBytes);
    ::close(g_w.fd);
  }
  g_w.header = nullptr;
  g_w.fd = -1;
  g_w.highest_chunk = -1;
  g_w.file_bytes = 0;
  g_w.path[0] = 0;
  g_w.fork_child = true;
  g_w.early_dropped.store(0, std::memory_order_relaxed);
  const int st = g_w.status.load(std::memory_order_relaxed);
  const bool traced = st == kOpen || st == kPendingOpen || st == kFailed;
  g_w.status.store(traced && g_w.config.follow_fork ? kPendingOpen : kOff, std::memory_order_relaxed);
  g_w.lock.unlock();
  g_names.lock.unlock();
}

}  // namespace

ThreadState& thread_state() {
  return t_state;
}

std::uint32_t current_marker() {
  const ThreadState& ts = t_state;
  if (ts.depth == 0) return 0;
  return ts.stack[(ts.depth < kMaxMarkerDepth ? ts.depth : kMaxMarkerDepth) - 1];
}

void recorder_start(const Config& config) {
  g_w.config = config;
  if (!config.enabled) return;
  std::size_t n = std::strlen(config.dir);
  if (n >= sizeof g_w.dir) {
    write_stderr("PREFLIGHT_TRACE_DIR too long (tracing off)");
    return;
  }
  std::memcpy(g_w.dir, config.dir, n + 1);
  {
    LockGuard guard(g_w.lock);
    if (!open_trace_locked()) return;
  }
  pthread_atfork(fork_prepare, fork_parent, fork_child);
}

const Config& active_config() {
  return g_w.config;
}

void recorder_exit() {
  LockGuard guard(g_w.lock);
  if (!g_w.header) return;
  __atomic_store_n(&g_w.header->end_monotonic_ns, now_ns(), __ATOMIC_RELAXED);
  __atomic_fetch_or(&g_w.header->flags, trace::kFlagExited, __ATOMIC_RELEASE);
}

bool want_host(std::uint64_t bytes) {
  return g_w.config.enabled && g_w.config.host && bytes >= g_w.config.min_bytes;
}
bool want_cuda(std::uint64_t bytes) {
  return g_w.config.enabled && g_w.config.cuda && bytes >= g_w.config.min_bytes;
}
bool want_host_frees() {
  return g_w.config.enabled && g_w.config.host;
}
std::uint64_t min_bytes() {
  return g_w.config.min_bytes;
}

void count_dropped() {
  if (g_w.config.enabled) add_dropped(1);
}

void record(Kind kind, int device, std::uint64_t addr, std::uint64_t size, std::uint32_t marker,
            const void* payload, std::uint32_t payload_bytes) {
  if (!ensure_open()) return;
  const int saved_errno = errno;
  const std::uint64_t extra = (payload_bytes + trace::kContinuationPayload - 1) / trace::kContinuationPayload;
  const std::uint64_t slot = g_w.next_slot.fetch_add(1 + extra, std::memory_order_relaxed);
  if (slot + 1 + extra > g_w.max_slots) {
    add_dropped(1);
    errno = saved_errno;
    return;
  }
  const std::uint64_t t = now_ns() - g_w.start_ns;
  const char* bytes = static_cast<const char*>(payload);
  for (std::uint64_t i = 0; i < extra; ++i) {
    TraceRecord* c = slot_ptr(slot + 1 + i);
    if (!c) {
      add_dropped(1);
      errno = saved_errno;
      return;
    }
    const std::uint64_t from = i * trace::kContinuationPayload;
    const std::uint64_t left = payload_bytes - from;
    std::memcpy(c, bytes + from, left < trace::kContinuationPayload ? left : trace::kContinuationPayload);
    __atomic_store_n(&c->head, trace::pack_head(Kind::kContinuation, trace::kHostDevice, t),
                     __ATOMIC_RELEASE);
  }
  TraceRecord* r = slot_ptr(slot);
  if (!r) {
    add_dropped(1);
    errno = saved_errno;
    return;
  }
  r->addr = addr;
  r->size = size;
  r->thread = thread_id();
  r->marker = marker;
  __atomic_store_n(&r->head, trace::pack_head(kind, device, t), __ATOMIC_RELEASE);
  errno = saved_errno;
}

std::uint32_t marker_intern(const char* name) {
  if (!g_w.config.enabled || !name) return 0;
  ensure_open();
  std::size_t len = strnlen(name, trace::kMaxMarkerNameBytes);
  const std::uint32_t h = fnv1a(name, len);
  LockGuard guard(g_names.lock);
  if (!names_init_locked()) return 0;
  std::uint32_t idx = h & (kTableSize - 1);
  while (std::uint32_t id = g_names.table[idx]) {
    std::uint32_t have = 0;
    const char* s = name_of(id, &have);
    if (have == len && std::memcmp(s, name, len) == 0) return id;
    idx = (idx + 1) & (kTableSize - 1);
  }
  const std::uint64_t need = (sizeof(std::uint32_t) + len + 1 + 3) & ~std::uint64_t{3};
  if (g_names.count >= kMaxNames || g_names.arena_used + need > kArenaBytes) return 0;
  const std::uint32_t id = ++g_names.count;
  char* dst = g_names.arena + g_names.arena_used;
  const std::uint32_t len32 = static_cast<std::uint32_t>(len);
  std::memcpy(dst, &len32, sizeof len32);
  std::memcpy(dst + sizeof len32, name, len);
  dst[sizeof len32 + len] = 0;
  g_names.offsets[id] = static_cast<std::uint32_t>(g_names.arena_used);
  g_names.arena_used += need;
  g_names.table[idx] = id;
  emit_name(id);
  return id;
}

void marker_push(std::uint32_t id) {
  ThreadState& ts = t_state;
  if (ts.depth < kMaxMarkerDepth) ts.stack[ts.depth] = id;
  ++ts.depth;
  if (g_w.config.enabled) record(Kind::kMarkerPush, trace::kHostDevice, 0, 0, id);
}

void marker_pop() {
  ThreadState& ts = t_state;
  if (ts.depth == 0) return;
  --ts.depth;
  if (g_w.config.enabled) record(Kind::kMarkerPop, trace::kHostDevice, 0, 0, current_marker());
}

void marker_set(std::uint32_t id) {
  ThreadState& ts = t_state;
  ts.depth = id ? 1 : 0;
  ts.stack[0] = id;
  if (g_w.config.enabled) record(Kind::kMarkerSet, trace::kHostDevice, 0, 0, id);
}

void set_phase(int phase, std::uint64_t iteration) {
  const int old_phase = g_phase.exchange(phase, std::memory_order_relaxed);
  const std::uint64_t old_iteration = g_iteration.exchange(iteration, std::memory_order_relaxed);
  if (old_phase == phase && old_iteration == iteration) return;
  if (g_w.config.enabled)
    record(Kind::kPhase, trace::kHostDevice, iteration, static_cast<std::uint64_t>(phase), current_marker());
}

bool trace_active() {
  const int st = g_w.status.load(std::memory_order_acquire);
  return st == kOpen || st == kPendingOpen;
}

const char* trace_path() {
  return g_w.status.load(std::memory_order_acquire) == kOpen ? g_w.path : "";
}

}  // namespace preflight::hook
