#pragma once
// Private to the cost model: the leaves SimuMax v1.2 prices, built from the layer graph's ops.
//
// A leaf is one module of SimuMax's tree (`simumax/core/transformer/{dense,moe}_module.py`,
// `function.py`): its memory (weights, grads, optimizer states), activation cache and transient
// peaks, FLOPs and bytes of the three passes, compute and network times.  The graph gives the order,
// the kinds and the geometry (tokens, features, heads, experts on this rank); these files hold the
// per-kind formulas (notes/simumax.md §2.3, §3).
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "preflight/analyzer/cost/primitives.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer::cost::detail {

enum class LeafKind : std::uint8_t {
  Embedding,
  LinearCol,
  LinearRow,
  Norm,
  CoreAttention,
  MlaCoreAttention,
  Rotary,
  Split,
  Concat,
  Add,
  Swiglu,
  Gelu,
  CrossEntropy,
  Router,
  Permutation,
  UnPermutation,
  GroupLinearCol,
  GroupLinearRow,
  Fp8Quantizer,
  BiasDropoutAdd,     ///< Megatron's fused bias-dropout-add (hidden dropout > 0; not in SimuMax)
  PositionEmbedding,  ///< learned absolute position table (GPT; not in SimuMax)
  ExpertsHost,        ///< host time of a MoE layer's routed experts (SystemSpec::moe_host_us_per_expert)
  MambaScan,       ///< a Mamba-2 mixer's fused causal convolution + SSD scan (hybrid models; not in SimuMax)
  GatedDeltaRule,  ///< a gated delta net's convolution, L2 norm, gates and chunked delta rule (not in
                   ///< SimuMax)
  LoraAdapter,  ///< a LoRA adapter beside a frozen linear: x·Aᵀ·Bᵀ added to its output (not in SimuMax)
};

/// The kind's name as SimuMax names the module ("LinearCol", "GroupLinearCol", "CoreAttention", …).
const char* leaf_kind_name(LeafKind kind);

/// Everything the pricing needs besides the leaf: the run's sizes and switches.
struct Ctx {
  const ModelSpec* m = nullptr;
  const Strategy* st = nullptr;
  const SystemSpec* sys = nullptr;
  NetworkChoice nets;
  LayerRecompute rc;
  int tp = 1, cp = 1, pp = 1, ep = 1, etp = 1, dp = 1, edp = 1;
  bool sp = true;  // SimuMax enable_sequence_parallel (also when tp = 1)
  bool fp8 = false;
  bool flash = true;
  double e = 2;          // element bytes of the compute dtype
  // Element bytes of a tensor quantized for the fp8 / fp4 GEMMs (Strategy::lowp_element_bytes).
  double lowp_e = 1;
  double main_grad = 4;  // main-grad element bytes
  int zero = 1;
  /// Strategy::param_bytes > 0 (MindSpore): weight and grad bytes per element, and 8 bytes of Adam moments
  /// (no master copy) instead of 12.
  double param_bytes = 0;
  double state_bytes = 12;
  bool shard_weights = false;  // Strategy::shard_weights: weights sliced like the optimizer states
  bool te_dummy = false, te_grouped_dummy = false, te_cp_saves = false;
  bool megatron_selective = false;  // StrategyConfig.is_megatron_selective_recompute
  bool search_mode = false;         // skip names (paths) for speed

  static Ctx make(const ModelSpec& m, const Strategy& st, const SystemSpec& sys);
};

/// Per-pass results of one leaf or a sum of leaves (SimuMax ModuleComputeInfo + ModuleCostInfo).
struct Pass {
  double fwd_flops = 0, bwd_act_flops = 0, bwd_w_flops = 0, recompute_flops = 0;
  double fwd_bytes = 0, bwd_act_bytes = 0, bwd_w_bytes = 0, recompute_bytes = 0;
  double fwd_ms = 0, bwd_act_ms = 0, bwd_w_ms = 0, recompute_ms = 0;
  double fwd_net_ms = 0, bwd_act_net_ms = 0, bwd_w_net_ms = 0, recompute_net_ms = 0;
  double fwd_ep_net_ms = 0, bwd_ep_net_ms = 0;  // the expert-parallel exchanges inside the two above
  Pass& operator+=(const Pass& o);
};

/// Static memory of one leaf or a sum (SimuMax ModuleMemoryInfo); bytes unless "numel".
struct Mem {
  double weight_numel = 0, moe_weight_numel = 0;  // SimuMax's statistics (× tp, × ep·etp)
  double dense_w = 0, dense_g = 0, dense_s = 0, moe_w = 0, moe_g = 0, moe_s = 0;
  std::set<std::array<std::int64_t, 3>> te_shapes;  // (rows, cols, element bytes)
  Mem& operator+=(const Mem& o);
  double te_bytes() const;
  double total() const { return dense_w + dense_g + dense_s + moe_w + moe_g + moe_s + te_bytes(); }
};

