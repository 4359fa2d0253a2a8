#pragma once
/// @file log_prediction.hpp
/// Predicted against measured peak memory for the ranks of a real Megatron run, from its log alone:
/// the argument dump (megatron_words_from_args_dump) gives the model and layout, each `[Rank R] … max
/// allocated` line the measurement, Megatron's rank order the rank's pipeline stage, and memory_timeline.hpp
/// the predicted peak of that stage.  Units: MiB (2^20 bytes), as Megatron prints "MB".

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/calibrate/calibrate.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/memory_timeline.hpp"

namespace preflight::analyzer {

/// The highest `max allocated` a rank printed, and where.
struct LoggedRankPeak {
  int rank = 0;
  double max_allocated_mib = 0;
  double max_reserved_mib = 0;
  std::string where;  ///< file:line of the line with the highest value
};

/// One logged rank: its coordinates in Megatron's rank order and the two peaks.
struct RankPrediction {
  int rank = 0, tp_rank = 0, pp_rank = 0, dp_rank = 0;
  double measured_mib = 0;
  double predicted_mib = 0;
  double error = 0;  ///< (predicted − measured) / measured
  PeakPoint peak;    ///< the predicted peak's parts (bytes) and where it falls
  std::string where;
};

struct LogPrediction {
  std::string source;
  MegatronConfig config;
  std::vector<RankPrediction> ranks;  ///< by rank
  std::vector<std::string> warnings;  ///< the front end's
  /// The largest |error| and the most optimistic error (most negative), 0 without ranks.
  double max_abs_error() const;
  double most_optimistic() const;
};

/// Coordinates of `rank` in Megatron's order (Strategy::order): tp fastest, then cp, (ep,) dp, pp outermost;
/// or tp, pp, dp with "tp-pp-dp".
/// @throws InputError when the rank is outside the world.
void megatron_rank_coords(const Strategy& st, int rank, int& tp_rank, int& pp_rank, int& dp_rank);

/// Predicts every logged rank.  `calibration` (optional) is applied to the graph first.
/// @throws InputError naming `source` when the dump is missing or inconsistent, or a rank is outside it.
LogPrediction predict_logged_ranks(const std::map<std::string, std::string>& args,
                                   const std::vector<LoggedRankPeak>& measured, const std::string& source,
                                   const Calibration* calibration = nullptr);

/// The same from the run's Megatron arguments (a Megatron-Bridge log's configuration, converted:
/// frontends/bridge_config.hpp).
LogPrediction predict_logged_ranks(const std::vector<std::string>& words,
                                   const std::vector<LoggedRankPeak>& measured, const std::string& source,
                                   const Calibration* calibration = nullptr);

/// Fits what peaks alone determine over the ranks of several logs: a constant per rank (overhead_bytes), the
/// mean of measured − predicted, so that the calibrated model is unbiased on them.  The result is a
/// calibration file for `analyze --calibration` (implementation megatron_core, no module rows), with the
/// in-sample RMS relative error before and after.
/// @throws InputError when the logs hold no rank.
Calibration fit_log_overhead(const std::vector<LogPrediction>& logs);

nlohmann::json log_prediction_json(const LogPrediction& p);
/// A table: rank, tp/pp/dp coordinates, measured and predicted MiB, signed error, the predicted peak's phase
/// and op, and its parts (static, activations, transient).
std::string render_log_prediction(const LogPrediction& p);

}  // namespace preflight::analyzer
