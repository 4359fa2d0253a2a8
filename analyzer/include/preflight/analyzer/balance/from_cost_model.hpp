#pragma once
/// @file from_cost_model.hpp
/// The balancer's layer model built from the cost model (cost/estimate.hpp) instead of dryruns and
/// profiles: `preflight balance --model M --strategy S --system Y`.
///
/// The cost model is run once per recompute class the Megatron strategy can express per layer (none;
/// full = RecomputeScope::FullBlock of every layer; select = RecomputeScope::SdpOnly of every layer,
/// Megatron's selective `core_attn`).  From one transformer layer of each run (LayerEstimate):
///   forward time      F   = forward compute + its collectives, ms per micro batch
///   backward time     B_r = backward + recompute (+ their collectives) of the class-r run, ms
///   parameter memory  P   = weights + gradients + optimizer states of the layer, MiB
///   activation        a_r = bytes kept per micro batch by the layer in the class-r run, MiB
/// Head (embedding, SAPP "HEAD") and tail (final norm + output layer + loss, SAPP "TAIL") forward times
/// come from the first and last chunk.  SAPP's communication recompute classes (comm, both) have no
/// Megatron counterpart and are not considered.
///
/// The constant c and the head/tail memories H and T are *fitted* the way SAPP fits them to dryrun
/// peaks (notes/sapp.md §6), but to the cost model's per-stage peaks (`StageEstimate::peak_bytes`,
/// allocated memory) of the strategy's own layout without recompute: our simulator's peak of that
/// layout with c = H = T = 0 is subtracted from the cost model's peak of the middle stage (c), the
/// first stage (H, which includes c) and the last stage (T, includes c).  So the balancer reproduces
/// the cost model's peaks exactly on that layout; the transient peak of one micro batch and the
/// per-stage buffers go into c.  Pipeline send/receive times are not modelled (SAPP does not either).
///
/// Units: MiB (as SAPP's MB), ms.

#include <string>
#include <vector>

#include "preflight/analyzer/balance/problem.hpp"
#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer::balance {

struct CostModelBalanceInput {
  LayerModel model;
  PipelineConfig pipeline;  ///< S = pp, V = vpp, m = micro batches per iteration of the strategy
  /// Device memory the cost model allows for allocated memory: device memory · allocated/reserved
  /// ratio (SimuMax `mem_factor`), MiB.  The default `-mem`.
  double device_limit_mb = 0;
  /// The cost model's allocated peak per stage for the strategy's layout and recompute, MiB (size S;
  /// SimuMax's middle stage stands for stages 1…S-2).
  std::vector<double> strategy_peak_mb;
  double strategy_iteration_ms = 0;  ///< the cost model's iteration time for the strategy as given
  std::vector<std::string> notes;
};

/// Builds the balancer input from the cost model (rules in the file comment).  Layer placement and
/// recompute of `strategy` are ignored (the balancer chooses them) except for the reported
/// strategy_peak_mb / strategy_iteration_ms.
/// @throws InputError from the cost model (sizes, networks), or naming `--model` when the layers are
///         neither of one kind nor dense-then-MoE, or `--strategy` when m < pp.
CostModelBalanceInput balance_input_from_cost_model(const ModelSpec& model, const Strategy& strategy,
                                                    const SystemSpec& system, const std::string& name);

/// The same for a MindFormers training yaml (`preflight balance --config X.yaml`), with MindFormers'
/// recompute classes: select = select_recompute's default patterns (the MLP activation and gate multiply,
/// Strategy::LayerRecomputeChoice module "mlp_act"), comm = select_comm_recompute's `.*\.norm` ("layernorm"),
/// both = the two together, full.  Times, the none/full activations, c, H and T come from
/// balance_input_from_cost_model() on the yaml's layout without recompute (the even split when the layers
/// divide over pp·V); the select/comm/both activations are the none activation scaled by the layer graph's
/// ratio (layer_graph.hpp: kept bytes of one layer under that class / without recompute); their backward
/// times use SAPP's default coefficients.
/// @throws InputError as balance_input_from_cost_model().
CostModelBalanceInput balance_input_from_mindformers(const ModelSpec& model, const Strategy& yaml_strategy,
                                                     const SystemSpec& system, const std::string& name);

}  // namespace preflight::analyzer::balance
