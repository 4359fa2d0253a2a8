#include "preflight/analyzer/calibrate/time_fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer {

namespace {

struct Sample {
  double c = 0, n = 0, m = 0;  // compute part, network part, measured (ms)
};

/// Least squares of a·c/m + b·n/m = 1 over `s` (skipping index `skip`); a = b when the two parts cannot be
/// told apart or a coefficient comes out non-positive.
std::pair<double, double> solve(const std::vector<Sample>& s, std::size_t skip = static_cast<std::size_t>(-1)) {
  double xx = 0, xy = 0, yy = 0, x1 = 0, y1 = 0, tt = 0, t1 = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i == skip) continue;
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
  if (std::fabs(det) > 1e-12 * std::max(1.0, xx * yy)) {
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

SystemSpec scaled_system(const SystemSpec& system, double compute_scale, double network_scale) {
  SystemSpec s = system;
  for (auto& [name, op] : s.op) {
    op.efficient_factor /= compute_scale;
    for (auto& [shape, f] : op.accurate_efficient_factor) f /= compute_scale;
  }
  for (auto& [name, bw] : s.memory_bw) bw.efficient_factor /= compute_scale;
  for (auto& [name, net] : s.networks) {
    net.bandwidth.efficient_factor /= network_scale;
    for (auto& [coll, op] : net.op) {
      if (op.efficient_factor) *op.efficient_factor /= network_scale;
      for (auto& [n, bw] : op.dp_fixed_bw) bw /= network_scale;
    }
  }
  return s;
}

TimeFit fit_time(const std::vector<TimedRun>& runs, const SystemSpec& system) {
  if (runs.size() < 2) throw InputError("--fit-time", "needs at least two runs with measured iteration times");
  const SystemSpec slow = scaled_system(system, 2.0, 1.0);
  TimeFit fit;
  std::vector<Sample> samples;
  for (const auto& r : runs) {
    if (!(r.measured_ms > 0)) throw InputError(r.name, "measured iteration time must be positive");
    const double t = cost::estimate(r.model, r.strategy, system).iteration_ms;
    const double t2 = cost::estimate(r.model, r.strategy, slow).iteration_ms;
    Sample s;
    s.c = std::clamp(t2 - t, 0.0, t);
    s.n = t - s.c;
    s.m = r.measured_ms;
    samples.push_back(s);
    TimedRunResult res;
    res.name = r.name;
    res.measured_ms = r.measured_ms;
    res.predicted_ms = t;
    res.compute_ms = s.c;
    res.network_ms = s.n;
    fit.runs.push_back(res);
  }
  std::tie(fit.compute_scale, fit.network_scale) = solve(samples);
  for (std::size_t i = 0; i < samples.size(); ++i) {
    fit.runs[i].fitted_ms = fit.compute_scale * samples[i].c + fit.network_scale * samples[i].n;
    const auto [a, b] = solve(samples, i);
    fit.runs[i].held_out_ms = a * samples[i].c + b * samples[i].n;
  }
  return fit;
}

nlohmann::json scaled_system_json(const nlohmann::json& system, const TimeFit& fit) {
  nlohmann::json s = system;
  const double a = fit.compute_scale, b = fit.network_scale;
  if (s.contains("sys_name") && s["sys_name"].is_string()) s["sys_name"] = s["sys_name"].get<std::string>() + "_fitted";
  auto& acc = s["accelerator"];
  if (acc.contains("op"))
    for (auto& [name, op] : acc["op"].items()) {
      if (op.contains("efficient_factor")) op["efficient_factor"] = op["efficient_factor"].get<double>() / a;
      if (op.contains("accurate_efficient_factor") && op["accurate_efficient_factor"].is_object())
        for (auto& [shape, f] : op["accurate_efficient_factor"].items()) f = f.get<double>() / a;
    }
  if (acc.contains("bandwidth"))
    for (auto& [name, bw] : acc["bandwidth"].items())
      if (bw.contains("efficient_factor")) bw["efficient_factor"] = bw["efficient_factor"].get<double>() / a;
  if (s.contains("networks"))
    for (auto& [name, net] : s["networks"].items()) {
      if (!net.is_object()) continue;
      if (net.contains("bandwidth") && net["bandwidth"].contains("efficient_factor"))
        net["bandwidth"]["efficient_factor"] = net["bandwidth"]["efficient_factor"].get<double>() / b;
      if (net.contains("op"))
        for (auto& [coll, op] : net["op"].items()) {
          if (op.contains("efficient_factor")) op["efficient_factor"] = op["efficient_factor"].get<double>() / b;
          if (op.contains("dp_fixed_bw"))
            for (auto& [n, bw] : op["dp_fixed_bw"].items()) bw = bw.get<double>() / b;
        }
    }
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : fit.runs) runs.push_back(r.name);
  s["preflight"]["time_fit"] = {{"compute_scale", a},
                                {"network_scale", b},
                                {"fitted_on", runs},
                                {"max_abs_error_before", fit.max_abs_before()},
                                {"max_abs_error_fitted", fit.max_abs_fitted()},
                                {"max_abs_error_held_out", fit.max_abs_held_out()}};
  return s;
}

nlohmann::json time_fit_json(const TimeFit& fit) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : fit.runs)
    runs.push_back({{"run", r.name},
                    {"measured_ms", r.measured_ms},
                    {"predicted_ms", r.predicted_ms},
                    {"compute_ms", r.compute_ms},
                    {"network_ms", r.network_ms},
                    {"fitted_ms", r.fitted_ms},
                    {"held_out_ms", r.held_out_ms},
                    {"error_before", r.error_before()},
                    {"error_fitted", r.error_fitted()},
                    {"error_held_out", r.error_held_out()}});
  return {{"compute_scale", fit.compute_scale},
          {"network_scale", fit.network_scale},
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
  auto pct = [](double e) {
    char b[32];
    std::snprintf(b, sizeof b, "%+.1f %%", 100 * e);
    return std::string(b);
  };
  for (const auto& r : fit.runs)
    t.row({r.name, fixed(r.measured_ms, 1), fixed(r.predicted_ms, 1), pct(r.error_before()), fixed(r.fitted_ms, 1),
           pct(r.error_fitted()), fixed(r.held_out_ms, 1), pct(r.error_held_out())});
  std::string out = t.render();
  out += "compute × " + fixed(fit.compute_scale, 4) + ", networks × " + fixed(fit.network_scale, 4) +
         "; largest |error|: as given " + fixed(100 * fit.max_abs_before(), 2) + " %, fitted " +
         fixed(100 * fit.max_abs_fitted(), 2) + " %, held out (leave one out) " +
         fixed(100 * fit.max_abs_held_out(), 2) + " %\n";
  return out;
}

}  // namespace preflight::analyzer
