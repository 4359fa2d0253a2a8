// Environment of the preload library (see config.hpp and allocator_hook/README.md).
#include "config.hpp"

#include <cstdlib>

namespace preflight::hook {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}

// Parses a non-negative decimal integer; false if `s` is not one.
bool parse_u64(const char* s, std::uint64_t* out) {
  if (!s || !*s) return false;
  std::uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return false;
    std::uint64_t d = static_cast<std::uint64_t>(*s - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

std::int32_t env_int(const char* name, std::int32_t fallback) {
  std::uint64_t v = 0;
  if (!parse_u64(env(name), &v) || v > INT32_MAX) return fallback;
  return static_cast<std::int32_t>(v);
}

bool env_bool(const char* name, bool fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  if (v[0] == '0' && v[1] == 0) return false;
  if (v[0] == '1' && v[1] == 0) return true;
  return fallback;
}

}  // namespace

Config read_config() {
  Config c;
  c.dir = env("PREFLIGHT_TRACE_DIR");
  c.enabled = c.dir != nullptr;
  c.host = env_bool("PREFLIGHT_TRACE_HOST", true);
  c.cuda = env_bool("PREFLIGHT_TRACE_CUDA", true);
  c.follow_fork = env_bool("PREFLIGHT_TRACE_FORK", true);
  std::uint64_t v = 0;
  if (parse_u64(env("PREFLIGHT_TRACE_MIN_BYTES"), &v)) c.min_bytes = v;
  if (parse_u64(env("PREFLIGHT_TRACE_MAX_FILE_BYTES"), &v)) c.max_bytes = v;
  c.cudart = env("PREFLIGHT_TRACE_CUDART");
  c.rank = env_int("RANK", env_int("RANK_ID", -1));
  c.local_rank = env_int("LOCAL_RANK", -1);
  c.world_size = env_int("WORLD_SIZE", env_int("RANK_SIZE", -1));
  return c;
}

}  // namespace preflight::hook
