#pragma once
/// @file trace_format.hpp
/// The on-disk format of an allocation trace written by `libpreflight_hook.so` (allocator_hook/) and read by
/// `preflight trace` (log_parse/trace_reader.hpp).  This header is the whole contract between the two: it
/// is header-only, freestanding (no allocation, no exceptions, no libstdc++ symbols) and is the only file of
/// ours the preload library includes.
///
/// Layout (all integers little-endian, as written by the x86-64/aarch64 process that traced itself):
///
///     offset 0            TraceHeader (kHeaderBytes = 4096 bytes, page aligned)
///     offset 4096 + 32·i  slot i: one TraceRecord (kRecordBytes = 32)
///
/// The writer reserves slots with one atomic counter, fills a record and stores its `head` word last with
/// release ordering; a slot whose `head` is 0 was never completed (its writer was killed, or it is spare
/// space at the end of the file: the file grows in chunks of kChunkBytes through a shared mapping and is
/// not shrunk at exit).  A reader therefore scans every slot up to the end of the file and skips slots
/// whose kind is kEmpty.  A process killed with SIGKILL leaves every completed record readable.
///
/// Records that carry more than fits in 32 bytes (marker names, CUDA streams) are followed by
/// `continuation` slots reserved in the same atomic step, each holding kContinuationPayload bytes; the main
/// record is completed after its continuations, so a complete main record implies complete continuations.
///
/// Ordering: slots are reserved after a successful allocation returns and before the memory is handed
/// back (free is recorded before the real free runs), so in slot order an address is never allocated
/// twice without a free in between.  Times are CLOCK_MONOTONIC nanoseconds since `start_monotonic_ns`,
/// taken after the slot is reserved; across threads they are nearly, not strictly, monotonic.

#include <cstdint>

