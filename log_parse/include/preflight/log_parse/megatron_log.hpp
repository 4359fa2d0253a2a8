#pragma once
/// @file megatron_log.hpp
/// Megatron-LM (and Megatron-DeepSpeed, FlagScale) training-log lines, per rank, with file:line.
///
/// Formats (shared/notes/ecosystem.md §3, NVIDIA/Megatron-LM):
///  - iteration line (`training.py::training_log`, printed by the last rank): optional `[YYYY-MM-DD
///    HH:MM:SS(.ffffff)]` prefix, `iteration N/ M |` then `key: value |` fields in any order — read as a
///    key/value list, so forks' extra fields are kept too (ROCm/Megatron-LM's `mem usages`,
///    MindSpeed-LLM FSDP2's `max_memory_allocated(GB)` / `max_memory_reserved(GB)` are read as memory);
///  - memory line (`report_memory`, DP-rank 0 of each group): `[Rank R] (after K iterations) memory (MB) |
///    allocated: X | max allocated: X | reserved: X | max reserved: X[ | total device memory used: X]` —
///    raw Python floats before 2026-01 (PR #2839), 2 decimals after; "MB" is MiB (value / 2^20);
///  - `theoretical_memory_usage.py` report (rank 0): "Number of … in billions: X" and "Theoretical memory
///    footprints: weight and optimizer=X MB[, activation=X MB, total=X MB]", with fork prefixes (`> `,
///    `>>> [FS] `) allowed;
///  - `> number of parameters on (tensor, pipeline) model parallel rank (t, p): N`, `using world size: …`,
///    `setting number of micro-batches to constant N`, the argument dump (`  name ....... value`);
///  - Megatron-DeepSpeed: DeepSpeed's `see_memory_usage` reports (DeepSpeedMemoryLine).
/// A prefix torchrun's `--tee` puts on every line of a worker (`[default0]:`, `[rank3]:`) is read past.
/// Several prints glued on one physical line (multi-rank stdout) are split at each record start.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace preflight::log_parse {

/// One `[Rank R] (after K iterations) memory (MB) | …` line.  Values in MiB.
struct MegatronMemoryLine {
  int rank = 0;
  std::int64_t after_iterations = 0;
  double allocated_mib = 0;
  double max_allocated_mib = 0;
  double reserved_mib = 0;
  double max_reserved_mib = 0;
  std::optional<double> total_device_used_mib;  ///< `--log-device-memory-used` (2026+)
  std::int64_t line = 0;
};

/// DeepSpeed's `see_memory_usage(message)` (deepspeed/runtime/utils.py), printed by rank 0 in
/// Megatron-DeepSpeed logs: the message, then `MA X GB  Max_MA X GB  CA X GB  Max_CA X GB` — torch's
/// memory_allocated / max_memory_allocated / memory_reserved / max_memory_reserved, GB = 2^30 bytes, the
/// first three rounded to 2 decimals, Max_CA to a whole number.  Values in GiB.
struct DeepSpeedMemoryLine {
  std::string label;  ///< the message of the line before ("Before Building Model"); "" when absent
  double allocated_gib = 0, max_allocated_gib = 0, reserved_gib = 0, max_reserved_gib = 0;
  std::int64_t line = 0;
};

/// One iteration line.  Times in ms, throughput in TFLOP/s per GPU.
struct MegatronIteration {
  std::int64_t iteration = 0;
  std::int64_t train_iters = 0;
  std::string timestamp;             ///< "" when the line has no prefix (before 2024-01)
  std::optional<double> elapsed_ms;  ///< "elapsed time per iteration (ms)" (an average over the log interval)
  /// "throughput per GPU (TFLOP/s/GPU)" (or a fork's "TFLOPs", AMD Primus's "compute per GPU (TFLOP/s/GPU):
  /// X (avg Y)": X); Primus's "elapsed time per iteration (ms): X/Y" gives elapsed_ms X, its "tokens/s/GPU
  /// inst/harmonic mean: X/Y" tokens_per_gpu_per_s X.
  std::optional<double> tflops_per_gpu;
  std::optional<double> tokens_per_gpu_per_s;  ///< "tokens per gpu per second(tgs)" (Megatron-DeepSpeed)
  /// "tokens/s" of MindSpeed-LLM's FSDP2 trainer: the step's tokens of all ranks (all-reduced) per second
  /// (mindspeed_llm/fsdp2/utils/train_monitor.py).
  std::optional<double> tokens_per_s;
  std::optional<double> learning_rate;
  std::optional<std::int64_t> global_batch_size;
  std::optional<std::int64_t> consumed_samples;
  std::optional<double> lm_loss;
  std::map<std::string, double>
      losses;  ///< every "<name> loss"/"*_loss" field ("lm loss", "z_loss", "mtp_1 loss")
  std::optional<double> loss_scale;
  std::optional<double> grad_norm;
  std::optional<double> num_zeros;
  std::optional<double> params_norm;
  /// "mem usages" (ROCm/Megatron-LM, AMD Primus): 1 − free / total of the printing (last) rank's device
  /// (cudaMemGetInfo: every process and the allocator's cache on it, not only PyTorch's tensors), 0 … 1.
  /// AMD Primus: its "hip mem usage/free/total/usage_ratio" (the printing rank's mem_get_info) is read into
  /// device_used_fraction; its "rank-N rocm max mem usage/usage_ratio" (rocm-smi, the largest over the ranks)
  /// here, 0 … 1.
  std::optional<double> device_used_fraction, ranks_max_device_used_fraction;
  /// MindSpeed-LLM's FSDP2 trainer: "max_memory_allocated(GB)" / "max_memory_reserved(GB)", torch's peaks
  /// all-reduced to the largest over the ranks, GB = 2^30 bytes.  Values in GiB.
  std::optional<double> max_allocated_gib, max_reserved_gib;
  std::optional<std::int64_t> skipped_iterations;  ///< "number of skipped iterations"
  std::optional<std::int64_t> nan_iterations;      ///< "number of nan iterations"
  std::map<std::string, std::string> fields;       ///< every `key: value` of the line, as printed
  std::int64_t line = 0;
  bool unterminated = false;  ///< the file's last line without '\n': may be cut
};

