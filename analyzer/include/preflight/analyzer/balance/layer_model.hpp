#pragma once
/// @file layer_model.hpp
/// What the pipeline balancer knows about a network: a head, one or more kinds of body (transformer)
/// layers and a tail, with per-micro-batch times and memories.  This is SAPP's layer json
/// (mindformers `toolkit/pipeline_balance/utils/layer.py`, `generate_layers_list`; format in
/// notes/sapp.md §4), read and written with the same keys so files move between the two tools.
///
/// Units: times are milliseconds per micro batch; memories are MB as MindSpore prints them
/// (`DevMemStatistics`: bytes / 2^20, i.e. MiB).
///
/// Time semantics are SAPP's latest (d3f074bff): `time` is the forward time of one micro batch through
/// the layer; backward of class r is an explicit `*_time` key, else (1 + coef_r) · 2 · time with coef_r
/// from a `*_coef` key or default_backward_coef().  Head and tail: forward = time, backward = 2 · time.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/balance/recompute.hpp"

namespace preflight::analyzer::balance {

/// One kind of body layer (a SAPP "BODY" entry).  A recompute class is *considered* (the solver may use
/// it) iff its activation memory is present and > 0 — SAPP's rule (`Layer.find_recompute_considered`).
struct BodyKind {
  std::string name = "BODY";
  int count = 0;          ///< layers of this kind in the model
  double forward_ms = 0;  ///< forward time per micro batch
  double param_mb = 0;    ///< parameter (+ optimizer state) memory per layer, MB
  /// Activation memory kept per micro batch for a layer of each class, MB; unset = class not measured.
  PerRecompute<std::optional<double>> activation_mb{};
  /// Backward time per micro batch for each class, ms (always filled for every class by the loader).
  PerRecompute<double> backward_ms{};

  bool considered(Recompute r) const {
    const auto& a = activation_mb[static_cast<int>(r)];
    return a.has_value() && *a > 0;
  }
  double activation(Recompute r) const { return activation_mb[static_cast<int>(r)].value_or(0.0); }
  double backward(Recompute r) const { return backward_ms[static_cast<int>(r)]; }
  /// Extra backward time of class r over no recompute (the recompute cost), ms.
  double recompute_cost(Recompute r) const { return backward(r) - backward(Recompute::None); }
};

/// The network as the balancer sees it.
struct LayerModel {
  std::string name = "model";
  /// Constant memory per stage (SAPP `stage_const_mem`, the fitted `c`), MB.  0 when unknown.
  double const_mb = 0;
  double head_forward_ms = 0;  ///< embedding (stage 0, chunk 0) forward per micro batch
  double tail_forward_ms = 0;  ///< final norm + lm head + loss (last stage, last chunk) forward
  /// Extra memory of the first / last stage (SAPP HEAD/TAIL `memory_parameter`), MB.  As SAPP fits them
  /// they *include* const_mb (see decompose.hpp); BalanceProblem::constant decides how that is counted.
  double head_mb = 0;
  double tail_mb = 0;
  std::vector<BodyKind> bodies;  ///< in model order (kind 0 comes first in the network)

  int total_body_layers() const;
  /// Union over body kinds of considered classes.
  PerRecompute<bool> considered() const;
  /// Classes considered by every body kind (what the solver may use for all kinds).
  bool considered_by(int kind, Recompute r) const { return bodies.at(kind).considered(r); }
};

/// Fills backward_ms of every class from `time`, explicit times and coefficients (rule in the file
/// comment).  Called by the loaders; exposed for models built in code.
void fill_backward_times(BodyKind& body, const PerRecompute<std::optional<double>>& explicit_ms,
                         const PerRecompute<std::optional<double>>& coef);

/// Reads SAPP's layer json.  Throws InputError (file and key) for malformed JSON, a missing HEAD, BODY
/// or TAIL, a missing `time` / `nb_layer`, or a body kind without any positive activation memory.
LayerModel read_layer_json(const std::filesystem::path& file);
/// Same from parsed JSON; `where` names the source in errors.
LayerModel layer_model_from_json(const nlohmann::json& doc, const std::string& where);

/// SAPP's layer json for `model` (keys as SAPP writes them; memories truncated to integers like SAPP's
/// `int()` when `sapp_integers`, else written with their fractions).
nlohmann::json layer_model_json(const LayerModel& model, bool sapp_integers = true);

}  // namespace preflight::analyzer::balance
