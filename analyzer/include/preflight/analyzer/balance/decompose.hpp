#pragma once
/// @file decompose.hpp
/// Peak memory of dryrun stages → per-layer memory terms, exactly as SAPP does it
/// (mindformers `toolkit/pipeline_balance/utils/compute_memory.py`; notes/sapp.md §6).
///
/// A body stage i (0 < i < S-1) with n_i layers, k_{i,r} of them in recompute class r, that reported
/// peak M_i is modelled (1F1B keeps S - i micro batches of activations alive on stage i):
///
///     M_i = c + n_i · P + (S - i) · Σ_r k_{i,r} · a_r
///
/// Unknowns: c (constant per stage), P (parameters per layer), a_r for every class used by any observed
/// stage (NONE always).  U = number of classes, N = number of observations (head and tail included):
///  - N == U + 3: no constant, exact solve of the U + 1 body rows (c reported as absent);
///  - N == U + 4: with constant, exact solve;
///  - N >  U + 4: with constant, least squares;
///  - otherwise an InputError ("3 or 4 more stages than recompute classes").
/// The constant is only fitted when the stages do not all hold the same number of layers; when they all do,
/// c is folded into P (least squares without constant when there are more rows; SAPP refuses such input).
/// Head and tail (SAPP's rule, c deliberately *not* subtracted; means over rounds):
///
///     H = mean(M_0 - n_0 · P - S · Σ_r k_{0,r} a_r)        T = mean(M_{S-1} - n · P - Σ_r k a)
///
/// so H and T include c.  SAPP then adds c to every stage again (double counting on the first and last
/// stage); see BalanceProblem::constant.
///
/// A negative fitted term makes SAPP silently drop that recompute class (a class counts only when its
/// activation is > 0), and a dropped NONE crashes its simulator.  We refuse such a decomposition with the
/// reason unless `allow_negative` is set.

#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/balance/init_config.hpp"
#include "preflight/analyzer/balance/layer_model.hpp"

namespace preflight::analyzer::balance {

enum class DecomposeMethod { ExactNoConstant, ExactWithConstant, LeastSquares, LeastSquaresNoConstant };
const char* decompose_method_name(DecomposeMethod m);

/// How well the fitted terms reproduce one observation.
struct StageFit {
  int round = 0;
  int stage = 0;
  double measured_mb = 0;
  double fitted_mb = 0;  ///< model value with the fitted terms (head/tail: with their mean H/T)
  double residual_mb() const { return measured_mb - fitted_mb; }
};

struct Decomposition {
  int stages = 0;  ///< S of the dryrun
  DecomposeMethod method = DecomposeMethod::ExactWithConstant;
  std::optional<double> const_mb;                       ///< c; absent when not enough stages were given
  double param_mb = 0;                                  ///< P
  PerRecompute<std::optional<double>> activation_mb{};  ///< a_r for the classes that were observed
  double head_mb = 0;                                   ///< H (includes c, see file comment)
  double tail_mb = 0;                                   ///< T (includes c)
  std::vector<StageFit> fits;                           ///< one per observation, in input order
  std::vector<std::string> notes;                       ///< e.g. "least squares over 14 body stages"
};

struct DecomposeOptions {
  bool allow_negative = false;  ///< accept negative P, a_r (SAPP then drops those classes)
};

/// Fits the terms.  `stages` is the dryrun's S.  Throws InputError when the stage count does not match
/// the classes used, the system is singular (e.g. all stages configured alike), or a term is negative
/// (unless allowed); `where` names the input (the init yaml) in messages.
Decomposition decompose_memory(const std::vector<DryrunObservation>& observations, int stages,
                               const DecomposeOptions& options, const std::string& where);

/// SAPP's layer model from a decomposition and head/body/tail times: values truncated to integers as
/// SAPP's `initialize_layer_json` does (`int()`), `nb_layer` = layers, backward times from defaults.
LayerModel layer_model_from_decomposition(const Decomposition& d, const StageTimes& times, int layers,
                                          const std::string& model_name);

}  // namespace preflight::analyzer::balance
