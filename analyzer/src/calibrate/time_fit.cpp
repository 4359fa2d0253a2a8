#include "preflight/analyzer/calibrate/time_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/fidelity.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer {

namespace {

struct Sample {
  double c = 0, n = 0, m = 0;  // compute part, network part, measured (ms)
};

/// Least squares of a·c/m + b·n/m = 1 over `s` (skipping index `skip`); a = b when the two parts cannot be
/// told apart, a coefficient comes out non-positive, or fewer than three runs are left (two runs fix two
/// factors exactly, and a run left out of a three-run corpus was then priced by an extrapolation, not a fit).
std::pair<double, double> solve(const std::vector<Sample>& s, std::size_t skip = static_cast<std::size_t>(-1)) {
  double xx = 0, xy = 0, yy = 0, x1 = 0, y1 = 0, tt = 0, t1 = 0;
  int used = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == skip) continue;
    ++used;
    const double x = s[i].c / s[i].m, y = s[i].n / s[i].m;
    xx += x * x;
    xy += x * y;
    yy += y * y;
    x1 += x;
    y1 += y;
    tt += (x + y) * (x + y);
    t1 += x + y;
  }
  const double det = xx * yy - xy * xy;
  if (used >= 3 && std::fabs(det) > 1e-12 * std::max(1.0, xx * yy)) {
    const double a = (x1 * yy - y1 * xy) / det;
    const double b = (y1 * xx - x1 * xy) / det;
    if (a > 0 && b > 0) return {a, b};
  }
  const double k = tt > 0 ? t1 / tt : 1.0;
  return {k, k};
}

double max_abs(const std::vector<TimedRunResult>& runs, double (TimedRunResult::*err)() const) {
  double m = 0;
  for (const auto& r : runs) m = std::max(m, std::fabs((r.*err)()));
  return m;
}

}  // namespace

double TimeFit::max_abs_before() const {
  return max_abs(runs, &TimedRunResult::error_before);
}
double TimeFit::max_abs_fitted() const {
  return max_abs(runs, &TimedRunResult::error_fitted);
}
double TimeFit::max_abs_held_out() const {
  return max_abs(runs, &TimedRunResult::error_held_out);
}

namespace {

/// The efficiency group of an accelerator op (SystemSpec::op key).
const char* op_group(const std::string& op) {
  if (op == "matmul") return "gemm";
  if (op == "fp8_matmul") return "fp8_gemm";
  if (op == "group_matmul") return "grouped_gemm";
  if (op == "fp8_group_matmul") return "fp8_grouped_gemm";
  if (op == "sdp_fwd" || op == "sdp_bwd") return "attention";
  return "memory";
}

bool accelerator_group(const std::string& group) {
  return group == "gemm" || group == "fp8_gemm" || group == "grouped_gemm" || group == "fp8_grouped_gemm" ||
         group == "attention" || group == "memory";
}

/// A group's scale; a collective without a scale of its own takes "network" (the two-factor fit); FP8 GEMMs
/// without one take the GEMMs', FP8 grouped GEMMs without one the grouped GEMMs', grouped GEMMs without one
/// the GEMMs' (fits made before they were groups of their own); else 1.
double scale_of(const GroupScales& scales, const std::string& group) {
  for (const auto& [g, v] : scales)
    if (g == group) return v;
  if (group == "fp8_gemm") return scale_of(scales, "gemm");
  if (group == "fp8_grouped_gemm") return scale_of(scales, "grouped_gemm");
  if (group == "grouped_gemm") return scale_of(scales, "gemm");
  if (!accelerator_group(group))
    for (const auto& [g, v] : scales)
      if (g == "network") return v;
  return 1.0;
}

/// The two-factor fit as group scales: `compute` on the accelerator's groups, `network` on every collective.
GroupScales two_factor(double compute, double network) {
  return {{"gemm", compute}, {"attention", compute}, {"memory", compute}, {"network", network}};
}

}  // namespace

SystemSpec scaled_system_groups(const SystemSpec& system, const GroupScales& scales) {
  SystemSpec s = system;
  for (auto& [name, op] : s.op) {
    const double k = scale_of(scales, op_group(name));
    op.efficient_factor /= k;
    for (auto& [shape, f] : op.accurate_efficient_factor) f /= k;
  }
  for (auto& [name, bw] : s.memory_bw) bw.efficient_factor /= scale_of(scales, "memory");
  for (auto& [name, net] : s.networks)
    for (auto& [coll, op] : net.op) {
      const double k = scale_of(scales, coll);
      if (k == 1.0) continue;
      op.efficient_factor = (op.efficient_factor ? *op.efficient_factor : net.bandwidth.efficient_factor) / k;
      for (auto& [n, bw] : op.dp_fixed_bw) bw /= k;
    }
  return s;
}

