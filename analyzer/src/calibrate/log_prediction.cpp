#include "preflight/analyzer/calibrate/log_prediction.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer {

double LogPrediction::max_abs_error() const {
  double m = 0;
  for (const auto& r : ranks) m = std::max(m, std::fabs(r.error));
  return m;
}

double LogPrediction::most_optimistic() const {
  double m = 0;
  for (const auto& r : ranks) m = std::min(m, r.error);
  return m;
}

void megatron_rank_coords(const Strategy& st, int rank, int& tp_rank, int& pp_rank, int& dp_rank) {
  if (rank < 0 || rank >= st.world_size)
    throw InputError("rank " + std::to_string(rank),
                     "outside the world of " + std::to_string(st.world_size) + " ranks");
  const int dp = st.dp();
  // The dense rank generator's order (rank_groups.cpp): the first token varies fastest; ep is 1 there.
  int stride = 1;
  std::stringstream order(st.order);
  std::string token;
  while (std::getline(order, token, '-')) {
    const int size = token == "tp"   ? st.tp
                     : token == "cp" ? st.cp
                     : token == "dp" ? dp
                     : token == "pp" ? st.pp
                                     : 1;
    const int coord = (rank / stride) % size;
    if (token == "tp") tp_rank = coord;
    if (token == "dp") dp_rank = coord;
    if (token == "pp") pp_rank = coord;
    stride *= size;
  }
}

LogPrediction predict_logged_ranks(const std::map<std::string, std::string>& args,
                                   const std::vector<LoggedRankPeak>& measured, const std::string& source,
                                   const Calibration* calibration) {
  return predict_logged_ranks(megatron_words_from_args_dump(args, source), measured, source, calibration);
}

LogPrediction predict_logged_ranks(const std::vector<std::string>& words,
                                   const std::vector<LoggedRankPeak>& measured, const std::string& source,
                                   const Calibration* calibration) {
  LogPrediction p;
  p.source = source;
  p.config = parse_megatron_args(words, {}, nullptr);
  p.warnings = p.config.warnings;
  LayerGraph graph = build_layer_graph(p.config.model, p.config.strategy);
  if (calibration) apply_calibration(graph, *calibration);
  const Strategy& st = graph.strategy;
  std::vector<std::optional<PeakPoint>> peaks(static_cast<std::size_t>(st.pp));
  for (const auto& m : measured) {
    RankPrediction r;
    r.rank = m.rank;
    try {
      megatron_rank_coords(st, m.rank, r.tp_rank, r.pp_rank, r.dp_rank);
    } catch (const InputError& e) {
      throw InputError(m.where, "[Rank " + std::to_string(m.rank) + "] is " + e.detail() +
                                    " that the argument dump describes");
    }
    auto& peak = peaks[static_cast<std::size_t>(r.pp_rank)];
    if (!peak) peak = stage_peak(graph, r.pp_rank);
    r.peak = *peak;
    r.measured_mib = m.max_allocated_mib;
    r.predicted_mib = to_mib(peak->bytes);
    r.error = m.max_allocated_mib > 0 ? (r.predicted_mib - m.max_allocated_mib) / m.max_allocated_mib : 0;
    r.where = m.where;
    p.ranks.push_back(r);
  }
  std::sort(p.ranks.begin(), p.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  return p;
}

Calibration fit_log_overhead(const std::vector<LogPrediction>& logs) {
  Calibration c;
  c.implementation = "megatron_core";
  double sum = 0, before = 0;
  int n = 0;
  for (const auto& l : logs) {
    c.fitted_on.push_back(l.source);
    for (const auto& r : l.ranks) {
      sum += (r.measured_mib - r.predicted_mib) * 1048576.0;
      before += r.error * r.error;
      ++n;
    }
  }
  if (n == 0) throw InputError("--fit", "the logs hold no measured rank");
  c.overhead_bytes = sum / n;
  double after = 0;
  for (const auto& l : logs)
    for (const auto& r : l.ranks) {
      const double e = (r.predicted_mib + c.overhead_bytes / 1048576.0 - r.measured_mib) / r.measured_mib;
      after += e * e;
    }
  c.rms_peak_error_before = std::sqrt(before / n);
  c.rms_peak_error_after = std::sqrt(after / n);
  return c;
}

nlohmann::json log_prediction_json(const LogPrediction& p) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& r : p.ranks)
    ranks.push_back({{"rank", r.rank},
                     {"tp_rank", r.tp_rank},
                     {"pp_rank", r.pp_rank},
                     {"dp_rank", r.dp_rank},
                     {"measured_max_allocated_mib", r.measured_mib},
                     {"predicted_peak_mib", r.predicted_mib},
                     {"error", r.error},
                     {"peak_phase", r.peak.phase},
                     {"peak_op", r.peak.op},
                     {"peak_static_mib", to_mib(r.peak.static_bytes)},
                     {"peak_activation_mib", to_mib(r.peak.activation_bytes)},
                     {"peak_transient_mib", to_mib(r.peak.transient_bytes)},
                     {"measured_at", r.where}});
  const Strategy& st = p.config.strategy;
  return {{"log", p.source},
          {"layout",
           {{"world_size", st.world_size}, {"tp", st.tp}, {"pp", st.pp}, {"dp", st.dp()}, {"cp", st.cp},
            {"vpp", st.vpp}}},
          {"ranks", ranks},
          {"max_abs_error", p.max_abs_error()},
          {"most_optimistic_error", p.most_optimistic()},
          {"warnings", p.warnings}};
}

std::string render_log_prediction(const LogPrediction& p) {
  const Strategy& st = p.config.strategy;
  std::string out = p.source + ": " + p.config.model.name + ", world " + std::to_string(st.world_size) + " = tp " +
                    std::to_string(st.tp) + " × pp " + std::to_string(st.pp) + " × dp " + std::to_string(st.dp()) +
                    (st.cp > 1 ? " × cp " + std::to_string(st.cp) : "") + "\n";
  TextTable t;
  using A = TextTable::Align;
  t.column("rank", A::Right).column("tp", A::Right).column("pp", A::Right).column("dp", A::Right);
  t.column("measured MiB", A::Right).column("predicted MiB", A::Right).column("error", A::Right);
  t.column("static", A::Right).column("act", A::Right).column("transient", A::Right).column("peak at");
  for (const auto& r : p.ranks) {
    char err[32];
    std::snprintf(err, sizeof err, "%+.1f %%", 100 * r.error);
    t.row({std::to_string(r.rank), std::to_string(r.tp_rank), std::to_string(r.pp_rank), std::to_string(r.dp_rank),
           fixed(r.measured_mib, 1), fixed(r.predicted_mib, 1), err, fixed(to_mib(r.peak.static_bytes), 0),
           fixed(to_mib(r.peak.activation_bytes), 0), fixed(to_mib(r.peak.transient_bytes), 0),
           r.peak.phase + (r.peak.op.empty() ? "" : " " + r.peak.op)});
  }
  out += t.render();
  for (const auto& w : p.warnings) out += "note: " + w + "\n";
  return out;
}

}  // namespace preflight::analyzer