/// "Theoretical memory footprints: …" (MiB; Megatron prints "MB" = 2^20 bytes).
struct MegatronTheoreticalMemory {
  std::optional<double> weight_and_optimizer_mib;
  std::optional<double> activation_mib;  ///< absent in old logs without SP + selective recompute
  std::optional<double> total_mib;
  std::int64_t line = 0;
};

/// A "Number of … in billions: X" line.
struct MegatronParamCount {
  /// The words between "Number of " and " in billions" ("parameters in transformer block", "active parameters
  /// in transformer block", "parameters in most loaded shard"); "Total number of X" gives "total X".
  std::string what;
  double billions = 0;
  std::int64_t line = 0;
};

/// `> number of parameters on (tensor, pipeline) model parallel rank (t, p): N`.
struct MegatronRankParams {
  std::vector<std::string> axes;  ///< {"tensor", "pipeline"} (newer: {"tensor", "gtp_remat", "pipeline"})
  std::vector<int> coords;
  std::int64_t parameters = 0;
  std::int64_t line = 0;
};

struct MegatronLog {
  std::string file;
  std::int64_t lines = 0;
  bool partial_last_line = false;
  std::vector<MegatronMemoryLine> memory;
  std::vector<DeepSpeedMemoryLine> deepspeed_memory;  ///< DeepSpeed `see_memory_usage` reports
  std::vector<MegatronIteration> iterations;
  std::optional<MegatronTheoreticalMemory> theoretical;
  std::vector<MegatronParamCount> param_counts;
  std::vector<MegatronRankParams> rank_params;
  std::map<std::string, std::int64_t>
      sizes;  ///< from "using world size: …": world, data, tensor, pipeline, context
  std::int64_t sizes_line = 0;
  std::optional<std::int64_t> micro_batches;  ///< "setting number of micro-batches to constant N"
  /// "> padded vocab (size: V) with K dummy tokens (new size: P)": P (the 2023 dumps lack padded_vocab_size)
  std::optional<std::int64_t> padded_vocab_size;
  std::map<std::string, std::string> args;    ///< the argument dump ("seq_length" → "1024")
  std::vector<std::string> notes;             ///< glued records split, unterminated last line, …

  /// The "Number of <what> in billions" value, if printed (e.g. "parameters in transformer block").
  std::optional<double> billions(const std::string& what) const;
};

/// Reads one log.  Throws InputError(file, …) when it cannot be read or is binary (NUL at byte N).
MegatronLog read_megatron_log(const std::filesystem::path& file);
/// The same for text in memory.
MegatronLog read_megatron_text(std::string_view text, std::string label);

/// Peak memory of one rank over every file and line.
struct MegatronRankPeak {
  int rank = 0;
  double max_allocated_mib = 0;
  double max_reserved_mib = 0;
  std::string file;  ///< where the max allocated was printed
  std::int64_t line = 0;
  std::int64_t reports = 0;  ///< memory lines of this rank
};

/// Steady state of one file's iteration lines.
struct MegatronSteadyState {
  std::string file;
  std::int64_t iteration_lines = 0;
  std::int64_t warmup_lines = 0;  ///< lines left out at the start
  std::optional<double> median_elapsed_ms;
  std::optional<double> median_tflops_per_gpu;
  std::optional<double> median_tokens_per_gpu_per_s;  ///< the line's own "tokens per gpu per second(tgs)"
  std::optional<double> tokens_per_s;  ///< global batch × seq_length / median elapsed (seq_length from the
                                       ///< argument dump), or the median of the line's own tgs field × GPUs
  std::string tokens_per_s_from;
  std::int64_t first_iteration = 0, last_iteration = 0;
  /// Memory printed in the iteration lines, the largest over every line of the file (warm-up included: a
  /// peak can be reached early): the device fraction in use ("mem usages", 0 … 1) and the peaks over the
  /// ranks (GiB); unset when the lines do not print them.
  std::optional<double> max_device_used_fraction;
  std::optional<double> max_allocated_gib, max_reserved_gib;
};

struct MegatronSummary {
  std::vector<MegatronRankPeak> ranks;      ///< by rank
  std::vector<MegatronSteadyState> steady;  ///< one per file with iteration lines
};

/// Warm-up rule: leave out the first `warmup_lines` iteration lines (default −1: the first line, and any
/// line whose iteration is ≤ 2, since those include compilation and allocator warm-up); the steady state
/// is the median over the rest (all lines when nothing is left, with a note in the log's notes).
MegatronSummary summarize_megatron(std::vector<MegatronLog>& logs, int warmup_lines = -1);

nlohmann::json megatron_json(const std::vector<MegatronLog>& logs, const MegatronSummary& summary);
std::string megatron_text(const std::vector<MegatronLog>& logs, const MegatronSummary& summary);

}  // namespace preflight::log_parse
