#pragma once
/// @file model_spec.hpp
/// ModelSpec: the architecture of a decoder-only transformer, independent of how it is trained.
///
/// Every front end (Megatron-LM arguments, Hugging Face config.json, SimuMax model JSON, presets)
/// converts into this one type, and every back end (Megatron-style tables, the cost model, SAPP inputs,
/// calibration) reads it through the layer graph (layer_graph.hpp).  Field names follow Megatron-LM's
/// arguments (`megatron/training/arguments.py`) where Megatron has one.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace preflight::analyzer {

/// Normalization layer kind (`--normalization`).
enum class Normalization { LayerNorm, RMSNorm };

/// Position embedding (`--position-embedding-type`): learned absolute embedding table, rotary, or none.
enum class PositionEmbedding { LearnedAbsolute, Rope, None };

/// Activation of the MLP.  SwiGLU is gated: fc1 produces 2·ffn outputs (`--swiglu`).
enum class Activation { GeLU, SwiGLU, SquaredReLU };

/// LoRA fine-tuning as Megatron-Bridge runs it (megatron/bridge/peft/lora.py LoRA(dim, target_modules)):
/// every base weight frozen — no gradient, no optimizer state, no weight-gradient GEMM, and a Transformer
/// Engine linear whose weight needs no gradient keeps no input (linear.py: backward_needs_input) — and on
/// each targeted linear of the decoder layers an adapter x → x·Aᵀ·Bᵀ (A: rank × in, B: out × rank;
/// ParallelLinearAdapter, Megatron-core column / row linears in 16 bits, split over tp) added to its output:
/// the adapter keeps its 16-bit input and the rank-wide intermediate, and only its weights train.
/// linear_fc1 / linear_fc2 also name a MoE layer's shared experts and its routed experts' grouped linears
/// (one adapter shared by a rank's local experts, Bridge's share_expert_adapters default); multi-latent
/// attention's projections take adapters when named (linear_q_down_proj, linear_q_up_proj, linear_q_proj,
/// linear_kv_down_proj, linear_kv_up_proj); an MTP layer's transformer layer gets its adapters as a decoder
/// layer does.  GPT models, dense or MoE (ModelSpec::validate refuses LatentMoE, hybrid and
/// gated-delta-net models: their layers' targets are not modelled).
struct LoraSpec {
  int rank = 0;  ///< adapter rank (`--lora-rank`, Bridge's `dim`); 0 = no LoRA
  bool linear_qkv = true, linear_proj = true, linear_fc1 = true, linear_fc2 = true;  ///< target_modules
  /// Multi-latent attention's projections (Bridge's Moonlight / GLM-5 recipes name them): the down
  /// projections are replicated over tp, so are their adapters.
  bool linear_q_down_proj = false, linear_q_up_proj = false, linear_q_proj = false,
       linear_kv_down_proj = false, linear_kv_up_proj = false;
  bool enabled() const { return rank > 0; }
  /// Each target's name in Megatron-Bridge's spelling and its switch here, in the layer's order.
  static const std::vector<std::pair<const char*, bool LoraSpec::*>>& target_table();
  /// The names of the targets switched on.
  std::vector<std::string> targets() const;
};

