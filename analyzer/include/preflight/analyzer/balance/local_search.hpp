#pragma once
/// @file local_search.hpp
/// Simulator-driven improvement of a placement: simulated annealing over single-layer moves, then a
/// first-improvement descent until no single move helps.  Every candidate is scored by the simulator
/// itself (makespan, peak memory per stage), so what this returns is what `simulate` reports.
///
/// Moves: change the recompute class of one layer; move one layer to another chunk (any stage), keeping
/// or changing its class; relocate one layer and re-choose the classes of both stages (relocate_share).  A
/// move is only taken when every stage still fits the memory limit in the simulator and every chunk keeps ≥ 1
/// layer (body kinds stay in model order).  Score: makespan, then less total recompute time.  Deterministic
/// for a given seed and iteration budget.

#include <cstdint>
#include <optional>

#include "preflight/analyzer/balance/simulator.hpp"

namespace preflight::analyzer::balance {

struct SearchOptions {
  std::uint64_t seed = 1;
  long iterations = 200000;   ///< annealing moves tried (each costs one simulation when memory allows)
  double time_limit_s = 1e9;  ///< wall-clock cap for the whole search
  bool descent = true;        ///< finish with a full first-improvement descent
  /// Annealing temperatures, as fractions of the starting makespan.
  double temperature_start = 0.001;
  double temperature_end = 0.00005;
  /// Iterated local search: after the first anneal, this many rounds of "perturb the best with a few
  /// random moves, anneal briefly at low temperature, descend"; each round gets iterations / (2 · kicks)
  /// moves and the first anneal the other half.
  int kicks = 0;
  /// Once a fitting placement is reached, annealing may leave the memory limit at this cost (ms of
  /// score per MB over the limit); 0 keeps every step within the limit.  Only fitting placements are
  /// ever returned.
  double memory_penalty = 0;
  /// Share of the annealing moves that relocate one layer to another chunk and then re-choose the
  /// recompute classes of the two stages touched (greedy: the cheapest class changes, in backward ms per MB
  /// of peak saved, until the stage fits; then the most backward ms saved per MB added while it fits).
  /// Needed when every stage sits at the memory limit: a plain move must then be paired with class changes.
  /// Measured on SAPP's Llama 175B case with 32 micro batches (bench/balance_vs_sapp.sh): one run from the
  /// LP start reaches bubble 0.60–0.66 with 0.2–0.5, against 0.68–1.10 with 0.
  double relocate_share = 0.2;
};

struct SearchResult {
  Assignment best;
  double makespan_ms = 0;
  bool fits = false;      ///< best fits the memory limit in the simulator
  long evaluations = 0;   ///< simulations run
  long improvements = 0;  ///< times the best was improved
  double seconds = 0;
};

/// Score of a placement: makespan (ms) plus a 1e-4 weight on the total recompute time of one micro batch,
/// so that of two equally fast placements the one that recomputes less wins.
double placement_score(double makespan_ms, const ChunkCosts& costs);

/// A start for the search built around the memory limit (one body kind only, else nullopt): every chunk
/// gets one layer of the lightest class, then each further layer goes to the least loaded stage (forward +
/// backward ms) where it still fits, into the chunk that adds the least peak; finally every fitting stage
/// takes faster classes while it fits (the repair step of relocate_share).  Early stages, which keep
/// more micro batches in flight, end up with fewer layers — the staircase SAPP's MILP finds for m > S.
std::optional<Assignment> memory_aware_start(const BalanceProblem& problem, const ScheduleGraph& graph);

/// Makes `start` fit the memory limit if it does not (greedy: lighter recompute classes, then moving
/// layers off the stages over the limit), then improves it.  When no fitting placement is found,
/// `fits` is false and `best` is the placement with the least memory excess.
SearchResult improve_placement(const BalanceProblem& problem, const ScheduleGraph& graph,
                               const Assignment& start, const SearchOptions& options);

}  // namespace preflight::analyzer::balance
