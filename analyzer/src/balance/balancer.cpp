#include "preflight/analyzer/balance/balancer.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>

#include "preflight/analyzer/balance/local_search.hpp"

namespace preflight::analyzer::balance {

std::optional<double> BalanceResult::gap() const {
  if (!found) return std::nullopt;
  if (proven_optimal) return 0.0;
  if (!lower_bound_ms) return std::nullopt;
  const double t = best.sim.end_time_ms;
  return t > 0 ? std::max(0.0, (t - *lower_bound_ms) / t) : 0.0;
}

Candidate evaluate(const BalanceProblem& problem, const ScheduleGraph& graph, std::string name,
                   const Assignment& a) {
  Candidate c;
  c.name = std::move(name);
  c.assignment = a;
  c.sim = simulate(graph, chunk_costs(problem, a));
  c.fits = c.sim.fits(problem.memory_limit_mb);
  return c;
}

std::vector<std::pair<std::string, Assignment>> naive_strategies(const BalanceProblem& problem) {
  std::vector<Recompute> classes;
  for (Recompute r : kAllRecompute) {
    bool all = true;
    for (const auto& b : problem.model.bodies) all = all && b.considered(r);
    if (all) classes.push_back(r);
  }
  // Most memory-saving first (by the first kind's activation).
  const BodyKind& b0 = problem.model.bodies.front();
  std::stable_sort(classes.begin(), classes.end(),
                   [&](Recompute a, Recompute b) { return b0.activation(a) < b0.activation(b); });
  std::vector<std::pair<std::string, Assignment>> out;
  for (Recompute r : classes)
    out.emplace_back(std::string("naive: all ") + recompute_name(r), uniform_assignment(problem, r));
  if (classes.empty()) out.emplace_back("naive: lightest classes", naive_all_recompute(problem));
  return out;
}

namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(double v, int digits = 2) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(digits);
  o << v;
  return o.str();
}

// Strictly better for the answer: fitting beats not fitting; then faster; then less recompute.
bool better(const Candidate& a, const Candidate& b, const BalanceProblem& problem) {
  if (a.fits != b.fits) return a.fits;
  if (!a.fits) return a.sim.max_peak_mb() < b.sim.max_peak_mb() - 1e-9;
  const auto ca = chunk_costs(problem, a.assignment), cb = chunk_costs(problem, b.assignment);
  return placement_score(a.sim.end_time_ms, ca) < placement_score(b.sim.end_time_ms, cb) - 1e-9;
}

// The exact MILP is worth running when CBC can search it in the time given: small layouts.  Measured
// on this project's cases: ≤ 200 rows proves optimality in seconds; the 3 770-row Llama 175B model
// (S 16, V 3, m 16) does not finish its root node in 10 s.
constexpr int kAutoMilpRows = 400;

// The local-search runs take turns over this many of the best distinct starts.
constexpr std::size_t kStartsSearched = 3;

}  // namespace

