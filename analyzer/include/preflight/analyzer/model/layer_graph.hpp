#pragma once
/// @file layer_graph.hpp
/// The layer graph: the one description of the network as it runs on one rank of each pipeline stage.
///
/// Built from ModelSpec + Strategy by build_layer_graph().  One StageGraph per (pipeline rank, virtual
/// chunk); each is an ordered list of Ops in forward order, named with Megatron-core module paths
/// (`embedding.word_embeddings`, `decoder.layers.3.self_attention.linear_qkv`, `output_layer`).
/// Every quantity is for ONE micro batch on ONE rank of that stage (tensor / context / expert shards
/// applied).  The Megatron-style tables, the cost model, the SAPP inputs and calibration all read this.
///
/// Activation bookkeeping follows autograd: each op lists the tensors it saves for backward
/// (`saved`), in the convention of Korthikanti et al. 2022 (arXiv 2205.05198 §4, Table 2): a linear
/// saves its input, a norm its input, an activation its input, dropout its 1-byte mask, core attention
/// q/k/v (+ softmax, dropout for math attention; + log-sum-exp for flash).  A tensor shared by two ops
/// (attention output = projection input) is listed once.  `kept_bytes` is what stays allocated after
/// recompute decisions; summing it over a stage gives the activation memory of one micro batch.
///
/// Implementations (Strategy::transformer_impl).  MegatronCore follows the table above.  TorchCpu is the
/// plain-PyTorch eager GPT of examples/torch_cpu_gpt as autograd runs it on CPU (checked against allocation
/// traces of real runs in tests/calibrate), per layer and micro batch, T = b·s tokens, e = activation bytes:
///   input_layernorm / pre_mlp_layernorm: input T·h·e, mean + rstd 2·T·e (CPU keeps them in the input dtype);
///   linear_qkv, linear_proj, linear_fc1, linear_fc2: input;
///   core_attention: contiguous copies of q, k, v in [b·heads, s, d] (k, v repeated over the query heads of
///     their group), T·heads·d·e each; softmax output b·heads·s²·e; with attention dropout its noise and its
///     output, b·heads·s²·e each (CPU dropout multiplies by a noise tensor of the input dtype);
///   self_attn_bda / mlp_bda: dropout noise T·h·e (with hidden dropout);
///   activation_func: GeLU input T·f·e; SwiGLU input T·2f·e and SiLU output T·f·e;
///   embedding: token ids T·8 (tp = 1) or masked ids T·8 + out-of-range mask T (tp > 1), dropout noise T·h·e;
///   loss: fp32 softmax T·V/tp·4, target mask T, masked targets T·8.
/// Selective recompute checkpoints core_attention: it keeps its input (the qkv output) and the CPU RNG state
/// (5056 bytes) instead; full recompute keeps each checkpoint's input and the RNG state.

#include <cstdint>
#include <string>
#include <vector>

#include "preflight/analyzer/model/collective.hpp"
#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"