namespace preflight::trace {

inline constexpr char kMagic[8] = {'P', 'F', 'T', 'R', 'A', 'C', 'E', '1'};
inline constexpr std::uint32_t kVersion = 1;
inline constexpr std::uint32_t kHeaderBytes = 4096;
inline constexpr std::uint32_t kRecordBytes = 32;
/// The file grows by this many bytes of slots at a time (a multiple of the page size and of kRecordBytes).
inline constexpr std::uint64_t kChunkBytes = 4ull << 20;
/// Bytes of payload carried by one continuation slot.
inline constexpr std::uint32_t kContinuationPayload = 24;
/// Longest marker name stored; longer names are cut to this many bytes.
inline constexpr std::uint32_t kMaxMarkerNameBytes = 4096;
/// Suffix of trace file names: `<dir>/rank<R>.pid<P>.pftrace` or `<dir>/pid<P>.pftrace`, with `.<n>`
/// before the suffix when that name exists already (a process that exec'd keeps its pid).
inline constexpr const char* kFileSuffix = ".pftrace";

/// Kind of a record (low byte of TraceRecord::head).
enum class Kind : std::uint8_t {
  kEmpty = 0,        ///< never completed: skip
  kAlloc = 1,        ///< host malloc/calloc/posix_memalign/aligned_alloc/memalign/valloc/pvalloc: addr, size
  kFree = 2,         ///< host free: addr (size 0)
  kReallocFree = 3,  ///< host realloc/reallocarray is about to release `addr` (recorded before the call)
  kRealloc = 4,      ///< host realloc/reallocarray result: addr, size (new block)
  kReallocFailed = 5,  ///< realloc returned NULL for size > 0: block `addr` of the preceding kReallocFree of
                       ///< this thread is still allocated
  kCudaAlloc = 6,      ///< preflight_cuda_malloc: addr, size, device; 1 continuation: stream (uint64)
  kCudaFree = 7,       ///< preflight_cuda_free: addr, size, device; 1 continuation: stream (uint64)
  kCudaOom = 8,        ///< cudaMalloc failed: size, device, addr = cudaError_t; 1 continuation: stream
  kMarkerPush = 9,     ///< this thread entered marker `marker`
  kMarkerPop = 10,     ///< this thread left its innermost marker; `marker` is the new innermost (0 = none)
  kMarkerSet = 11,     ///< this thread's marker stack was replaced by [`marker`] (or emptied when 0)
  kPhase = 12,         ///< process-wide training phase changed: size = Phase, addr = iteration
  kString = 13,        ///< name of marker id `addr`, `size` bytes, in the following continuation slots
  kContinuation = 14,  ///< payload of the preceding multi-slot record (24 bytes at offset 0)
};
inline constexpr std::uint8_t kLastKind = 14;

/// Training phase set by the Python glue (preflight_hook), carried by kPhase records.
enum class Phase : std::uint8_t {
  kOther = 0,      ///< outside forward/backward/optimizer (start-up, data loading, evaluation without grad)
  kForward = 1,    ///< from a top-level module's forward pre-hook until the first gradient reaches a module
  kBackward = 2,   ///< from the first module gradient until the optimizer step or the next forward
  kOptimizer = 3,  ///< inside torch.optim.Optimizer.step
};
inline constexpr std::uint8_t kPhaseCount = 4;

/// Number of continuation slots that follow a main record of kind `k` whose `size` is `size`.
inline constexpr std::uint64_t continuation_slots(Kind k, std::uint64_t size) {
  switch (k) {
    case Kind::kCudaAlloc:
    case Kind::kCudaFree:
    case Kind::kCudaOom:
      return 1;
    case Kind::kString:
      return (size + kContinuationPayload - 1) / kContinuationPayload;
    default:
      return 0;
  }
}

/// Device number stored for host records.
inline constexpr int kHostDevice = -1;

/// One 32-byte slot.  `head` packs kind (bits 0-7), device as int8 (bits 8-15; -1 = host) and the time in
/// ns since TraceHeader::start_monotonic_ns (bits 16-63; wraps after 2^48 ns = 78 h, which a reader undoes
/// by assuming time never goes back by more than 2^47 ns).
struct TraceRecord {
  std::uint64_t addr;    ///< address (allocations), marker id (kString), iteration (kPhase), error (kCudaOom)
  std::uint64_t size;    ///< bytes requested (allocations), name length (kString), Phase (kPhase)
  std::uint32_t thread;  ///< kernel thread id (gettid) of the recording thread
  std::uint32_t marker;  ///< innermost marker of the recording thread at record time (0 = none)
  std::uint64_t head;    ///< kind | device | time, stored last
};
static_assert(sizeof(TraceRecord) == kRecordBytes);

inline constexpr std::uint64_t kTimeBits = 48;
inline constexpr std::uint64_t kTimeMask = (1ull << kTimeBits) - 1;

inline constexpr std::uint64_t pack_head(Kind kind, int device, std::uint64_t time_ns) {
  return static_cast<std::uint64_t>(kind) |
         (static_cast<std::uint64_t>(static_cast<std::uint8_t>(device)) << 8) | ((time_ns & kTimeMask) << 16);
}
inline constexpr Kind head_kind(std::uint64_t head) {
  return static_cast<Kind>(head & 0xff);
}
inline constexpr int head_device(std::uint64_t head) {
  return static_cast<std::int8_t>((head >> 8) & 0xff);
}
inline constexpr std::uint64_t head_time(std::uint64_t head) {
  return head >> 16;
}

/// TraceHeader::flags bits.
enum HeaderFlag : std::uint32_t {
  kFlagExited = 1u << 0,       ///< the process ran its exit handlers (end_monotonic_ns is valid)
  kFlagHostEnabled = 1u << 1,  ///< host allocations were recorded (PREFLIGHT_TRACE_HOST=1)
  kFlagCudaEnabled = 1u << 2,  ///< preflight_cuda_malloc/free were recorded (PREFLIGHT_TRACE_CUDA=1)
  kFlagForkChild = 1u << 3,    ///< this trace was started in the child of a fork()
  kFlagTruncated = 1u << 4,    ///< the writer stopped early (disk full or file size limit); see `dropped`
};

/// The 4096-byte header at offset 0.  Fixed fields are written once at start; `flags`, `dropped` and
/// `end_monotonic_ns` are updated while the process runs (atomically, through the shared mapping).
struct TraceHeader {
  char magic[8];                     ///< kMagic
  std::uint32_t version;             ///< kVersion
  std::uint32_t header_bytes;        ///< kHeaderBytes
  std::uint32_t record_bytes;        ///< kRecordBytes
  std::uint32_t flags;               ///< HeaderFlag bits
  std::int32_t pid;                  ///< getpid() of the traced process
  std::int32_t ppid;                 ///< getppid() at trace start
  std::int32_t rank;                 ///< RANK, else RANK_ID (msrun), else -1
  std::int32_t local_rank;           ///< LOCAL_RANK, else -1
  std::int32_t world_size;           ///< WORLD_SIZE, else RANK_SIZE (msrun), else -1
  std::uint32_t clock_id;            ///< clockid_t of the record times (CLOCK_MONOTONIC = 1)
  std::uint64_t start_monotonic_ns;  ///< clock value that record time 0 stands for
  std::uint64_t start_realtime_ns;   ///< CLOCK_REALTIME at the same moment (ns since the Unix epoch)
  std::uint64_t end_monotonic_ns;    ///< clock value at exit (valid when kFlagExited)
  std::uint64_t min_bytes;           ///< PREFLIGHT_TRACE_MIN_BYTES: smaller allocations were not recorded
  std::uint64_t dropped;             ///< records lost (re-entrant signal handler, writer stopped)
  char host[64];                     ///< gethostname(), NUL-terminated
  char exe[256];                     ///< readlink(/proc/self/exe), NUL-terminated (cut if longer)
  char cmdline[1024];                ///< /proc/self/cmdline with NULs turned into spaces (cut if longer)
  char reserved[kHeaderBytes - 8 - 4 * 10 - 8 * 5 - 64 - 256 - 1024];
};
static_assert(sizeof(TraceHeader) == kHeaderBytes);

}  // namespace preflight::trace
