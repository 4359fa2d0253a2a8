// The hooking half of libpreflight_hook.so (recorder.cpp is the recording half): the interposed allocator
// functions, each resolving the next definition (glibc's, or a sanitizer's) with dlsym(RTLD_NEXT) once.
//
// Start-up: dlsym itself may call calloc/malloc before the real ones are known; those calls are served
// from a static bootstrap pool whose blocks are never freed.  A free of a pool block is ignored.
// Order of records: an allocation is recorded after the real call returns it, a free before the real free
// runs, so another thread can never be handed (and record) the same address in between.
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "config.hpp"
#include "preflight/common/trace_format.hpp"
#include "recorder.hpp"

#define PREFLIGHT_EXPORT extern "C" __attribute__((visibility("default")))

// Under AddressSanitizer (the tests build a sanitized copy) the sanitizer's own start-up calls malloc before
// its shadow memory exists: the entry points are then left uninstrumented and serve those calls from the
// bootstrap pool until this library's constructor, which runs after the sanitizer's, starts recording.
#if defined(__SANITIZE_ADDRESS__)
#define PREFLIGHT_ENTRY __attribute__((no_sanitize_address))
constexpr bool kInitInConstructorOnly = true;
#else
#define PREFLIGHT_ENTRY
constexpr bool kInitInConstructorOnly = false;
#endif

namespace preflight::hook {
namespace {

using trace::Kind;

// One interposed symbol: `original` is the next definition in the lookup order.
template <typename Fn>
struct Hook {
  const char* name;
  Fn* original = nullptr;
  void init() { original = reinterpret_cast<Fn*>(dlsym(RTLD_NEXT, name)); }
};

constinit Hook<void*(size_t)> real_malloc{"malloc"};
constinit Hook<void(void*)> real_free{"free"};
constinit Hook<void*(size_t, size_t)> real_calloc{"calloc"};
constinit Hook<void*(void*, size_t)> real_realloc{"realloc"};
constinit Hook<void*(void*, size_t, size_t)> real_reallocarray{"reallocarray"};
constinit Hook<int(void**, size_t, size_t)> real_posix_memalign{"posix_memalign"};
constinit Hook<void*(size_t, size_t)> real_aligned_alloc{"aligned_alloc"};
constinit Hook<void*(size_t, size_t)> real_memalign{"memalign"};
constinit Hook<void*(size_t)> real_valloc{"valloc"};
constinit Hook<void*(size_t)> real_pvalloc{"pvalloc"};
constinit Hook<size_t(void*)> real_usable_size{"malloc_usable_size"};

// Static memory for the allocations dlsym makes before the real allocator is known.  (Plain integers with
// __atomic builtins here and in ensure_init: they must stay uninstrumented under AddressSanitizer.)
struct BootstrapPool {
  static constexpr std::size_t kBytes = 256 * 1024;
  alignas(64) char buf[kBytes];
  std::size_t used = 0;