namespace preflight::analyzer {

enum class OpKind {
  Embedding,            ///< word embedding (vocab-parallel) [+ position embedding]
  PositionEmbedding,    ///< learned absolute position table
  Dropout,              ///< standalone dropout (embedding dropout)
  Norm,                 ///< LayerNorm / RMSNorm
  LinearColumn,         ///< column-parallel linear: out features split over tp
  LinearRow,            ///< row-parallel linear: in features split over tp
  CoreAttention,        ///< softmax(QKᵀ)V, flash or math, heads split over tp
  Activation,           ///< GeLU / SwiGLU (/ squared ReLU)
  BiasDropoutAdd,       ///< residual add (+ bias, + dropout mask when dropout > 0)
  Router,               ///< MoE gate: linear h → E + top-k
  TokenDispatch,        ///< MoE permutation + all-to-all to the expert ranks
  GroupedLinearColumn,  ///< local experts' fc1 (grouped GEMM), out split over etp
  GroupedLinearRow,     ///< local experts' fc2, in split over etp
  TokenCombine,         ///< MoE all-to-all back + un-permutation
  CrossEntropy,         ///< vocab-parallel cross entropy (fp32 softmax)
  /// A Mamba-2 mixer's causal convolution and SSD scan, fused as Megatron trains them
  /// (mamba_split_conv1d_scan_combined): in = in_proj's local output (z, x, B, C, dt), out = d_inner / tp.
  SelectiveScan,
  /// A gated delta net's causal convolution, q / k L2 norm, gates and chunked delta rule (FLA kernels):
  /// in = in_proj's local output (q, k, v, z, beta, alpha), out = v_dim / tp.
  GatedDeltaRule,
};

/// What an op is in the network (its place in Megatron-core's module tree), as opposed to OpKind, the
/// computation it runs.  The cost model, recompute, the transients and calibration dispatch on it; a back
/// end that does not handle a role must say so (the cost model warns, and fails under --strict).
/// Multi-token-prediction layers reuse the roles of the decoder for their transformer layer and the
/// embedding (Op::mtp_layer says which MTP layer) and have Mtp* roles for their own modules.
enum class OpRole : std::uint8_t {
  // Embedding (first stage; also each MTP layer's lookup).
  WordEmbedding,      ///< embedding.word_embeddings: vocab-parallel lookup
  PositionEmbedding,  ///< embedding.position_embeddings: learned absolute table
  EmbeddingDropout,   ///< embedding.embedding_dropout
  // Attention block of a transformer layer.
  InputNorm,      ///< input_layernorm
  Qkv,            ///< self_attention.linear_qkv (fused q, k, v projection)
  QNorm,          ///< self_attention.q_layernorm (per-head, Qwen3-style)
  KNorm,          ///< self_attention.k_layernorm
  QDownProj,      ///< MLA: linear_q_down_proj (replicated over tp)
  QDownNorm,      ///< MLA: q_layernorm on the q latent
  QUpProj,        ///< MLA: linear_q_up_proj
  QProj,          ///< MLA without a q latent: linear_q_proj
  KvDownProj,     ///< MLA: linear_kv_down_proj (replicated over tp)
  KvDownNorm,     ///< MLA: kv_layernorm on the kv latent
  KvUpProj,       ///< MLA: linear_kv_up_proj
  CoreAttention,  ///< self_attention.core_attention: softmax(QKᵀ)V
  AttnProj,       ///< self_attention.linear_proj (row-parallel output projection)
  AttnBda,        ///< self_attn_bda: bias-dropout-add into the residual stream
  PostAttnNorm,   ///< post_attention_layernorm: a norm of the attention's output before the residual add
                  ///< (Gemma)
  // MLP block.
  PreMlpNorm,   ///< pre_mlp_layernorm
  Fc1,          ///< mlp.linear_fc1
  Act,          ///< mlp.activation_func
  Fc2,          ///< mlp.linear_fc2
  MlpBda,       ///< mlp_bda
  PostMlpNorm,  ///< post_feedforward_layernorm: a norm of the MLP's output before the residual add (Gemma)
  // MoE MLP (replaces Fc1/Act/Fc2 on MoE layers).
  Router,      ///< mlp.router: gate h → experts, top-k
  SharedFc1,   ///< mlp.shared_experts.linear_fc1
  SharedAct,   ///< mlp.shared_experts.activation_func
  SharedFc2,   ///< mlp.shared_experts.linear_fc2
  Dispatch,    ///< mlp.token_dispatcher.dispatch: permutation + all-to-all to the experts
  ExpertsFc1,  ///< mlp.experts.linear_fc1 (grouped GEMM)
  ExpertsAct,  ///< mlp.experts.activation_func
  ExpertsFc2,  ///< mlp.experts.linear_fc2 (grouped GEMM)
  Combine,     ///< mlp.token_dispatcher.combine: all-to-all back + un-permutation
  LatentDown,  ///< mlp.fc1_latent_proj: hidden → latent before the dispatch (LatentMoE; duplicated over tp)
  LatentUp,    ///< mlp.fc2_latent_proj: latent → hidden after the combine
  // Head (last stage).
  FinalNorm,    ///< decoder.final_layernorm
  OutputLayer,  ///< output_layer (logits; the word embedding when tied and pp = 1)
  Loss,         ///< vocab-parallel cross entropy
  // Multi-token prediction (last stage), per MTP layer k.
  MtpEmbedding,    ///< mtp.layers.k.embedding.word_embeddings: lookup of the shifted tokens
  MtpENorm,        ///< mtp.layers.k.enorm: norm of the embedding
  MtpHNorm,        ///< mtp.layers.k.hnorm: norm of the previous hidden state
  MtpEhProj,       ///< mtp.layers.k.eh_proj: [enorm, hnorm] (2h) → h
  MtpFinalNorm,    ///< mtp.layers.k.final_layernorm
  MtpOutputLayer,  ///< mtp.layers.k.output_layer: the model's output layer called again (shared weight)
  MtpLoss,         ///< mtp.layers.k.loss
  // Mamba-2 mixer of a hybrid model's 'M' layer (its norm is InputNorm).
  MambaInProj,   ///< mixer.in_proj: h → z, x, B, C, dt (column-parallel)
  MambaScan,     ///< the fused causal convolution + SSD scan (+ z gating)
  MambaNorm,     ///< mixer.norm: the gated RMSNorm over d_inner / tp
  MambaOutProj,  ///< mixer.out_proj: d_inner → h (row-parallel)
  MambaBda,      ///< mamba_bda: the residual add
  // Gated delta net in a transformer layer's self-attention slot (its norm is InputNorm, its residual add
  // AttnBda).
  GdnInProj,   ///< self_attention.in_proj: h → q, k, v, z, beta, alpha (column-parallel)
  GdnRule,     ///< conv1d + L2 norm + gates + chunk_gated_delta_rule
  GdnNorm,     ///< self_attention.out_norm: RMSNorm per value head, gated by SiLU(z)
  GdnOutProj,  ///< self_attention.out_proj: v_dim → h (row-parallel)
};

/// A parameter tensor as held by this rank.
struct ParamTensor {
  std::string name;                      ///< "weight", "bias"
  std::vector<std::int64_t> shape;       ///< local shape after tp/ep sharding, Megatron layout [out, in]
  std::vector<std::int64_t> full_shape;  ///< shape without parallelism
  bool expert = false;                   ///< expert weight (sharded over ep, reduced over expert-dp)
  bool tp_replicated = false;            ///< identical on every tp rank (norm weights, row-linear bias)
  /// Frozen (LoRA's base weights, ModelSpec::lora): held, but no gradient and no optimizer state.
  bool frozen = false;
  std::int64_t numel() const;
  std::int64_t full_numel() const;
};

/// A tensor an op keeps for its backward pass.
struct SavedTensor {
  std::string name;        ///< "input", "mask", "q", "softmax", "lse", ...
  std::int64_t bytes = 0;  ///< bytes on this rank for one micro batch
  /// The op's input activation: allocated by the op before it in forward order (or, for the first op of a
  /// chunk, received from the previous stage / read from the data), not by the op itself.  Lets a
  /// measurement that attributes bytes to the module that allocated them (an allocation trace) be
  /// compared op by op: see Op::kept_input_bytes().
  bool is_input = false;
  /// Module path that allocates it when that is neither the op nor its producer (e.g. the RNG state
  /// torch.utils.checkpoint saves, allocated by the module that calls checkpoint); "" otherwise.
  std::string allocated_by;
};

/// The process group a collective runs in.
enum class ParallelDim { TP, CP, EP, ETP, DP, EDP, PP };
enum class Pass { Forward, Backward };

/// One collective issued by an op (per micro batch) or by a stage (per iteration).
struct CommOp {
  Collective kind = Collective::AllReduce;
  ParallelDim group = ParallelDim::TP;
  Pass pass = Pass::Forward;
  std::int64_t bytes = 0;  ///< payload: the full (gathered / reduced) buffer size on one rank
  int count = 1;           ///< how many times it is issued
  std::string what;        ///< "forward all-reduce of the row-parallel output" ...
};

/// One leaf module in forward order.
struct Op {
  std::string path;  ///< Megatron-core module path
  OpKind kind = OpKind::Norm;
  OpRole role = OpRole::InputNorm;
  int layer = -1;      ///< global transformer layer index (0-based); -1 for embedding / head / MTP
  int mtp_layer = -1;  ///< multi-token-prediction layer (0-based) the op belongs to; -1 otherwise
  bool moe = false;    ///< part of a MoE MLP
  /// A linear of a quantized run that a `--te-precision-config-file` matcher keeps in 16 bits
  /// (Strategy::precision_overrides): its saved input is 16-bit and its GEMMs are priced unquantized.
  bool sixteen_bit = false;

