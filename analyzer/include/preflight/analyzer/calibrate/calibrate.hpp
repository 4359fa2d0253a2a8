#pragma once
/// @file calibrate.hpp
/// Predicted against measured memory, per rank and quantity, and coefficients fitted from real runs.
///
/// Predicted: the JSON of `preflight analyze --json` (per stage: weights, gradients, optimizer states, the
/// ops of each chunk with the tensors they keep, the peak along the schedule from memory_timeline.hpp).
/// Measured: one memory measurement per traced rank (log_parse/memory_measurement.hpp writes them; schema
/// below), taken from an allocation trace of a real run.
///
/// What is compared, per rank (signed error = (predicted − measured) / measured, as SimuMax reports its
/// accuracy):
///   weights, gradients, optimizer states — live at the start of training;
///   activations of one micro batch — in total, per transformer layer ("layer N"), for the embedding, the
///   head (final norm, output layer, loss) and the stage input (received activations / token ids);
///   peak — the highest live bytes of the run.
/// A prediction from `preflight estimate --json` (SimuMax's model) has no ops and no split of the static
/// memory: its rows are "static" (weights + gradients + optimizer states), "activations" and "peak".
/// Activation bytes are attributed to the module that allocated them (a trace knows the allocation site, not
/// which op saved a tensor): a kept tensor marked SavedTensor::is_input counts for the op before it, the
/// first op's input for the stage input, one with SavedTensor::allocated_by for that module.
///
/// Visibility: a trace taken with PREFLIGHT_TRACE_MIN_BYTES = N holds no allocation below N bytes, which on
/// CPU also separates tensors from autograd's and Python's bookkeeping (all below 4 KiB).  For the
/// torch_cpu implementation, whose allocation granularity is known (one allocation per kept tensor, per
/// parameter, per Adam moment and fp32 master copy; one gradient buffer per rank), predictions drop what the
/// trace cannot see.  Other implementations are compared as predicted.
///
/// Fitting (fit_calibration): over the ranks of several runs, per module kind (the module path with its
/// layer index replaced by '*'): measured = scale · predicted + bytes_per_op (least squares); then for the
/// peak: measured − static − calibrated activations = transient_scale · transient + overhead_bytes.  The
/// result is a calibration file that `preflight analyze --calibration FILE` applies (apply_calibration).
///
/// Errors: preflight::InputError naming the file and the JSON field for malformed or inconsistent input.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/model/layer_graph.hpp"

namespace preflight::analyzer {

// ------------------------------------------------------------------------------------------ predicted

/// One op of a chunk as the prediction lists it.
struct PredictedOp {
  std::string path;
  std::string kind;
  int layer = -1;
  std::vector<SavedTensor> kept;          ///< tensors kept for backward (one micro batch)
  std::vector<std::int64_t> param_numel;  ///< elements of each parameter tensor it holds
};

/// One pipeline stage of the prediction.  Bytes.
struct PredictedStage {
  int stage = 0;
  double weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;
  double inflight_microbatches = 0;
  std::vector<PredictedOp> ops;  ///< its chunk's ops in forward order (vpp = 1); empty from estimate JSON
  /// From estimate JSON only (SimuMax's figures): model memory (weights + gradients + optimizer states) and
  /// the activations one micro batch caches.  Bytes.
  double model_bytes = 0, activation_bytes_per_microbatch = 0;
  double peak_bytes = 0, peak_static_bytes = 0, peak_activation_bytes = 0, peak_transient_bytes = 0;
  std::string peak_phase, peak_op;
};

/// A prediction read from `preflight analyze --json` or `preflight estimate --json`.
struct Prediction {
  std::string source;            ///< file it was read from
  std::string tool = "analyze";  ///< "analyze" (per op) or "estimate" (per stage: model, activations, peak)
  std::string implementation;    ///< strategy.transformer_impl ("torch_cpu", "megatron_core")
  std::string precision;         ///< "fp32", "bf16", "fp16"
  int world_size = 1, tp = 1, pp = 1, cp = 1, dp = 1, num_microbatches = 1;
  std::string order = "tp-cp-ep-dp-pp";
  std::vector<PredictedStage> stages;
  double weight_bytes_per_param = 4, optimizer_bytes_per_param = 8;  ///< from full_model.bytes_per_param

