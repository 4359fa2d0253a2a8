#include "preflight/analyzer/frontends/hf_config.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

using I64 = std::int64_t;
using nlohmann::json;

enum class Family {
  Llama,
  Mistral,
  Mixtral,
  Qwen2,
  Qwen2Moe,
  Qwen3,
  Qwen3Moe,
  DeepSeek,
  DeepSeekV2,
  DeepSeekV3,
  Gpt2,
  GptOss,
  NemotronH,
  Qwen3Next,
  Glm4Moe,
  Llama4,
  Gemma3,
  MinimaxM2,
  Olmoe,
  Ernie45Moe,
  Gemma,
  Nemotron,
  BailingMoeV2,
  Glm,
  Glm4,
  SarvamMla,
  ExaoneMoe,
  HyV3,
  MinimaxM3,
  PostNorm
};

const std::map<std::string, Family>& families() {
  static const std::map<std::string, Family> f = {
      {"llama", Family::Llama},
      {"mistral", Family::Mistral},
      {"mixtral", Family::Mixtral},
      {"qwen2", Family::Qwen2},
      {"qwen2_moe", Family::Qwen2Moe},
      {"qwen3", Family::Qwen3},
      {"qwen3_moe", Family::Qwen3Moe},
      // The language models of Qwen's vision-language checkpoints (their text_config).
      {"qwen2_5_vl_text", Family::Qwen2},
      {"qwen3_vl_text", Family::Qwen3},
      {"qwen3_vl_moe_text", Family::Qwen3Moe},
      {"deepseek", Family::DeepSeek},
      {"deepseek_v2", Family::DeepSeekV2},
      {"deepseek_v3", Family::DeepSeekV3},
      {"gpt2", Family::Gpt2},
      {"gpt_oss", Family::GptOss},
      {"nemotron_h", Family::NemotronH},
      {"qwen3_next", Family::Qwen3Next},
      // Qwen3.5's language model (the text_config of its checkpoints): Qwen3-Next's layers.
      {"qwen3_5_text", Family::Qwen3Next},
      {"qwen3_5_moe_text", Family::Qwen3Next},
      {"qwen3_5", Family::Qwen3Next},
      {"qwen3_5_moe", Family::Qwen3Next},
      {"glm4_moe", Family::Glm4Moe},
      // Llama 4's language model (the text_config of its checkpoints).
      {"llama4_text", Family::Llama4},
      // Phi-3 / Phi-4: Llama's layers with fused qkv / gate-up projections (the same parameters); the window
      // is on whenever sliding_window is set, as in Mistral.
      {"phi3", Family::Mistral},
      {"gemma3_text", Family::Gemma3},
      {"minimax_m2", Family::MinimaxM2},
      {"olmoe", Family::Olmoe},
      {"ernie4_5_moe", Family::Ernie45Moe},
      // Gemma (1) / CodeGemma (Megatron-Bridge's GemmaBridge): Llama's layers with a gated tanh-GELU, tied
      // embeddings.
      {"gemma", Family::Gemma},
      // Nemotron-4 / Minitron (NemotronBridge): LayerNorm (1p) with bias, a squared-ReLU MLP without a gate.
      {"nemotron", Family::Nemotron},
      // GLM-4.7-Flash (Glm4MoeLiteBridge): DeepSeek-V3's layers (MLA, shared experts, leading dense layers).
      {"glm4_moe_lite", Family::DeepSeekV3},
      // MiMo-7B (MiMoBridge): Qwen2's layers (q / k / v biases) and MTP layers.
      {"mimo", Family::Qwen2},
      // Ling 2.0 (BailingMoeV2Bridge): GQA with q / k norms, leading dense layers, shared experts.
      {"bailing_moe_v2", Family::BailingMoeV2},
      // Sarvam-30B (SarvamMoEBridge; transformers' SarvamMoeConfig): Ling 2.0's layers and field names — GQA
      // with q / k norms over head_dim, a leading dense layer, shared experts of moe_intermediate_size.
      {"sarvam_moe", Family::BailingMoeV2},
      // Sarvam-105B (SarvamMLABridge): DeepSeek-V3's multi-latent attention without a q compression, under
      // Sarvam's MoE field names.
      {"sarvam_mla", Family::SarvamMla},
      // K-EXAONE (ExaoneMoeBridge; transformers' configuration_exaone_moe.py): GQA with q / k norms, sliding
      // and full attention layers, a dense / sparse MLP schedule, shared experts.
      {"exaone_moe", Family::ExaoneMoe},
      // Hy3 (HYV3Bridge; transformers' configuration_hy_v3.py): GQA with q / k norms, dense-first layers,
      // routed and shared experts.
      {"hy_v3", Family::HyV3},
      // MiniMax-M3's language model (the text_config of minimax_m3_vl; MiniMaxM3Bridge): GQA with q / k
      // norms, dense-first layers, routed experts and a shared expert of their own widths.
      {"minimax_m3", Family::MinimaxM3},
      {"minimax_m3_text", Family::MinimaxM3},
      // EXAONE 4 (Exaone4Bridge) and OLMo 2 / 3: Llama's geometry with q / k norms and the two norms of a
      // layer after attention and after the MLP instead of before them (priced as pre-norm layers: the same
      // norms on tensors of the same shape); EXAONE 4 and OLMo 3 attend sliding windows on the layers
      // layer_types (or EXAONE's "LLLG" sliding_window_pattern) names.
      {"exaone4", Family::PostNorm},
      {"olmo2", Family::PostNorm},
      {"olmo3", Family::PostNorm},
      // Ministral 3's language model (the text_config of Mistral3ForConditionalGeneration; Ministral3Bridge)
      // and Ministral: Mistral's layers.
      {"ministral3", Family::Mistral},
      {"ministral", Family::Mistral},
      // GLM-4-9B (glm: q / k / v biases, partial rotary) and GLM-4-0414 / GLM-Z1 (glm4: the same with a norm
      // after attention and after the MLP, as Gemma 3); GLM-4.1V's language model is glm4's.
      {"glm", Family::Glm},
      {"glm4", Family::Glm4},
      {"glm4v_text", Family::Glm4},
      // GLM-4.5V's language model: GLM-4.5's layers.
      {"glm4v_moe_text", Family::Glm4Moe},
      {"qwen2_vl_text", Family::Qwen2},
  };
  return f;
}

/// `architectures[0]` → model_type, for configs written without model_type.
const std::map<std::string, std::string>& architectures() {
  static const std::map<std::string, std::string> a = {
      {"LlamaForCausalLM", "llama"},
      {"MistralForCausalLM", "mistral"},
      {"MixtralForCausalLM", "mixtral"},
      {"Qwen2ForCausalLM", "qwen2"},
      {"Qwen2MoeForCausalLM", "qwen2_moe"},
      {"Qwen3ForCausalLM", "qwen3"},
      {"Qwen3MoeForCausalLM", "qwen3_moe"},
      {"DeepseekForCausalLM", "deepseek"},
      {"DeepseekV2ForCausalLM", "deepseek_v2"},
      {"DeepseekV3ForCausalLM", "deepseek_v3"},
      {"GPT2LMHeadModel", "gpt2"},
      {"NemotronHForCausalLM", "nemotron_h"},
      {"Qwen3NextForCausalLM", "qwen3_next"},
      {"Glm4MoeForCausalLM", "glm4_moe"},
      {"Llama4ForCausalLM", "llama4_text"},
      {"Phi3ForCausalLM", "phi3"},
      {"Gemma3ForCausalLM", "gemma3_text"},
      {"MiniMaxM2ForCausalLM", "minimax_m2"},
      {"OlmoeForCausalLM", "olmoe"},
      {"Ernie4_5_MoeForCausalLM", "ernie4_5_moe"},
      {"Qwen3_5ForCausalLM", "qwen3_5_text"},
      {"Qwen3_5MoeForCausalLM", "qwen3_5_moe_text"},
      {"GptOssForCausalLM", "gpt_oss"},
      {"GemmaForCausalLM", "gemma"},
      {"NemotronForCausalLM", "nemotron"},
      {"Glm4MoeLiteForCausalLM", "glm4_moe_lite"},
      {"MiMoForCausalLM", "mimo"},
      {"BailingMoeV2ForCausalLM", "bailing_moe_v2"},
      {"SarvamMoEForCausalLM", "sarvam_moe"},
      {"SarvamMoeForCausalLM", "sarvam_moe"},
      {"SarvamMLAForCausalLM", "sarvam_mla"},
      {"ExaoneMoeForCausalLM", "exaone_moe"},
      {"ExaoneMoEForCausalLM", "exaone_moe"},
      {"HYV3ForCausalLM", "hy_v3"},
      {"HyV3ForCausalLM", "hy_v3"},
      {"MiniMaxM3SparseForCausalLM", "minimax_m3"},
      {"MiniMaxM3ForCausalLM", "minimax_m3"},
      {"Exaone4ForCausalLM", "exaone4"},
      {"Olmo2ForCausalLM", "olmo2"},
      {"Olmo3ForCausalLM", "olmo3"},
      {"MinistralForCausalLM", "ministral"},
      {"GlmForCausalLM", "glm"},
      {"Glm4ForCausalLM", "glm4"},
  };
  return a;
}