SystemSpec scaled_system(const SystemSpec& system, double compute_scale, double network_scale) {
  return scaled_system_groups(system, two_factor(compute_scale, network_scale));
}

namespace {

/// Predicted times and the compute / network split of every run on `system`.
std::vector<Sample> split_runs(const std::vector<TimedRun>& runs, const SystemSpec& system,
                               std::vector<double>* predicted) {
  const SystemSpec slow = scaled_system(system, 2.0, 1.0);
  std::vector<Sample> samples;
  for (const auto& r : runs) {
    const double t = cost::estimate(r.model, r.strategy, system).iteration_ms;
    const double t2 = cost::estimate(r.model, r.strategy, slow).iteration_ms;
    Sample s;
    s.c = std::clamp(t2 - t, 0.0, t);
    s.n = t - s.c;
    s.m = r.measured_ms;
    samples.push_back(s);
    if (predicted) predicted->push_back(t);
  }
  return samples;
}

/// Σ squared relative errors of the fit a, b over `s` (skipping `skip`).
double sq_error(const std::vector<Sample>& s, std::pair<double, double> ab, std::size_t skip) {
  double e = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == skip) continue;
    const double r = (ab.first * s[i].c + ab.second * s[i].n - s[i].m) / s[i].m;
    e += r * r;
  }
  return e;
}

}  // namespace

std::vector<TimedRun> read_time_corpus(const std::string& file) {
  const nlohmann::json j = cost::read_json_file(file);
  const nlohmann::json& list = j.is_object() && j.contains("runs") ? j["runs"] : j;
  if (!list.is_array()) throw InputError(file, "expected a list of runs (or {\"runs\": [...]})");
  std::vector<TimedRun> runs;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& r = list[i];
    const std::string where = file + ": runs[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("measured_iteration_ms") || !r["measured_iteration_ms"].is_number())
      throw InputError(where, "needs \"measured_iteration_ms\" (a number) and \"args\" or \"config\"");
    if (r.value("skip", false)) continue;
    const std::string name =
        r.contains("name") && r["name"].is_string() ? r["name"].get<std::string>() : where;
    const double measured = r["measured_iteration_ms"].get<double>();
    if (r.contains("args") && r["args"].is_array()) {
      std::vector<std::string> args = r["args"].get<std::vector<std::string>>();
      // A file an argument names (--te-precision-config-file) is found beside the corpus, as a "config" is.
      for (std::size_t k = 0; k + 1 < args.size(); ++k)
        if (args[k] == "--te-precision-config-file" && std::filesystem::path(args[k + 1]).is_relative())
          args[k + 1] = (std::filesystem::path(file).parent_path() / args[k + 1]).string();
      const auto cfg = parse_megatron_args(args);
      runs.push_back({name, cfg.model, cfg.strategy, measured});
    } else if (r.contains("config") && r["config"].is_string()) {
      MindFormersOptions options;
      if (r.contains("run_mindformer")) {
        if (!r["run_mindformer"].is_array())
          throw InputError(where + ".run_mindformer", "expected a list of run_mindformer.py arguments");
        read_run_mindformer_args(r["run_mindformer"].get<std::vector<std::string>>(), options);
      }
      const auto yaml = std::filesystem::path(file).parent_path() / r["config"].get<std::string>();
      const MindFormersConfig cfg = load_mindformers_yaml(yaml, options);
      runs.push_back({name, cfg.model, cfg.strategy, measured});
    } else {
      throw InputError(where,
                       "needs \"args\" (the Megatron command line) or \"config\" (a MindFormers yaml)");
    }
  }
  return runs;
}

