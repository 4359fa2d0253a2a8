#pragma once
/// @file balancer.hpp
/// The whole balancing run: candidates, search, MILP, verification.
///
/// Exact formulation (default):
///  1. the naive strategies — every layer in one recompute class, layers spread evenly — simulated;
///  2. the LP relaxation of the exact MILP (milp.hpp): a lower bound on the makespan, and its
///     solution rounded to whole layers (SAPP-style rounding) as another start;
///  3. simulator-driven local search (local_search.hpp) from the best starts, several seeds;
///  4. CBC branch and bound on the exact MILP, warm-started with the best placement found, when the
///     model is small enough to make progress in the time left (or when `milp_time_s` asks for it);
///     on small layouts it proves optimality.
/// SAPP formulation: SAPP's MILP through CBC, warm-started with the naive strategies, then every
/// integer solution CBC kept is simulated.
/// Either way every candidate is simulated and the answer is the fastest one that fits the memory limit
/// in the simulator, so it is never slower than the best naive strategy that fits.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/balance/milp.hpp"

namespace preflight::analyzer::balance {

struct BalanceOptions {
  Formulation formulation = Formulation::Exact;
  int optimization_level = 1;  ///< SAPP's -O, for the Sapp formulation
  double time_limit_s = 90;    ///< wall-clock budget of the whole run (SAPP's -t)
  std::uint64_t seed = 1;
  int restarts = 6;           ///< local-search runs (different starts and seeds)
  long iterations = 150000;   ///< annealing moves per local-search run
  int kicks = 0;              ///< iterated local search rounds per run (SearchOptions::kicks)
  double memory_penalty = 0;  ///< annealing may leave the memory limit at this cost (SearchOptions)
  double relocate_share = 0.2;  ///< share of relocate-and-repair moves (SearchOptions::relocate_share)
  int threads = 0;              ///< threads for the local-search runs; 0 = the hardware's
  double milp_time_s = -1;    ///< CBC time on the chosen formulation; < 0 = automatic (see file comment)
  bool tighten = true;        ///< tightened formulation (milp.hpp)
  bool representable = true;  ///< SAPP formulation: only yaml-expressible placements (milp.hpp)
  std::filesystem::path dump_lp;
  bool log = false;  ///< CBC's log on stderr
  /// Extra starting placements (e.g. manual strategies), with a name each.
  std::vector<std::pair<std::string, Assignment>> starts;
};

/// A placement with its simulation.
struct Candidate {
  std::string name;
  Assignment assignment;
  SimulationResult sim;
  bool fits = false;
};

struct BalanceResult {
  bool found = false;            ///< some candidate fits the memory limit
  Candidate best;                ///< the answer (when !found: the candidate with the smallest peak)
  std::vector<Candidate> naive;  ///< the naive strategies, simulated
  std::optional<MilpResult> milp;
  /// Lower bound on the makespan of any fitting placement (exact LP relaxation, or CBC's bound when
  /// larger); nullopt when the relaxation has no fitting placement at all.
  std::optional<double> lower_bound_ms;
  bool proven_optimal = false;  ///< the exact MILP proved best.sim.end_time_ms optimal
  long evaluations = 0;         ///< simulations run by the search
  double seconds = 0;
  std::vector<std::string> steps;  ///< what was done, one line each (for --verbose / JSON)

  /// (best makespan - lower bound) / best makespan; 0 when proven optimal, nullopt without a bound.
  std::optional<double> gap() const;
};

/// Runs the balancer.  Throws InputError when the problem fails validate().
BalanceResult balance(const BalanceProblem& problem, const BalanceOptions& options);

/// Simulates one placement under a name.
Candidate evaluate(const BalanceProblem& problem, const ScheduleGraph& graph, std::string name,
                   const Assignment& a);

/// The naive strategies: even layers with every layer in one class, for each class considered by all
/// body kinds, most memory-saving first.
std::vector<std::pair<std::string, Assignment>> naive_strategies(const BalanceProblem& problem);

}  // namespace preflight::analyzer::balance