/// ZeRO sharding of parameter memory summed before sharding: dense over dp·cp, expert over edp.
void shard(const Ctx& c, Mem& m);

struct Leaf {
  LeafKind kind = LeafKind::Norm;
  // Geometry as SimuMax sees the leaf's input (elements).
  double b = 0, s = 0;     // batch and sequence (dim 0, 1 of a 3-D input)
  double in = 0, out = 0;  // local input / output features (norm: width)
  double tokens = 0;       // MoE: rows of the expert GEMMs / permuted tokens
  double heads = 0, kv_heads = 0, head_dim = 0, v_dim = 0;
  double keys_per_query = 0;  // core attention: keys each query attends when fewer than the sequence (0: all)
  double experts = 0, local_experts = 0, topk = 0;
  double rank = 0;             // LoRA adapter: its rank (in / out: the base linear's full features)
  double n_in = 0, n_out = 0;  // element counts (activation functions, quantizer)
  double grad_numel = 0;       // quantizer: elements of the output gradient its GEMM quantizes in backward
  double input_bytes = 0;      // SimuMax all_input_element_num: bytes cached when a checkpoint starts here
  double graph_saved_bytes = 0;  // a fused kernel (Mamba scan, delta rule): what its layer-graph op saves
  bool fp8_gemm = false;       // weights / inputs of this linear in fp8
  // A linear of an fp8 / fp4 run that a --te-precision-config-file matcher keeps in 16 bits
  // (Op::sixteen_bit): its GEMMs at the 16-bit rate (the run's other 16-bit linears, the output layer, keep
  // SimuMax's fp8 rate).
  bool gemm_16bit = false;
  // Linear replicated over tp (TE parallel_mode="duplicated": MLA's down projections): full weight,
  // the rank's own tokens, no tp collective of its own.
  bool duplicated = false;
  // Bytes of a slice of this linear's output all-gathered over tp along the sequence after it (MLA's
  // k_pos_emb with sequence parallelism): forward all-gather, backward reduce-scatter.
  double sp_gather_bytes = 0;
  // Recompute and memory flags of the SimuMax module.
  bool recompute = false, has_cached_inputs = false, variance = false, breakpoint = false;
  bool offload_inputs = false, cache_outputs = false, weighted_silu = false;
  bool layer_first = false;  // first leaf of a transformer layer (LLMModel.set_breakpoints)
  // A MoE layer's shared expert: 1 its fc1 side (fc1, its quantizer, the activation), 2 its fc2 side — what
  // --moe-shared-expert-overlap runs beside the dispatch / the combine (names are cleared in searches).
  std::uint8_t shared_expert_side = 0;
  // Results.
  double cache = 0, fwd_peak = 0, bwd_peak = 0;
  Mem mem;  ///< unsharded (see shard())
  Pass pass;
  // Names: attribute path and module path inside the layer ("attention.linear_qkv",
  // " -> (1)Attention -> (0)LinearCol"); dynamic modules (split/concat/add) are named "self".
  std::string name, path;
  bool dynamic = false;
};

/// Recompute flags of one layer (SimuMax parse_attention_recompute / parse_mlp_recompute).
struct LayerRc {
  bool input_ln = false, q_down = false, kv_down = false, q_up = false, kv_up = false, q_ln = false,
       kv_ln = false;
  bool rope = false, core = false, out = false, meg_ln = false, meg_up = false;
  bool pre_ln = false, shared = false, linear = false, router = false, perm = false;
  bool meg_mlp = false, meg_moe = false, meg_moe_act = false;
  bool meg_gdn_norm = false;  ///< Megatron's gdn_norm_out: a gated delta net's out_norm and gate recomputed
};
LayerRc layer_rc(const Ctx& c, int local_index);

/// Graph ops the cost model did not price, one line each: "<path> (<role>): <why>", the layer index in
/// the path written `*` (`decoder.layers.*.self_attn_bda`).
using Unpriced = std::vector<std::string>;

/// Leaves of one transformer layer from the graph's ops (found by OpRole), priced; `rc` from layer_rc().
/// Ops of the layer no leaf prices are appended to `unpriced` (when given).
std::vector<Leaf> layer_leaves(const Ctx& c, const std::vector<Op>& ops, const LayerRc& rc,
                               Unpriced* unpriced = nullptr);
/// Embedding leaves (first chunk) and head leaves (last chunk: final norm, output layer, loss, and each
/// multi-token-prediction layer), priced; unpriced ops as for layer_leaves().
std::vector<Leaf> embedding_leaves(const Ctx& c, const std::vector<Op>& ops, Unpriced* unpriced = nullptr);
std::vector<Leaf> head_leaves(const Ctx& c, const std::vector<Op>& ops, Unpriced* unpriced = nullptr);

}  // namespace preflight::analyzer::cost::detail