  // Geometry on this rank (elements): tokens entering the op and feature sizes after sharding.
  std::int64_t tokens = 0;        ///< rows processed on this rank: b · s_local (· topk for experts)
  std::int64_t in_features = 0;   ///< local input width
  std::int64_t out_features = 0;  ///< local output width
  int heads = 0, kv_heads = 0;    ///< core attention: local heads
  std::int64_t head_dim = 0, v_head_dim = 0;
  std::int64_t seq = 0;     ///< core attention: local query length (s / cp)
  std::int64_t kv_seq = 0;  ///< core attention: keys each query attends (s; fewer with a sliding window)
  int local_experts = 0;    ///< grouped linears / router: experts on this rank (router: all)

  std::vector<ParamTensor> params;
  std::vector<SavedTensor> saved;  ///< saved for backward without recompute
  std::int64_t input_bytes = 0;    ///< bytes of the op's input activation(s)
  std::int64_t output_bytes = 0;   ///< bytes of its output activation
  std::int64_t kept_bytes = 0;     ///< bytes still allocated after the forward pass, recompute applied
  std::vector<SavedTensor> kept;   ///< the tensors behind kept_bytes (Σ bytes = kept_bytes)
  bool recompute = false;          ///< its forward is re-run in backward (inside a checkpoint)
  int checkpoint = -1;  ///< ops with the same id (≥ 0) are re-run together by one checkpoint call