std::string joined_types() {
  std::string s;
  for (const auto& t : supported_hf_model_types()) s += (s.empty() ? "" : ", ") + t;
  return s;
}

/// Typed access to the fields of one config object; every error names `<source>: <field>`.
class Fields {
 public:
  Fields(const json& j, std::string source, std::string model_type)
      : j_(j), source_(std::move(source)), type_(std::move(model_type)) {}

  InputError error(const std::string& field, const std::string& what) const {
    return InputError(source_ + ": " + field, what);
  }

  bool present(const std::string& field) const {
    auto it = j_.find(field);
    return it != j_.end() && !it->is_null();
  }

  /// A required positive integer.
  I64 positive(const std::string& field) const {
    if (!present(field))
      throw error(field, j_.contains(field) ? "is null, but " + type_ + " needs a positive integer here"
                                            : "is missing (required for model_type " + type_ + ")");
    return positive_or(field, 0);
  }

  /// An optional positive integer (absent or null → dflt).
  I64 positive_or(const std::string& field, I64 dflt) const {
    if (!present(field)) return dflt;
    I64 v = integer(field);
    if (v <= 0) throw error(field, "must be a positive integer, got " + std::to_string(v));
    return v;
  }

  /// An optional positive integer given as an int or as a list whose first entry counts (ERNIE 4.5's
  /// moe_num_experts / moe_intermediate_size: [text, vision] pools); absent or null → dflt.
  I64 first_positive_or(const std::string& field, I64 dflt, bool zero_allowed = false) const {
    if (!present(field)) return dflt;
    const json& v = j_.at(field);
    if (!v.is_array()) return zero_allowed ? non_negative_or(field, dflt) : positive_or(field, dflt);
    if (v.empty() || !v[0].is_number_integer() || v[0].get<I64>() < (zero_allowed ? 0 : 1))
      throw error(field, "expected an integer or a list starting with one, got " + v.dump());
    return v[0].get<I64>();
  }

  /// An optional non-negative integer (absent or null → dflt).
  I64 non_negative_or(const std::string& field, I64 dflt) const {
    if (!present(field)) return dflt;
    I64 v = integer(field);
    if (v < 0) throw error(field, "must not be negative, got " + std::to_string(v));
    return v;
  }

  bool boolean_or(const std::string& field, bool dflt) const {
    if (!present(field)) return dflt;
    const json& v = j_.at(field);
    if (!v.is_boolean()) throw error(field, "expected true or false, got " + v.dump());
    return v.get<bool>();
  }

  /// A probability in [0, 1) (dropout).
  double probability_or(const std::string& field, double dflt) const {
    if (!present(field)) return dflt;
    const json& v = j_.at(field);
    if (!v.is_number()) throw error(field, "expected a number, got " + v.dump());
    double p = v.get<double>();
    if (!(p >= 0 && p < 1)) throw error(field, "must be in [0, 1), got " + v.dump());
    return p;
  }

