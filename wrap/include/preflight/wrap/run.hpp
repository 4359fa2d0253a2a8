#pragma once
/// @file run.hpp
/// What `preflight run` does to a launch when it starts: the allocator-hook environment of trace mode, the
/// short-run arguments, and the PATH shims that catch launches made by scripts that build their command
/// line at run time (eval, functions).
///
/// Contract with allocator_hook (allocator_hook/README.md): the build puts `libpreflight_hook.so` and the
/// Python glue (`python/sitecustomize.py`) in `<build>/lib/`; the preflight binary is
/// `<build>/cli/preflight`, so they are found at `../lib/` from it unless PREFLIGHT_HOOK_LIB /
/// PREFLIGHT_HOOK_PYTHONPATH say otherwise. Tracing is switched on by PREFLIGHT_TRACE_DIR (a per-run
/// directory; the hook names one file per process from RANK/LOCAL_RANK/RANK_ID and the pid) and tuned by
/// PREFLIGHT_TRACE_MIN_BYTES, PREFLIGHT_TRACE_HOST, PREFLIGHT_TRACE_CUDA.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "preflight/wrap/launch.hpp"
#include "preflight/wrap/process.hpp"

namespace preflight::wrap {

/// The hook library and the directory of its Python glue.
struct HookFiles {
  std::filesystem::path library;     ///< libpreflight_hook.so (absolute)
  std::filesystem::path pythonpath;  ///< directory holding sitecustomize.py (absolute)
};

/// Finds the hook for the preflight binary at `exe`.
/// @throws InputError (where = the path looked at) when the library or the glue directory does not exist,
///         saying how to build it or which variable to set
HookFiles locate_hook(const std::filesystem::path& exe, const Environment& env);

struct TraceOptions {
  std::filesystem::path trace_root = "preflight_traces";  ///< per-run folders are created inside
  std::optional<int> steps;               ///< iterations of the short run (--steps); Megatron default 10
  bool full_run = false;                  ///< --full-run: do not shorten the run
  std::optional<std::int64_t> min_bytes;  ///< PREFLIGHT_TRACE_MIN_BYTES
  std::optional<bool> host;               ///< PREFLIGHT_TRACE_HOST
  std::optional<bool> cuda;               ///< PREFLIGHT_TRACE_CUDA
};

/// Default iterations of a Megatron short run when --steps is not given.
inline constexpr int kDefaultTraceSteps = 10;

/// Creates and returns a new run directory `root/run-YYYYmmdd-HHMMSS-<pid>[-k]` (absolute).
/// @throws InputError (where = root) when it cannot be created
std::filesystem::path make_run_dir(const std::filesystem::path& root);

/// The environment of a traced launch: LD_PRELOAD with the hook first, PYTHONPATH with the glue first (so it
/// loads before the first allocation), PREFLIGHT_TRACE_DIR = run_dir and the PREFLIGHT_TRACE_* options.
/// Existing LD_PRELOAD / PYTHONPATH entries are kept after ours and ours are not added twice.
Environment trace_environment(const Environment& base, const HookFiles& hook,
                              const std::filesystem::path& run_dir, const TraceOptions& options);

/// Arguments appended to the entry point's for a short run:
///  - Megatron (pretrain_*.py): `--train-iters N` for iteration-based runs; `--exit-interval N` when the
///    script trains by samples (--train-samples; Megatron refuses --train-iters together with it);
///  - any other entry point: `--steps N` when --steps was given, else nothing;
///  - run_mindformer.py: nothing (it has no step flag; a note says so).
std::vector<std::string> short_run_args(const LaunchCommand& launch, const TraceOptions& options,
                                        std::vector<std::string>& notes);

/// Names the PATH shims cover: the launchers' shims (launchers(): torchrun, deepspeed, msrun, python,
/// python3, srun, mpirun, mpiexec), any python3.N on `path_var`, and nvidia-smi (a script's GPU-count query).
std::vector<std::string> shim_names(const std::string& path_var);

/// Writes one executable `/bin/sh` shim per name into `dir`; each runs
/// `<preflight> run --shim NAME <forward…> -- "$@"`.
/// @throws InputError (where = dir) when a file cannot be written
void write_shims(const std::filesystem::path& dir, const std::filesystem::path& preflight,
                 const std::vector<std::string>& names, const std::vector<std::string>& forward);

/// Trace files (regular files) under a run directory, sorted by name.
std::vector<std::filesystem::path> list_trace_files(const std::filesystem::path& run_dir);

}  // namespace preflight::wrap
