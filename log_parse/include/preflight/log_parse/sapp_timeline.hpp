#pragma once
/// @file sapp_timeline.hpp
/// Head / body / tail forward times per micro batch from MindSpore profiler timelines, with the rules of
/// SAPP's trace parser (mindspore-lab/mindformers r1.6.0-beta1, toolkit/pipeline_balance/utils/
/// computation_analyzer.py, read in shared/notes/sapp.md §5):
///
///  1. scope pid = the pid of the first event named "Scope Layer";
///  2. step markers = every event whose name equals the first name containing "MatMul-op";
///     N markers: N == 0 is an error, N == 1 counts the whole file, else the window is
///     [marker[min(N-2, 2)], marker[N-1]] and counted_steps = max(N-3, 1) (two warm-up steps and the last
///     one dropped);
///  3. forward windows = scope-pid events named "Default" on tid 0;
///  4. a scope-pid event whose name contains a head/body/tail name counts when it lies inside the step
///     window and inside a forward window (backward "Gradients" scopes are left out); identical events are
///     counted once;
///  5. head (tail) = Σ over head (tail) names of Σ dur / counted_steps / micro_batches;
///     body = mean over layer instances `<digits>-<body name>` (taken from every event name) of
///     Σ dur of the counted events matching `\b<instance>` / counted_steps / micro_batches.
///
/// Differences from SAPP, each a fix of something our reading found wrong (`compat = true` restores SAPP):
///  - the scope pid is also found from a `process_name` metadata event "Scope Layer…" (what MindSpore
///    writes); with none, SAPP silently uses pid 3 (the CANN "Ascend Hardware" pid) — here it is an error;
///  - step markers are taken in time order (SAPP: file order);
///  - counted_steps is per file (SAPP: the last file read, in directory order, applies to all);
///  - layer instances with no counted forward time are left out of the body mean and listed in the notes
///    (SAPP averages their zero in);
///  - B/E pairs and string ts/dur are accepted (SAPP needs X events with dur).
/// Files not named trace_view*/msprof* are read the same way (SAPP crashes on them).

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace preflight::log_parse {

struct SappLayerNames {
  std::vector<std::string> head{"LlamaEmbedding"};
  std::vector<std::string> body{"LLamaDecodeLayer"};
  std::vector<std::string> tail{"lm_head-Linear", "LlamaRMSNorm"};
};

struct SappTimelineOptions {
  SappLayerNames names;
  int micro_batches = 0;  ///< profiling_config.micro_batch_num; 0 = infer from forward windows per step
  bool compat = false;    ///< reproduce SAPP's behaviour where it differs (see the file comment)
};

/// What one timeline file contributed.
struct SappFileSteps {
  std::string file;
  std::int64_t scope_pid = 0;
  std::string marker;  ///< the step-marker op name
  int steps = 0;       ///< markers found
  int counted_steps = 0;
  std::int64_t window_begin_ns = 0;  ///< counted step window, trace ns
  std::int64_t window_end_ns = 0;
  int forward_windows = 0;          ///< "Default" spans on tid 0
  int forward_windows_counted = 0;  ///< of them, inside the step window
  std::uint64_t events = 0;
};

struct SappLayerTime {
  std::string name;         ///< configured name (head/tail) or instance ("42-LLamaDecodeLayer")
  double ms = 0;            ///< forward ms per micro batch
  std::uint64_t cells = 0;  ///< counted events
};

struct SappTimes {
  double head_ms = 0, body_ms = 0, tail_ms = 0;  ///< forward ms per micro batch
  int micro_batches = 0;
  std::string micro_batches_from;             ///< "--micro-batches" or "forward windows per step"
  std::vector<SappLayerTime> head, tail;      ///< per configured name
  std::vector<SappLayerTime> body_instances;  ///< sorted by instance index
  std::vector<SappFileSteps> files;
  std::vector<std::string> notes;
};

/// Reads every file (a directory stands for its `*.json` and `*.json.gz`, sorted) and computes the times.
/// Throws InputError for unreadable or malformed traces (file@offset), a file with no step marker
/// ("no MatMul-op step marker"), no Scope Layer process (unless compat), no body instance, or
/// micro_batches < 0.
SappTimes sapp_timeline_times(const std::vector<std::filesystem::path>& inputs,
                              const SappTimelineOptions& options);

/// SAPP's init-YAML `time_config:` block (head/body/tail ms), with comment lines saying where it came from.
std::string sapp_time_config_yaml(const SappTimes& times);

/// Machine form with every per-name and per-file number.
nlohmann::json sapp_times_json(const SappTimes& times);

/// Human summary.
std::string sapp_times_text(const SappTimes& times);

}  // namespace preflight::log_parse