/// Mixture-of-experts layers (Megatron `--num-experts`, `--moe-*`).
struct MoESpec {
  int num_experts = 0;                             ///< routed experts per MoE layer; 0 = dense model
  int router_topk = 2;                             ///< experts chosen per token (`--moe-router-topk`)
  std::int64_t ffn_hidden_size = 0;                ///< routed expert FFN size (`--moe-ffn-hidden-size`)
  std::int64_t shared_expert_ffn_hidden_size = 0;  ///< shared expert FFN; 0 = none
  /// The shared expert's output scaled by sigmoid(hidden · gate_weight) (`--moe-shared-expert-gate`;
  /// Qwen2-MoE, Qwen3-Next): a weight of hidden_size, and the product keeps the shared expert's output.
  bool shared_expert_gate = false;
  /// Per layer: true = MoE MLP, false = dense MLP (`--moe-layer-freq`, HF `first_k_dense_replace`).
  /// Empty = every layer is MoE when num_experts > 0.
  std::vector<bool> layer_is_moe;
  bool pad_expert_input_to_capacity = false;  ///< `--moe-pad-expert-input-to-capacity`
  double capacity_factor = 1.0;               ///< `--moe-expert-capacity-factor` (only with padding)
  /// `--moe-expert-capacity-factor` without padding: an expert keeps at most capacity_factor × its mean
  /// share of the tokens and drops the rest (Megatron's moe_utils.py topk_routing_with_score_function).
  bool capacity_drop = false;
  /// Group-limited routing (`--moe-router-num-groups` / `--moe-router-group-topk`; HF `n_group` /
  /// `topk_group`: DeepSeek-V3 8 / 4): experts split into num_groups equal groups, each token's top-k taken
  /// within its group_topk best groups.  0 = not limited.  Only the flex dispatcher's inter-node volume
  /// depends on it (a token reaches at most group_topk groups' nodes).
  int router_num_groups = 0, router_group_topk = 0;
  /// LatentMoE (`--moe-latent-size`; Nemotron-3 Super / Ultra; megatron/core/transformer/moe/moe_layer.py):
  /// the routed experts run at this width — fc1_latent_proj (hidden → latent, a TELinear duplicated over
  /// tp, on the rank's own tokens) before the dispatch, the exchanges and the experts' GEMMs at the latent
  /// width, fc2_latent_proj (latent → hidden) after the combine.  The router and the shared expert see the
  /// full hidden state.  0 = no latent projections.
  std::int64_t latent_size = 0;

  bool enabled() const { return num_experts > 0; }
  /// Width of the routed experts' input and output, and of the token exchanges: latent_size or `hidden`.
  std::int64_t expert_width(std::int64_t hidden) const { return latent_size > 0 ? latent_size : hidden; }
};

/// Multi-head latent attention (DeepSeek-V2/V3; Megatron `--multi-latent-attention`).
struct MLASpec {
  bool enabled = false;
  std::int64_t q_lora_rank = 0;  ///< 0 = no query compression (one q projection)
  std::int64_t kv_lora_rank = 512;
  std::int64_t qk_head_dim = 128;         ///< non-rotary part of q/k per head
  std::int64_t qk_pos_emb_head_dim = 64;  ///< rotary part of q/k per head
  std::int64_t v_head_dim = 128;
  /// q_layernorm / kv_layernorm over the latents.  DeepSeek's models (Hugging Face, MindFormers, SimuMax)
  /// always have them; Megatron builds them only with --qk-layernorm (IdentityOp otherwise,
  /// gpt_layer_specs.py).
  bool latent_norms = true;
};

/// The Mamba-2 mixers of a hybrid model (Megatron `--hybrid-layer-pattern` 'M' layers;
/// megatron/core/ssm/mamba_mixer.py, Dao & Gu 2024, arXiv 2405.21060).  Per token the mixer's in_proj makes
/// z and x (d_inner each), B and C (groups · state each) and dt (heads); a depthwise causal convolution
/// over x, B, C; the SSD scan of x over the heads (head_dim each); a gated RMSNorm of the result by z; the
/// out_proj back to hidden.  Heads and groups are split over tp.
struct MambaSpec {
  std::int64_t state_dim = 128;   ///< N (`--mamba-state-dim`)
  std::int64_t head_dim = 64;     ///< P (`--mamba-head-dim`)
  std::int64_t num_groups = 8;    ///< G, the groups of B and C (`--mamba-num-groups`)
  std::int64_t num_heads = 0;     ///< H (`--mamba-num-heads`); 0 = expand (2) · hidden / head_dim
  std::int64_t conv_kernel = 4;   ///< the causal convolution's width (d_conv)
  std::int64_t chunk_size = 128;  ///< the SSD kernel's chunk (mamba_split_conv1d_scan_combined)
  std::int64_t heads(std::int64_t hidden) const { return num_heads > 0 ? num_heads : 2 * hidden / head_dim; }
  std::int64_t d_inner(std::int64_t hidden) const { return heads(hidden) * head_dim; }
  /// in_proj's output features: z, x, B, C, dt.
  std::int64_t in_proj_out(std::int64_t hidden) const {
    return 2 * d_inner(hidden) + 2 * num_groups * state_dim + heads(hidden);
  }
  /// Channels of the causal convolution: x, B, C.
  std::int64_t conv_dim(std::int64_t hidden) const { return d_inner(hidden) + 2 * num_groups * state_dim; }
  /// Context parallelism of the mixer (megatron/core/ssm/mamba_context_parallel.py): z, x, B, C and dt go
  /// from sequence shards to head shards by an all-to-all over cp before the convolution and the scan (each
  /// rank then holds the whole sequence of heads / (tp · cp) heads), the scan's output back after it.  A tp
  /// rank with fewer groups than cp repeats each group's B and C over cp / groups ranks.
  std::int64_t cp_group_repeat(int tp, int cp) const {
    const std::int64_t groups = num_groups / tp;
    return groups > 0 && groups < cp ? cp / groups : 1;
  }
  /// Elements per token of a tp rank's z, x, B, C, dt as the scan gets them (in_proj_out / tp at cp 1, B and
  /// C repeated otherwise); the all-to-all before the scan moves (cp − 1) / cp of them.
  std::int64_t scan_input_width(std::int64_t hidden, int tp, int cp) const {
    return (2 * d_inner(hidden) + heads(hidden)) / tp +
           2 * (num_groups / tp) * cp_group_repeat(tp, cp) * state_dim;
  }
};