TimeFit fit_time(const std::vector<TimedRun>& runs, const SystemSpec& system, bool fit_overlap) {
  // One run is fitted exactly by a common scale; its leave-one-out prediction, fitted on no run, is the
  // system as given (solve() / the ridge's pull towards 1 without samples).
  if (runs.empty()) throw InputError("--fit-time", "needs at least one run with a measured iteration time");
  for (const auto& r : runs)
    if (!(r.measured_ms > 0)) throw InputError(r.name, "measured iteration time must be positive");
  TimeFit fit;
  std::vector<double> predicted;
  const std::vector<Sample> given = split_runs(runs, system, &predicted);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    TimedRunResult res;
    res.name = runs[i].name;
    res.run_class = cost::time_run_class(runs[i].model, runs[i].strategy);
    res.measured_ms = runs[i].measured_ms;
    res.predicted_ms = predicted[i];
    fit.runs.push_back(res);
  }
  // Candidate systems: the one given, or one per tp_overlap_exposed on the grid.
  std::vector<double> grid{system.tp_overlap_exposed};
  if (fit_overlap) {
    grid.clear();
    for (int k = 0; k <= 10; ++k) grid.push_back(k / 10.0);
  }
  std::vector<std::vector<Sample>> splits;
  for (double x : grid) {
    if (x == system.tp_overlap_exposed) {
      splits.push_back(given);
      continue;
    }
    SystemSpec sys = system;
    sys.tp_overlap_exposed = x;
    splits.push_back(split_runs(runs, sys, nullptr));
  }
  // The best grid point without run `skip` (none: all runs).
  auto best = [&](std::size_t skip) {
    std::size_t at = 0;
    double err = 0;
    std::pair<double, double> ab;
    for (std::size_t g = 0; g < grid.size(); ++g) {
      const auto cand = solve(splits[g], skip);
      const double e = sq_error(splits[g], cand, skip);
      if (g == 0 || e < err) {
        at = g;
        err = e;
        ab = cand;
      }
    }
    return std::make_pair(at, ab);
  };
  const auto [at, ab] = best(static_cast<std::size_t>(-1));
  fit.compute_scale = ab.first;
  fit.network_scale = ab.second;
  fit.tp_overlap_exposed = grid[at];
  fit.overlap_fitted = fit_overlap;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Sample& s = splits[at][i];
    fit.runs[i].compute_ms = s.c;
    fit.runs[i].network_ms = s.n;
    fit.runs[i].fitted_ms = fit.compute_scale * s.c + fit.network_scale * s.n;
    const auto [g, abi] = best(i);
    fit.runs[i].held_out_ms = abi.first * splits[g][i].c + abi.second * splits[g][i].n;
  }
  return fit;
}

namespace {

/// Solves (A + λI) x = b for the small symmetric system of the ridge fit (Gaussian elimination).
std::vector<double> solve_linear(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t piv = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[piv][col])) piv = r;
    std::swap(a[col], a[piv]);
    std::swap(b[col], b[piv]);
    if (std::fabs(a[col][col]) < 1e-15) continue;
    for (std::size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (std::size_t k = col; k < n; ++k) a[r][k] -= f * a[col][k];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(n, 1.0);
  for (std::size_t i = 0; i < n; ++i)
    if (std::fabs(a[i][i]) >= 1e-15) x[i] = b[i] / a[i][i];
  return x;
}

}  // namespace

