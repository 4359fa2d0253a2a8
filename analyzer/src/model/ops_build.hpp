#pragma once
// Private to the layer graph: how each family of ops is built (ops_common.cpp: norms, linears, residual
// adds, activations; ops_attention.cpp; ops_mlp.cpp: dense and MoE MLPs; ops_embedding_head.cpp:
// embedding, head, loss, multi-token prediction; recompute.cpp; torch_cpu_transients.cpp), assembled into
// chunks by layer_graph.cpp.  Notation of Korthikanti et al. 2022 on one rank (layer_graph.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"

namespace preflight::analyzer::graph_ops {

using I64 = std::int64_t;

/// torch.get_rng_state() on CPU: the mt19937 generator state as a 5056-byte tensor, which
/// torch.utils.checkpoint keeps per checkpointed call (preserve_rng_state).
constexpr I64 kTorchCpuRngStateBytes = 5056;

/// Sizes shared by all ops of one build: the notation of Korthikanti et al. 2022 on one rank.
struct Ctx {
  const ModelSpec& m;
  const Strategy& st;
  I64 a;       // activation element bytes (compute precision)
  I64 lin_a;   // bytes of a linear's saved input per element, as lin_a / lin_a_den (1 with fp8 GEMMs)
  I64 b;       // micro batch
  I64 s;       // sequence length (full)
  I64 s_loc;   // sequence on this cp rank
  I64 tok;     // b · s_loc
  I64 tok_sp;  // tokens held outside TP regions: tok / tp with sequence parallelism
  I64 h;
  int t;                   // tp
  bool sp;                 // sequence parallel active (tp > 1)
  I64 vocab;               // padded vocab
  int vt = 1;              // tp ranks the vocabulary is split over (1 when the embedding is replicated)
  bool torch_cpu = false;  // Strategy::transformer_impl == TorchCpu
  I64 lin_a_den = 1;       // 16 with NVFP4 GEMMs (lin_a 9: Strategy::lowp_bytes_fraction)
  /// Bytes of a linear's saved input of `numel` elements.
  I64 lin_bytes(I64 numel) const { return numel * lin_a / lin_a_den; }
};

Ctx make_ctx(const ModelSpec& model, const Strategy& st);

// --- ops_common.cpp --------------------------------------------------------------------------------
/// Sets op.kept (and kept_bytes) to `kept`.
void set_kept(Op& op, std::vector<SavedTensor> kept);
/// kept = saved for every op (no recompute).
void finish_kept(std::vector<Op>& ops);
/// Strategy::precision_overrides on freshly built ops (before finish_kept): each linear of a quantized layer
/// whose module path — the transformer layer renumbered `local_index` when ≥ 0 — first matches a 16-bit
/// matcher gets Op::sixteen_bit and its saved input at 16 bits.
void apply_precision_overrides(const Ctx& c, std::vector<Op>& ops, int local_index);
/// LoRA (ModelSpec::lora) on one decoder layer's ops, before finish_kept(): every parameter frozen; a frozen
/// linear keeps no input and runs no weight-gradient GEMM; a targeted one gains its adapter's weights
/// (lora_a [rank, in], lora_b [out, rank], split over tp), keeps the adapter's 16-bit input and rank-wide
/// intermediate, and the adapter's FLOPs.  No-op without LoRA.
void apply_lora(const Ctx& c, std::vector<Op>& ops);
/// LoRA: the parameters of these ops (embedding, head) frozen.  No-op without LoRA.
void freeze_params(const Ctx& c, std::vector<Op>& ops);
ParamTensor param(std::string name, std::vector<I64> local, std::vector<I64> full, bool replicated = false,
                  bool expert = false);
/// Forward FLOPs of a [tokens, in] × [in, out] GEMM and the same for both backward GEMMs.
void linear_flops(Op& op, I64 tokens, I64 in, I64 out);
/// LayerNorm / RMSNorm over `tokens` rows of `width`.
Op make_norm(const Ctx& c, std::string path, OpRole role, int layer, I64 tokens, I64 width);
/// Column-parallel linear: in → out_full (split over tp unless `split` is false), input replicated /
/// SP-sharded.
Op make_column(const Ctx& c, std::string path, OpRole role, int layer, I64 in, I64 out_full, bool bias,
               bool split = true);
/// A linear replicated over tp (TE `parallel_mode="duplicated"`, e.g. MLA's down projections): full
/// weight on every tp rank, run on the rank's own tokens (tok_sp), no tp collective.
Op make_duplicated(const Ctx& c, std::string path, OpRole role, int layer, I64 in, I64 out);
/// Row-parallel linear: in_full (split over tp) → out, output reduced to the replicated / SP stream.
Op make_row(const Ctx& c, std::string path, OpRole role, int layer, I64 in_full, I64 out, bool bias);
/// Bias-dropout-add into the residual stream.
Op make_bda(const Ctx& c, std::string path, OpRole role, int layer);
/// GeLU / SwiGLU over `tokens` rows: in_width → out_width.
Op make_activation(const Ctx& c, std::string path, OpRole role, int layer, I64 tokens, I64 in_width,
                   I64 out_width);

// --- ops_attention.cpp -----------------------------------------------------------------------------
/// The attention block's projections, core attention and output projection (paths under `pre`).
void add_attention(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre);

// --- ops_mlp.cpp -----------------------------------------------------------------------------------
/// fc1, activation, fc2 of width `ffn` (the decoder's MLP, or a MoE layer's shared experts).
void add_dense_mlp(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre, I64 ffn,
                   bool shared_experts = false);
/// Router, shared experts, dispatch, grouped fc1/activation/fc2, combine.
void add_moe_mlp(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre);
/// Ops of transformer layer `layer`, in forward order, before recompute.
std::vector<Op> build_layer(const Ctx& c, int layer);

// --- ops_mamba.cpp ---------------------------------------------------------------------------------
/// A hybrid model's Mamba-2 mixer (paths under `pre`, "decoder.layers.<i>.mixer."): in_proj, the fused
/// convolution + SSD scan, the gated norm, out_proj.
void add_mamba(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre);
/// A gated delta net in a transformer layer's self-attention slot (paths under `pre`,
/// "decoder.layers.<i>.self_attention."): in_proj, the convolution + delta rule, the gated norm, out_proj.
void add_gdn(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre);

// --- ops_embedding_head.cpp ------------------------------------------------------------------------
/// The embedding module's ops appended to `ops`: word embedding (vocab-parallel lookup + its TP reduction)
/// [+ learned position table] [+ dropout], paths under `prefix` ("embedding." on the first stage).
/// `with_weights` = false for a call of an embedding whose weights another op already holds (MTP on the
/// same chunk as the first stage).  `mtp_layer` ≥ 0: the lookup of that MTP layer.
void add_embedding(const Ctx& c, std::vector<Op>& ops, const std::string& prefix, bool with_weights,
                   int mtp_layer = -1);
/// Final norm, output layer and loss of the last stage, kept as saved; then the MTP layers.
/// `has_embedding`: the chunk also holds the first stage's embedding (pp = 1).
void add_head(const Ctx& c, std::vector<Op>& ops, bool has_embedding);

// --- recompute.cpp ---------------------------------------------------------------------------------
/// Applies selective recompute to one layer's ops (Megatron-core `TransformerLayer` recompute modules).
void apply_selective(const Ctx& c, std::vector<Op>& ops);
/// The same with the selective modules given (a layer's own choice, Strategy::per_layer_recompute).
void apply_selective(const Ctx& c, std::vector<Op>& ops, const std::vector<std::string>& modules);
/// Megatron's fine-grained activation offloading (Strategy::offload_modules) on a whole chunk (its layers and
/// MTP layers): the listed modules' saved inputs leave the device between forward and backward, one offload
/// group per module and layer in forward order — the first activation_offload_fraction of them; sets
/// StageGraph::offloaded_bytes and offload_pinned_bytes (the margin's groups).  Applied after recompute.
void apply_offload(const Ctx& c, StageGraph& g);
/// Full recompute of the `i`-th layer of a chunk (Megatron `TransformerBlock._checkpointed_forward`).
void apply_full(const Ctx& c, std::vector<Op>& ops, int i);
/// A checkpoint id not used by `ops` yet.
int next_checkpoint_id(const std::vector<Op>& ops);
/// Numbers the checkpoint calls of selectively recomputed ops: consecutive recomputed ops are one call,
/// ids from `next` on; returns the next free id.
int number_selective_checkpoints(std::vector<Op>& ops, int next);

// --- torch_cpu_transients.cpp ----------------------------------------------------------------------
/// Op::fwd_transient_bytes / bwd_transient_bytes of a TorchCpu chunk.
void set_torch_cpu_transients(const Ctx& c, StageGraph& g);

// --- megatron_transients.cpp -----------------------------------------------------------------------
/// Op::fwd_transient_bytes / bwd_transient_bytes and StageGraph::runtime_buffer_bytes of a MegatronCore
/// chunk.
void set_megatron_transients(const Ctx& c, StageGraph& g);

}  // namespace preflight::analyzer::graph_ops