/// Gated DeltaNet linear attention (Yang, Kautz & Hatamizadeh 2025, arXiv 2412.06464; Qwen3-Next), as
/// Megatron builds it in place of a transformer layer's self-attention (`--experimental-attention-variant
/// gated_delta_net`, megatron/core/ssm/gated_delta_net/gdn.py): in_proj (TELayerNormColumnParallelLinear:
/// h → q, k, v, the output gate z, beta, alpha), a depthwise causal convolution with SiLU over q, k, v,
/// L2-normalised q and k repeated to the value heads, the chunked gated delta rule (FLA's
/// chunk_gated_delta_rule, chunks of 64 tokens), an RMSNorm per value head gated by SiLU(z), out_proj
/// (v_dim → h).  Sizes are element counts; defaults are TransformerConfig's.
struct GdnSpec {
  std::int64_t key_head_dim = 128;            ///< `--linear-key-head-dim` (q and k)
  std::int64_t value_head_dim = 128;          ///< `--linear-value-head-dim` (v and z)
  std::int64_t num_key_heads = 16;            ///< `--linear-num-key-heads`
  std::int64_t num_value_heads = 32;          ///< `--linear-num-value-heads` (a multiple of the key heads)
  std::int64_t conv_kernel = 4;               ///< `--linear-conv-kernel-dim`
  static constexpr std::int64_t kChunk = 64;  ///< FLA's chunk (GatedDeltaNet.chunk_size)
  std::int64_t qk_dim() const { return key_head_dim * num_key_heads; }
  std::int64_t v_dim() const { return value_head_dim * num_value_heads; }
  /// in_proj's output features: q, k (qk_dim each), v, z (v_dim each), beta and alpha (one per value head).
  std::int64_t in_proj_out() const { return 2 * qk_dim() + 2 * v_dim() + 2 * num_value_heads; }
  /// Channels of the causal convolution: q, k, v.
  std::int64_t conv_dim() const { return 2 * qk_dim() + v_dim(); }
  /// Forward FLOPs per token of the convolution and the delta rule on a tp rank's heads, as Megatron counts
  /// them (training.py gdn_layer_flops: 2 · width · conv channels, 2 · 4 · value heads · dv² for KKᵀ, VKᵀ,
  /// S(a(I − bKKᵀ)) and SQ).
  double kernel_flops_per_token(int tp) const {
    const double dv = static_cast<double>(value_head_dim);
    return (2.0 * static_cast<double>(conv_kernel * conv_dim()) +
            8.0 * static_cast<double>(num_value_heads) * dv * dv) /
           tp;
  }
  /// Forward FLOPs per token of a whole GDN block (in_proj, kernels, out_proj) over all heads: Megatron's
  /// gdn_layer_flops / total_tokens.
  double layer_flops_per_token(std::int64_t hidden) const {
    const double h = static_cast<double>(hidden);
    return 2.0 * h * static_cast<double>(in_proj_out() + v_dim()) + kernel_flops_per_token(1);
  }
};