TimeFit fit_time_groups(const std::vector<TimedRun>& runs, const SystemSpec& system) {
  // One run is fitted exactly by a common scale; its leave-one-out prediction, fitted on no run, is the
  // system as given (solve() / the ridge's pull towards 1 without samples).
  if (runs.empty()) throw InputError("--fit-time", "needs at least one run with a measured iteration time");
  for (const auto& r : runs)
    if (!(r.measured_ms > 0)) throw InputError(r.name, "measured iteration time must be positive");
  const std::size_t G = std::size(kTimeFitGroups);
  // Per run: T, the group parts T_g and the rest R.
  std::vector<double> t(runs.size()), rest(runs.size());
  std::vector<std::vector<double>> part(runs.size(), std::vector<double>(G, 0));
  for (std::size_t i = 0; i < runs.size(); ++i)
    t[i] = cost::estimate(runs[i].model, runs[i].strategy, system).iteration_ms;
  for (std::size_t g = 0; g < G; ++g) {
    // The GEMMs' part leaves the FP8 GEMMs out: they are a group of their own here.
    GroupScales slower{{kTimeFitGroups[g], 2.0}};
    if (std::string_view(kTimeFitGroups[g]) == "gemm") slower.emplace_back("fp8_gemm", 1.0);
    const SystemSpec slow = scaled_system_groups(system, slower);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const double t2 = cost::estimate(runs[i].model, runs[i].strategy, slow).iteration_ms;
      part[i][g] = std::clamp(t2 - t[i], 0.0, t[i]);
    }
  }
  for (std::size_t i = 0; i < runs.size(); ++i) {
    double sum = 0;
    for (double p : part[i]) sum += p;
    rest[i] = t[i] - sum;
  }
  const double lambda = 0.01;
  auto fit_without = [&](std::size_t skip) {
    std::vector<std::vector<double>> a(G, std::vector<double>(G, 0));
    std::vector<double> b(G, 0);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (i == skip) continue;
      const double m = runs[i].measured_ms;
      for (std::size_t g = 0; g < G; ++g) {
        for (std::size_t h = 0; h < G; ++h) a[g][h] += part[i][g] / m * part[i][h] / m;
        b[g] += part[i][g] / m * (1 - rest[i] / m);
      }
    }
    for (std::size_t g = 0; g < G; ++g) {
      a[g][g] += lambda;
      b[g] += lambda;  // pulled towards 1
    }
    std::vector<double> x = solve_linear(a, b);
    for (double& v : x) v = std::clamp(v, 0.2, 5.0);
    return x;
  };
  auto model = [&](const std::vector<double>& x, std::size_t i) {
    double v = rest[i];
    for (std::size_t g = 0; g < G; ++g) v += x[g] * part[i][g];
    return v;
  };
  TimeFit fit;
  const std::vector<double> x = fit_without(static_cast<std::size_t>(-1));
  for (std::size_t g = 0; g < G; ++g) {
    // A group no run exercises is not fitted (the ridge leaves it at 1): it is not written, so that it keeps
    // its fallback — FP8 GEMMs of a BF16-only fit follow the fitted GEMMs.
    bool used = false;
    for (std::size_t i = 0; i < runs.size(); ++i) used = used || part[i][g] > 0;
    if (used || std::string_view(kTimeFitGroups[g]) != "fp8_gemm")
      fit.group_scales.emplace_back(kTimeFitGroups[g], x[g]);
  }
  fit.tp_overlap_exposed = system.tp_overlap_exposed;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    TimedRunResult r;
    r.name = runs[i].name;
    r.run_class = cost::time_run_class(runs[i].model, runs[i].strategy);
    r.measured_ms = runs[i].measured_ms;
    r.predicted_ms = t[i];
    for (std::size_t g = 0; g < G; ++g) (accelerator_group(kTimeFitGroups[g]) ? r.compute_ms : r.network_ms) += part[i][g];
    r.fitted_ms = model(x, i);
    r.held_out_ms = model(fit_without(i), i);
    fit.runs.push_back(r);
  }
  return fit;
}

nlohmann::json scaled_system_json(const nlohmann::json& system, const TimeFit& fit) {
  const GroupScales scales =
      fit.group_scales.empty() ? two_factor(fit.compute_scale, fit.network_scale) : fit.group_scales;
  nlohmann::json s = system;
  if (s.contains("sys_name") && s["sys_name"].is_string()) s["sys_name"] = s["sys_name"].get<std::string>() + "_fitted";
  auto& acc = s["accelerator"];
  if (acc.contains("op"))
    for (auto& [name, op] : acc["op"].items()) {
      const double k = scale_of(scales, op_group(name));
      if (op.contains("efficient_factor")) op["efficient_factor"] = op["efficient_factor"].get<double>() / k;
      if (op.contains("accurate_efficient_factor") && op["accurate_efficient_factor"].is_object())
        for (auto& [shape, f] : op["accurate_efficient_factor"].items()) f = f.get<double>() / k;
    }
  if (acc.contains("bandwidth"))
    for (auto& [name, bw] : acc["bandwidth"].items())
      if (bw.contains("efficient_factor"))
        bw["efficient_factor"] = bw["efficient_factor"].get<double>() / scale_of(scales, "memory");
  if (s.contains("networks"))
    for (auto& [name, net] : s["networks"].items()) {
      if (!net.is_object() || !net.contains("op")) continue;
      const double base = net.contains("bandwidth") && net["bandwidth"].contains("efficient_factor")
                              ? net["bandwidth"]["efficient_factor"].get<double>()
                              : 1.0;
      for (auto& [coll, op] : net["op"].items()) {
        const double k = scale_of(scales, coll);
        if (k == 1.0) continue;
        op["efficient_factor"] = (op.contains("efficient_factor") ? op["efficient_factor"].get<double>() : base) / k;
        if (op.contains("dp_fixed_bw"))
          for (auto& [n, bw] : op["dp_fixed_bw"].items()) bw = bw.get<double>() / k;
      }
    }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : fit.runs) runs.push_back(r.name);
  s["tp_overlap_exposed"] = fit.tp_overlap_exposed;
  nlohmann::json& record = s["preflight"]["time_fit"];
  if (fit.group_scales.empty()) {
    record = {{"compute_scale", fit.compute_scale},
              {"tp_overlap_exposed", fit.tp_overlap_exposed},
              {"tp_overlap_exposed_fitted", fit.overlap_fitted},
              {"network_scale", fit.network_scale}};
  } else {
    record = {{"group_scales", nlohmann::json::object()}};
    for (const auto& [g, v] : fit.group_scales) record["group_scales"][g] = v;
  }
  record["fitted_on"] = runs;
  record["max_abs_error_before"] = fit.max_abs_before();
  record["max_abs_error_fitted"] = fit.max_abs_fitted();
  record["max_abs_error_held_out"] = fit.max_abs_held_out();
  return s;
}

