#pragma once
/// @file report.hpp
/// The `preflight analyze` report: Megatron-style tables read off one LayerGraph.
///
/// Sections (text), in order: run summary and warnings; the full model without parallelism as a
/// per-layer tree; the cluster communication summary; memory per GPU for every pipeline stage (largest
/// named); pipeline / data / tensor parallel communication with their groups (`n{node}_g{gpu}`), and
/// context / expert parallel sections when those sizes are > 1.  The JSON form carries the same
/// content with stable keys; sizes in JSON are bytes (integers) unless the key says otherwise.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/model/layer_graph.hpp"

namespace preflight::analyzer {

struct AnalyzeOptions {
  std::vector<std::string> warnings;        ///< printed under the summary
  std::optional<double> device_memory_gib;  ///< when set, each stage gets a fits / does-not-fit verdict
};

/// Human-readable report.
std::string render_analysis_text(const LayerGraph& graph, const AnalyzeOptions& opts);

/// ModelSpec as JSON (stable keys: Megatron argument names with underscores).
nlohmann::json model_json(const ModelSpec& model, std::int64_t padded_vocab);
/// Strategy as JSON (tp, pp, cp, ep, etp, dp, vpp, world_size, micro/global batch, …).
nlohmann::json strategy_json(const Strategy& strategy);

/// The same content as JSON.
nlohmann::json analysis_json(const LayerGraph& graph, const AnalyzeOptions& opts);

/// True when every stage fits in opts.device_memory_gib (always true without a limit).
bool analysis_fits(const LayerGraph& graph, const AnalyzeOptions& opts);

}  // namespace preflight::analyzer