/// Architecture of the network.  Sizes are element counts, not bytes.
struct ModelSpec {
  std::string name;                          ///< label shown in reports ("llama3-8b", "megatron-args")
  int num_layers = 0;                        ///< transformer layers L
  std::int64_t hidden_size = 0;              ///< h
  std::int64_t ffn_hidden_size = 0;          ///< dense MLP size f (per branch for SwiGLU)
  int num_attention_heads = 0;               ///< a
  int num_query_groups = 0;                  ///< kv heads g (GQA); = a without GQA
  std::int64_t kv_channels = 0;              ///< head dim d; Megatron default h / a
  std::int64_t max_position_embeddings = 0;  ///< rows of the learned position table
  /// Sliding-window attention: keys each query attends (itself and the window − 1 before it); 0 = the
  /// whole sequence.  Changes the attention FLOPs only (Mistral `sliding_window`; Megatron --window-size).
  std::int64_t sliding_window = 0;
  /// Per layer (0-based): whether it attends the sliding window; empty = every layer does (when
  /// sliding_window > 0).  Megatron `--window-attn-skip-freq` (GPT-OSS: every 2nd layer full attention).
  std::vector<bool> layer_has_window;
  std::int64_t vocab_size = 0;               ///< tokenizer size before padding
  int make_vocab_size_divisible_by =
      128;  ///< padding unit, multiplied by tp (Megatron `_vocab_size_with_padding`)
  Activation activation = Activation::GeLU;
  bool add_bias_linear = true;  ///< biases in all linear layers (`--disable-bias-linear` clears)
  bool add_qkv_bias = false;    ///< bias in the qkv projection only (`--add-qkv-bias`)
  bool add_proj_bias = false;   ///< bias in the attention output projection only (TeleChat `out_proj_has_bias`)
  bool add_fc2_bias = false;    ///< bias in the MLP's second linear only (TeleChat2's `w2`)
  /// Norm of each query and key head (width kv_channels) before core attention (`--qk-layernorm`;
  /// Qwen3, OLMo-2).  Not used with MLA, whose q/kv norms are part of its projections.
  bool qk_layernorm = false;
  /// Gated attention output (`--attention-output-gate`; Megatron's SelfAttention, Qwen3-Next style): the qkv
  /// projection also produces a gate of heads × kv_channels per token, and the attention output is
  /// multiplied by its sigmoid before the output projection.  Not with MLA (Megatron's MLA has none).
  bool attention_output_gate = false;
  /// Sandwich norms (Gemma 2 / 3: post_attention_layernorm, post_feedforward_layernorm): each block's output
  /// is normed before its residual add, beside the usual pre-norms — two more norms (and their saved input
  /// and statistics) per transformer layer.
  bool sandwich_norms = false;
  Normalization normalization = Normalization::LayerNorm;
  bool untie_embeddings_and_output_weights = false;
  PositionEmbedding position_embedding = PositionEmbedding::LearnedAbsolute;
  double attention_dropout = 0.1;  ///< Megatron default; Llama-style scripts set 0
  double hidden_dropout = 0.1;
  MoESpec moe;
  MLASpec mla;
  /// A hybrid model (Megatron `--hybrid-layer-pattern`, Nemotron-H style): one symbol per decoder layer —
  /// 'M' a Mamba-2 mixer, '*' self-attention, '-' a dense MLP, 'E' a MoE MLP — each layer its norm, its
  /// one block and the residual add (megatron/core/models/hybrid).  Empty: every layer is a transformer
  /// layer (attention and MLP).
  std::string hybrid_pattern;
  /// A hybrid model's multi-token-prediction block, the pattern of one depth (after the first '/' of
  /// `--hybrid-layer-pattern`; every depth the same, as Megatron asserts): "*E" is an attention layer and a
  /// MoE layer (Nemotron-3 Super).  Its layers have the indices num_layers … num_layers + size − 1 for
  /// layer_symbol().  Empty: an MTP depth is one transformer layer built like the decoder's last.
  std::string mtp_hybrid_pattern;
  MambaSpec mamba;
  /// Per decoder layer (0-based) of a GPT model: whether its self-attention is a gated delta net (Megatron
  /// `--linear-attention-freq` k: every layer but the k-th, 2k-th, …; or a list such as "([1]*3+[0]*1)*12").
  /// Empty: no layer is.  A hybrid model's are its pattern's G layers (is_gdn_layer()).
  std::vector<bool> gdn_layers;
  GdnSpec gdn;
  LoraSpec lora;
  /// Multi-token prediction layers (`--mtp-num-layers`; DeepSeek-V3 trains with 1).  Each sits on the last
  /// pipeline stage after the decoder: embedding of the tokens shifted once more (the shared embedding),
  /// enorm + hnorm, eh_proj (column-parallel 2h → h, no bias), one transformer layer built like the
  /// decoder's last layer, final_layernorm, then the shared output layer and its own loss (Megatron-core
  /// `transformer/multi_token_prediction.py`, DeepSeek-V3 report arXiv 2412.19437 §2.2).
  int mtp_num_layers = 0;
  /// `--mtp-use-repeated-layer` (Megatron-Bridge's Nemotron-3 recipes): one MTP layer built and applied at
  /// every depth — its weights (norms, eh_proj, the transformer layer) held once, its compute per depth.
  bool mtp_repeated_layer = false;
  /// Each MTP lookup on a last stage without the first stage's embedding holds its own copy of the word
  /// embedding (Megatron, kept in sync by the embedding group); false when the framework shares the one
  /// parameter across stages (MindFormers DeepSeek-V3).
  bool mtp_embedding_copy = true;
  /// A checkpoint's MTP depth that is not built (a config.json's num_nextn_predict_layers /
  /// mtp_num_hidden_layers: Megatron-LM builds them only under `--mtp-num-layers`), with the note that says
  /// so; the note is printed only if the final model has no MTP layers (mtp_left_out_note()).  0 / "": none.
  int checkpoint_mtp_layers = 0;
  std::string checkpoint_mtp_note;