  // Transient memory, for the peak along the schedule (memory_timeline.hpp).  Modelled for TorchCpu only
  // (0 for MegatronCore).  Bytes on this rank for one micro batch.
  /// Alive at the op's forward peak on top of what the ops up to it keep: outputs not kept for backward
  /// but still referenced (the qkv output until the attention block returns, logits until the loss),
  /// scores before softmax, matmul outputs before a bias add.
  std::int64_t fwd_transient_bytes = 0;
  /// Allocated by the op's backward at its peak, on top of the gradient flowing in: the input gradient,
  /// weight gradients before they are added into main_grad, workspaces (softmax/dropout gradients).
  /// With selective recompute of the op, also the re-run forward's tensors.
  std::int64_t bwd_transient_bytes = 0;

  double fwd_flops = 0;         ///< forward FLOPs (multiply-add = 2)
  double bwd_input_flops = 0;   ///< backward FLOPs for input gradients
  double bwd_weight_flops = 0;  ///< backward FLOPs for weight gradients
  std::vector<CommOp> comms;    ///< per micro batch

  std::int64_t param_numel() const;
  std::int64_t saved_bytes() const;
  /// Part of kept_bytes that is the op's input (SavedTensor::is_input), i.e. allocated upstream.
  std::int64_t kept_input_bytes() const;
};

/// The ops of one model chunk on one pipeline rank.
struct StageGraph {
  int pp_rank = 0;      ///< pipeline stage 0..pp-1
  int vchunk = 0;       ///< virtual chunk 0..vpp-1
  int first_layer = 0;  ///< global index of its first transformer layer
  int num_layers = 0;   ///< transformer layers in this chunk
  bool has_embedding = false;
  bool has_output_layer = false;  ///< final norm + output layer + loss
  std::vector<Op> ops;
  /// Stage-level collectives per micro batch (pipeline send/recv).
  std::vector<CommOp> p2p;
  /// Constant bytes per rank outside any op (runtime buffers), from a calibration file
  /// (calibrate.hpp apply_calibration); 0 otherwise.  Counted once per rank (first chunk).
  double overhead_bytes = 0;
  /// Megatron's persistent buffers on this rank, bytes: the global memory buffer
  /// (`parallel_state.get_global_memory_buffer()`, kept for the whole run at its largest request: the
  /// sequence-parallel all-gather of a column-parallel input, the unfused attention's score matrix).
  /// 0 for TorchCpu.  A rank counts its chunks' largest (stage_memory).
  std::int64_t runtime_buffer_bytes = 0;
  /// Megatron's fine-grained activation offloading: bytes of one micro batch this chunk sends to the host
  /// (its offloaded groups), and of those the margin keeps on the device in the micro batch whose backward
  /// runs first (the last group of each module name: fine_grained_activation_offload.py
  /// post_warmup_callback).
  std::int64_t offloaded_bytes = 0;
  std::int64_t offload_pinned_bytes = 0;
  /// `--delta-offload-bytes-across-pp-ranks` · pp rank: offloadable bytes the rank keeps on the device (first
  /// chunk of the rank only; capped by what its in-flight micro batches offload).
  std::int64_t offload_delta_bytes = 0;