BalanceResult balance(const BalanceProblem& problem, const BalanceOptions& options) {
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  problem.validate();
  const ScheduleGraph graph(problem.pipeline);
  BalanceResult res;
  std::vector<Candidate> pool;
  auto consider = [&](Candidate c) {
    if (!check_assignment(problem, c.assignment).empty()) return;
    pool.push_back(std::move(c));
  };

  for (const auto& [name, a] : naive_strategies(problem)) {
    Candidate c = evaluate(problem, graph, name, a);
    res.naive.push_back(c);
    consider(c);
  }
  for (const auto& [name, a] : options.starts) consider(evaluate(problem, graph, name, a));
  if (auto a = memory_aware_start(problem, graph))
    consider(evaluate(problem, graph, "memory-aware start", *a));

  // The LP relaxation of the exact model: the lower bound for the gap, and one more start.
  auto record_lp = [&](const std::optional<LpRelaxation>& relax) {
    if (relax) {
      res.lower_bound_ms = relax->bound_ms;
      res.steps.push_back("LP relaxation of the exact model: makespan >= " + fmt(relax->bound_ms) + " ms (" +
                          fmt(relax->seconds) + " s)");
    } else {
      res.steps.push_back("LP relaxation of the exact model: no fractional placement fits the memory limit");
    }
  };

  if (options.formulation == Formulation::Sapp) {
    const auto relax = exact_lp_relaxation(problem, graph);
    record_lp(relax);
    if (relax) consider(evaluate(problem, graph, "LP relaxation, rounded", relax->rounded));
    MilpOptions mo;
    mo.formulation = Formulation::Sapp;
    mo.optimization_level = options.optimization_level;
    mo.time_limit_s =
        options.milp_time_s >= 0 ? options.milp_time_s : std::max(0.1, options.time_limit_s - elapsed());
    mo.dump_lp = options.dump_lp;
    mo.log = options.log;
    mo.tighten = options.tighten;
    mo.representable = options.representable;
    for (const auto& c : pool) mo.starts.push_back(c.assignment);
    MilpResult mr = solve_milp(problem, graph, mo);
    res.steps.push_back("SAPP MILP (" + std::to_string(mr.rows) + " rows, " + std::to_string(mr.columns) +
                        " columns): " + mr.status() + " in " + fmt(mr.seconds) + " s, objective " +
                        fmt(mr.objective, 3) + ", bound " + fmt(mr.bound, 3));
    // What MindFormers runs is the yaml: select-only + comm-only pairs (possible without the representability
    // constraints, as in SAPP) read back as both + none.
    if (mr.has_solution) {
      consider(evaluate(problem, graph, "SAPP MILP", yaml_normalized(mr.best)));
      int i = 0;
      for (const auto& a : mr.pool)
        consider(evaluate(problem, graph, "SAPP MILP solution " + std::to_string(++i), yaml_normalized(a)));
    }
    res.milp = std::move(mr);
  } else {
    // The LP is solved on its own thread while the local searches from the other starts run; the runs
    // that start from its rounded placement wait for it.  Runs are assigned to starts by index only, so
    // the answer does not depend on the thread count unless the time budget cuts a run short.
    std::shared_future<std::optional<LpRelaxation>> lp =
        std::async(std::launch::async, [&] { return exact_lp_relaxation(problem, graph); }).share();
    // Starts: the best distinct candidates so far, then the rounded LP placement.
    std::vector<std::pair<std::string, Assignment>> starts;
    {
      std::vector<const Candidate*> sorted;
      for (const auto& c : pool) sorted.push_back(&c);
      std::stable_sort(sorted.begin(), sorted.end(),
                       [&](const Candidate* a, const Candidate* b) { return better(*a, *b, problem); });
      for (const Candidate* c : sorted) {
        bool dup = false;
        for (const auto& st : starts) dup = dup || st.second == c->assignment;
        if (!dup && starts.size() + 1 < kStartsSearched) starts.emplace_back(c->name, c->assignment);
      }
    }
    const std::size_t slots = starts.size() + 1;  // the last slot is the LP's
    auto lp_start = [&]() -> std::optional<Assignment> {
      const auto& relax = lp.get();
      if (!relax) return std::nullopt;
      for (const auto& st : starts)
        if (st.second == relax->rounded) return std::nullopt;
      return relax->rounded;
    };
    const double search_budget = std::max(0.05, 0.6 * (options.time_limit_s - elapsed()));
    const int runs = std::max(0, options.restarts);
    int threads = options.threads > 0 ? options.threads
                                      : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    threads = std::max(1, std::min(threads, runs));
    const int waves = (runs + threads - 1) / threads;
    std::vector<SearchResult> results(static_cast<std::size_t>(runs));
    std::vector<SearchOptions> run_options(static_cast<std::size_t>(runs));
    std::vector<std::string> run_start(static_cast<std::size_t>(runs));
    std::vector<int> order;  // runs from the LP's slot last
    for (int pass = 0; pass < 2; ++pass)
      for (int i = 0; i < runs; ++i)
        if ((static_cast<std::size_t>(i) % slots == slots - 1) == (pass == 1)) order.push_back(i);
    for (int i = 0; i < runs; ++i) {
      SearchOptions& so = run_options[static_cast<std::size_t>(i)];
      so.seed = options.seed + static_cast<std::uint64_t>(i);
      so.iterations = options.iterations;
      so.kicks = options.kicks;
      so.memory_penalty = options.memory_penalty;
      so.relocate_share = options.relocate_share;
      so.time_limit_s = search_budget / std::max(1, waves);
    }
    {
      std::atomic<int> next{0};
      std::mutex error_mutex;
      std::exception_ptr error;  // the first exception of a run (or of the LP), rethrown after the join
      auto worker = [&] {
        try {
          for (int k; (k = next.fetch_add(1)) < runs;) {
            const auto i = static_cast<std::size_t>(order[static_cast<std::size_t>(k)]);
            std::optional<Assignment> from;
            if (i % slots == slots - 1 && (from = lp_start())) {
              run_start[i] = "LP relaxation, rounded";
            } else if (!starts.empty()) {
              const auto& st = starts[i % slots == slots - 1 ? i % starts.size() : i % slots];
              run_start[i] = st.first;
              from = st.second;
            } else {
              continue;  // nothing to start from
            }
            results[i] = improve_placement(problem, graph, *from, run_options[i]);
          }
        } catch (...) {
          std::lock_guard<std::mutex> lock(error_mutex);
          if (!error) error = std::current_exception();
          next = runs;  // the other threads take no more runs
        }
      };
      std::vector<std::thread> pool_threads;
      for (int t = 1; t < threads; ++t) pool_threads.emplace_back(worker);
      worker();
      for (auto& t : pool_threads) t.join();
      if (error) std::rethrow_exception(error);
    }
    record_lp(lp.get());
    if (lp.get()) consider(evaluate(problem, graph, "LP relaxation, rounded", lp.get()->rounded));
    std::vector<Candidate> found;
    for (int i = 0; i < runs; ++i) {
      const auto u = static_cast<std::size_t>(i);
      if (run_start[u].empty()) continue;
      const SearchResult& sr = results[u];
      res.evaluations += sr.evaluations;
      found.push_back(evaluate(
          problem, graph,
          "local search from " + run_start[u] + " (seed " + std::to_string(run_options[u].seed) + ")",
          sr.best));
      res.steps.push_back(found.back().name + ": " +
                          (sr.fits ? fmt(sr.makespan_ms) + " ms" : std::string("does not fit")) + ", " +
                          std::to_string(sr.evaluations) + " simulations, " + fmt(sr.seconds) + " s");
    }
    if (runs > 0)
      res.steps.push_back(std::to_string(runs) + " local-search runs on " + std::to_string(threads) +
                          " thread(s), next to the LP");
    for (auto& c : found) consider(std::move(c));

    // Exact MILP, warm-started.
    const double left = options.time_limit_s - elapsed();
    double milp_time = options.milp_time_s;
    if (milp_time < 0) {
      // Rows of the exact model: precedences ≈ 2 per block plus memory patterns.
      std::size_t rows = 2 * graph.blocks().size();
      for (int s = 0; s < problem.pipeline.stages; ++s) rows += graph.live_patterns(s).size();
      milp_time = rows <= kAutoMilpRows ? std::max(0.0, left) : 0.0;
      if (milp_time == 0)
        res.steps.push_back("exact MILP skipped: about " + std::to_string(rows) +
                            " rows, too large for branch and bound "
                            "in the time left (use --milp-time to force)");
    }
    if (milp_time > 0 || !options.dump_lp.empty()) {
      MilpOptions mo;
      mo.formulation = Formulation::Exact;
      mo.time_limit_s = std::max(0.01, milp_time);
      mo.dump_lp = options.dump_lp;
      mo.log = options.log;
      mo.tighten = options.tighten;
      const Candidate* best = nullptr;
      for (const auto& c : pool)
        if (!best || better(c, *best, problem)) best = &c;
      if (best) mo.starts.push_back(best->assignment);
      if (milp_time <= 0) mo.time_limit_s = 0.01;  // only dumping
      MilpResult mr = solve_milp(problem, graph, mo);
      res.steps.push_back("exact MILP (" + std::to_string(mr.rows) + " rows, " + std::to_string(mr.columns) +
                          " columns): " + mr.status() + " in " + fmt(mr.seconds) + " s, bound " +
                          fmt(mr.bound));
      if (mr.has_solution) consider(evaluate(problem, graph, "exact MILP", mr.best));
      if (mr.has_solution && res.lower_bound_ms && mr.bound > *res.lower_bound_ms)
        res.lower_bound_ms = mr.bound;
      if (mr.proven_infeasible) res.lower_bound_ms.reset();
      res.milp = std::move(mr);
    }
  }

  // The answer.
  const Candidate* best = nullptr;
  for (const auto& c : pool)
    if (!best || better(c, *best, problem)) best = &c;
  if (best) {
    res.best = *best;
    res.found = best->fits;
  }
  if (res.found && res.milp && res.milp->proven_optimal && options.formulation == Formulation::Exact) {
    // The MILP optimum includes the 1e-4 tie-break: the best simulated makespan matches it.
    res.proven_optimal = res.best.sim.end_time_ms <= res.milp->objective + 1e-6;
  }
  if (res.found && res.lower_bound_ms && *res.lower_bound_ms > res.best.sim.end_time_ms)
    res.lower_bound_ms = res.best.sim.end_time_ms;  // rounding noise of the LP
  res.seconds = elapsed();
  return res;
}

}  // namespace preflight::analyzer::balance
