#pragma once
/// @file time_fit.hpp
/// Fitting a system's timing to measured iteration times (`preflight calibrate --fit-time`).
///
/// Each run's predicted iteration time is split, around the system as given, into what scales with the
/// accelerator (GEMMs, attention, memory-bound ops, the optimizer step) and what scales with the networks
/// (collectives, p2p, data-parallel gradient synchronisation): C = T(compute 2× slower) − T, N = T − C, by
/// re-running the cost model (cost/estimate.hpp) with every compute efficiency halved — so pipeline bubbles,
/// stragglers and overlaps are split as the model schedules them.  The fit is then
/// measured ≈ a·C + b·N, least squares on relative errors over the runs (a, b > 0; one common factor a = b
/// when fewer than three runs are fitted — also for a leave-one-out fit of three), and the system becomes
/// the input's with every compute efficiency (accelerator.op.*, accelerator.bandwidth.*) divided by a and
/// every network efficiency divided by b.  Latencies are kept, so the fitted model is close to, not exactly,
/// the linear one.  Errors are signed, (predicted − measured) / measured.
///
/// With `fit_overlap`, SystemSpec::tp_overlap_exposed (the part of Megatron's overlapped tensor-parallel
/// backward communication that still costs time) is fitted too: for each value of 0, 0.1, …, 1 the split
/// and the two-factor fit are redone, and the value with the smallest sum of squared relative errors is
/// kept (per left-out run for the held-out errors, so they stay honest).
///
/// Per group (`fit_time_groups`, `calibrate --fit-time --per-group`): the same split done for each of the
/// efficiency groups of kTimeFitGroups — GEMMs (matmul and the experts' group_matmul, fp8_group_matmul),
/// FP8 GEMMs (fp8_matmul: BF16 and FP8 runs of one system need not share a scale — NVIDIA's DGX Cloud H100
/// recipes ran FP8 1.33 … 1.5× faster than BF16 on one layout; a fit whose runs have no FP8 GEMM leaves this
/// group out, and FP8 GEMMs then follow the GEMMs' scale),
/// attention (sdp_fwd, sdp_bwd), memory-bound ops (default, accelerator.bandwidth), and each collective
/// (all_reduce, all_gather, reduce_scatter, all2all, p2p on every network): T_g = T(group g 2× slower) − T,
/// R = T − Σ T_g.  measured ≈ R + Σ s_g·T_g is fitted by ridge least squares on relative errors, pulled
/// towards s_g = 1 with weight 0.01 per group so that a group the runs hardly exercise keeps the system's
/// efficiency; s_g is kept in [0.2, 5].

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer {

/// A run with its measured iteration time.
struct TimedRun {
  std::string name;
  ModelSpec model;
  Strategy strategy;
  double measured_ms = 0;  ///< steady iteration time (Megatron's `elapsed time per iteration`), ms
};

/// Runs of a time corpus file: `{"runs": [...]}` or a bare list, each with "name", "measured_iteration_ms"
/// and either "args" (the Megatron command line, torchrun's sizes included) or "config" (a MindFormers
/// training yaml, relative to the corpus file's folder, with optional "run_mindformer" arguments as
/// run_mindformer.py takes them: --use_parallel, --options KEY=VALUE…).  Runs with "skip" set are left out.
/// @throws InputError naming the file and run for a missing field, and the front ends' errors.
std::vector<TimedRun> read_time_corpus(const std::string& file);

/// One run after the fit.
struct TimedRunResult {
  std::string name;
  std::string run_class;  ///< cost::time_run_class ("moe mxfp8")
  double measured_ms = 0;
  double predicted_ms = 0;   ///< with the system as given
  double compute_ms = 0;     ///< C: the part that scales with the accelerator
  double network_ms = 0;     ///< N: the part that scales with the networks
  double fitted_ms = 0;      ///< a·C + b·N (in sample)
  double held_out_ms = 0;    ///< a·C + b·N with a, b fitted on the other runs (leave one out)
  double error_before() const { return (predicted_ms - measured_ms) / measured_ms; }
  double error_fitted() const { return (fitted_ms - measured_ms) / measured_ms; }
  double error_held_out() const { return (held_out_ms - measured_ms) / measured_ms; }
};

/// (group, scale) pairs: groups of kTimeFitGroups, or "network" for every collective without its own.
using GroupScales = std::vector<std::pair<std::string, double>>;

/// Efficiency groups of the per-group fit, in its order.
/// ("grouped_gemm" and "fp8_grouped_gemm", the experts' grouped GEMMs in 16 bits and in FP8, are scales a
/// system file may carry — the Hopper presets do — but not ones fitted here: the FP8 one follows the other,
/// which follows "gemm".  Fitted separately on the B200 DeepSeek rows it moved far from
/// 1, where the linear split no longer predicts the re-estimate.)
inline constexpr const char* kTimeFitGroups[] = {"gemm",           "fp8_gemm",   "attention",
                                                 "memory",         "all_reduce", "all_gather",
                                                 "reduce_scatter", "all2all",    "p2p"};

struct TimeFit {
  /// Per-group fit: (group, scale) for each of kTimeFitGroups; empty for the two-factor fit.
  GroupScales group_scales;
  double compute_scale = 1;  ///< a: predicted compute time is multiplied by it
  double network_scale = 1;  ///< b
  double tp_overlap_exposed = 1;  ///< SystemSpec::tp_overlap_exposed of the fitted system
  bool overlap_fitted = false;    ///< tp_overlap_exposed was fitted (else the system's)
  std::vector<TimedRunResult> runs;
  double max_abs_before() const;
  double max_abs_fitted() const;
  double max_abs_held_out() const;
};

/// Fits a and b (rules in the file comment).
/// Fewer than 3 runs, or runs that cannot separate the two parts, get a single scale (a = b); one run is
/// fitted exactly, and its held-out prediction (fitted on no run) is the system as given.
/// @throws InputError for no run or a non-positive measured time.
TimeFit fit_time(const std::vector<TimedRun>& runs, const SystemSpec& system, bool fit_overlap = false);

/// The per-group fit (rules in the file comment); TimedRunResult::compute_ms / network_ms hold the
/// accelerator / network parts of the split.
/// @throws InputError for no run or a non-positive measured time (one run: the ridge fit of it; held out, 1).
TimeFit fit_time_groups(const std::vector<TimedRun>& runs, const SystemSpec& system);

/// `system` with each group's efficiencies divided by its scale (groups as kTimeFitGroups, a collective
/// without its own scale taking "network"; absent: 1).
SystemSpec scaled_system_groups(const SystemSpec& system, const GroupScales& scales);

/// `system` with its compute efficiencies divided by `compute_scale` and its network efficiencies by
/// `network_scale` (scaled_system_groups with those two); the fitted tp_overlap_exposed is set by the caller.
SystemSpec scaled_system(const SystemSpec& system, double compute_scale, double network_scale);

/// The same change on a SimuMax system JSON document (what `--fit-time -o FILE` writes), with
/// `sys_name` suffixed "_fitted" and the fit recorded under "preflight".
nlohmann::json scaled_system_json(const nlohmann::json& system, const TimeFit& fit);

nlohmann::json time_fit_json(const TimeFit& fit);
/// Table: run, measured, predicted (as given), fitted, held out, with signed errors.
std::string render_time_fit(const TimeFit& fit);

}  // namespace preflight::analyzer
