#pragma once
/// @file manual_config.hpp
/// SAPP's manual strategy file (`-manual`, mindformers `toolkit/pipeline_balance/cfgs/manual_demo.yaml`,
/// read by `SappPipeline.simulate_file`): named entries, each a MindFormers recompute layout to simulate.
///
///     manual1:
///       offset: [[…S…] per chunk] | [S ints] | 0
///       recompute: false | true | [S ints] | [[…] per chunk]        # also select_recompute,
///       select_comm_recompute: …                                    # select_comm_recompute
///       interleave_num: 3          # chunks (V); default: the run's -i
///       file_name: "manual1.svg"   # optional; SVG name in the output folder
///
/// `true` means every layer of the chunk; `false`/0/missing none — as SAPP's `internal_from_yaml`.
/// Offsets are relative to L / (S·V) layers per chunk.

#include <filesystem>
#include <string>
#include <vector>

#include "preflight/analyzer/balance/problem.hpp"

namespace preflight::analyzer::balance {

struct ManualStrategy {
  std::string name;
  int chunks = 1;         ///< interleave_num
  Assignment assignment;  ///< for `problem` with pipeline.chunks = chunks
  std::string file_name;  ///< SVG name requested by the file (may be empty)
};

/// Reads every entry.  `problem` gives S, the model and the default interleave.  Throws InputError
/// ("file:line", what) for malformed yaml, wrong list lengths and counts that do not fit a chunk.
std::vector<ManualStrategy> read_manual_strategies(const std::filesystem::path& file,
                                                   const BalanceProblem& problem);

}  // namespace preflight::analyzer::balance