  std::int64_t param_numel() const;            ///< all parameters held
  std::int64_t expert_param_numel() const;
  /// Of param_numel() / expert_param_numel(): the frozen ones (ParamTensor::frozen).
  std::int64_t frozen_param_numel(bool expert) const;  ///< of which expert parameters
  std::int64_t kept_activation_bytes() const;  ///< Σ kept_bytes: one micro batch
  /// The largest Σ kept_bytes of one transformer or MTP layer of the chunk (0 without layers): what a forward
  /// run layer by layer beside a backward adds (the expert-parallel overlap's combined 1F1B).
  std::int64_t largest_layer_kept_bytes() const;
};

/// The whole run: chunks ordered by (pp_rank, vchunk).
struct LayerGraph {
  ModelSpec model;
  Strategy strategy;
  std::int64_t padded_vocab = 0;
  std::vector<StageGraph> chunks;

  /// Chunks of pipeline rank `pp_rank` (vpp of them, in vchunk order).
  std::vector<const StageGraph*> stage(int pp_rank) const;
};

/// Builds the graph.  Validates model and strategy first.
/// @throws InputError for inconsistent sizes (see Strategy::validate, ModelSpec::validate).
LayerGraph build_layer_graph(const ModelSpec& model, const Strategy& strategy);

/// Ops of transformer layer `layer` (0-based, global) on one rank, in forward order, before recompute
/// (kept_bytes = saved bytes).  Identical to that layer's ops inside build_layer_graph(); for back ends
/// that price one layer and reuse the result for every layer of the same kind.  Does not validate:
/// call model.validate() and strategy.validate(model) first.
std::vector<Op> build_layer_ops(const ModelSpec& model, const Strategy& strategy, int layer);
/// The same with the per-module precision overrides (Strategy::precision_overrides) applied as to the layer
/// numbered `local_index` inside its model chunk (the index Megatron's module names carry there).
std::vector<Op> build_layer_ops(const ModelSpec& model, const Strategy& strategy, int layer, int local_index);
/// Which linears of layer `layer`, numbered `local_index` in its chunk, the overrides keep in 16 bits: one
/// bit per op in forward order (0 without overrides, or for a layer already in 16 bits).
std::uint64_t sixteen_bit_linears(const ModelSpec& model, const Strategy& strategy, int layer,
                                  int local_index);
/// Ops of the embedding (word embedding [+ position embedding] [+ dropout]) on the first stage.
/// Does not validate.
std::vector<Op> build_embedding_ops(const ModelSpec& model, const Strategy& strategy);
/// Ops of the head on the last stage: final norm, output layer (with its own weight) and loss.
/// `with_embedding`: the head of a chunk that also holds the embedding (pp = 1), as that chunk builds it — a
/// tied output layer (and MTP's lookup) then use the embedding's weight: their ops have no parameters.
/// Does not validate.
std::vector<Op> build_head_ops(const ModelSpec& model, const Strategy& strategy, bool with_embedding = false);

/// Parameters of the model without any parallelism (built with tp = pp = 1; the output layer counts
/// only when untied).  Vocabulary padded for tp = 1.
std::int64_t count_parameters(const ModelSpec& model);

const char* to_string(OpKind k);
/// Snake-case name of a role: "word_embedding", "qkv", "core_attention", "mtp_eh_proj", …
const char* to_string(OpRole r);
/// True for the roles of the attention block's norms inside attention (qk norms, MLA latent norms): not
/// the layer's input_layernorm / pre_mlp_layernorm.
bool is_inner_norm(OpRole r);
const char* to_string(ParallelDim d);

}  // namespace preflight::analyzer