  bool gated() const { return activation == Activation::SwiGLU; }
  /// Bias present in the qkv projection.
  bool qkv_bias() const { return add_bias_linear || add_qkv_bias; }
  /// Bias present in the attention output projection / the MLP's second linear.
  bool proj_bias() const { return add_bias_linear || add_proj_bias; }
  bool fc2_bias() const { return add_bias_linear || add_fc2_bias; }
  /// Whether transformer layer `layer` (0-based, global) has a MoE MLP.
  bool is_moe_layer(int layer) const;
  bool hybrid() const { return !hybrid_pattern.empty(); }
  /// Whether an MTP depth of this hybrid pattern is priced: one block (M, *, - or E), or a mixer and an MLP
  /// (*E, *-, ME, M-) — one transformer layer's walk.
  static bool mtp_depth_modelled(const std::string& depth);
  static constexpr const char* kMtpDepthNote =
      "is not modelled: a depth of one block (M, *, - or E) or of a mixer then an MLP (*E, *-, ME, M-) is";
  /// The hybrid pattern's symbol of `layer` ('M', '*', '-', 'E'); 0 when the model is not hybrid.  Layers
  /// num_layers … are those of an MTP depth (mtp_hybrid_pattern).
  char layer_symbol(int layer) const;
  /// Whether layer `layer` has self-attention / an MLP (dense or MoE) / a Mamba mixer: a transformer layer
  /// has the first two, a hybrid layer one of the three.
  bool has_attention(int layer) const;
  bool has_mlp(int layer) const;
  bool is_mamba_layer(int layer) const { return layer_symbol(layer) == 'M'; }
  /// Whether layer `layer`'s block is a gated delta net: a hybrid pattern's G layer, or a transformer layer
  /// gdn_layers marks.
  bool is_gdn_layer(int layer) const {
    if (hybrid()) return layer >= 0 && layer < num_layers && layer_symbol(layer) == 'G';
    return layer >= 0 && layer < static_cast<int>(gdn_layers.size()) && gdn_layers[layer];
  }
  /// The layer's block kind for grouping layers that are built alike: layer_symbol() for a hybrid model,
  /// 'G' for a transformer layer whose self-attention is a gated delta net, 0 for other transformer layers.
  char block_symbol(int layer) const {
    return hybrid() ? layer_symbol(layer) : is_gdn_layer(layer) ? 'G' : 0;
  }
  bool has_gdn() const {
    return hybrid() ? hybrid_pattern.find('G') != std::string::npos
                    : std::find(gdn_layers.begin(), gdn_layers.end(), true) != gdn_layers.end();
  }
  /// Whether transformer layer `layer` (0-based, global) attends a sliding window (not the whole sequence).
  bool is_window_layer(int layer) const;
  /// Vocabulary padded as Megatron does: up to a multiple of make_vocab_size_divisible_by · tp.
  std::int64_t padded_vocab_size(int tp) const;

  /// Checks the sizes are positive and consistent (kv groups divide heads, ...).
  /// @throws InputError naming the field, with `where` as the given source (e.g. "--num-layers").
  void validate() const;
};

const char* to_string(Normalization n);
const char* to_string(PositionEmbedding p);
const char* to_string(Activation a);

}  // namespace preflight::analyzer