  /// The raw JSON text of a field (for messages).
  /// A list of strings (`layer_types`).
  std::vector<std::string> string_list(const std::string& field) const {
    const json& v = j_.at(field);
    std::vector<std::string> out;
    if (!v.is_array()) throw error(field, "must be a list of strings");
    for (const auto& e : v) {
      if (!e.is_string()) throw error(field, "must be a list of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  /// A list of booleans (EXAONE's is_moe_layer).
  std::vector<bool> bool_list(const std::string& field) const {
    const json& v = j_.at(field);
    std::vector<bool> out;
    if (!v.is_array()) throw error(field, "must be a list of true / false, got " + v.dump());
    for (const auto& e : v) {
      if (!e.is_boolean())
        throw error(field, "must be a list of true / false; entry " + e.dump() + " is not");
      out.push_back(e.get<bool>());
    }
    return out;
  }
  /// A list of non-negative integers (EXAONE's sliding_windows).
  std::vector<I64> non_negative_list(const std::string& field) const {
    const json& v = j_.at(field);
    std::vector<I64> out;
    if (!v.is_array()) throw error(field, "must be a list of non-negative integers, got " + v.dump());
    for (const auto& e : v) {
      if (!e.is_number_integer() || e.get<I64>() < 0 ||
          e.get<I64>() > std::numeric_limits<std::int32_t>::max())
        throw error(field, "must be a list of non-negative integers; entry " + e.dump() + " is not");
      out.push_back(e.get<I64>());
    }
    return out;
  }
  bool is_string(const std::string& field) const { return present(field) && j_.at(field).is_string(); }
  bool is_list(const std::string& field) const { return present(field) && j_.at(field).is_array(); }
  std::string dump(const std::string& field) const {
    return j_.contains(field) ? j_.at(field).dump() : "null";
  }

  std::string string_or(const std::string& field, const std::string& dflt) const {
    if (!present(field)) return dflt;
    const json& v = j_.at(field);
    if (!v.is_string()) throw error(field, "expected a string, got " + v.dump());
    return v.get<std::string>();
  }

  /// An optional list of layer indices in [0, layers).
  std::vector<I64> layer_list(const std::string& field, I64 layers) const {
    std::vector<I64> out;
    if (!present(field)) return out;
    const json& v = j_.at(field);
    if (!v.is_array()) throw error(field, "expected a list of layer indices, got " + v.dump());
    for (const auto& e : v) {
      if (!e.is_number_integer() || e.get<I64>() < 0 || e.get<I64>() >= layers)
        throw error(field,
                    "entry " + e.dump() + " is not a layer index in [0, " + std::to_string(layers) + ")");
      out.push_back(e.get<I64>());
    }
    return out;
  }

 private:
  /// Every size in a config.json fits in 31 bits; larger values are rejected rather than narrowed.
  I64 integer(const std::string& field) const {
    const json& v = j_.at(field);
    double d = 0;
    if (v.is_number_integer())
      d = v.is_number_unsigned() ? static_cast<double>(v.get<std::uint64_t>())
                                 : static_cast<double>(v.get<I64>());
    else if (v.is_number_float() && std::isfinite(v.get<double>()) &&
             v.get<double>() == std::floor(v.get<double>()))
      d = v.get<double>();
    else
      throw error(field, "expected an integer, got " + v.dump());
    if (std::fabs(d) > static_cast<double>(std::numeric_limits<std::int32_t>::max()))
      throw error(field, v.dump() + " is out of range");
    return static_cast<I64>(d);
  }

  const json& j_;
  std::string source_;
  std::string type_;
};

/// Sets the per-layer MoE pattern; an all-MoE pattern is stored as empty (ModelSpec's "every layer").
void set_moe_pattern(ModelSpec& m, std::vector<bool> pattern) {
  if (std::all_of(pattern.begin(), pattern.end(), [](bool b) { return b; })) pattern.clear();
  m.moe.layer_is_moe = std::move(pattern);
}

/// A checkpoint's MTP layers (num_nextn_predict_layers; Qwen3-Next / Qwen3.5's mtp_num_hidden_layers) are
/// left out of the model read from its config.json: Megatron-LM builds them only under --mtp-num-layers, the
/// flag a launch gives (Megatron-Bridge's AutoBridge maps the field to mtp_num_layers, so a Bridge recipe
/// trains them unless it sets mtp_num_layers None).  Recorded with the note that says so, which a command
/// prints only if its launch does not build them (mtp_left_out_note()).
void note_mtp_left_out(const Fields& f, ModelSpec& m, const std::string& source) {
  for (const char* field : {"num_nextn_predict_layers", "mtp_num_hidden_layers"})
    if (I64 mtp = f.non_negative_or(field, 0); mtp > 0) {
      m.checkpoint_mtp_layers = static_cast<int>(mtp);
      m.checkpoint_mtp_note =
          source + ": " + field + " " + std::to_string(mtp) +
          ": the multi-token-prediction layers are left out (Megatron-LM builds them only "
          "under --mtp-num-layers; a Megatron-Bridge import maps them); --mtp-num-layers " +
          std::to_string(mtp) + " includes them";
      return;
    }
}

/// The activation of an MLP without a gate (Nemotron-4's hidden_act, Nemotron-H's mlp_hidden_act): relu2
/// (squared ReLU, the default) or GELU; anything else is named.
Activation ungated_activation(const Fields& f, const char* field) {
  const std::string act = f.string_or(field, "relu2");
  if (act == "relu2") return Activation::SquaredReLU;
  if (act == "gelu" || act == "gelu_pytorch_tanh") return Activation::GeLU;
  throw f.error(field, "'" + act + "' is not modelled (relu2, gelu)");
}

/// Common to every llama-like family: geometry, vocabulary, norm and position embedding.
void read_llama_like(const Fields& f, ModelSpec& m) {
  m.hidden_size = f.positive("hidden_size");
  m.num_layers = static_cast<int>(f.positive("num_hidden_layers"));
  m.num_attention_heads = static_cast<int>(f.positive("num_attention_heads"));
  m.num_query_groups = static_cast<int>(f.positive_or("num_key_value_heads", m.num_attention_heads));
  if (m.num_attention_heads % m.num_query_groups != 0)
    throw f.error("num_key_value_heads", "the " + std::to_string(m.num_query_groups) +
                                             " key/value heads do not divide the " +
                                             std::to_string(m.num_attention_heads) + " attention heads");
  if (f.present("head_dim")) {
    m.kv_channels = f.positive("head_dim");
  } else if (f.present("kv_lora_rank")) {
    m.kv_channels =
        0;  // multi-latent attention: read_mla sets the head sizes (GLM-4.7-Flash: 2048 / 20 heads)
  } else {
    if (m.hidden_size % m.num_attention_heads != 0)
      throw f.error("hidden_size", std::to_string(m.hidden_size) +
                                       " is not divisible by num_attention_heads " +
                                       std::to_string(m.num_attention_heads) + " (set head_dim)");
    m.kv_channels = m.hidden_size / m.num_attention_heads;
  }
  m.ffn_hidden_size = f.positive("intermediate_size");
  m.vocab_size = f.positive("vocab_size");
  m.max_position_embeddings = f.positive_or("max_position_embeddings", 0);
  m.untie_embeddings_and_output_weights = !f.boolean_or("tie_word_embeddings", false);
  m.attention_dropout = f.probability_or("attention_dropout", 0.0);
  m.hidden_dropout = 0.0;
  m.activation = Activation::SwiGLU;
  m.normalization = Normalization::RMSNorm;
  m.position_embedding = PositionEmbedding::Rope;
  m.add_bias_linear = false;
  m.add_qkv_bias = false;
}

void read_biases(const Fields& f, ModelSpec& m, std::vector<std::string>* warnings,
                 const std::string& source) {
  bool attention_bias = f.boolean_or("attention_bias", false);
  bool mlp_bias = f.boolean_or("mlp_bias", false);
  if (attention_bias && mlp_bias) {
    m.add_bias_linear = true;
  } else if (attention_bias) {
    m.add_qkv_bias = true;
    if (warnings)
      warnings->push_back(source +
                          ": attention_bias: the o_proj bias (hidden_size per layer) is not modelled");
  } else if (mlp_bias && warnings) {
    warnings->push_back(source +
                        ": mlp_bias: the MLP biases are not modelled (ModelSpec has no MLP-only bias)");
  }
}

/// `layer_types` as sliding-window flags, one per layer ("sliding_attention" / "full_attention").
std::vector<bool> sliding_layers(const Fields& f, int num_layers) {
  const auto types = f.string_list("layer_types");
  if (static_cast<int>(types.size()) != num_layers)
    throw f.error("layer_types", std::to_string(types.size()) + " entries for " + std::to_string(num_layers) +
                                     " layers (num_hidden_layers)");
  std::vector<bool> sliding;
  for (const auto& t : types) {
    if (t != "sliding_attention" && t != "full_attention")
      throw f.error("layer_types", "unknown layer type '" + t + "' (sliding_attention, full_attention)");
    sliding.push_back(t == "sliding_attention");
  }
  return sliding;
}

/// Sliding-window attention (Mistral, GPT-OSS: on when `sliding_window` is set; Qwen: only with
/// `use_sliding_window`) changes neither parameters nor saved activations of flash attention; only the
/// attention FLOPs (ModelSpec::sliding_window).  `layer_types` ("sliding_attention" / "full_attention" per
/// layer; GPT-OSS alternates) says which layers; without it Qwen's `max_window_layers` is not modelled:
/// every layer gets the window, with a warning.
void read_sliding_window(const Fields& f, bool used_by_default, ModelSpec& m,
                         std::vector<std::string>* warnings, const std::string& source) {
  if (!f.present("sliding_window") || !f.boolean_or("use_sliding_window", used_by_default)) return;
  m.sliding_window = f.positive("sliding_window");
  if (f.present("layer_types")) {
    m.layer_has_window = sliding_layers(f, m.num_layers);
    return;
  }
  if (f.present("max_window_layers") && warnings)
    warnings->push_back(source + ": max_window_layers is not modelled: every layer attends a window of " +
                        std::to_string(m.sliding_window) + " keys");
}

void read_mla(const Fields& f, ModelSpec& m) {
  m.mla.enabled = true;
  m.mla.q_lora_rank = f.non_negative_or("q_lora_rank", 0);  // null: one q projection (V2-Lite)
  m.mla.kv_lora_rank = f.positive("kv_lora_rank");
  m.mla.qk_head_dim = f.positive("qk_nope_head_dim");
  m.mla.qk_pos_emb_head_dim = f.positive("qk_rope_head_dim");
  m.mla.v_head_dim = f.positive("v_head_dim");
  // Megatron's DeepSeek recipes pass --kv-channels = v_head_dim; every head has its own k and v.
  m.kv_channels = m.mla.v_head_dim;
  m.num_query_groups = m.num_attention_heads;
}

void check_topk(const Fields& f, const ModelSpec& m, const std::string& experts_field) {
  if (m.moe.router_topk > m.moe.num_experts)
    throw f.error("num_experts_per_tok", "top-k " + std::to_string(m.moe.router_topk) + " exceeds the " +
                                             std::to_string(m.moe.num_experts) + " experts of " +
                                             experts_field);
}

/// Every layer MoE with experts of intermediate_size (Mixtral, GPT-OSS, OLMoE, MiniMax-M2): `experts_field`
/// experts, top num_experts_per_tok (required when `default_topk` is 0).
void read_uniform_moe(const Fields& f, ModelSpec& m, const char* experts_field, I64 default_topk) {
  m.moe.num_experts = static_cast<int>(f.positive(experts_field));
  m.moe.router_topk = static_cast<int>(default_topk > 0 ? f.positive_or("num_experts_per_tok", default_topk)
                                                        : f.positive("num_experts_per_tok"));
  check_topk(f, m, experts_field);
  m.moe.ffn_hidden_size = m.ffn_hidden_size;
}

/// Which layers are MoE under DeepSeek's layout: `mlp_layer_types` ("dense" / "sparse" per layer; EXAONE-MoE,
/// Hy3, MiniMax-M3), `is_moe_layer` (true / false per layer; EXAONE-MoE's older configs) or a
/// `moe_layer_freq` list (0 / 1 per layer; MiniMax-M3) when given, else the first first_k_dense_replace
/// layers dense and then every moe_layer_freq-th layer MoE.
std::vector<bool> moe_layer_schedule(const Fields& f, const ModelSpec& m) {
  std::vector<bool> pattern(m.num_layers);
  const auto check_length = [&](const char* field, std::size_t n) {
    if (static_cast<int>(n) != m.num_layers)
      throw f.error(field, std::to_string(n) + " entries for " + std::to_string(m.num_layers) +
                               " layers (num_hidden_layers)");
  };
  if (f.present("mlp_layer_types")) {
    const auto types = f.string_list("mlp_layer_types");
    check_length("mlp_layer_types", types.size());
    for (int i = 0; i < m.num_layers; ++i) {
      if (types[i] != "dense" && types[i] != "sparse")
        throw f.error("mlp_layer_types", "unknown layer type '" + types[i] + "' (dense, sparse)");
      pattern[i] = types[i] == "sparse";
    }
    return pattern;
  }
  if (f.present("is_moe_layer")) {
    pattern = f.bool_list("is_moe_layer");
    check_length("is_moe_layer", pattern.size());
    return pattern;
  }
  if (f.is_list("moe_layer_freq")) {  // 0 / 1 per layer (MiniMax-M3; Megatron's --moe-layer-freq list)
    const auto flags = f.non_negative_list("moe_layer_freq");
    check_length("moe_layer_freq", flags.size());
    for (int i = 0; i < m.num_layers; ++i) {
      if (flags[i] > 1) throw f.error("moe_layer_freq", "a per-layer list holds 0 (dense) or 1 (MoE)");
      pattern[i] = flags[i] == 1;
    }
    return pattern;
  }
  I64 first_dense = f.non_negative_or("first_k_dense_replace", 0);
  if (first_dense > m.num_layers)
    throw f.error("first_k_dense_replace",
                  std::to_string(first_dense) + " exceeds num_hidden_layers " + std::to_string(m.num_layers));
  I64 freq = f.positive_or("moe_layer_freq", 1);
  for (int i = 0; i < m.num_layers; ++i) pattern[i] = i >= first_dense && i % freq == 0;
  return pattern;
}

/// DeepSeek's MoE layout (also GLM-4.5, GLM-4.7-Flash, Ling 2.0, Sarvam, EXAONE-MoE, Hy3): `experts_field`
/// routed experts of `width_field`, top num_experts_per_tok, `shared_field` shared experts of the same width
/// fused into one, group-limited routing, and the dense / MoE schedule of moe_layer_schedule().
void read_deepseek_moe(const Fields& f, ModelSpec& m, std::vector<std::string>* warnings,
                       const std::string& source, const char* experts_field = "n_routed_experts",
                       const char* shared_field = "n_shared_experts",
                       const char* width_field = "moe_intermediate_size") {
  if (!f.present(experts_field)) return;  // a dense DeepSeek
  m.moe.num_experts = static_cast<int>(f.positive(experts_field));
  m.moe.router_topk = static_cast<int>(f.positive("num_experts_per_tok"));
  check_topk(f, m, experts_field);
  m.moe.ffn_hidden_size = f.positive(width_field);
  m.moe.shared_expert_ffn_hidden_size = f.non_negative_or(shared_field, 0) * m.moe.ffn_hidden_size;
  // Group-limited routing (DeepSeek-V3: n_group 8, topk_group 4); V2-Lite's n_group 1 is no limit.
  I64 groups = f.non_negative_or("n_group", 0), group_topk = f.non_negative_or("topk_group", 0);
  if (groups > 1 && group_topk > 0 && group_topk < groups && m.moe.num_experts % groups == 0) {
    m.moe.router_num_groups = static_cast<int>(groups);
    m.moe.router_group_topk = static_cast<int>(group_topk);
  }
  std::vector<bool> pattern = moe_layer_schedule(f, m);
  if (std::none_of(pattern.begin(), pattern.end(), [](bool b) { return b; })) {
    if (warnings)
      warnings->push_back(source + ": " +
                          (f.present("mlp_layer_types") ? "mlp_layer_types"
                           : f.present("is_moe_layer")  ? "is_moe_layer"
                                                        : "first_k_dense_replace / moe_layer_freq") +
                          " leave no MoE layer: the model is dense");
    m.moe = MoESpec{};
    return;
  }
  set_moe_pattern(m, std::move(pattern));
}

/// EXAONE-MoE's attention layers (ExaoneMoeBridge): `sliding_windows` (a window per layer, 0 = full
/// attention) or `sliding_window` on the layers `layer_types` names ("sliding_attention" / "full_attention"),
/// else on the local layers of `sliding_window_pattern` ("LLLG": L local, G global, repeated; an integer N:
/// every N-th layer global), else on every layer (the bridge's reading).  One window size is modelled
/// (ModelSpec::sliding_window): layers with different positive windows are refused.
void read_exaone_windows(const Fields& f, ModelSpec& m) {
  std::vector<I64> windows;
  const char* field = "sliding_windows";
  if (f.present("sliding_windows")) {
    windows = f.non_negative_list("sliding_windows");
  } else if (f.present("sliding_window")) {
    field = "sliding_window";
    const I64 w = f.positive("sliding_window");
    if (f.present("layer_types")) {
      field = "layer_types";
      for (bool sliding : sliding_layers(f, m.num_layers)) windows.push_back(sliding ? w : 0);
    } else if (f.is_string("sliding_window_pattern")) {
      const std::string pattern = f.string_or("sliding_window_pattern", "");
      if (pattern.empty() || pattern.find_first_not_of("LG") != std::string::npos)
        throw f.error("sliding_window_pattern",
                      "'" + pattern + "' is not a pattern of L (local) and G (global)");
      for (int i = 0; i < m.num_layers; ++i) windows.push_back(pattern[i % pattern.size()] == 'L' ? w : 0);
    } else {
      const I64 every = f.positive_or("sliding_window_pattern", 0);
      for (int i = 0; i < m.num_layers; ++i) windows.push_back(every > 0 && (i + 1) % every == 0 ? 0 : w);
    }
  } else {
    return;  // full attention on every layer
  }
  if (static_cast<int>(windows.size()) != m.num_layers)
    throw f.error(field, std::to_string(windows.size()) + " entries for " + std::to_string(m.num_layers) +
                             " layers (num_hidden_layers)");
  I64 window = 0;
  for (I64 w : windows) {
    if (w > 0 && window > 0 && w != window)
      throw f.error(field, "layers attend different windows (" + std::to_string(window) + " and " +
                               std::to_string(w) + " keys); one window size is modelled");
    if (w > 0) window = w;
  }
  if (window == 0) return;
  m.sliding_window = window;
  m.layer_has_window.clear();
  for (I64 w : windows) m.layer_has_window.push_back(w > 0);
}

void read_qwen_moe(const Fields& f, ModelSpec& m, bool shared, std::vector<std::string>* warnings,
                   const std::string& source) {
  I64 experts = f.non_negative_or("num_experts", 0);
  if (experts == 0) return;
  m.moe.num_experts = static_cast<int>(experts);
  m.moe.router_topk = static_cast<int>(f.positive("num_experts_per_tok"));
  check_topk(f, m, "num_experts");
  m.moe.ffn_hidden_size = f.positive("moe_intermediate_size");
  if (shared) m.moe.shared_expert_ffn_hidden_size = f.non_negative_or("shared_expert_intermediate_size", 0);
  // Qwen2MoeSparseMoeBlock / Qwen3NextSparseMoeBlock: shared_expert_gate, Linear(hidden, 1), sigmoid-scales
  // the shared expert's output (Megatron-Bridge maps it to --moe-shared-expert-gate).
  m.moe.shared_expert_gate = shared && m.moe.shared_expert_ffn_hidden_size > 0;
  I64 step = f.positive_or("decoder_sparse_step", 1);
  std::vector<I64> dense = f.layer_list("mlp_only_layers", m.num_layers);
  std::vector<bool> pattern(m.num_layers);
  for (int i = 0; i < m.num_layers; ++i)
    pattern[i] = std::find(dense.begin(), dense.end(), i) == dense.end() && (i + 1) % step == 0;
  if (std::none_of(pattern.begin(), pattern.end(), [](bool b) { return b; })) {
    if (warnings)
      warnings->push_back(source +
                          ": decoder_sparse_step / mlp_only_layers leave no MoE layer: the model is dense");
    m.moe = MoESpec{};
    return;
  }
  set_moe_pattern(m, std::move(pattern));
}

/// Qwen3-Next (model_type qwen3_next, transformers' configuration_qwen3_next.py) as Megatron trains it
/// (Megatron-Bridge's Qwen3-Next bridge: --experimental-attention-variant gated_delta_net): every layer a
/// transformer layer whose self-attention is a gated delta net (layer_types "linear_attention", or all but
/// every full_attention_interval-th layer) or gated softmax attention with q / k norms
/// (--attention-output-gate), and a MoE MLP with a shared expert.
void read_qwen3_next(const Fields& f, ModelSpec& m) {
  m.qk_layernorm = true;
  m.attention_output_gate = true;
  std::vector<bool> linear(m.num_layers);
  const std::vector<std::string> types =
      f.present("layer_types") ? f.string_list("layer_types") : std::vector<std::string>{};
  if (f.present("layer_types")) {
    if (static_cast<int>(types.size()) != m.num_layers)
      throw f.error("layer_types", "has " + std::to_string(types.size()) +
                                       " entries but num_hidden_layers is " + std::to_string(m.num_layers));
    for (int i = 0; i < m.num_layers; ++i) {
      if (types[i] != "linear_attention" && types[i] != "full_attention")
        throw f.error("layer_types",
                      "entry '" + types[i] + "' is neither linear_attention nor full_attention");
      linear[i] = types[i] == "linear_attention";
    }
  } else {
    const I64 every = f.positive_or("full_attention_interval", 4);
    for (int i = 0; i < m.num_layers; ++i) linear[i] = (i + 1) % every != 0;
  }
  m.gdn_layers = std::move(linear);
  m.gdn.key_head_dim = f.positive_or("linear_key_head_dim", 128);
  m.gdn.value_head_dim = f.positive_or("linear_value_head_dim", 128);
  m.gdn.num_key_heads = f.positive_or("linear_num_key_heads", 16);
  m.gdn.num_value_heads = f.positive_or("linear_num_value_heads", 32);
  m.gdn.conv_kernel = f.positive_or("linear_conv_kernel_dim", 4);
}

/// Llama 4's language model (transformers' configuration_llama4.py Llama4TextConfig): MoE layers every
/// interleave_moe_layer_step-th layer (or `moe_layers`) with num_local_experts of intermediate_size, top
/// num_experts_per_tok, and a shared expert of intermediate_size; the other layers a dense MLP of
/// intermediate_size_mlp; q / k norms (use_qk_norm: Llama 4's weightless L2 norm, counted as Megatron's
/// per-head norm).  Chunked local attention (attention_chunk_size on the RoPE layers) is priced as full
/// causal attention, with a note: the same for sequences up to the chunk.
void read_llama4(const Fields& f, ModelSpec& m, std::vector<std::string>* warnings,
                 const std::string& source) {
  m.ffn_hidden_size = f.positive_or("intermediate_size_mlp", m.ffn_hidden_size);
  m.qk_layernorm = f.boolean_or("use_qk_norm", false);
  const I64 experts = f.positive("num_local_experts");
  m.moe.num_experts = static_cast<int>(experts);
  m.moe.router_topk = static_cast<int>(f.positive_or("num_experts_per_tok", 1));
  check_topk(f, m, "num_local_experts");
  m.moe.ffn_hidden_size = f.positive("intermediate_size");
  m.moe.shared_expert_ffn_hidden_size = m.moe.ffn_hidden_size;  // Llama4TextMoe.shared_expert
  std::vector<bool> pattern(m.num_layers);
  const std::vector<I64> listed = f.layer_list("moe_layers", m.num_layers);
  if (f.present("moe_layers")) {
    for (I64 l : listed) pattern[l] = true;
  } else {
    const I64 step = f.positive_or("interleave_moe_layer_step", 1);
    for (int i = 0; i < m.num_layers; ++i) pattern[i] = (i + 1) % step == 0;
  }
  if (std::none_of(pattern.begin(), pattern.end(), [](bool b) { return b; }))
    throw f.error(f.present("moe_layers") ? "moe_layers" : "interleave_moe_layer_step",
                  "leaves no MoE layer among the " + std::to_string(m.num_layers));
  set_moe_pattern(m, std::move(pattern));
  if (f.present("attention_chunk_size") && warnings)
    warnings->push_back(
        source + ": attention_chunk_size " + std::to_string(f.positive("attention_chunk_size")) +
        ": Llama 4's chunked local attention is priced as full causal attention (the same up to a "
        "sequence of one chunk; longer ones are priced slow)");
}

/// NVIDIA's Nemotron-H / Nemotron-3 (model_type nemotron_h, its configuration_nemotron_h.py): a hybrid of
/// Mamba-2 mixers, attention without position embedding and squared-ReLU MLPs or MoE layers, one symbol per
/// layer in hybrid_override_pattern (M, *, -, E), as Megatron-Bridge's NemotronH bridge maps it onto
/// Megatron's hybrid model.
void read_nemotron_h(const Fields& f, ModelSpec& m) {
  m.hidden_size = f.positive("hidden_size");
  m.num_layers = static_cast<int>(f.positive("num_hidden_layers"));
  m.hybrid_pattern = f.string_or("hybrid_override_pattern", "");
  if (m.hybrid_pattern.empty())
    throw f.error("hybrid_override_pattern", "is missing (required for model_type nemotron_h)");
  if (static_cast<int>(m.hybrid_pattern.size()) != m.num_layers)
    throw f.error("hybrid_override_pattern", "has " + std::to_string(m.hybrid_pattern.size()) +
                                                 " layers but num_hidden_layers is " +
                                                 std::to_string(m.num_layers));
  for (char ch : m.hybrid_pattern)
    if (ch != 'M' && ch != '*' && ch != '-' && ch != 'E')
      throw f.error("hybrid_override_pattern",
                    std::string("layer symbol '") + ch + "' is not modelled (M, *, -, E)");
  m.num_attention_heads = static_cast<int>(f.positive("num_attention_heads"));
  m.num_query_groups = static_cast<int>(f.positive_or("num_key_value_heads", m.num_attention_heads));
  m.kv_channels =
      f.positive_or("head_dim", f.positive_or("attention_head_dim", m.hidden_size / m.num_attention_heads));
  m.ffn_hidden_size = f.positive("intermediate_size");
  m.vocab_size = f.positive("vocab_size");
  m.max_position_embeddings = f.positive_or("max_position_embeddings", 0);
  m.untie_embeddings_and_output_weights = !f.boolean_or("tie_word_embeddings", false);
  m.attention_dropout = f.probability_or("attention_dropout", 0.0);
  m.hidden_dropout = f.probability_or("hidden_dropout", 0.0);
  m.normalization = Normalization::RMSNorm;
  m.position_embedding = PositionEmbedding::None;
  m.activation = ungated_activation(f, "mlp_hidden_act");
  m.add_bias_linear = f.boolean_or("use_bias", false) || f.boolean_or("mlp_bias", false);
  m.add_qkv_bias = f.boolean_or("attention_bias", false);
  m.mamba.num_heads = f.positive_or("mamba_num_heads", 0);
  m.mamba.head_dim = f.positive_or("mamba_head_dim", 64);
  m.mamba.state_dim = f.positive_or("ssm_state_size", 128);
  m.mamba.num_groups = f.positive_or("n_groups", 8);
  m.mamba.conv_kernel = f.positive_or("conv_kernel", 4);
  m.mamba.chunk_size = f.positive_or("chunk_size", 128);
  if (I64 expand = f.positive_or("expand", 2); expand != 2 && m.mamba.num_heads == 0)
    m.mamba.num_heads = expand * m.hidden_size / m.mamba.head_dim;
  if (f.positive_or("n_routed_experts", 0) > 0) {
    m.moe.num_experts = static_cast<int>(f.positive("n_routed_experts"));
    m.moe.router_topk = static_cast<int>(f.positive("num_experts_per_tok"));
    check_topk(f, m, "n_routed_experts");
    m.moe.ffn_hidden_size = f.positive_or("moe_intermediate_size", m.ffn_hidden_size);
    m.moe.shared_expert_ffn_hidden_size = f.non_negative_or("moe_shared_expert_intermediate_size", 0);
    m.moe.router_num_groups = static_cast<int>(f.non_negative_or("n_group", 0));
    m.moe.router_group_topk = static_cast<int>(f.non_negative_or("topk_group", 0));
    if (m.moe.router_num_groups <= 1) m.moe.router_num_groups = m.moe.router_group_topk = 0;
  }
  // LatentMoE (Nemotron-3 Super / Ultra): the routed experts and the exchanges at moe_latent_size.
  if (I64 latent = f.positive_or("moe_latent_size", 0); latent > 0) {
    if (!m.moe.enabled()) throw f.error("moe_latent_size", "is set but the model has no routed experts");
    m.moe.latent_size = latent;
  }
  // Multi-token prediction as Megatron-Bridge's NemotronH bridge maps it (_hf_mtp_config): the depths from
  // num_nextn_predict_layers, each of mtp_hybrid_override_pattern's layers, one layer repeated at every depth
  // unless mtp_use_repeated_layer says otherwise.  (Its pretraining recipes then ask for more depths: Super's
  // runs 2; --mtp-num-layers on the command line would say so.)
  if (I64 mtp = f.non_negative_or("num_nextn_predict_layers", 0); mtp > 0) {
    const std::string depth = f.string_or("mtp_hybrid_override_pattern", "");
    if (depth.empty())
      throw f.error("mtp_hybrid_override_pattern",
                    "is required with num_nextn_predict_layers > 0 (Megatron-Bridge raises it too)");
    if (!ModelSpec::mtp_depth_modelled(depth))
      throw f.error("mtp_hybrid_override_pattern",
                    "multi-token-prediction depth '" + depth + "' " + ModelSpec::kMtpDepthNote);
    if (depth.find('E') != std::string::npos && !m.moe.enabled())
      throw f.error("mtp_hybrid_override_pattern", "has MoE layers (E) but the model has no routed experts");
    if (mtp > 64)
      throw f.error("num_nextn_predict_layers", "is implausibly large (" + std::to_string(mtp) + ")");
    m.mtp_num_layers = static_cast<int>(mtp);
    m.mtp_hybrid_pattern = depth;
    m.mtp_repeated_layer = f.boolean_or("mtp_use_repeated_layer", true);
  }
}

void read_gpt2(const Fields& f, ModelSpec& m) {
  m.hidden_size = f.positive("n_embd");
  m.num_layers = static_cast<int>(f.positive("n_layer"));
  m.num_attention_heads = static_cast<int>(f.positive("n_head"));
  if (m.hidden_size % m.num_attention_heads != 0)
    throw f.error("n_embd", std::to_string(m.hidden_size) + " is not divisible by n_head " +
                                std::to_string(m.num_attention_heads));
  m.num_query_groups = m.num_attention_heads;
  m.kv_channels = m.hidden_size / m.num_attention_heads;
  m.ffn_hidden_size = f.positive_or("n_inner", 4 * m.hidden_size);
  m.max_position_embeddings = f.positive("n_positions");
  m.vocab_size = f.positive("vocab_size");
  m.untie_embeddings_and_output_weights = !f.boolean_or("tie_word_embeddings", true);
  m.attention_dropout = f.probability_or("attn_pdrop", 0.1);
  m.hidden_dropout = f.probability_or("resid_pdrop", 0.1);
  m.activation = Activation::GeLU;
  m.normalization = Normalization::LayerNorm;
  m.position_embedding = PositionEmbedding::LearnedAbsolute;
  m.add_bias_linear = true;
  m.add_qkv_bias = false;
}

std::string json_error_line(const std::string& text, std::size_t byte) {
  std::size_t end = std::min(byte == 0 ? 0 : byte - 1, text.size());
  return std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

}  // namespace

std::string mtp_left_out_note(const ModelSpec& final_model) {
  return final_model.mtp_num_layers > 0 ? std::string() : final_model.checkpoint_mtp_note;
}

const std::vector<std::string>& supported_hf_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> t;
    for (const auto& [name, family] : families()) t.push_back(name);
    return t;
  }();
  return types;
}

ModelSpec model_from_hf_config(const json& config, const std::string& source,
                               std::vector<std::string>* warnings) {
  if (!config.is_object()) throw InputError(source, "expected a JSON object (a Hugging Face config.json)");
  // Vision-language checkpoints (LlavaForConditionalGeneration, Mistral3ForConditionalGeneration, …) keep the
  // language model's config in `text_config`: read that, and say the vision tower is not modelled.
  if (auto text = config.find("text_config");
      text != config.end() && text->is_object() && !config.contains("num_hidden_layers")) {
    json inner = *text;
    if (!inner.contains("_name_or_path") && config.contains("_name_or_path"))
      inner["_name_or_path"] = config["_name_or_path"];
    if (warnings) {
      std::string outer = config.value("model_type", std::string("a multimodal model"));
      warnings->push_back(
          source + ": " + outer +
          ": only the language model (text_config) is modelled; the vision tower and projector "
          "are not counted");
    }
    return model_from_hf_config(inner, source + ": text_config", warnings);
  }

  std::string type;
  if (auto it = config.find("model_type"); it != config.end() && !it->is_null()) {
    if (!it->is_string()) throw InputError(source + ": model_type", "expected a string, got " + it->dump());
    type = it->get<std::string>();
  } else if (auto arch = config.find("architectures");
             arch != config.end() && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
    auto a = architectures().find((*arch)[0].get<std::string>());
    if (a == architectures().end())
      throw InputError(source + ": architectures",
                       "no model_type, and architecture " + (*arch)[0].dump() +
                           " is not one preflight knows (model types: " + joined_types() + ")");
    type = a->second;
  } else {
    throw InputError(source + ": model_type", "is missing (and no architectures entry names the model)");
  }
  // Known model types whose layers preflight does not price: refused by what they are, not as unknown.
  static const std::map<std::string, std::string> refused = {
      {"deepseek_v32", "DeepSeek sparse attention (an indexer picks the keys each query attends)"},
      {"glm_moe_dsa", "DeepSeek sparse attention (an indexer picks the keys each query attends)"},
      {"gemma2", "Gemma 2's attention-logit soft-capping"},
      {"deepseek_v4", "DeepSeek-V4's compressed sparse attention and hash routing"},
      {"falcon_h1", "Falcon-H1's attention and Mamba mixers side by side in one layer"},
      {"nemotron-nas",
       "a heterogeneous stack (block_configs: per-layer attention and FFN; Megatron's "
       "--heterogeneous-layers-config-path)"},
      {"mimo_v2_flash",
       "MiMo-V2-Flash's hybrid attention (full and sliding-window layers with their own key/value head "
       "counts, value heads narrower than query / key heads, attention sinks)"},
      {"kimi_k3", "Kimi K3's Kimi-delta-attention (KDA) linear layers and block attention residuals"},
      {"kimi_linear", "Kimi Linear's Kimi-delta-attention (KDA) linear layers"},
      {"step3p7",
       "Step-3.7's hybrid attention (full and sliding-window layers with their own head counts, per-head "
       "attention gates)"},
      {"step3p5",
       "Step-3.5's hybrid attention (full and sliding-window layers with their own head counts, per-head "
       "attention gates)"},
      {"gemma4",
       "Gemma 4's layers (per-layer input embeddings, key/value sharing across layers, global layers with "
       "their own head size)"},
      {"gemma4_text",
       "Gemma 4's layers (per-layer input embeddings, key/value sharing across layers, global layers with "
       "their own head size)"},
  };
  if (auto r = refused.find(type); r != refused.end())
    throw InputError(source + ": model_type", "'" + type + "': " + r->second +
                                                  " is not modelled; preflight would misprice these layers");
  auto fam = families().find(type);
  if (fam == families().end()) {
    // A model type of its own on a known architecture (Kimi-K2's "kimi_k2" is DeepseekV3ForCausalLM): read
    // as that architecture, and say so.
    auto arch = config.find("architectures");
    if (arch != config.end() && arch->is_array() && !arch->empty() && (*arch)[0].is_string()) {
      auto a = architectures().find((*arch)[0].get<std::string>());
      if (a != architectures().end()) {
        if (warnings)
          warnings->push_back(source + ": model_type '" + type + "' read as its architecture " +
                              (*arch)[0].get<std::string>() + " (model_type " + a->second + ")");
        type = a->second;
        fam = families().find(type);
      }
    }
  }
  if (fam == families().end())
    throw InputError(source + ": model_type",
                     "unsupported model type '" + type + "' (supported: " + joined_types() + ")");

  Fields f(config, source, type);
  ModelSpec m;
  m.name = f.string_or("_name_or_path", "");
  switch (fam->second) {
    case Family::Gpt2:
      read_gpt2(f, m);
      break;
    case Family::Llama:
    case Family::Mistral:
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      break;
    case Family::Qwen2:
      read_llama_like(f, m);
      m.add_qkv_bias = true;  // Qwen2Attention: q/k/v projections with bias, o_proj without
      note_mtp_left_out(f, m, source);  // MiMo
      break;
    case Family::Glm:
    case Family::Glm4:
      // GLM-4 (transformers' configuration_glm.py / configuration_glm4.py): Llama's geometry with q / k / v
      // biases (attention_bias, default true; o_proj has none) and partial rotary (priced as full); glm4 adds
      // post_self_attn_layernorm and post_mlp_layernorm on the blocks' outputs (sandwich norms).
      read_llama_like(f, m);
      m.add_qkv_bias = f.boolean_or("attention_bias", true);
      m.sandwich_norms = fam->second == Family::Glm4;
      break;
    case Family::Gemma:
      // Gemma (transformers' configuration_gemma.py; Megatron-Bridge's GemmaBridge): Llama's geometry with
      // head_dim 256, a gated tanh-GELU (priced as SwiGLU: the same shapes), RMSNorm, embeddings always tied.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.untie_embeddings_and_output_weights = false;
      break;
    case Family::Nemotron: {
      // Nemotron-4 / Minitron (transformers' configuration_nemotron.py; NemotronBridge): LayerNorm1P (a
      // LayerNorm with weight and bias), an MLP of up_proj → hidden_act → down_proj without a gate (relu2:
      // squared ReLU), partial rotary (priced as full: the rotation's time is in the attention's elementwise
      // ops), untied embeddings.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.normalization = Normalization::LayerNorm;
      m.activation = ungated_activation(f, "hidden_act");
      break;
    }
    case Family::SarvamMla:
      // Sarvam-105B (SarvamMLABridge, SarvamMLAModelProvider): DeepSeek-V3's multi-latent attention with one
      // q projection (no q_lora_rank), a leading dense layer (first_k_dense_replace), num_experts routed and
      // num_shared_experts shared experts of moe_intermediate_size.  The checkpoint's own gate groups
      // experts when its config names no n_group (16 groups, keep 2); the bridge does not, so neither does
      // preflight — routing groups do not change the priced work.
      read_llama_like(f, m);
      if (f.boolean_or("use_bias", false) || f.boolean_or("attention_bias", false))
        throw f.error(f.present("use_bias") ? "use_bias" : "attention_bias",
                      "linear biases are not modelled for " + type);
      read_mla(f, m);
      read_deepseek_moe(f, m, warnings, source, "num_experts", "num_shared_experts");
      note_mtp_left_out(f, m, source);
      break;
    case Family::ExaoneMoe:
      // K-EXAONE (ExaoneMoeBridge): GQA with q / k norms (always on), sliding-window and full attention
      // layers (read_exaone_windows; the full layers' missing RoPE costs nothing), DeepSeek's MoE under
      // num_experts / num_shared_experts with the dense / sparse schedule of mlp_layer_types or is_moe_layer,
      // group-limited routing (n_group / topk_group), MTP layers left out.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = true;
      read_deepseek_moe(f, m, warnings, source, "num_experts", "num_shared_experts");
      read_exaone_windows(f, m);
      note_mtp_left_out(f, m, source);
      break;
    case Family::HyV3:
      // Hy3 (HYV3Bridge): GQA with q / k norms (qk_norm), dense-first layers (first_k_dense_replace, or
      // mlp_layer_types), num_experts routed and num_shared_experts shared experts of moe_intermediate_size
      // (expert_hidden_dim in older configs), MTP layers left out.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = f.boolean_or("qk_norm", true);
      read_deepseek_moe(f, m, warnings, source, "num_experts", "num_shared_experts",
                        f.present("moe_intermediate_size") ? "moe_intermediate_size" : "expert_hidden_dim");
      note_mtp_left_out(f, m, source);
      break;
    case Family::MinimaxM3:
      // MiniMax-M3's language model (MiniMaxM3Bridge): GQA with q / k norms (use_qk_norm), partial RoPE,
      // dense layers of dense_intermediate_size and MoE layers (moe_layer_freq, a 0 / 1 list, or
      // mlp_layer_types) of num_local_experts experts of intermediate_size, top num_experts_per_tok, and
      // n_shared_experts (1 when only the width is given) of shared_intermediate_size; the clamped SwiGLU-OAI
      // priced as SwiGLU (same shapes) and zero-centred norms as RMSNorm.  The lightning indexer of its
      // sparse attention is not run by Megatron (full attention on every layer, as priced) and the released
      // checkpoint has no MTP weights (the bridge builds none).
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = f.boolean_or("use_qk_norm", true);
      m.ffn_hidden_size = f.positive_or("dense_intermediate_size", m.ffn_hidden_size);
      read_deepseek_moe(f, m, warnings, source, "num_local_experts", "n_shared_experts", "intermediate_size");
      if (m.moe.enabled()) {
        const I64 shared_width = f.non_negative_or("shared_intermediate_size", 0);
        const I64 shared = f.non_negative_or("n_shared_experts", shared_width > 0 ? 1 : 0);
        m.moe.shared_expert_ffn_hidden_size = shared * shared_width;
      }
      if (f.present("sparse_attention_config") && warnings)
        warnings->push_back(source +
                            ": sparse_attention_config: the lightning indexer is not run by Megatron (full "
                            "attention on every layer, as priced) and its weights are not counted");
      break;
    case Family::PostNorm:
      // EXAONE 4 / OLMo 2 / OLMo 3: q / k norms always (counted per head; OLMo's span the whole projection, a
      // few thousand weights a layer more), a norm after each block's output and none before it — the same
      // two norms a layer over tensors of the same shape as pre-norm layers, with the same work and the same
      // kept activations, so priced as those (said).
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = true;
      read_exaone_windows(f, m);
      if (warnings)
        warnings->push_back(
            source + ": " + type +
            ": post-norm layers (a norm after attention and after the MLP, none before) priced "
            "as pre-norm layers: the same norms on tensors of the same shape");
      break;
    case Family::BailingMoeV2:
      // Ling 2.0 (BailingMoeV2Bridge): GQA with q / k norms and optional q / k / v biases (use_qkv_bias),
      // DeepSeek's MoE layout under its own field names (num_experts, num_shared_experts of
      // moe_intermediate_size, first_k_dense_replace, group-limited routing), MTP layers left out.
      read_llama_like(f, m);
      m.qk_layernorm = f.boolean_or("use_qk_norm", true);
      m.add_qkv_bias = f.boolean_or("use_qkv_bias", false);
      if (f.boolean_or("use_bias", false))
        throw f.error("use_bias", "linear biases are not modelled for " + type);
      read_deepseek_moe(f, m, warnings, source, "num_experts", "num_shared_experts");
      note_mtp_left_out(f, m, source);
      break;
    case Family::Qwen2Moe:
      read_llama_like(f, m);
      m.add_qkv_bias = true;
      read_qwen_moe(f, m, /*shared=*/true, warnings, source);
      break;
    case Family::Qwen3:
    case Family::Qwen3Moe:
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = true;  // Qwen3Attention: q_norm / k_norm over head_dim
      if (fam->second == Family::Qwen3Moe) read_qwen_moe(f, m, /*shared=*/false, warnings, source);
      break;
    case Family::GptOss:
      // GPT-OSS: every layer MoE (num_local_experts of intermediate_size, top num_experts_per_tok), gated
      // clamped SwiGLU (priced as SwiGLU), attention biases and sinks (one scalar per head, not counted).
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      read_uniform_moe(f, m, "num_local_experts", 0);
      break;
    case Family::Mixtral:
      read_llama_like(f, m);
      read_uniform_moe(f, m, "num_local_experts", 2);
      break;
    case Family::NemotronH:
      read_nemotron_h(f, m);
      break;
    case Family::Llama4:
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      read_llama4(f, m, warnings, source);
      break;
    case Family::Gemma3:
      // Gemma 3's language model (transformers' configuration_gemma3.py Gemma3TextConfig): Llama's geometry
      // with a norm before and after each block (sandwich norms), q / k norms per head, a gated GELU (priced
      // as SwiGLU: the same shapes), tied embeddings by default, and local sliding-window attention on all
      // but every sliding_window_pattern-th layer (or as layer_types says).
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.sandwich_norms = true;
      m.qk_layernorm = true;
      m.untie_embeddings_and_output_weights = !f.boolean_or("tie_word_embeddings", true);
      if (f.present("attn_logit_softcapping"))
        throw f.error("attn_logit_softcapping", "attention-logit soft-capping is not modelled");
      if (f.present("sliding_window") && !f.present("layer_types")) {
        m.sliding_window = f.positive("sliding_window");
        const I64 every = f.positive_or("sliding_window_pattern", 6);
        m.layer_has_window.assign(m.num_layers, false);
        for (int i = 0; i < m.num_layers; ++i) m.layer_has_window[i] = (i + 1) % every != 0;
      }
      break;
    case Family::Ernie45Moe: {
      // ERNIE 4.5 MoE (Megatron-Bridge's Ernie45Bridge): moe_num_experts (the text pool's: the first of a
      // list) of moe_intermediate_size, top moe_k, moe_num_shared_experts shared experts of the same width;
      // dense layers by mlp_layer_types, else before moe_layer_start_index, else layer 0 alone.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.moe.num_experts = static_cast<int>(f.first_positive_or("moe_num_experts", 64));
      m.moe.router_topk = static_cast<int>(f.positive_or("moe_k", 6));
      check_topk(f, m, "moe_num_experts");
      m.moe.ffn_hidden_size = f.first_positive_or("moe_intermediate_size", m.ffn_hidden_size);
      m.moe.shared_expert_ffn_hidden_size =
          f.non_negative_or("moe_num_shared_experts", 2) * m.moe.ffn_hidden_size;
      std::vector<bool> pattern(m.num_layers, true);
      if (f.present("mlp_layer_types")) {
        const auto types = f.string_list("mlp_layer_types");
        if (static_cast<int>(types.size()) != m.num_layers)
          throw f.error("mlp_layer_types", "has " + std::to_string(types.size()) +
                                               " entries but num_hidden_layers is " +
                                               std::to_string(m.num_layers));
        for (int i = 0; i < m.num_layers; ++i) pattern[i] = types[i] != "dense";
      } else {
        const I64 start = f.first_positive_or("moe_layer_start_index", 1, /*zero_allowed=*/true);
        if (start >= m.num_layers) throw f.error("moe_layer_start_index", "leaves no MoE layer");
        for (int i = 0; i < static_cast<int>(start); ++i) pattern[i] = false;
      }
      set_moe_pattern(m, std::move(pattern));
      note_mtp_left_out(f, m, source);
      break;
    }
    case Family::Olmoe:
      // OLMoE (Megatron-Bridge's OlmoeBridge): every layer MoE, num_experts of intermediate_size, top
      // num_experts_per_tok, q / k norms, untied embeddings.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = true;
      read_uniform_moe(f, m, "num_experts", 0);
      break;
    case Family::MinimaxM2:
      // MiniMax-M2 / M2.5 / M2.7 (Megatron-Bridge's MiniMaxM2Bridge): every layer MoE, num_local_experts of
      // intermediate_size (the bridge's generic mapping: no moe_intermediate_size, so the experts take
      // ffn_hidden_size), top num_experts_per_tok, GQA attention with q / k norms (full-dimension in the
      // model, counted per head: the weights differ by a few thousand a layer); its MTP modules are not
      // mapped.
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      m.qk_layernorm = f.boolean_or("use_qk_norm", false);
      read_uniform_moe(f, m, "num_local_experts", 0);
      m.moe.shared_expert_ffn_hidden_size = f.non_negative_or("shared_intermediate_size", 0);
      break;
    case Family::Glm4Moe:
      // GLM-4.5 / 4.6 (transformers' configuration_glm4_moe.py): GQA attention with partial RoPE and q / k /
      // v biases (attention_bias; o_proj has none), optional q / k norms (use_qk_norm), DeepSeek-V3's MoE
      // layout (first_k_dense_replace dense layers, n_routed_experts of moe_intermediate_size, shared
      // experts).
      read_llama_like(f, m);
      m.add_qkv_bias = f.boolean_or("attention_bias", false);
      m.qk_layernorm = f.boolean_or("use_qk_norm", false);
      read_deepseek_moe(f, m, warnings, source);
      note_mtp_left_out(f, m, source);
      break;
    case Family::Qwen3Next:
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      read_qwen3_next(f, m);
      read_qwen_moe(f, m, /*shared=*/true, warnings, source);
      note_mtp_left_out(f, m, source);
      break;
    case Family::DeepSeek:
    case Family::DeepSeekV2:
    case Family::DeepSeekV3:
      read_llama_like(f, m);
      read_biases(f, m, warnings, source);
      if (fam->second != Family::DeepSeek) read_mla(f, m);
      read_deepseek_moe(f, m, warnings, source);
      note_mtp_left_out(f, m, source);
      break;
  }
  if (fam->second == Family::Mistral || fam->second == Family::Mixtral || fam->second == Family::GptOss ||
      (fam->second == Family::Gemma3 && f.present("layer_types")))
    read_sliding_window(f, /*used_by_default=*/true, m, warnings, source);
  else if (fam->second != Family::Gpt2 && fam->second != Family::NemotronH &&
           fam->second != Family::Qwen3Next && fam->second != Family::ExaoneMoe &&
           fam->second != Family::PostNorm)
    read_sliding_window(f, /*used_by_default=*/false, m, warnings, source);  // Qwen: `use_sliding_window`

  // Everything above checked the fields by their Hugging Face names; this is a last guard for what the
  // layer graph needs, reported against the file.
  try {
    m.validate();
  } catch (const InputError& e) {
    throw InputError(source, "inconsistent model (" + e.where() + ": " + e.detail() + ")");
  }
  return m;
}

ModelSpec parse_hf_config(const std::string& text, const std::string& source,
                          std::vector<std::string>* warnings) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 5: syntax error while …"
    if (auto colon = msg.find(": "); colon != std::string::npos) msg = msg.substr(colon + 2);
    throw InputError(source + ":" + json_error_line(text, e.byte), "malformed JSON: " + msg);
  }
  return model_from_hf_config(j, source, warnings);
}

