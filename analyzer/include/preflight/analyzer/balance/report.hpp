#pragma once
/// @file report.hpp
/// What `preflight balance` prints: the decomposition with its fit per stage, the candidates the
/// simulator scored, the answer with SAPP's bubble table and its "To put in yaml configuration" lines,
/// the bound and gap.  JSON carries the same content with stable keys (times in ms, memories in MB).

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/balance/balancer.hpp"
#include "preflight/analyzer/balance/decompose.hpp"

namespace preflight::analyzer::balance {

struct BalanceReport {
  const BalanceProblem* problem = nullptr;
  const BalanceResult* result = nullptr;
  const Decomposition* decomposition = nullptr;  ///< when the model came from an init yaml
  std::string model_source;                      ///< "init yaml x.yaml", "layer json y.json", "cost model"
  std::string times_source;                      ///< "time_config", "--times", …
  std::vector<Candidate> manual;                 ///< -manual strategies (simulated with their own chunks)
  std::vector<std::pair<std::string, std::string>> svg_files;  ///< (what, path)
  bool show_naive = false;                                     ///< -naive: print the naive strategies in full
  bool verbose = false;                                        ///< print the solver steps
  Formulation formulation = Formulation::Exact;
  std::vector<std::string> notes;  ///< printed under the model (e.g. seqpipe adjustments)
};

/// SAPP's bubble block for one simulation (`PipelineSimulator.print_info`, colours stripped):
///     ————————————— pp:16, vp: 3, micro: 16 ————————————
///     --------------------  bubble  --------------------
///        real    =   ideal   +   imba    + recompute
///       0.5318   =  0.3125   +  0.1266   +  0.0927
///     --------------------  memory  --------------------
///     peak memory: 50745.00, 54270.00, …
std::string sapp_bubble_block(const PipelineConfig& pipeline, const SimulationResult& sim);

/// SAPP's "To put in yaml configuration:" block (tab-indented, lists of lists per chunk), preceded by
/// "layer-to-stage assignment baseline is" with the L / (S·V) baseline.
std::string sapp_yaml_block(const BalanceProblem& problem, const Assignment& a);

/// The same placement as Megatron-LM flags.  `layout` is `--pipeline-model-parallel-layout` (Megatron-core
/// >= 0.13, megatron/core/transformer/pipeline_parallel_layer_layout.py): one segment per virtual stage,
/// split by '|', VPP rank 0 over all PP ranks first (segment v*S + s is chunk v of stage s); 'E' (embedding)
/// opens the first segment, 't' is one decoder layer of any body kind, 'L' (loss) closes the last; runs of
/// equal segments are written `(seg|)*k,` (Megatron drops commas).  `recompute_args` are the recompute
/// flags when one setting for every virtual stage says the answer's recompute (`--recompute-granularity
/// full --recompute-method block --recompute-num-layers N`: the first N layers of each chunk; or
/// `selective` on every layer); otherwise empty, and `note` says why (per-chunk counts, comm recompute).
struct MegatronForm {
  std::string layout;
  std::vector<std::string> recompute_args;
  std::string note;
};
MegatronForm megatron_form(const BalanceProblem& problem, const Assignment& a);

std::string render_balance_text(const BalanceReport& report);
nlohmann::json balance_json(const BalanceReport& report);

/// The decomposition alone (for `-exec false` and the report): terms, method, fit per stage.
std::string render_decomposition_text(const Decomposition& d);
nlohmann::json decomposition_json(const Decomposition& d);

}  // namespace preflight::analyzer::balance
