#pragma once
// All policy of the preload library, read from the environment in one place (read_config), without
// allocating: it runs inside the first malloc of the process.
#include <cstdint>

namespace preflight::hook {

struct Config {
  bool enabled = false;     ///< PREFLIGHT_TRACE_DIR is set and not empty
  bool host = true;         ///< PREFLIGHT_TRACE_HOST (1/0, default 1): record host allocations
  bool cuda = true;         ///< PREFLIGHT_TRACE_CUDA (1/0, default 1): record preflight_cuda_malloc/free
  bool follow_fork = true;  ///< PREFLIGHT_TRACE_FORK (1/0, default 1): a fork child writes its own trace
  std::uint64_t min_bytes =
      0;  ///< PREFLIGHT_TRACE_MIN_BYTES (default 0): smaller allocations are not recorded
  std::uint64_t max_bytes = 0;  ///< PREFLIGHT_TRACE_MAX_FILE_BYTES (default 0 = 1 TiB): trace file size limit
  const char* dir = nullptr;    ///< PREFLIGHT_TRACE_DIR: output directory (created if missing, mode 0700)
  const char* cudart =
      nullptr;             ///< PREFLIGHT_TRACE_CUDART: libcudart to dlopen when cudaMalloc is not loaded
  std::int32_t rank = -1;  ///< RANK (torchrun), else RANK_ID (msrun)
  std::int32_t local_rank = -1;  ///< LOCAL_RANK
  std::int32_t world_size = -1;  ///< WORLD_SIZE, else RANK_SIZE
};

/// Reads the environment.  Malformed numbers are treated as unset (defaults).
Config read_config();

}  // namespace preflight::hook