namespace {

/// "ORG/REPO" of a Hugging Face Hub file URL (huggingface.co, hf.co or $HF_ENDPOINT), or "".
std::string hf_repo_of_url(const std::string& url) {
  if (!is_hf_hub_url(url)) return "";
  std::string rest = url.substr(url.find("://") + 3);
  rest = rest.substr(rest.find('/') + 1);  // past the host
  std::string endpoint = hf_endpoint();
  if (url.rfind(endpoint + "/", 0) == 0) rest = url.substr(endpoint.size() + 1);  // a mirror with a path
  auto first = rest.find('/');
  if (first == std::string::npos) return "";
  auto second = rest.find('/', first + 1);
  return second == std::string::npos ? "" : rest.substr(0, second);
}

/// The Hub token a user of huggingface_hub has set: $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else "".
std::string hf_token_from_env() {
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return "";
}

}  // namespace

ModelSpec load_hf_config(const std::string& path_or_url, std::vector<std::string>* warnings,
                         const HttpOptions& http) {
  namespace fs = std::filesystem;
  if (is_http_url(path_or_url)) {
    HttpOptions options = http;
    if (options.bearer_token.empty() && is_hf_hub_url(path_or_url))
      options.bearer_token = hf_token_from_env();
    std::string body = http_get(path_or_url, options);
    ModelSpec m = parse_hf_config(body, path_or_url, warnings);
    if (std::string repo = hf_repo_of_url(path_or_url); !repo.empty())
      m.name = repo;
    else if (m.name.empty())
      m.name = path_or_url;
    return m;
  }
  fs::path p = path_or_url;
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    p /= "config.json";
    if (!fs::is_regular_file(p, ec))
      throw InputError(path_or_url,
                       "directory has no config.json (expected a Hugging Face checkpoint folder)");
  }
  if (!fs::exists(p, ec)) throw InputError(path_or_url, "no such file");
  if (!fs::is_regular_file(p, ec)) throw InputError(path_or_url, "not a regular file");
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string(), "cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(p.string(), "read error");
  ModelSpec m = parse_hf_config(text.str(), p.string(), warnings);
  if (m.name.empty()) {
    fs::path dir = fs::absolute(p, ec).parent_path();
    m.name = p.filename() == "config.json" && !dir.filename().empty() ? dir.filename().string()
                                                                      : p.stem().string();
  }
  return m;
}

}  // namespace preflight::analyzer
