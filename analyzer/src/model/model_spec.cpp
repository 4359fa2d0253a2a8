#include "preflight/analyzer/model/model_spec.hpp"

#include "preflight/common/error.hpp"

namespace preflight::analyzer {

char ModelSpec::layer_symbol(int layer) const {
  if (hybrid_pattern.empty() || layer < 0) return 0;
  const auto i = static_cast<std::size_t>(layer);
  if (i < hybrid_pattern.size()) return hybrid_pattern[i];
  if (i - hybrid_pattern.size() < mtp_hybrid_pattern.size())
    return mtp_hybrid_pattern[i - hybrid_pattern.size()];
  return 0;
}

bool ModelSpec::mtp_depth_modelled(const std::string& p) {
  if (p.empty() || p.size() > 2 || p.find_first_not_of("M*-E") != std::string::npos) return false;
  return p.size() == 1 || ((p[0] == '*' || p[0] == 'M') && (p[1] == '-' || p[1] == 'E'));
}

bool ModelSpec::has_attention(int layer) const {
  return !hybrid() || layer_symbol(layer) == '*' || layer_symbol(layer) == 'G';
}

bool ModelSpec::has_mlp(int layer) const {
  const char s = layer_symbol(layer);
  return !hybrid() || s == '-' || s == 'E';
}

bool ModelSpec::is_moe_layer(int layer) const {
  if (!moe.enabled()) return false;
  if (hybrid()) return layer_symbol(layer) == 'E';
  if (moe.layer_is_moe.empty()) return true;
  return layer >= 0 && layer < static_cast<int>(moe.layer_is_moe.size()) && moe.layer_is_moe[layer];
}

bool ModelSpec::is_window_layer(int layer) const {
  if (sliding_window <= 0) return false;
  if (layer_has_window.empty()) return true;
  return layer >= 0 && layer < static_cast<int>(layer_has_window.size()) && layer_has_window[layer];
}

std::int64_t ModelSpec::padded_vocab_size(int tp) const {
  // Megatron `_vocab_size_with_padding`: multiple = make_vocab_size_divisible_by * tp.
  std::int64_t multiple = static_cast<std::int64_t>(make_vocab_size_divisible_by) * tp;
  if (multiple <= 0) return vocab_size;
  return (vocab_size + multiple - 1) / multiple * multiple;
}

namespace {
void require_positive(std::int64_t v, const char* flag) {
  if (v <= 0) throw InputError(flag, "must be a positive number, got " + std::to_string(v));
}

void require_at_most(std::int64_t v, std::int64_t limit, const char* flag) {
  if (v > limit)
    throw InputError(flag, std::to_string(v) + " is beyond what preflight models (at most " + std::to_string(limit) + ")");
}
}  // namespace

const std::vector<std::pair<const char*, bool LoraSpec::*>>& LoraSpec::target_table() {
  static const std::vector<std::pair<const char*, bool LoraSpec::*>> t = {
      {"linear_qkv", &LoraSpec::linear_qkv},
      {"linear_q_down_proj", &LoraSpec::linear_q_down_proj},
      {"linear_q_up_proj", &LoraSpec::linear_q_up_proj},
      {"linear_q_proj", &LoraSpec::linear_q_proj},
      {"linear_kv_down_proj", &LoraSpec::linear_kv_down_proj},
      {"linear_kv_up_proj", &LoraSpec::linear_kv_up_proj},
      {"linear_proj", &LoraSpec::linear_proj},
      {"linear_fc1", &LoraSpec::linear_fc1},
      {"linear_fc2", &LoraSpec::linear_fc2},
  };
  return t;
}

std::vector<std::string> LoraSpec::targets() const {
  std::vector<std::string> out;
  for (const auto& [name, flag] : target_table())
    if (this->*flag) out.push_back(name);
  return out;
}

void ModelSpec::validate() const {
  require_positive(num_layers, "--num-layers");
  if (lora.enabled()) {
    require_at_most(lora.rank, 1 << 16, "--lora-rank");
    const char* what = moe.latent_size > 0 ? "LatentMoE experts"
                       : hybrid()          ? "a hybrid (Mamba) stack"
                       : has_gdn()         ? "gated delta net layers"
                                           : nullptr;
    if (what)
      throw InputError(
          "--lora-rank",
          std::string("LoRA on a model with ") + what +
              " is not modelled (GPT models with softmax or multi-latent attention, dense or MoE, only)");
    if (!(lora.linear_qkv || lora.linear_proj || lora.linear_fc1 || lora.linear_fc2 ||
          lora.linear_q_down_proj || lora.linear_q_up_proj || lora.linear_q_proj ||
          lora.linear_kv_down_proj || lora.linear_kv_up_proj))
      throw InputError("--lora-target-modules",
                       "names no module (linear_qkv, linear_proj, linear_fc1, linear_fc2)");
    if (!mla.enabled && !(lora.linear_qkv || lora.linear_proj || lora.linear_fc1 || lora.linear_fc2))
      throw InputError("--lora-target-modules",
                       "names only multi-latent attention's projections, and this model has none");
  }
  require_at_most(num_layers, 10000, "--num-layers");
  require_at_most(hidden_size, 1 << 20, "--hidden-size");
  require_at_most(ffn_hidden_size, 1 << 24, "--ffn-hidden-size");
  require_at_most(num_attention_heads, 1 << 16, "--num-attention-heads");
  require_at_most(vocab_size, std::int64_t{1} << 31, "--vocab-size");
  require_at_most(max_position_embeddings, 1 << 24, "--max-position-embeddings");
  if (moe.enabled()) {
    require_at_most(moe.num_experts, 1 << 16, "--num-experts");
    require_at_most(moe.ffn_hidden_size, 1 << 24, "--moe-ffn-hidden-size");
  }
  require_positive(hidden_size, "--hidden-size");
  require_positive(num_attention_heads, "--num-attention-heads");
  require_positive(ffn_hidden_size, "--ffn-hidden-size");
  require_positive(vocab_size, "--vocab-size");
  require_positive(make_vocab_size_divisible_by, "--make-vocab-size-divisible-by");
  if (!mla.enabled) {
    require_positive(num_query_groups, "--num-query-groups");
    require_positive(kv_channels, "--kv-channels");
    if (num_attention_heads % num_query_groups != 0)
      throw InputError("--num-query-groups", "the " + std::to_string(num_query_groups) +
                                                 " query groups do not divide the " +
                                                 std::to_string(num_attention_heads) + " attention heads");
  } else {
    if (attention_output_gate)
      throw InputError("--attention-output-gate",
                       "is not supported with --multi-latent-attention (Megatron's MLA has no output gate)");
    require_positive(mla.kv_lora_rank, "--kv-lora-rank");
    require_positive(mla.qk_head_dim, "--qk-head-dim");
    require_positive(mla.v_head_dim, "--v-head-dim");
    if (mla.q_lora_rank < 0) throw InputError("--q-lora-rank", "must not be negative");
    if (mla.qk_pos_emb_head_dim < 0) throw InputError("--qk-pos-emb-head-dim", "must not be negative");
  }
  if (position_embedding == PositionEmbedding::LearnedAbsolute)
    require_positive(max_position_embeddings, "--max-position-embeddings");
  if (attention_dropout < 0 || attention_dropout >= 1)
    throw InputError("--attention-dropout", "must be in [0, 1)");
  if (hidden_dropout < 0 || hidden_dropout >= 1) throw InputError("--hidden-dropout", "must be in [0, 1)");
  if (mtp_num_layers < 0) throw InputError("--mtp-num-layers", "must be ≥ 0");
  if (sliding_window < 0) throw InputError("sliding_window", "must be ≥ 0 (0: no window)");
  if (!layer_has_window.empty() && static_cast<int>(layer_has_window.size()) != num_layers)
    throw InputError("--window-attn-skip-freq", "gives " + std::to_string(layer_has_window.size()) +
                                                    " layers but the model has " + std::to_string(num_layers));
  if (!gdn_layers.empty()) {
    if (static_cast<int>(gdn_layers.size()) != num_layers)
      throw InputError("--linear-attention-freq", "gives " + std::to_string(gdn_layers.size()) +
                                                      " layers but the model has " +
                                                      std::to_string(num_layers));
    if (hybrid())
      throw InputError("--linear-attention-freq",
                       "marks a GPT model's layers; a hybrid model's gated delta nets are its pattern's G");
  }
  if (has_gdn()) {
    if (mla.enabled)
      throw InputError("--experimental-attention-variant",
                       "gated delta net beside multi-latent attention is not modelled");
    require_positive(gdn.key_head_dim, "--linear-key-head-dim");
    require_positive(gdn.value_head_dim, "--linear-value-head-dim");
    require_positive(gdn.num_key_heads, "--linear-num-key-heads");
    require_positive(gdn.num_value_heads, "--linear-num-value-heads");
    require_positive(gdn.conv_kernel, "--linear-conv-kernel-dim");
    require_at_most(gdn.key_head_dim, 1 << 14, "--linear-key-head-dim");
    require_at_most(gdn.value_head_dim, 1 << 14, "--linear-value-head-dim");
    require_at_most(gdn.num_key_heads, 1 << 14, "--linear-num-key-heads");
    require_at_most(gdn.num_value_heads, 1 << 14, "--linear-num-value-heads");
    require_at_most(gdn.conv_kernel, 1 << 10, "--linear-conv-kernel-dim");
    if (gdn.num_value_heads % gdn.num_key_heads != 0)
      throw InputError("--linear-num-value-heads", "the " + std::to_string(gdn.num_value_heads) +
                                                       " value heads are not a multiple of the " +
                                                       std::to_string(gdn.num_key_heads) +
                                                       " key heads (Megatron asserts it)");
  }
  if (hybrid()) {
    if (static_cast<int>(hybrid_pattern.size()) != num_layers)
      throw InputError("--hybrid-layer-pattern", "gives " + std::to_string(hybrid_pattern.size()) +
                                                     " layers but the model has " +
                                                     std::to_string(num_layers));
    for (char ch : hybrid_pattern)
      if (ch != 'M' && ch != 'G' && ch != '*' && ch != '-' && ch != 'E')
        throw InputError("--hybrid-layer-pattern",
                         std::string("unknown layer symbol '") + ch + "' (M, G, *, -, E are modelled)");
    if (hybrid_pattern.find('E') != std::string::npos && !moe.enabled())
      throw InputError("--hybrid-layer-pattern", "has MoE layers (E) but --num-experts is not set");
    if (!mtp_hybrid_pattern.empty()) {
      // What one MTP depth's transformer layer can be: an optional attention (or Mamba) block, then an
      // optional MLP (dense or MoE) — the pricing walks one layer of each kind.
      const std::string& p = mtp_hybrid_pattern;
      if (!mtp_depth_modelled(p))
        throw InputError("--hybrid-layer-pattern",
                         "multi-token-prediction depth '" + p + "' " + kMtpDepthNote);
      if (mtp_num_layers <= 0)
        throw InputError("--hybrid-layer-pattern", "has an MTP depth pattern but no MTP depths");
      if (p.find('E') != std::string::npos && !moe.enabled())
        throw InputError("--hybrid-layer-pattern", "has MoE MTP layers (E) but --num-experts is not set");
    }
    if ((hybrid_pattern + mtp_hybrid_pattern).find('M') != std::string::npos) {
      require_positive(mamba.state_dim, "--mamba-state-dim");
      require_positive(mamba.head_dim, "--mamba-head-dim");
      require_positive(mamba.num_groups, "--mamba-num-groups");
      require_at_most(mamba.state_dim, 1 << 16, "--mamba-state-dim");
      require_at_most(mamba.head_dim, 1 << 16, "--mamba-head-dim");
      require_at_most(mamba.num_groups, 1 << 16, "--mamba-num-groups");
      require_at_most(mamba.num_heads, 1 << 16, "--mamba-num-heads");
      if (mamba.num_heads < 0) throw InputError("--mamba-num-heads", "must not be negative");
      if (mamba.num_heads == 0 && (2 * hidden_size) % mamba.head_dim != 0)
        throw InputError("--mamba-head-dim", "does not divide the mixer's 2 · hidden = " +
                                                 std::to_string(2 * hidden_size) + " channels");
      const std::int64_t heads = mamba.heads(hidden_size);
      require_positive(heads, "--mamba-num-heads");
      if (heads % mamba.num_groups != 0)
        throw InputError("--mamba-num-groups", "the " + std::to_string(mamba.num_groups) +
                                                   " groups do not divide the " + std::to_string(heads) +
                                                   " Mamba heads (Megatron asserts it)");
    }
  }
  if (moe.enabled()) {
    require_positive(moe.router_topk, "--moe-router-topk");
    require_positive(moe.ffn_hidden_size, "--moe-ffn-hidden-size");
    if (moe.router_topk > moe.num_experts)
      throw InputError("--moe-router-topk", "top-k " + std::to_string(moe.router_topk) + " exceeds the " +
                                                std::to_string(moe.num_experts) + " experts");
    if (moe.shared_expert_ffn_hidden_size < 0)
      throw InputError("--moe-shared-expert-intermediate-size", "must not be negative");
    if (moe.latent_size < 0) throw InputError("--moe-latent-size", "must be greater than zero");
    require_at_most(moe.latent_size, 1 << 24, "--moe-latent-size");
    if (!moe.layer_is_moe.empty() && static_cast<int>(moe.layer_is_moe.size()) != num_layers)
      throw InputError("--moe-layer-freq", "pattern has " + std::to_string(moe.layer_is_moe.size()) +
                                               " entries but the model has " + std::to_string(num_layers) +
                                               " layers");
  }
}

const char* to_string(Normalization n) {
  return n == Normalization::RMSNorm ? "RMSNorm" : "LayerNorm";
}

const char* to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::LearnedAbsolute:
      return "learned_absolute";
    case PositionEmbedding::Rope:
      return "rope";
    case PositionEmbedding::None:
      return "none";
  }
  return "?";
}

const char* to_string(Activation a) {
  switch (a) {
    case Activation::GeLU:
      return "gelu";
    case Activation::SwiGLU:
      return "swiglu";
    case Activation::SquaredReLU:
      return "squared_relu";
  }
  return "?";
}

}  // namespace preflight::analyzer
