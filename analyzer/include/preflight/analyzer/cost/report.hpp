#pragma once
/// @file report.hpp
/// Outputs of the cost model: SimuMax's `mem_result.json` and `compute_result.json` (same keys, same
/// nesting, same human-readable strings: times "x.xxxx ms|s" base 1000, bytes "x.xxxx B|KB|MB|GB|TB"
/// base 1024 where "GB" means GiB, FLOPs "x.xxxx T" base 1000; simumax/core/utils.py
/// convert_final_result_to_human_format), a machine summary, and the human summary table.

#include <string>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/cost/estimate.hpp"

namespace preflight::analyzer::cost {

/// SimuMax `analysis_mem()`: a flat object when pp = 1, else {first_stage, [middle_stage], last_stage}
/// (with an interleaved schedule one entry per pipeline rank: first_stage, pp_stage_<r>, last_stage).
nlohmann::ordered_json mem_result_json(const Estimate& est);

/// SimuMax `analysis_cost()`: comm_details, compute_details, breakdown_result[_last_stage],
/// all_chunk_times, duration_time_per_iter, throughput, mfu, flops_info, param_numel_info.
nlohmann::ordered_json compute_result_json(const Estimate& est);

/// A compact machine-readable summary with plain numbers (bytes, ms): per-stage peak memory,
/// iteration time, MFU, tokens/s/GPU, networks, warnings.  Stable keys for `estimate --json`; `fp8` is the
/// low-precision GEMM format (none, e4m3, hybrid, or e2m1 with `fp4` true), `fp8_recipe` its scaling.
nlohmann::ordered_json summary_json(const Estimate& est);

/// The human summary: one table of stages (peak memory GiB, with reserved, model / activation parts)
/// and the headline numbers (iteration time, MFU, TFLOP/s/GPU, tokens/s/GPU, straggler ratio).  Warnings are
/// not in it: `preflight estimate` prints them on stderr (and in summary_json).
std::string summary_text(const Estimate& est);

/// Estimate::layer_ops as a table per layer kind (`preflight estimate --ops`): each op's forward, backward
/// (with recompute) and exposed-collective ms per micro batch, its achieved TFLOP/s and its share of the
/// layer, then the layer's totals; ops priced at nothing (layout only: split, concat) are left out.  Empty
/// when no ops were recorded.
std::string layer_ops_text(const Estimate& est);
/// The same as JSON: [{"chunk", "layer", "moe", "recompute", "ops": [{"name", "kind", "fwd_ms", "bwd_ms",
/// "recompute_ms", "fwd_comm_ms", "bwd_comm_ms" (with the recompute's), "fwd_flops", "bwd_flops",
/// "fwd_bytes", "bwd_bytes"}]}].
nlohmann::json layer_ops_json(const Estimate& est);

/// SimuMax's strings: human_time("0.5" ms → "0.5000 ms", 1500 → "1.5000 s"), human_bytes, human_flops.
std::string simumax_time(double ms);
std::string simumax_bytes(double bytes);
std::string simumax_flops(double flops);

/// SimuMax `StrategyConfig.parallelism` ("seq4096.mbs1.mbc8.gbs32 tp1.sp1.cp1.ep1.pp2.dp4.etp1.edp4,
/// world_size:8").
std::string parallelism_text(const Strategy& st);
/// SimuMax `StrategyConfig.recompute_status` ("No Recompute", "full_block, recompute_layer_num=5", …).
std::string recompute_status_text(const LayerRecompute& rc);

}  // namespace preflight::analyzer::cost
