#include "lp_model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include <coin/CbcModel.hpp>
#include <coin/CbcSolver.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

namespace preflight::analyzer::balance::lp {

void Model::add_row(std::string name, const Expr& e, double lower, double upper) {
  std::map<int, double> merged;
  for (auto [c, v] : e.terms) merged[c] += v;
  Row r;
  r.name = std::move(name);
  for (auto [c, v] : merged)
    if (v != 0.0) r.coefs.emplace_back(c, v);
  r.lower = lower == -kInf ? -kInf : lower - e.constant;
  r.upper = upper == kInf ? kInf : upper - e.constant;
  rows_.push_back(std::move(r));
}

double Model::violation(const std::vector<double>& x) const {
  double worst = 0;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const auto& c = columns_[i];
    worst = std::max({worst, c.lower - x[i], x[i] - c.upper});
    if (c.integer) worst = std::max(worst, std::abs(x[i] - std::round(x[i])));
  }
  for (const auto& r : rows_) {
    double v = 0;
    for (auto [c, k] : r.coefs) v += k * x[c];
    worst = std::max({worst, r.lower - v, v - r.upper});
  }
  return worst;
}

namespace {

double coin_bound(double v) {
  return std::isinf(v) ? (v > 0 ? COIN_DBL_MAX : -COIN_DBL_MAX) : v;
}

void load(OsiClpSolverInterface& si, const Model& m) {
  const int ncols = static_cast<int>(m.columns().size());
  CoinPackedMatrix matrix(false, 0, 0);
  matrix.setDimensions(0, ncols);
  std::vector<double> rlo, rup;
  for (const auto& r : m.rows()) {
    std::vector<int> idx;
    std::vector<double> val;
    for (auto [c, v] : r.coefs) {
      idx.push_back(c);
      val.push_back(v);
    }
    matrix.appendRow(static_cast<int>(idx.size()), idx.data(), val.data());
    rlo.push_back(coin_bound(r.lower));
    rup.push_back(coin_bound(r.upper));
  }
  std::vector<double> clo, cup, obj;
  for (const auto& c : m.columns()) {
    clo.push_back(coin_bound(c.lower));
    cup.push_back(coin_bound(c.upper));
    obj.push_back(c.objective);
  }
  si.loadProblem(matrix, clo.data(), cup.data(), obj.data(), rlo.data(), rup.data());
  for (int i = 0; i < ncols; ++i) {
    if (m.columns()[i].integer) si.setInteger(i);
    si.setColName(i, m.columns()[i].name);
  }
  for (std::size_t i = 0; i < m.rows().size(); ++i) si.setRowName(static_cast<int>(i), m.rows()[i].name);
  si.setObjSense(1.0);
}

}  // namespace

SolveResult solve(const Model& m, const SolveParams& params) {
  const auto t0 = std::chrono::steady_clock::now();
  SolveResult res;
  OsiClpSolverInterface si;
  load(si, m);
  if (!params.log) si.messageHandler()->setLogLevel(0);
  if (!params.dump_lp.empty()) {
    // writeLp appends ".lp" to the name it is given.
    std::string stem = params.dump_lp.string();
    if (stem.size() > 3 && stem.substr(stem.size() - 3) == ".lp") stem.resize(stem.size() - 3);
    si.writeLp(stem.c_str(), "lp", 1e-9, 10, 12);
  }
  const int ncols = static_cast<int>(m.columns().size());
  if (params.lp_relaxation_only) {
    si.initialSolve();
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (si.isProvenOptimal()) {
      res.has_solution = true;
      res.proven_optimal = true;
      res.objective = si.getObjValue();
      res.bound = res.objective;
      res.solution.assign(si.getColSolution(), si.getColSolution() + ncols);
    } else {
      res.proven_infeasible = si.isProvenPrimalInfeasible();
    }
    return res;
  }

  CbcModel model(si);
  CbcSolverUsefulData data;
  CbcMain0(model, data);
  data.noPrinting_ = !params.log;
  data.useSignalHandler_ = false;
  model.setMaximumSavedSolutions(params.max_saved_solutions);
  // Priorities (CBC: smaller number = branched on first).
  {
    std::vector<int> prio;
    bool any = false;
    for (const auto& c : m.columns())
      if (c.integer) {
        prio.push_back(c.priority);
        any = any || c.priority != 1000;
      }
    if (any) {
      model.findIntegers(true);
      model.passInPriorities(prio.data(), false);
    }
  }
  // Best feasible start.
  const std::vector<double>* start = nullptr;
  double start_obj = kInf;
  for (const auto& s : params.starts) {
    if (static_cast<int>(s.size()) != ncols || m.violation(s) > 1e-6) continue;
    double obj = 0;
    for (int i = 0; i < ncols; ++i) obj += m.columns()[i].objective * s[i];
    if (obj < start_obj) {
      start_obj = obj;
      start = &s;
    }
  }
  if (start) {
    std::vector<std::pair<std::string, double>> mip;
    for (int i = 0; i < ncols; ++i) mip.emplace_back(m.columns()[i].name, (*start)[i]);
    model.setMIPStart(mip);
  }
  std::string sec = std::to_string(std::max(0.01, params.time_limit_s));
  std::vector<const char*> argv = {"preflight", "-sec", sec.c_str(), "-timeMode", "elapsed"};
  if (!params.log) {
    argv.push_back("-log");
    argv.push_back("0");
    argv.push_back("-slog");
    argv.push_back("0");
  }
  argv.push_back("-solve");
  argv.push_back("-quit");
  CbcMain1(
      static_cast<int>(argv.size()), argv.data(), model, [](CbcModel*, int) { return 0; }, data);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.nodes = model.getNodeCount();
  res.proven_infeasible = model.isProvenInfeasible();
  res.stopped_on_time = model.isSecondsLimitReached();
  if (model.bestSolution()) {
    res.has_solution = true;
    res.solution.assign(model.bestSolution(), model.bestSolution() + ncols);
    res.objective = model.getObjValue();
    res.proven_optimal = model.isProvenOptimal() && !res.stopped_on_time;
    for (int i = 1; i < model.numberSavedSolutions(); ++i) {
      const double* s = model.savedSolution(i);
      if (s) res.pool.emplace_back(s, s + ncols);
    }
  }
  res.bound = model.getBestPossibleObjValue();
  if (res.proven_optimal) res.bound = std::max(res.bound, res.objective - 1e-9 * std::abs(res.objective));
  return res;
}

}  // namespace preflight::analyzer::balance::lp
