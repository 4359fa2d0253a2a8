#pragma once
/// @file guide.hpp
/// Dryrun guide (`--guide`): which layer offsets and recompute counts to dryrun so that the memory
/// decomposition (decompose.hpp) can identify every term, in the fewest rounds.  SAPP's version is
/// mindformers `toolkit/pipeline_balance/utils/config.py` `generate_solvable_config` (notes/sapp.md §5b).
///
/// Unknowns: c, P and a_r for every class considered (NONE always): U + 2.  Each round (one dryrun of
/// the whole pipeline) gives S - 2 body-stage equations, so rounds = ceil((U + 2) / (S - 2)).  Offsets
/// and recompute counts are drawn at random (seeded) until the body-stage matrix of *all* rounds, built
/// exactly as the decomposition builds it (NONE = the rest of the stage's layers), has full column rank
/// and the stages do not all hold the same number of layers.  Fixes over SAPP: seeded, NONE taken as the
/// true remainder in the rank check (SAPP checks a random count), a clear error for S < 4 (with one body
/// stage the system is singular whatever the counts: SAPP rejects S = 2 and loops forever on S = 3), and
/// L = S falls back to a plan without the constant term, U + 1 unknowns (SAPP loops forever).

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/balance/recompute.hpp"

namespace preflight::analyzer::balance {

/// One dryrun round: the MindFormers settings per stage.
struct DryrunRound {
  std::vector<int> offset;                 ///< layers of stage i = L / S + offset[i]
  std::vector<int> recompute;              ///< yaml `recompute` (full) per stage
  std::vector<int> select_recompute;       ///< yaml `select_recompute` per stage
  std::vector<int> select_comm_recompute;  ///< yaml `select_comm_recompute` per stage
};

struct DryrunPlan {
  int stages = 0;
  int layers = 0;
  std::vector<Recompute> classes;  ///< considered classes, NONE included
  bool with_constant = true;       ///< false only when L == S (every stage one layer)
  std::uint64_t seed = 0;
  int attempts = 0;  ///< random draws until a solvable plan was found
  std::vector<DryrunRound> rounds;
};

/// Builds a plan.  `recompute` lists the classes besides NONE (Select, Comm, Both, Full; duplicates
/// ignored).  Throws InputError naming "--stages"/"--layers"/"--recompute" when no solvable plan exists:
/// S < 4, L < S, or too few layers per stage to tell the classes apart.
DryrunPlan plan_dryrun(int stages, int layers, std::vector<Recompute> recompute, std::uint64_t seed);

/// The plan as text: per round the MindFormers yaml settings, then an init yaml to fill in with the
/// dryrun peaks (`preflight logs dryrun --sapp` per round) and the times.
std::string render_plan_text(const DryrunPlan& plan);
/// The init yaml skeleton alone (memories as 0 placeholders, which read_init_config rejects until filled).
std::string plan_init_yaml(const DryrunPlan& plan);
nlohmann::json plan_json(const DryrunPlan& plan);

/// Parses a recompute list "full,select,comm,both" (also "none", ignored).  Throws InputError(flag, …).
std::vector<Recompute> parse_recompute_list(const std::string& text, const std::string& flag);

}  // namespace preflight::analyzer::balance