  /// Pipeline stage of a global rank (Megatron's rank order).
  int stage_of_rank(int rank) const;
};

/// Reads `preflight analyze --json` output, or `preflight estimate --json` output (recognised by its
/// "summary" object; see read_estimate_prediction).  `source` names the file in errors.
/// @throws InputError (where = source and the missing / malformed field)
Prediction read_prediction(const nlohmann::json& analyze_json, const std::string& source);

/// Reads `preflight estimate --json` output (or its "summary" object alone; cost/report.hpp summary_json):
/// sizes from "parallelism" (SimuMax's "seq64.mbs2.mbc4.gbs8 tp2.cp1.ep1.pp2.dp1.etp2.edp1,
/// world_size:4"), and per stage model_bytes, activation_cache_bytes_per_micro_batch and peak_bytes (SimuMax
/// lists first_stage, middle_stage, last_stage: a middle entry stands for every stage between).  Such a
/// prediction has no ops: compare() reports "static" (weights + gradients + optimizer states), "activations"
/// and "peak" only; fit_calibration and apply_calibration refuse it.  implementation = "simumax".
/// @throws InputError (where = source and the field)
Prediction read_estimate_prediction(const nlohmann::json& estimate_json, const std::string& source);

// ------------------------------------------------------------------------------------------ measured

/// One rank of a real run, as log_parse's memory measurement writes it (JSON keys in brackets).
struct MeasuredRank {
  std::string source;                       ///< [file] trace (or summary) it came from
  int rank = -1;                            ///< [rank] global rank
  int world_size = -1;                      ///< [world_size]
  std::uint64_t min_bytes = 0;              ///< [min_bytes] allocations below this were not recorded
  int microbatches = 0;                     ///< [microbatches] forward steps in the measured iteration
  double weight_bytes = 0;                  ///< [static.weights]
  double grad_bytes = 0;                    ///< [static.gradients]
  double optimizer_bytes = 0;               ///< [static.optimizer]
  double activation_bytes = 0;              ///< [activations.per_microbatch] mean over the micro batches
  double activation_spread_bytes = 0;       ///< [activations.spread] max − min over the micro batches
  std::map<std::string, double> by_module;  ///< [activations.by_module] marker path → bytes per micro batch
  double peak_bytes = 0;                    ///< [peak.bytes]
  std::string peak_phase;                   ///< [peak.phase]
  std::string peak_marker;                  ///< [peak.marker]
};

/// Reads one measurement object (schema "preflight-memory-measurement", version 1).
/// @throws InputError (where = source and the field)
MeasuredRank read_measured(const nlohmann::json& j, const std::string& source);

// ------------------------------------------------------------------------------------------ comparison

/// One compared quantity of one rank.
struct CalibrationRow {
  int rank = 0;
  int stage = 0;
  std::string quantity;  ///< "weights", "gradients", "optimizer", "activations", "layer 3", "embedding",
                         ///< "head", "stage input", "peak"
  double predicted = 0;  ///< bytes (visible part, see the file comment)
  double measured = 0;   ///< bytes
  /// Signed relative error (predicted − measured) / measured; 0 when both are 0, ±inf when only measured is
  /// 0.
  double error() const;
};

struct Comparison {
  std::vector<CalibrationRow> rows;  ///< by rank, then in the order of the quantities above
  std::vector<std::string> notes;    ///< e.g. ranks without a measurement, invisible bytes dropped
  /// Largest |error| over rows whose quantity matches `quantity` ("layer" matches every "layer N").
  double max_abs_error(const std::string& quantity) const;
};

/// Compares every measured rank with its stage's prediction.
/// @throws InputError when a measured rank is outside the predicted world or its micro-batch count
///         disagrees with the prediction
Comparison compare(const Prediction& predicted, const std::vector<MeasuredRank>& measured);

/// Predicted bytes each module allocates and keeps per micro batch (the attribution described above),
/// visible above `min_bytes` when `visible_only`.  Key "input" is the stage input.
std::map<std::string, double> predicted_by_module(const PredictedStage& stage, std::uint64_t min_bytes,
                                                  bool visible_only);

nlohmann::json comparison_json(const Comparison& c);
/// Human table: rank, stage, quantity, predicted MiB, measured MiB, error %.
std::string render_comparison(const Comparison& c);

// ------------------------------------------------------------------------------------------ fitting

/// Coefficients of one module kind: measured ≈ scale · predicted + bytes_per_op (per micro batch).
struct ModuleCoefficients {
  double scale = 1;
  double bytes_per_op = 0;
  int samples = 0;  ///< (module, rank, run) samples it was fitted on
};

/// A calibration file ("preflight-calibration", version 1).
struct Calibration {
  std::string implementation;  ///< the prediction's transformer_impl it was fitted for
  std::map<std::string, ModuleCoefficients>
      modules;                         ///< module kind ("decoder.layers.*.mlp.linear_fc1") → coefficients
  double transient_scale = 1;          ///< peak: multiplies the transient part
  double overhead_bytes = 0;           ///< peak: constant bytes per rank (runtime buffers)
  std::vector<std::string> fitted_on;  ///< prediction sources of the training runs
  double rms_peak_error_before = 0, rms_peak_error_after = 0;  ///< in-sample, relative
};

/// A training run: its prediction and its measured ranks.
struct CalibrationRun {
  Prediction predicted;
  std::vector<MeasuredRank> measured;
};

/// Least-squares fit over the runs (at least one run with at least one rank).
/// @throws InputError when there is nothing to fit, or a prediction comes from estimate JSON (no ops)
Calibration fit_calibration(const std::vector<CalibrationRun>& runs);

/// The module kind of a path: the first all-digit component after "layers" replaced by '*'.
std::string module_kind(const std::string& path);

nlohmann::json calibration_json(const Calibration& c);
/// @throws InputError (where = source and the field)
Calibration read_calibration(const nlohmann::json& j, const std::string& source);
/// Reads a calibration file.  @throws InputError (where = FILE or FILE@BYTE for malformed JSON)
Calibration load_calibration_file(const std::string& path);

/// Applies a calibration to a prediction (what `analyze --calibration` would have produced): activations per
/// module, and the peak as static + calibrated activations + transient_scale · transient + overhead.
Prediction apply_calibration(const Prediction& p, const Calibration& c);

/// Applies a calibration to a layer graph: each op's kept bytes gain (scale − 1) · (bytes the op allocates
/// and keeps) + bytes_per_op as a kept tensor named "calibration"; transients are scaled; the overhead is
/// added to every stage (StageGraph::overhead_bytes).
/// @throws InputError when the calibration was fitted for another implementation
void apply_calibration(LayerGraph& graph, const Calibration& c);

}  // namespace preflight::analyzer