nlohmann::json time_fit_json(const TimeFit& fit) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : fit.runs)
    runs.push_back({{"run", r.name},
                    {"run_class", r.run_class},
                    {"measured_ms", r.measured_ms},
                    {"predicted_ms", r.predicted_ms},
                    {"compute_ms", r.compute_ms},
                    {"network_ms", r.network_ms},
                    {"fitted_ms", r.fitted_ms},
                    {"held_out_ms", r.held_out_ms},
                    {"error_before", r.error_before()},
                    {"error_fitted", r.error_fitted()},
                    {"error_held_out", r.error_held_out()}});
  nlohmann::json groups = nlohmann::json::object();
  for (const auto& [g, v] : fit.group_scales) groups[g] = v;
  if (!fit.group_scales.empty())
    return {{"group_scales", groups},
            {"runs", runs},
            {"max_abs_error_before", fit.max_abs_before()},
            {"max_abs_error_fitted", fit.max_abs_fitted()},
            {"max_abs_error_held_out", fit.max_abs_held_out()}};
  return {{"compute_scale", fit.compute_scale},
          {"network_scale", fit.network_scale},
          {"tp_overlap_exposed", fit.tp_overlap_exposed},
          {"tp_overlap_exposed_fitted", fit.overlap_fitted},
          {"runs", runs},
          {"max_abs_error_before", fit.max_abs_before()},
          {"max_abs_error_fitted", fit.max_abs_fitted()},
          {"max_abs_error_held_out", fit.max_abs_held_out()}};
}

std::string render_time_fit(const TimeFit& fit) {
  TextTable t;
  using A = TextTable::Align;
  t.column("run").column("measured ms", A::Right).column("predicted ms", A::Right).column("error", A::Right);
  t.column("fitted ms", A::Right).column("error", A::Right).column("held out ms", A::Right).column("error", A::Right);
  auto pct = [](double e) { return signed_fixed(100 * e, 1) + " %"; };
  for (const auto& r : fit.runs)
    t.row({r.name, fixed(r.measured_ms, 1), fixed(r.predicted_ms, 1), pct(r.error_before()), fixed(r.fitted_ms, 1),
           pct(r.error_fitted()), fixed(r.held_out_ms, 1), pct(r.error_held_out())});
  std::string out = t.render();
  if (!fit.group_scales.empty()) {
    for (const auto& [g, v] : fit.group_scales) out += g + " × " + fixed(v, 4) + ", ";
    out += "largest |error|: as given " + fixed(100 * fit.max_abs_before(), 2) + " %, fitted " +
           fixed(100 * fit.max_abs_fitted(), 2) + " %, held out (leave one out) " +
           fixed(100 * fit.max_abs_held_out(), 2) + " %\n";
    return out;
  }
  out += "compute × " + fixed(fit.compute_scale, 4) + ", networks × " + fixed(fit.network_scale, 4) +
         (fit.overlap_fitted ? ", tp_overlap_exposed " + fixed(fit.tp_overlap_exposed, 1) + " (fitted)" : "") +
         "; largest |error|: as given " + fixed(100 * fit.max_abs_before(), 2) + " %, fitted " +
         fixed(100 * fit.max_abs_fitted(), 2) + " %, held out (leave one out) " +
         fixed(100 * fit.max_abs_held_out(), 2) + " %\n";
  return out;
}

}  // namespace preflight::analyzer
