#pragma once
/// @file milp.hpp
/// Integer programs for the placement, solved with COIN-OR CBC through its C++ library.
///
/// Two formulations over the same integer variables x[kind][class][chunk][stage] (layers of a body kind
/// and recompute class in a chunk of a stage):
///
/// **Exact** (default): the simulator written as constraints.  For the fixed block order of the schedule
/// (ScheduleGraph), one continuous end time per block:
///     t_b ≥ t_left(b) + d_b,   t_b ≥ t_pre(b) + d_b,   makespan ≥ t_last(stage)
/// with d_b the block's forward or backward time (linear in x); and for every stage and every pattern of
/// in-flight micro batches that occurs in the schedule (ScheduleGraph::live_patterns):
///     c + head/tail + Σ x·P + Σ_v count_v · Σ x·a ≤ limit.
/// Minimising the makespan (plus 1e-4 × recompute time as tie-break) therefore minimises exactly the
/// simulator's iteration time, i.e. the real bubble, under exactly the simulator's memory peaks.
///
/// **Sapp**: SAPP's surrogate model (mindformers `toolkit/pipeline_balance/sapp/sapp_solver.py`,
/// notes/sapp.md §7): max-stage-time terms (cases A and B, `-O` 0/1/2 with approach A's diagonal terms),
/// memory with SAPP's activation multiplicities and its memory-overhead term when m ≠ S.  Its optimum is
/// not the simulator's optimum; use it to reproduce SAPP.
///
/// Both accept start solutions (warm starts, e.g. the naive strategies and local-search results); the best
/// feasible one seeds CBC.  The result carries CBC's bound and the relative gap.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/balance/simulator.hpp"

namespace preflight::analyzer::balance {

enum class Formulation { Exact, Sapp };
const char* formulation_name(Formulation f);

struct MilpOptions {
  Formulation formulation = Formulation::Exact;
  int optimization_level = 1;  ///< SAPP's `-O` (Sapp formulation only)
  double time_limit_s = 90;    ///< CBC wall-clock limit
  std::vector<Assignment> starts;
  std::filesystem::path dump_lp;  ///< write the model in LP format here (`--dump-lp`)
  bool log = false;               ///< CBC's log on stderr
  /// Tighten the formulation: upper bounds on x from the memory limit; for SAPP's model with m == S and
  /// -O 0/1, order interchangeable chunks of a stage (symmetry).  Off reproduces SAPP's model exactly.
  bool tighten = true;
  /// Only placements MindFormers' yaml can express (no chunk with select-only and comm-only layers;
  /// problem.hpp).  Off reproduces SAPP's model, whose answers then read back differently.
  bool representable = true;
};

struct MilpResult {
  bool has_solution = false;
  bool proven_optimal = false;
  bool proven_infeasible = false;
  double objective = 0;  ///< best objective (Exact: ms of makespan + tie-break; Sapp: SAPP's time units)
  double bound = 0;      ///< CBC's best possible objective
  double gap = 0;        ///< (objective - bound) / |objective|; 0 when proven optimal
  long nodes = 0;
  double seconds = 0;
  int rows = 0, columns = 0, integers = 0;
  Assignment best;
  std::vector<Assignment> pool;  ///< further integer solutions CBC kept
  std::string status() const;    ///< "optimal", "stopped (gap …)", "infeasible", "no solution"
};

/// Builds and solves the formulation.  Throws InputError for a problem that fails validate().
MilpResult solve_milp(const BalanceProblem& problem, const ScheduleGraph& graph, const MilpOptions& options);

/// LP relaxation of the exact formulation (objective: makespan only).
struct LpRelaxation {
  double bound_ms = 0;  ///< lower bound on the makespan of any placement that fits the memory limit
  Assignment rounded;   ///< the fractional placement rounded to whole layers (largest remainders); it
                        ///< need not fit the memory limit
  double seconds = 0;
};
/// nullopt when even the relaxation has no fitting placement (then no placement fits).
std::optional<LpRelaxation> exact_lp_relaxation(const BalanceProblem& problem, const ScheduleGraph& graph);

/// SAPP's objective for a given placement (its LP with x fixed), or nullopt when the placement breaks
/// SAPP's memory constraints.
std::optional<double> sapp_objective(const BalanceProblem& problem, const Assignment& a,
                                     int optimization_level);

}  // namespace preflight::analyzer::balance