  PREFLIGHT_ENTRY bool owns(const void* p) const {
    auto a = reinterpret_cast<std::uintptr_t>(p);
    auto b = reinterpret_cast<std::uintptr_t>(buf);
    return a >= b && a < b + kBytes;
  }
  // Blocks carry their size in the 16 bytes before them (for realloc).
  PREFLIGHT_ENTRY void* alloc(std::size_t size, std::size_t align) {
    if (align < 16) align = 16;
    std::size_t old = __atomic_load_n(&used, __ATOMIC_RELAXED);
    for (;;) {
      std::size_t start = (old + 16 + align - 1) & ~(align - 1);
      if (start + size > kBytes || start + size < start) return nullptr;
      if (__atomic_compare_exchange_n(&used, &old, start + size, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        __builtin_memcpy(buf + start - sizeof(std::size_t), &size, sizeof size);
        return buf + start;
      }
    }
  }
  PREFLIGHT_ENTRY std::size_t size_of(const void* p) const {
    std::size_t n;
    __builtin_memcpy(&n, static_cast<const char*>(p) - sizeof n, sizeof n);
    return n;
  }
};
constinit BootstrapPool g_pool = {};

enum InitState : int { kNotStarted = 0, kResolving = 1, kReady = 2 };
constinit int g_init = kNotStarted;
constinit int g_constructed = 0;
constinit thread_local bool t_initializing __attribute__((tls_model("initial-exec"))) = false;

void start_up() {
  RecordGuard guard;  // nothing the set-up allocates is recorded
  real_calloc.init();
  real_malloc.init();
  real_free.init();
  real_realloc.init();
  real_reallocarray.init();
  real_posix_memalign.init();
  real_aligned_alloc.init();
  real_memalign.init();
  real_valloc.init();
  real_pvalloc.init();
  real_usable_size.init();
  recorder_start(read_config());
}

// Resolves the real functions and starts the recorder, once.  A call from inside the resolution (dlsym's own
// allocations) returns at once; the caller then uses the bootstrap pool.
PREFLIGHT_ENTRY void ensure_init() {
  if (__atomic_load_n(&g_init, __ATOMIC_ACQUIRE) == kReady) return;
  if (kInitInConstructorOnly && !__atomic_load_n(&g_constructed, __ATOMIC_ACQUIRE)) return;
  int expected = kNotStarted;
  if (__atomic_compare_exchange_n(&g_init, &expected, kResolving, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE)) {
    t_initializing = true;
    start_up();
    t_initializing = false;
    __atomic_store_n(&g_init, kReady, __ATOMIC_RELEASE);
    return;
  }
  if (t_initializing) return;
  while (__atomic_load_n(&g_init, __ATOMIC_ACQUIRE) != kReady) sched_yield();
}

void record_host(Kind kind, const void* p, std::size_t size) {
  RecordGuard guard;
  if (!guard.ok()) {
    if (!t_initializing) count_dropped();  // the set-up's own allocations are not the program's
    return;
  }
  record(kind, trace::kHostDevice, reinterpret_cast<std::uint64_t>(p), size, current_marker());
}

void on_alloc(const void* p, std::size_t size) {
  if (p && want_host(size)) record_host(Kind::kAlloc, p, size);
}

// Whether the free of `p` must be recorded: with a minimum size, blocks whose usable size is below it were
// certainly not recorded when allocated (usable size >= requested size).
bool want_free(void* p) {
  if (!want_host_frees()) return false;
  const std::uint64_t min = min_bytes();
  if (min == 0 || !real_usable_size.original) return true;
  return real_usable_size.original(p) >= min;
}

std::size_t page_size() {
  long n = sysconf(_SC_PAGESIZE);
  return n > 0 ? static_cast<std::size_t>(n) : 4096;
}

PREFLIGHT_ENTRY void* do_realloc(void* p, std::size_t size) {
  if (g_pool.owns(p)) {
    std::size_t old = g_pool.size_of(p);
    void* q = malloc(size);
    if (q) std::memcpy(q, p, old < size ? old : size);
    return q;
  }
  if (!real_realloc.original) {
    ensure_init();
    if (!real_realloc.original) {
      void* q = g_pool.alloc(size, 16);
      if (q && p) std::memcpy(q, p, size);  // p cannot be a real block before the real functions exist
      return q;
    }
  }
  if (!p) {
    void* q = real_realloc.original(nullptr, size);
    on_alloc(q, size);
    return q;
  }
  const bool record_free = want_free(p);
  if (record_free) record_host(Kind::kReallocFree, p, 0);
  void* q = real_realloc.original(p, size);
  if (q) {
    if (want_host(size)) record_host(Kind::kRealloc, q, size);
  } else if (size != 0 && record_free) {
    record_host(Kind::kReallocFailed, p, 0);
  }
  return q;
}

__attribute__((constructor)) void on_load() {
  __atomic_store_n(&g_constructed, 1, __ATOMIC_RELEASE);
  ensure_init();
}

__attribute__((destructor)) void on_unload() {
  RecordGuard guard;
  recorder_exit();
}

}  // namespace
}  // namespace preflight::hook

using namespace preflight::hook;

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* malloc(size_t size) noexcept {
  if (!real_malloc.original) {
    ensure_init();
    if (!real_malloc.original) return g_pool.alloc(size, 16);
  }
  void* p = real_malloc.original(size);
  on_alloc(p, size);
  return p;
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void free(void* p) noexcept {
  if (!p || g_pool.owns(p)) return;
  if (!real_free.original) {
    ensure_init();
    if (!real_free.original) return;
  }
  if (want_free(p)) record_host(Kind::kFree, p, 0);
  real_free.original(p);
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* calloc(size_t n, size_t size) noexcept {
  size_t bytes = 0;
  if (!real_calloc.original) {
    ensure_init();
    if (!real_calloc.original)
      return __builtin_mul_overflow(n, size, &bytes) ? nullptr : g_pool.alloc(bytes, 16);
  }
  void* p = real_calloc.original(n, size);
  if (p) on_alloc(p, n * size);
  return p;
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* realloc(void* p, size_t size) noexcept {
  return do_realloc(p, size);
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* reallocarray(void* p, size_t n, size_t size) noexcept {
  size_t bytes = 0;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    if (real_reallocarray.original) return real_reallocarray.original(p, n, size);  // sets ENOMEM
    errno = ENOMEM;
    return nullptr;
  }
  return do_realloc(p, bytes);
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY int posix_memalign(void** out, size_t align, size_t size) noexcept {
  if (!real_posix_memalign.original) {
    ensure_init();
    if (!real_posix_memalign.original) {
      void* p = g_pool.alloc(size, align);
      if (!p) return ENOMEM;
      *out = p;
      return 0;
    }
  }
  int rc = real_posix_memalign.original(out, align, size);
  if (rc == 0) on_alloc(*out, size);
  return rc;
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* memalign(size_t align, size_t size) noexcept {
  if (!real_memalign.original) {
    ensure_init();
    if (!real_memalign.original) return g_pool.alloc(size, align);
  }
  void* p = real_memalign.original(align, size);
  on_alloc(p, size);
  return p;
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* aligned_alloc(size_t align, size_t size) noexcept {
  ensure_init();
  void* p = real_aligned_alloc.original ? real_aligned_alloc.original(align, size) : memalign(align, size);
  if (real_aligned_alloc.original) on_alloc(p, size);
  return p;
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* valloc(size_t size) noexcept {
  ensure_init();
  if (!real_valloc.original) return memalign(page_size(), size);
  void* p = real_valloc.original(size);
  on_alloc(p, size);
  return p;
}

PREFLIGHT_EXPORT PREFLIGHT_ENTRY void* pvalloc(size_t size) noexcept {
  ensure_init();
  if (!real_pvalloc.original) {
    const std::size_t page = page_size();
    return memalign(page, size ? (size + page - 1) & ~(page - 1) : page);
  }
  void* p = real_pvalloc.original(size);
  on_alloc(p, size);
  return p;
}
