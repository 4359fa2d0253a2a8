#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>
#include <CLI/CLI.hpp>

#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

using I64 = std::int64_t;
namespace fs = std::filesystem;

std::string num(I64 v) {
  return std::to_string(v);
}

std::string list_text(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + num(v[i]);
  return s + "]";
}

std::string grid_text(const ChunkGrid& g) {
  if (g.size() == 1) return list_text(g[0]);
  std::string s = "[";
  for (std::size_t i = 0; i < g.size(); ++i) s += (i ? ", " : "") + list_text(g[i]);
  return s + "]";
}

/// Access to the YAML tree; every error names "FILE:LINE: path".
struct Doc {
  std::string file;

  std::string where(const YAML::Node& n, const std::string& path) const {
    if (!n.IsDefined()) return file + ": " + path;
    const YAML::Mark m = n.Mark();
    return (m.line < 0 ? file : location(file, m.line + 1)) + ": " + path;
  }
  InputError error(const YAML::Node& n, const std::string& path, const std::string& what) const {
    return InputError(where(n, path), what);
  }

  static bool is_null(const YAML::Node& n) {
    if (!n.IsDefined() || n.IsNull()) return true;
    if (!n.IsScalar()) return false;
    const std::string& s = n.Scalar();
    return s == "None" || s == "null" || s == "~" || s == "Null" || s == "NULL";
  }

  std::optional<bool> boolean_of(const YAML::Node& n) const {
    if (!n.IsScalar()) return std::nullopt;
    std::string s = n.Scalar();
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    return std::nullopt;
  }

  bool boolean(const YAML::Node& n, const std::string& path) const {
    auto b = boolean_of(n);
    if (!b) throw error(n, path, "expected True or False, got '" + text(n) + "'");
    return *b;
  }

  std::optional<double> number_of(const YAML::Node& n) const {
    if (!n.IsScalar()) return std::nullopt;
    const std::string& s = n.Scalar();
    try {
      std::size_t pos = 0;
      double v = std::stod(s, &pos);
      if (pos != s.size() || !std::isfinite(v)) return std::nullopt;
      return v;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }

  double number(const YAML::Node& n, const std::string& path) const {
    auto v = number_of(n);
    if (!v) throw error(n, path, "expected a number, got '" + text(n) + "'");
    return *v;
  }

  std::optional<I64> integer_of(const YAML::Node& n) const {
    auto v = number_of(n);
    if (!v || *v != std::floor(*v) || std::fabs(*v) > std::numeric_limits<std::int32_t>::max())
      return std::nullopt;
    return static_cast<I64>(*v);
  }

  I64 integer(const YAML::Node& n, const std::string& path) const {
    if (boolean_of(n)) throw error(n, path, "expected an integer, got '" + text(n) + "'");
    auto v = integer_of(n);
    if (!v) throw error(n, path, "expected an integer, got '" + text(n) + "'");
    return *v;
  }

  I64 positive(const YAML::Node& n, const std::string& path) const {
    I64 v = integer(n, path);
    if (v <= 0) throw error(n, path, "must be a positive integer, got " + num(v));
    return v;
  }

  std::string string(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) throw error(n, path, "expected a string");
    return n.Scalar();
  }

  static std::string text(const YAML::Node& n) {
    if (n.IsScalar()) return n.Scalar();
    std::stringstream s;
    s << YAML::Dump(n);
    std::string t = s.str();
    std::replace(t.begin(), t.end(), '\n', ' ');
    return t;
  }
};

/// A mapping section with its path ("parallel_config", "model.model_config").
struct Section {
  const Doc* doc = nullptr;
  YAML::Node node;  // undefined when absent
  std::string path;

  bool present() const { return node.IsDefined() && node.IsMap(); }
  YAML::Node get(const std::string& key) const {
    if (!present()) return YAML::Node(YAML::NodeType::Undefined);
    for (auto it = node.begin(); it != node.end(); ++it)
      if (it->first.IsScalar() && it->first.Scalar() == key) return it->second;
    return YAML::Node(YAML::NodeType::Undefined);
  }
  bool has(const std::string& key) const { return !Doc::is_null(get(key)); }
  std::string key_path(const std::string& key) const { return path.empty() ? key : path + "." + key; }
  /// The first of `keys` present (aliases); the key name goes to `which`.
  YAML::Node any(std::initializer_list<const char*> keys, std::string* which = nullptr) const {
    for (const char* k : keys)
      if (has(k)) {
        if (which) *which = k;
        return get(k);
      }
    return YAML::Node(YAML::NodeType::Undefined);
  }
  I64 integer_or(const std::string& key, I64 dflt) const {
    return has(key) ? doc->integer(get(key), key_path(key)) : dflt;
  }
  I64 positive_or(const std::string& key, I64 dflt) const {
    return has(key) ? doc->positive(get(key), key_path(key)) : dflt;
  }
  bool bool_or(const std::string& key, bool dflt) const {
    return has(key) ? doc->boolean(get(key), key_path(key)) : dflt;
  }
  std::string string_or(const std::string& key, const std::string& dflt) const {
    return has(key) ? doc->string(get(key), key_path(key)) : dflt;
  }
  InputError error(const std::string& key, const std::string& what) const {
    return doc->error(has(key) ? get(key) : node, key_path(key), what);
  }
  /// Unknown keys are an error (MindFormers' config classes take no other arguments).
  void only(const std::set<std::string>& known) const {
    if (!present()) return;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
      if (known.count(k)) continue;
      std::string list;
      for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
      throw doc->error(it->first, path + "." + k, "unknown key (" + path + " takes: " + list + ")");
    }
  }
};

Section section(const Doc& doc, const YAML::Node& parent, const std::string& key, const std::string& path) {
  Section s{&doc, YAML::Node(YAML::NodeType::Undefined), path};
  if (!parent.IsDefined() || !parent.IsMap()) return s;
  for (auto it = parent.begin(); it != parent.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) {
      if (Doc::is_null(it->second)) return s;
      if (!it->second.IsMap()) throw doc.error(it->second, path, "expected a mapping of keys");
      s.node = it->second;
      return s;
    }
  return s;
}

// ------------------------------------------------------------------------------------------------
// Dtypes.

int dtype_bytes(const Section& s, const std::string& key, int dflt) {
  if (!s.has(key)) return dflt;
  std::string v = s.string_or(key, "");
  for (auto& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "float32" || v == "fp32") return 4;
  if (v == "float16" || v == "fp16" || v == "bfloat16" || v == "bf16") return 2;
  throw s.error(key, "unknown dtype '" + v + "' (float32, float16 or bfloat16)");
}

Precision compute_precision(const Section& s, const std::string& key, Precision dflt) {
  if (!s.has(key)) return dflt;
  std::string v = s.string_or(key, "");
  for (auto& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "float32" || v == "fp32") return Precision::FP32;
  if (v == "float16" || v == "fp16") return Precision::FP16;
  if (v == "bfloat16" || v == "bf16") return Precision::BF16;
  throw s.error(key, "unknown dtype '" + v + "' (float32, float16 or bfloat16)");
}

// ------------------------------------------------------------------------------------------------
// Model, legacy model_config (by `type`) + top-level moe_config.

std::int64_t llama_ffn(const Section& mc, std::int64_t hidden) {
  // LlamaFeedForward (models/llama/llama_layer.py @ r1.5.0:312-319), called with hidden_dim = 4·hidden.
  double h = 4.0 * static_cast<double>(hidden);
  if (mc.has("ffn_dim_multiplier")) {
    const double m = mc.doc->number(mc.get("ffn_dim_multiplier"), mc.key_path("ffn_dim_multiplier"));
    h = std::floor((m + 0.01) * h);
  }
  h = std::floor(2.0 * h / 3.0);
  const I64 multiple_of = mc.positive_or("multiple_of", 256);
  return multiple_of * static_cast<I64>(std::ceil(h / static_cast<double>(multiple_of)));
}

void read_legacy_moe(const Doc& doc, const Section& moe, bool deepseek, std::int64_t model_ffn, ModelSpec& m,
                     std::vector<std::string>& warnings) {
  if (!moe.present()) return;
  const I64 experts = moe.positive_or("expert_num", 1);
  if (experts <= 1) return;
  m.moe.num_experts = static_cast<int>(experts);
  m.moe.router_topk = static_cast<int>(moe.positive_or("num_experts_chosen", 1));
  if (m.moe.router_topk > experts)
    throw moe.error("num_experts_chosen", "chooses more experts than expert_num = " + num(experts));
  // DeepSeek's experts use moe_intermediate_size (MoEConfig default 1407); LLaMA-MoE's the model's FFN.
  m.moe.ffn_hidden_size = deepseek ? moe.positive_or("moe_intermediate_size", 1407) : model_ffn;
  if (moe.has("shared_expert_num")) {
    const double shared = doc.number(moe.get("shared_expert_num"), moe.key_path("shared_expert_num"));
    if (shared < 0) throw moe.error("shared_expert_num", "must not be negative");
    m.moe.shared_expert_ffn_hidden_size =
        static_cast<I64>(std::floor(static_cast<double>(m.moe.ffn_hidden_size) * shared));
  }
  if (moe.bool_or("use_shared_expert_gating", false))
    warnings.push_back(moe.key_path("use_shared_expert_gating") +
                       ": the shared expert's gate (hidden_size weights per layer) is not modelled");
  if (deepseek) {
    // first_k_dense_replace defaults to True, i.e. layer 0 dense (`layer_id < True`, deepseek2_model.py).
    I64 k = 1;
    if (moe.has("first_k_dense_replace")) {
      const YAML::Node n = moe.get("first_k_dense_replace");
      if (auto b = doc.boolean_of(n))
        k = *b ? 1 : 0;
      else
        k = doc.integer(n, moe.key_path("first_k_dense_replace"));
    }
    if (k < 0 || k > m.num_layers)
      throw moe.error("first_k_dense_replace", "must be between 0 and the " + num(m.num_layers) + " layers");
    if (k > 0) {
      m.moe.layer_is_moe.assign(static_cast<std::size_t>(m.num_layers), true);
      for (I64 i = 0; i < k; ++i) m.moe.layer_is_moe[static_cast<std::size_t>(i)] = false;
    }
  }
  // Fixed expert capacity (tokens padded to capacity_factor · tokens · topk / experts) unless the
  // grouped-matmul path (use_gmm) runs dropless.
  double capacity = moe.has("capacity_factor")
                        ? doc.number(moe.get("capacity_factor"), moe.key_path("capacity_factor"))
                        : 1.1;
  if (capacity > 0 && !moe.bool_or("use_gmm", false)) {
    m.moe.pad_expert_input_to_capacity = true;
    m.moe.capacity_factor = capacity;
  }
}

void read_legacy_model(const Doc& doc, const Section& mc, const Section& moe, const std::string& type,
                       ModelSpec& m, std::vector<std::string>& warnings) {
  const bool glm = type.find("GLM") != std::string::npos || type.find("Glm") != std::string::npos;
  const bool deepseek = type.rfind("Deepseek", 0) == 0 || type.rfind("DeepSeek", 0) == 0;
  const bool telechat = type.rfind("Telechat", 0) == 0 || type.rfind("TeleChat", 0) == 0;
  const bool llama_names = !glm;
  // Multimodal configs (MllamaConfig, LlavaNextConfig, QwenVLConfig, CogVLM2Config…) nest their language and
  // vision towers as sub-models, and encoder-decoder ones (WhisperConfig) have two stacks: read with
  // LlamaConfig's names they would be priced as a default 7B decoder, a number about another model.
  // MindFormers' encoder and vision families (configs/bert, vit, swin, mae, clip, sam, blip2, t5, whisper).
  for (const char* family :
       {"Bert", "ViT", "Swin", "Clip", "CLIP", "Sam", "SAM", "Blip", "T5", "Whisper", "Mae", "MAE"})
    if (type.rfind(family, 0) == 0)
      throw mc.error("type",
                     type +
                         " is an encoder or vision model: not modelled; preflight prices decoder-only "
                         "language models");
  for (const char* tower :
       {"vision_model", "text_model", "llm_model", "audio_model", "vision_config", "text_config"})
    if (mc.has(tower))
      throw mc.error(tower, type +
                                " is a multimodal model (its towers are sub-models): not modelled; preflight "
                                "prices decoder-only language models");
  if (mc.bool_or("is_encoder_decoder", false) || mc.has("encoder_layers"))
    throw mc.error(mc.has("encoder_layers") ? "encoder_layers" : "is_encoder_decoder",
                   type +
                       " is an encoder-decoder model: not modelled; preflight prices decoder-only language "
                       "models");
  if (!glm && !deepseek && !telechat && type != "LlamaConfig")
    warnings.push_back(mc.key_path("type") + " " + type +
                       ": read with LlamaConfig's field names (num_layers, num_heads, n_kv_heads, …)");
  m.name = type;
  m.normalization = Normalization::RMSNorm;
  m.position_embedding = PositionEmbedding::Rope;
  m.activation = Activation::SwiGLU;
  m.add_bias_linear = false;
  m.make_vocab_size_divisible_by = 1;  // MindFormers never pads the vocabulary
  m.attention_dropout = 0;
  m.hidden_dropout = 0;
  auto defaulted = [&](const char* key, I64 v) {
    warnings.push_back(mc.key_path(key) + " is not set: " + type + "'s default " + num(v));
    return v;
  };
  auto size = [&](const char* key, I64 dflt) {
    return mc.has(key) ? mc.positive_or(key, dflt) : defaulted(key, dflt);
  };
  m.num_layers = static_cast<int>(size("num_layers", glm ? 28 : 32));
  m.hidden_size = size("hidden_size", 4096);
  if (llama_names) {
    m.num_attention_heads = static_cast<int>(size("num_heads", 32));
    m.num_query_groups = static_cast<int>(mc.positive_or("n_kv_heads", m.num_attention_heads));
    m.vocab_size = size("vocab_size", 32000);
    if (m.hidden_size % m.num_attention_heads != 0)
      throw mc.error("num_heads", "the hidden size " + num(m.hidden_size) + " is not divisible by " +
                                      num(m.num_attention_heads) + " heads");
    m.kv_channels = m.hidden_size / m.num_attention_heads;
    m.ffn_hidden_size = mc.has("intermediate_size") ? mc.positive_or("intermediate_size", 0)
                                                    : llama_ffn(mc, m.hidden_size);
    m.add_qkv_bias = mc.bool_or("qkv_has_bias", false);
    m.add_proj_bias = mc.bool_or("attn_proj_has_bias", false);
    m.untie_embeddings_and_output_weights = !mc.bool_or("tie_word_embeddings", false);
    if (telechat) {
      // TeleChat2: the attention output projection has a bias by default and the FFN's w2 always has one
      // (research/telechat2/telechat_layer.py @ r1.5.0:243-245).
      m.add_proj_bias = mc.bool_or("out_proj_has_bias", true);
      m.add_fc2_bias = true;
    }
    m.hidden_dropout = mc.has("hidden_dropout_prob")
                           ? doc.number(mc.get("hidden_dropout_prob"), mc.key_path("hidden_dropout_prob"))
                           : 0.0;
    m.attention_dropout =
        mc.has("attention_dropout_prob")
            ? doc.number(mc.get("attention_dropout_prob"), mc.key_path("attention_dropout_prob"))
            : 0.0;
  } else {
    // ChatGLM2Config (configs/glm4/finetune_glm4_9b.yaml @ r1.5.0).
    m.num_attention_heads = static_cast<int>(size("num_attention_heads", 32));
    m.kv_channels = mc.positive_or("kv_channels", m.hidden_size / m.num_attention_heads);
    m.num_query_groups = mc.bool_or("multi_query_attention", false)
                             ? static_cast<int>(mc.positive_or("multi_query_group_num", 1))
                             : m.num_attention_heads;
    m.ffn_hidden_size = size("ffn_hidden_size", 13696);
    m.vocab_size = mc.has("padded_vocab_size") ? mc.positive_or("padded_vocab_size", 0) : size("vocab_size", 65024);
    m.add_bias_linear = mc.bool_or("add_bias_linear", false);
    m.add_qkv_bias = mc.bool_or("add_qkv_bias", false);
    m.normalization = mc.bool_or("rmsnorm", true) ? Normalization::RMSNorm : Normalization::LayerNorm;
    m.untie_embeddings_and_output_weights = true;
    m.hidden_dropout =
        mc.has("hidden_dropout") ? doc.number(mc.get("hidden_dropout"), mc.key_path("hidden_dropout")) : 0.0;
    m.attention_dropout = mc.has("attention_dropout")
                              ? doc.number(mc.get("attention_dropout"), mc.key_path("attention_dropout"))
                              : 0.0;
  }
  if (m.num_query_groups <= 0 || m.num_attention_heads % m.num_query_groups != 0)
    throw mc.error(llama_names ? "n_kv_heads" : "multi_query_group_num",
                   "the " + num(m.num_query_groups) + " key/value heads do not divide the " +
                       num(m.num_attention_heads) + " attention heads");
  m.max_position_embeddings = mc.positive_or("max_position_embeddings", mc.positive_or("seq_length", 2048));
  if (deepseek) {
    // MLA (research/deepseek3/deepseek2_model.py @ r1.5.0); n_kv_heads is unused.
    m.mla.enabled = true;
    m.mla.q_lora_rank = mc.integer_or("q_lora_rank", 1536);
    m.mla.kv_lora_rank = mc.positive_or("kv_lora_rank", 512);
    m.mla.qk_head_dim = mc.positive_or("qk_nope_head_dim", 128);
    m.mla.qk_pos_emb_head_dim = mc.positive_or("qk_rope_head_dim", 64);
    m.mla.v_head_dim = mc.positive_or("v_head_dim", 128);
    m.num_query_groups = m.num_attention_heads;
    m.mtp_num_layers = static_cast<int>(mc.integer_or("mtp_depth", 0));
    if (m.mtp_num_layers < 0) throw mc.error("mtp_depth", "must not be negative");
    m.mtp_embedding_copy = false;  // the one embedding and lm_head are shared with the MTP block
  }
  read_legacy_moe(doc, moe, deepseek, m.ffn_hidden_size, m, warnings);
}

// ------------------------------------------------------------------------------------------------
// Model, new style (use_legacy: False): Hugging Face / Megatron names over a base.

void read_new_style_model(const Doc& doc, const Section& mc, ModelSpec& m, bool have_base,
                          std::vector<std::string>& warnings) {
  std::string k;
  auto size = [&](std::initializer_list<const char*> keys, I64 current, const char* what) -> I64 {
    const YAML::Node n = mc.any(keys, &k);
    if (n.IsDefined()) return doc.positive(n, mc.key_path(k));
    if (current > 0) return current;
    throw mc.error(*keys.begin(), std::string("is missing: the ") + what +
                                      " comes from model.model_config or the config.json of "
                                      "pretrained_model_dir (or give --model NAME|config.json)");
  };
  m.num_layers = static_cast<int>(size({"num_layers", "num_hidden_layers", "n_layer"}, m.num_layers, "layer count"));
  const I64 old_hidden = m.hidden_size;
  m.hidden_size = size({"hidden_size"}, m.hidden_size, "hidden size");
  const int old_heads = m.num_attention_heads;
  m.num_attention_heads =
      static_cast<int>(size({"num_heads", "num_attention_heads"}, m.num_attention_heads, "attention head count"));
  // Defaults of TransformerConfig.__post_init__ (parallel_core/transformer_config.py): groups = heads,
  // kv_channels = hidden / heads, ffn = 4·hidden (no multiple_of logic).
  {
    const YAML::Node n = mc.any({"n_kv_heads", "num_key_value_heads", "num_query_groups"}, &k);
    if (n.IsDefined())
      m.num_query_groups = static_cast<int>(doc.positive(n, mc.key_path(k)));
    else if (m.num_query_groups <= 0 || old_heads != m.num_attention_heads)
      m.num_query_groups = m.num_attention_heads;
  }
  {
    const YAML::Node n = mc.any({"head_dim", "kv_channels"}, &k);
    if (n.IsDefined())
      m.kv_channels = doc.positive(n, mc.key_path(k));
    else if (m.kv_channels <= 0 || old_hidden != m.hidden_size || old_heads != m.num_attention_heads)
      m.kv_channels = m.hidden_size / m.num_attention_heads;
  }
  {
    const YAML::Node n = mc.any({"intermediate_size", "ffn_hidden_size"}, &k);
    if (n.IsDefined())
      m.ffn_hidden_size = doc.positive(n, mc.key_path(k));
    else if (m.ffn_hidden_size <= 0)
      m.ffn_hidden_size = 4 * m.hidden_size;
  }
  {
    const YAML::Node n = mc.any({"vocab_size", "padded_vocab_size"}, &k);
    if (n.IsDefined())
      m.vocab_size = doc.positive(n, mc.key_path(k));
    else if (m.vocab_size <= 0)
      throw mc.error("vocab_size", "is missing (model.model_config or pretrained_model_dir's config.json)");
  }
  if (m.num_attention_heads % m.num_query_groups != 0)
    throw mc.error("num_key_value_heads", "the " + num(m.num_query_groups) + " key/value heads do not divide the " +
                                              num(m.num_attention_heads) + " attention heads");
  if (mc.has("max_position_embeddings")) m.max_position_embeddings = mc.positive_or("max_position_embeddings", 0);
  if (mc.has("untie_embeddings_and_output_weights"))
    m.untie_embeddings_and_output_weights = mc.bool_or("untie_embeddings_and_output_weights", true);
  else if (mc.has("tie_word_embeddings"))
    m.untie_embeddings_and_output_weights = !mc.bool_or("tie_word_embeddings", false);
  else if (!have_base)
    m.untie_embeddings_and_output_weights = true;
  if (mc.has("add_bias_linear")) m.add_bias_linear = mc.bool_or("add_bias_linear", false);
  if (mc.has("add_qkv_bias")) m.add_qkv_bias = mc.bool_or("add_qkv_bias", false);
  if (mc.has("attention_bias") && mc.bool_or("attention_bias", false)) {
    m.add_qkv_bias = true;
    m.add_proj_bias = true;
  }
  if (mc.has("qk_layernorm")) m.qk_layernorm = mc.bool_or("qk_layernorm", false);
  const std::string model_type = mc.string_or("model_type", "");
  if (model_type == "qwen3" || model_type == "qwen3_moe") m.qk_layernorm = true;  // forced (modeling_qwen3_train.py)
  if (mc.has("hidden_act")) {
    std::string a = mc.string_or("hidden_act", "");
    const bool gated = mc.bool_or("gated_linear_unit", a == "swiglu" || a == "silu");
    if (a == "swiglu" || a == "silu" || gated)
      m.activation = Activation::SwiGLU;
    else if (a == "gelu" || a == "fast_gelu" || a == "gelu_new")
      m.activation = Activation::GeLU;
    else
      throw mc.error("hidden_act", "unknown activation '" + a + "' (swiglu, silu, gelu, fast_gelu)");
  }
  if (mc.has("normalization")) {
    const std::string n = mc.string_or("normalization", "");
    if (n == "RMSNorm" || n == "FusedRMSNorm")
      m.normalization = Normalization::RMSNorm;
    else if (n == "LayerNorm" || n == "FusedLayerNorm")
      m.normalization = Normalization::LayerNorm;
    else
      throw mc.error("normalization", "unknown normalization '" + n + "' (RMSNorm, LayerNorm)");
  }
  if (mc.has("position_embedding_type")) {
    const std::string p = mc.string_or("position_embedding_type", "");
    if (p == "rope" || p == "yarn" || p == "mrope")
      m.position_embedding = PositionEmbedding::Rope;
    else if (p == "learned_absolute")
      m.position_embedding = PositionEmbedding::LearnedAbsolute;
    else if (p == "none")
      m.position_embedding = PositionEmbedding::None;
    else
      throw mc.error("position_embedding_type", "unknown position embedding '" + p + "'");
  }
  if (mc.has("hidden_dropout")) m.hidden_dropout = doc.number(mc.get("hidden_dropout"), mc.key_path("hidden_dropout"));
  if (mc.has("attention_dropout"))
    m.attention_dropout = doc.number(mc.get("attention_dropout"), mc.key_path("attention_dropout"));
  // MoE (aliases of COMMON_CONFIG_MAPPING).
  {
    const YAML::Node n = mc.any({"num_moe_experts", "num_experts", "n_routed_experts", "expert_num"}, &k);
    if (n.IsDefined()) {
      const I64 e = doc.positive(n, mc.key_path(k));
      m.moe.num_experts = e > 1 ? static_cast<int>(e) : 0;
    }
  }
  if (m.moe.enabled()) {
    const YAML::Node topk = mc.any({"moe_router_topk", "num_experts_per_tok", "num_experts_chosen"}, &k);
    if (topk.IsDefined()) m.moe.router_topk = static_cast<int>(doc.positive(topk, mc.key_path(k)));
    const YAML::Node ffn = mc.any({"moe_ffn_hidden_size", "moe_intermediate_size"}, &k);
    if (ffn.IsDefined())
      m.moe.ffn_hidden_size = doc.positive(ffn, mc.key_path(k));
    else if (m.moe.ffn_hidden_size <= 0)
      m.moe.ffn_hidden_size = m.ffn_hidden_size;
    if (mc.has("moe_shared_expert_intermediate_size")) {
      m.moe.shared_expert_ffn_hidden_size = mc.positive_or("moe_shared_expert_intermediate_size", 0);
    } else {
      const YAML::Node sh = mc.any({"n_shared_experts", "shared_expert_num"}, &k);
      if (sh.IsDefined())
        m.moe.shared_expert_ffn_hidden_size =
            static_cast<I64>(std::floor(doc.number(sh, mc.key_path(k)) * static_cast<double>(m.moe.ffn_hidden_size)));
    }
    if (mc.has("first_k_dense_replace")) {
      const I64 kd = mc.integer_or("first_k_dense_replace", 0);
      if (kd < 0 || kd > m.num_layers)
        throw mc.error("first_k_dense_replace", "must be between 0 and the " + num(m.num_layers) + " layers");
      m.moe.layer_is_moe.assign(static_cast<std::size_t>(m.num_layers), true);
      for (I64 i = 0; i < kd; ++i) m.moe.layer_is_moe[static_cast<std::size_t>(i)] = false;
      if (kd == 0) m.moe.layer_is_moe.clear();
    }
    if (mc.has("moe_layer_freq")) {
      const YAML::Node f = mc.get("moe_layer_freq");
      std::vector<bool> pattern(static_cast<std::size_t>(m.num_layers), false);
      if (f.IsSequence()) {
        if (static_cast<int>(f.size()) != m.num_layers)
          throw mc.error("moe_layer_freq", "has " + num(static_cast<I64>(f.size())) + " entries for " +
                                               num(m.num_layers) + " layers");
        for (std::size_t i = 0; i < f.size(); ++i) pattern[i] = doc.integer(f[i], mc.key_path("moe_layer_freq")) != 0;
      } else {
        const I64 every = doc.positive(f, mc.key_path("moe_layer_freq"));
        for (int i = 0; i < m.num_layers; ++i) pattern[static_cast<std::size_t>(i)] = i % every == 0;
      }
      if (!m.moe.layer_is_moe.empty())
        for (int i = 0; i < m.num_layers; ++i)
          pattern[static_cast<std::size_t>(i)] = pattern[static_cast<std::size_t>(i)] && m.moe.layer_is_moe[static_cast<std::size_t>(i)];
      m.moe.layer_is_moe = pattern;
      if (std::all_of(pattern.begin(), pattern.end(), [](bool b) { return b; })) m.moe.layer_is_moe.clear();
    }
    // A base (config.json, preset) whose dense / MoE pattern is for another layer count than the yaml's (a
    // DeepSeek-V3 cut to 4 layers): its leading dense layers (first_k_dense_replace) kept, the rest MoE.
    auto& p = m.moe.layer_is_moe;
    if (!p.empty() && static_cast<int>(p.size()) != m.num_layers) {
      std::size_t dense = 0;
      while (dense < p.size() && !p[dense]) ++dense;
      if (!std::all_of(p.begin() + static_cast<std::ptrdiff_t>(dense), p.end(), [](bool b) { return b; }))
        throw mc.error(mc.has("num_hidden_layers") ? "num_hidden_layers" : "num_layers",
                       num(m.num_layers) + " layers, but the base model's dense / MoE layer pattern has " +
                           num(static_cast<I64>(p.size())) + ": give moe_layer_freq for these layers");
      dense = std::min(dense, static_cast<std::size_t>(m.num_layers));
      p.assign(static_cast<std::size_t>(m.num_layers), true);
      for (std::size_t i = 0; i < dense; ++i) p[i] = false;
      if (dense == 0) p.clear();
    }
  }
  // MLA.
  if (mc.bool_or("multi_latent_attention", false) || mc.has("kv_lora_rank")) {
    m.mla.enabled = true;
    m.mla.q_lora_rank = mc.integer_or("q_lora_rank", m.mla.q_lora_rank);
    m.mla.kv_lora_rank = mc.positive_or("kv_lora_rank", m.mla.kv_lora_rank);
    const YAML::Node nope = mc.any({"qk_nope_head_dim", "qk_head_dim"}, &k);
    if (nope.IsDefined()) m.mla.qk_head_dim = doc.positive(nope, mc.key_path(k));
    const YAML::Node rope = mc.any({"qk_rope_head_dim", "qk_pos_emb_head_dim"}, &k);
    if (rope.IsDefined()) m.mla.qk_pos_emb_head_dim = doc.positive(rope, mc.key_path(k));
    m.mla.v_head_dim = mc.positive_or("v_head_dim", m.mla.v_head_dim);
  }
  {
    const YAML::Node mtp = mc.any({"mtp_depth", "num_nextn_predict_layers", "mtp_num_layers"}, &k);
    if (mtp.IsDefined()) m.mtp_num_layers = static_cast<int>(doc.integer(mtp, mc.key_path(k)));
    if (m.mtp_num_layers < 0) throw mc.error("mtp_num_layers", "must not be negative");
    m.mtp_embedding_copy = false;
  }
  if (mc.has("sliding_window")) m.sliding_window = mc.integer_or("sliding_window", 0);
  m.make_vocab_size_divisible_by = 1;
  (void)warnings;
}

// ------------------------------------------------------------------------------------------------
// Layer split (LayerSetting, models/utils.py @ r1.5.0:129-219).

/// MindFormers' LoRA (pet_config: pet_type lora, lora_rank, target_modules): MindFormers replaces every
/// linear cell whose own name `re.match`es target_modules (pet/tuners/lora_adapter.py
/// recursive_replace_dense_cell), here matched against the names of each modelled linear — wq / wk / wv /
/// w_qkv / linear_qkv / dense1-3 (the attention's projection in), wo / linear_proj / projection (out), w1 /
/// w3 / w_gate_hidden / linear_fc1 / mapping (the MLP's in, the experts' too), w2 / linear_fc2 / projection
/// (its out).  Separate wq / wk / wv adapters are priced as one on the fused projection (their A matrices
/// counted once: said).  A pattern naming none of them is refused by name.
LoraSpec read_pet_lora(const Section& pet, std::vector<std::string>& warnings) {
  LoraSpec lora;
  lora.rank = static_cast<int>(pet.positive_or("lora_rank", 8));
  const std::string pattern = pet.string_or("target_modules", ".*wq|.*wk|.*wv|.*wo");
  const RE2 re("(?:" + pattern + ")", RE2::Quiet);
  if (!re.ok()) throw pet.error("target_modules", "is not a regular expression: " + re.error());
  auto matches = [&](std::initializer_list<const char*> names) {
    std::vector<std::string> hit;
    for (const char* n : names) {
      re2::StringPiece name(n);
      if (RE2::Consume(&name, re)) hit.push_back(n);  // re.match: anchored at the start only
    }
    return hit;
  };
  // mindformers.modules.transformer (GPT-2 and the other legacy transformer models): dense1 / dense2 / dense3
  // are q / k / v, `projection` the attention's output and the feed-forward's, `mapping` its input.
  const auto qkv = matches({"wq", "wk", "wv", "w_qkv", "linear_qkv", "dense1", "dense2", "dense3"});
  const auto proj = matches({"wo", "linear_proj", "projection"});
  const auto fc1 = matches({"w1", "w3", "w_gate_hidden", "linear_fc1", "mapping"});
  const auto fc2 = matches({"w2", "linear_fc2", "projection"});
  lora.linear_qkv = !qkv.empty();
  lora.linear_proj = !proj.empty();
  lora.linear_fc1 = !fc1.empty();
  lora.linear_fc2 = !fc2.empty();
  if (!(lora.linear_qkv || lora.linear_proj || lora.linear_fc1 || lora.linear_fc2))
    throw pet.error("target_modules",
                    "'" + pattern +
                        "' names none of the modelled linears (wq, wk, wv, w_qkv, wo, w1, w2, w3, "
                        "w_gate_hidden, linear_qkv, linear_proj, linear_fc1, linear_fc2, dense1, "
                        "dense2, dense3, projection, mapping)");
  const long separate = std::count_if(qkv.begin(), qkv.end(), [](const std::string& n) {
    return n == "wq" || n == "wk" || n == "wv" || n.rfind("dense", 0) == 0;
  });
  if (separate > 1)
    warnings.push_back(pet.key_path("target_modules") + ": the " + std::to_string(separate) +
                       " separate adapters of q / k / v are priced as one on the fused projection (their " +
                       "A matrices counted once: " + std::to_string(separate - 1) +
                       " × rank × hidden parameters a layer fewer)");
  if (const YAML::Node d = pet.get("lora_dropout");
      d.IsScalar() && std::strtod(d.Scalar().c_str(), nullptr) > 0)
    warnings.push_back(pet.key_path("lora_dropout") + ": the adapters' dropout mask is not counted");
  return lora;
}

ChunkGrid read_offset(const Doc& doc, const Section& mc, int L, int pp, int V) {
  ChunkGrid off(static_cast<std::size_t>(V), std::vector<int>(static_cast<std::size_t>(pp), 0));
  if (!mc.has("offset") || pp * V <= 1) return off;
  const YAML::Node n = mc.get("offset");
  const std::string path = mc.key_path("offset");
  int written_sum = 0;
  if (n.IsScalar()) {
    const int k = static_cast<int>(doc.integer(n, path));
    written_sum = k;
    for (auto& row : off) std::fill(row.begin(), row.end(), k);
  } else if (n.IsSequence() && n.size() > 0 && n[0].IsSequence()) {
    if (static_cast<int>(n.size()) != V)
      throw doc.error(n, path, "has " + num(static_cast<I64>(n.size())) + " rows but there are " + num(V) +
                                   " virtual chunks (pp_interleave_num" +
                                   (V == 1 ? ", which needs parallel.pipeline_config.pipeline_interleave: True)" : ")"));
    for (int v = 0; v < V; ++v) {
      const YAML::Node row = n[static_cast<std::size_t>(v)];
      if (!row.IsSequence() || static_cast<int>(row.size()) != pp)
        throw doc.error(row, path, "row " + num(v) + " must list one value per pipeline stage (" + num(pp) + ")");
      for (int s = 0; s < pp; ++s) {
        off[v][s] = static_cast<int>(doc.integer(row[static_cast<std::size_t>(s)], path));
        written_sum += off[v][s];
      }
    }
  } else if (n.IsSequence()) {
    if (static_cast<int>(n.size()) != pp)
      throw doc.error(n, path, "has " + num(static_cast<I64>(n.size())) + " entries but pipeline_stage is " + num(pp));
    for (int s = 0; s < pp; ++s) {
      const int k = static_cast<int>(doc.integer(n[static_cast<std::size_t>(s)], path));
      written_sum += k;
      for (int v = 0; v < V; ++v) off[v][s] = k;
    }
    written_sum *= 1;  // MindFormers sums the list as written (once, not per chunk)
  } else {
    throw doc.error(n, path, "expected an integer, a list per stage or a list per chunk of lists per stage");
  }
  const int rem = L % (pp * V);
  if (written_sum != rem) {
    std::string what = "sums to " + num(written_sum) + " but must sum to " + num(L) + " % (pp·V = " +
                       num(pp * V) + ") = " + num(rem) + " (MindFormers' LayerSetting check)";
    throw doc.error(n, path, what);
  }
  return off;
}

// ------------------------------------------------------------------------------------------------
// Recompute lists (_format_recompute_list / _alloc_recompute_layer, models/utils.py @ r1.5.0:442-521).

/// Counts per (chunk, stage) for one recompute spec that is a bool, a per-stage list or a [V][pp] list.
ChunkGrid resolve_counts(const Doc& doc, const YAML::Node& n, const std::string& path, const ChunkGrid& layers,
                         std::vector<std::string>& warnings) {
  const int V = static_cast<int>(layers.size()), pp = static_cast<int>(layers[0].size());
  ChunkGrid out(static_cast<std::size_t>(V), std::vector<int>(static_cast<std::size_t>(pp), 0));
  if (Doc::is_null(n)) return out;
  if (auto b = doc.boolean_of(n)) {
    if (*b) out = layers;
    return out;
  }
  if (!n.IsSequence())
    throw doc.error(n, path, "expected True/False, a count per stage or a list per chunk of counts per stage");
  bool capped = false;
  auto cap = [&](int v, int s, int want) {
    if (want > layers[v][s]) capped = true;
    return std::min(want, layers[v][s]);
  };
  if (n.size() > 0 && n[0].IsSequence()) {
    if (static_cast<int>(n.size()) != V)
      throw doc.error(n, path, "has " + num(static_cast<I64>(n.size())) + " rows but there are " + num(V) + " virtual chunks");
    for (int v = 0; v < V; ++v) {
      const YAML::Node row = n[static_cast<std::size_t>(v)];
      if (!row.IsSequence() || static_cast<int>(row.size()) > pp)
        throw doc.error(row, path, "row " + num(v) + " must list at most one count per stage (" + num(pp) + ")");
      for (int s = 0; s < static_cast<int>(row.size()); ++s) {
        const YAML::Node e = row[static_cast<std::size_t>(s)];
        if (auto b = doc.boolean_of(e))
          out[v][s] = *b ? layers[v][s] : 0;
        else {
          const I64 c = doc.integer(e, path);
          if (c < 0) throw doc.error(e, path, "counts must not be negative");
          out[v][s] = cap(v, s, static_cast<int>(c));
        }
      }
    }
  } else {
    if (static_cast<int>(n.size()) > pp)
      throw doc.error(n, path, "has " + num(static_cast<I64>(n.size())) + " entries but pipeline_stage is " + num(pp));
    for (int s = 0; s < static_cast<int>(n.size()); ++s) {
      const YAML::Node e = n[static_cast<std::size_t>(s)];
      if (auto b = doc.boolean_of(e)) {
        for (int v = 0; v < V; ++v) out[v][s] = *b ? layers[v][s] : 0;
        continue;
      }
      I64 c = doc.integer(e, path);
      if (c < 0) throw doc.error(e, path, "counts must not be negative");
      int stage_layers = 0;
      for (int v = 0; v < V; ++v) stage_layers += layers[v][s];
      if (c > stage_layers) capped = true;
      // Dealt round-robin over the stage's chunks, each capped by its layer count.
      int left = static_cast<int>(std::min<I64>(c, stage_layers));
      while (left > 0)
        for (int v = 0; v < V && left > 0; ++v)
          if (out[v][s] < layers[v][s]) {
            ++out[v][s];
            --left;
          }
    }
  }
  if (capped)
    warnings.push_back(doc.where(n, path) + ": a count exceeds the layers of its stage or chunk; capped to them");
  return out;
}

/// What one select pattern recomputes in our layer model.
std::optional<std::string> module_of_pattern(const std::string& pattern) {
  std::string p;
  for (char ch : pattern) p += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (p.find("norm") != std::string::npos) return "layernorm";
  for (const char* w : {"feed_forward", "mlp", "w1", "w2", "w3", "silu", "swiglu", "mul", "activation", "gelu"})
    if (p.find(w) != std::string::npos) return "mlp_act";
  for (const char* w : {"attention", "softmax", "flash", "core_attn", "attn"})
    if (p.find(w) != std::string::npos) return "core_attn";
  return std::nullopt;
}

/// Per module, the counts of one select_* spec: bool / counts (the default module) or patterns.
std::vector<std::pair<std::string, ChunkGrid>> resolve_select(const Doc& doc, const YAML::Node& n,
                                                              const std::string& path, const ChunkGrid& layers,
                                                              const std::string& default_module,
                                                              std::vector<std::string>& warnings) {
  std::vector<std::pair<std::string, ChunkGrid>> out;
  if (Doc::is_null(n)) return out;
  auto pattern_module = [&](const YAML::Node& key, const std::string& pattern) -> std::optional<std::string> {
    auto m = module_of_pattern(pattern);
    if (!m) warnings.push_back(doc.where(key, path) + ": pattern '" + pattern + "' is not modelled (ignored)");
    return m;
  };
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string pattern = doc.string(it->first, path);
      if (auto m = pattern_module(it->first, pattern))
        out.emplace_back(*m, resolve_counts(doc, it->second, path + "." + pattern, layers, warnings));
    }
    return out;
  }
  if (n.IsSequence() && n.size() > 0 && n[0].IsScalar() && !doc.boolean_of(n[0]) && !doc.number_of(n[0])) {
    for (const auto& e : n)
      if (auto m = pattern_module(e, doc.string(e, path))) out.emplace_back(*m, layers);
    return out;
  }
  out.emplace_back(default_module, resolve_counts(doc, n, path, layers, warnings));
  return out;
}

// ------------------------------------------------------------------------------------------------

/// A check of the converted model / strategy failed: name the YAML key instead of the Megatron flag.
[[noreturn]] void rethrow_in_yaml_terms(const InputError& e, const std::string& source) {
  static const std::map<std::string, std::string> keys = {
      {"--tensor-model-parallel-size", "parallel_config.model_parallel"},
      {"--pipeline-model-parallel-size", "parallel_config.pipeline_stage"},
      {"--context-parallel-size", "parallel_config.context_parallel"},
      {"--expert-model-parallel-size", "parallel_config.expert_parallel"},
      {"--expert-tensor-parallel-size", "moe_config.expert_model_parallel"},
      {"--num-layers", "model.model_config.num_layers"},
      {"--hidden-size", "model.model_config.hidden_size"},
      {"--ffn-hidden-size", "model.model_config.intermediate_size"},
      {"--num-attention-heads", "model.model_config.num_heads"},
      {"--num-query-groups", "model.model_config.n_kv_heads"},
      {"--vocab-size", "model.model_config.vocab_size"},
      {"--seq-length", "model.model_config.seq_length"},
      {"--micro-batch-size", "runner_config.batch_size"},
      {"--global-batch-size", "runner_config.batch_size / parallel_config.micro_batch_num"},
      {"--num-experts", "moe_config.expert_num"},
      {"--moe-router-topk", "moe_config.num_experts_chosen"},
      {"--moe-ffn-hidden-size", "moe_config.moe_intermediate_size"},
      {"--pipeline-model-parallel-layout", "model.model_config.offset"},
      {"--num-layers-per-virtual-pipeline-stage", "model.model_config.pp_interleave_num"},
      {"world size", "parallel_config (dp·tp·cp·pp)"},
  };
  auto it = keys.find(e.where());
  throw InputError(source + ": " + (it != keys.end() ? it->second : e.where()), e.detail());
}

std::optional<double> memory_gib(const Doc& doc, const Section& context) {
  if (!context.has("max_device_memory")) return std::nullopt;
  std::string v = context.string_or("max_device_memory", "");
  std::string digits;
  std::size_t i = 0;
  while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) digits += v[i++];
  std::string unit = v.substr(i);
  if (digits.empty() || (unit != "GB" && unit != "G" && unit != "GiB" && unit != "MB"))
    throw context.error("max_device_memory", "expected a size such as \"58GB\", got '" + v + "'");
  double x = std::stod(digits);
  (void)doc;
  return unit == "MB" ? x / 1024.0 : x;
}

}  // namespace

// ------------------------------------------------------------------------------------------------

std::vector<int> MindFormersConfig::layers_per_stage() const {
  std::vector<int> out(layers.empty() ? 0 : layers[0].size(), 0);
  for (const auto& row : layers)
    for (std::size_t s = 0; s < row.size(); ++s) out[s] += row[s];
  return out;
}

std::vector<int> MindFormersConfig::full_recompute_per_stage() const {
  std::vector<int> out(recompute.full.empty() ? 0 : recompute.full[0].size(), 0);
  for (const auto& row : recompute.full)
    for (std::size_t s = 0; s < row.size(); ++s) out[s] += row[s];
  return out;
}

std::string read_run_mindformer_args(const std::vector<std::string>& args, MindFormersOptions& options) {
  // An AMD Primus launch's --config / --exp (an experiment: parse_megatron_args reads it) is not a
  // MindFormers yaml.
  if (find_primus_config_arg(args)) return "";
  for (std::size_t i = 0; i + 1 < args.size(); ++i)  // nor is a Megatron-LM test case's model_config.yaml
    if (args[i] == "--config" && is_megatron_test_case(args[i + 1])) return "";
  for (const std::string& a : args)
    if (a.rfind("--config=", 0) == 0 && is_megatron_test_case(a.substr(9))) return "";
  // run_mindformer.py's argparse options (r1.5.0 … master): those that change the run are read, the others
  // consumed; what argparse's parse_known_args leaves are `--KEY VALUE` config settings (its rest_args_), and
  // a repeated option keeps its last value, as argparse does.
  CLI::App app{"run_mindformer.py"};
  app.allow_extras();
  std::string config, run_mode, use_parallel, batch_size, accumulation, ignored;
  double imbalance = 1.0;
  std::vector<std::string> items, ignored_list;
  auto last = CLI::MultiOptionPolicy::TakeLast;
  app.add_option("--config", config)->multi_option_policy(last);
  auto* mode = app.add_option("--run_mode", run_mode)->multi_option_policy(last);
  auto* parallel = app.add_option("--use_parallel", use_parallel)->multi_option_policy(last);
  auto* batch = app.add_option("--batch_size", batch_size)->multi_option_policy(last);
  auto* ga = app.add_option("--gradient_accumulation_steps", accumulation)->multi_option_policy(last);
  auto* imb = app.add_option("--moe-load-imbalance", imbalance)->multi_option_policy(last);
  app.add_option("--options", items)->expected(1, CLI::detail::expected_max_vector_size);
  for (const char* name : {"--mode",
                           "--device_id",
                           "--device_target",
                           "--do_eval",
                           "--train_dataset_dir",
                           "--eval_dataset_dir",
                           "--predict_batch_size",
                           "--load_checkpoint",
                           "--src_strategy_path_or_dir",
                           "--auto_trans_ckpt",
                           "--transform_process_num",
                           "--only_save_strategy",
                           "--resume_training",
                           "--strategy_load_checkpoint",
                           "--remote_save_url",
                           "--seed",
                           "--profile",
                           "--epochs",
                           "--sink_mode",
                           "--num_samples",
                           "--output_dir",
                           "--register_path",
                           "--do_sample",
                           "--trust_remote_code"})
    app.add_option(name, ignored)->multi_option_policy(last);
  for (const char* name : {"--predict_data", "--modal_type", "--adapter_id"})
    app.add_option(name, ignored_list)->expected(1, CLI::detail::expected_max_vector_size);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError("run_mindformer.py arguments", e.what());
  }
  if (*mode) options.run_mode = run_mode;
  if (*parallel) {
    std::string v = use_parallel;
    for (auto& ch : v) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (v != "true" && v != "false" && v != "1" && v != "0")
      throw InputError("--use_parallel", "expected True or False, got '" + use_parallel + "'");
    options.use_parallel = v == "true" || v == "1";
  }
  if (*imb) options.moe_load_imbalance = imbalance;  // its range: check_moe_load_imbalance, with the model
  if (*batch) options.overrides.emplace_back("runner_config.batch_size", batch_size);
  if (*ga) options.overrides.emplace_back("runner_config.gradient_accumulation_steps", accumulation);
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw InputError("--options", "expected KEY=VALUE, got '" + item + "'");
    options.overrides.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  options.rest_args = app.remaining();
  return config;
}

bool is_yaml_path(const std::string& path) {
  auto ends = [&](const char* e) {
    const std::string s(e);
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  return ends(".yaml") || ends(".yml") || ends(".YAML") || ends(".YML");
}

namespace {

/// Sets the dotted `key` of a yaml tree to `value` (parsed as YAML), as MindFormers' command line does:
/// `--options` creates missing sections (MindFormerConfig.merge_from_dict), run_mindformer.py's own
/// `--KEY VALUE` arguments refuse a key whose parents the file lacks (`parents_must_exist`).  Errors name
/// `where` (the argument).
void set_yaml_key(YAML::Node root, const std::string& key, const std::string& value, const std::string& where,
                  bool parents_must_exist, const std::string& source) {
  YAML::Node v;
  try {
    v = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    throw InputError(where, "malformed value '" + value + "': " + e.msg);
  }
  std::vector<std::string> parts;
  std::stringstream in(key);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  if (parts.empty() ||
      std::any_of(parts.begin(), parts.end(), [](const std::string& p) { return p.empty(); }))
    throw InputError(where, "expected a dotted key such as parallel_config.data_parallel");
  YAML::Node node = root;
  std::string path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    path += (path.empty() ? "" : ".") + parts[i];
    if (!node[parts[i]] || !node[parts[i]].IsMap()) {
      if (parents_must_exist)
        throw InputError(where, "'" + path + "' is not a section of " + source +
                                    " (run_mindformer.py refuses a key whose parents the yaml lacks)");
      node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    }
    node.reset(node[parts[i]]);  // re-point (operator= would overwrite the node's content)
  }
  node[parts.back()] = v;
}

}  // namespace

MindFormersConfig parse_mindformers_yaml(const std::string& text, const std::string& source,
                                         const MindFormersOptions& options) {
  Doc doc{source};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(location(source, e.mark.line + 1), "malformed yaml: " + e.msg);
  }
  if (!root.IsMap()) throw InputError(source, "expected a MindFormers training yaml (a mapping of sections)");
  for (const auto& [key, value] : options.overrides)
    set_yaml_key(root, key, value, "--options " + key, /*parents_must_exist=*/false, source);
  // run_mindformer.py's own --KEY VALUE arguments (its parse_known_args rest): `--KEY=VALUE` split at '=',
  // then KEY VALUE pairs; the parents of a dotted key must exist (it raises "… is not a key of …").
  std::vector<std::string> rest;
  for (const auto& a : options.rest_args) {
    auto eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      rest.push_back(a.substr(0, eq));
      rest.push_back(a.substr(eq + 1));
    } else {
      rest.push_back(a);
    }
  }
  if (rest.size() % 2 != 0)
    throw InputError("run_mindformer.py arguments",
                     "'" + rest.back() +
                         "' has no value (run_mindformer.py takes the arguments it does not know "
                         "as --KEY VALUE pairs that set yaml keys)");
  std::vector<std::string> new_top_keys;
  for (std::size_t i = 0; i < rest.size(); i += 2) {
    if (rest[i].rfind("--", 0) != 0 || rest[i].size() < 3)
      throw InputError("run_mindformer.py arguments",
                       "'" + rest[i] +
                           "' is not an option (run_mindformer.py's other arguments are --KEY VALUE "
                           "pairs that set yaml keys)");
    const std::string key = rest[i].substr(2);
    if (key.find('.') == std::string::npos && !root[key]) new_top_keys.push_back(rest[i]);
    set_yaml_key(root, key, rest[i + 1], rest[i], /*parents_must_exist=*/true, source);
  }

  MindFormersConfig cfg;
  for (const auto& arg : new_top_keys)
    cfg.warnings.push_back(arg +
                           ": run_mindformer.py adds it to the yaml as a new top-level key, which no "
                           "training reads; preflight ignores it");
  cfg.source = source;
  auto& warnings = cfg.warnings;
  Section top{&doc, root, ""};
  auto top_key = [&](const char* key) { return section(doc, root, key, key); };

  {
    const std::string mode = options.run_mode ? *options.run_mode : top.string_or("run_mode", "train");
    if (mode != "train" && mode != "finetune")
      throw InputError(options.run_mode ? "--run_mode" : doc.where(top.get("run_mode"), "run_mode"),
                       "'" + mode + "': preflight analyses training runs (train, finetune)");
  }

  // --- model section ---
  const Section model_sec = top_key("model");
  if (!model_sec.present())
    throw InputError(source, "no model: section (is this a MindFormers training yaml?)");
  const Section mc = section(doc, model_sec.node, "model_config", "model.model_config");
  if (!mc.present() && top.has("parallelism") && model_sec.has("num_hidden_layers"))
    // MindFormers' PyNative trainer (torchtitan-style training: / parallelism: / recompute: sections, the
    // model's fields directly under model:), in its tests/st/…/test_pynative configs since 2026.
    throw doc.error(model_sec.node, "model.model_config",
                    "is missing: this is a MindFormers PyNative trainer config (training:, parallelism:, the "
                    "model's fields directly under model:), which preflight does not read yet; it reads the "
                    "run_mindformer.py yamls (model.model_config, parallel_config)");
  if (!mc.present()) throw doc.error(model_sec.node, "model.model_config", "is missing");
  // Parameter-efficient fine-tuning (model_config.pet_config).  LoRA is modelled (ModelSpec::lora: frozen
  // base, adapters on the linears target_modules names); ptuning2 / prefixtuning are not: said, so a "does
  // not fit" of such a yaml is read for what it is.
  LoraSpec pet_lora;
  if (const Section pet = section(doc, mc.node, "pet_config", "model.model_config.pet_config");
      pet.present()) {
    const std::string type = pet.string_or("pet_type", "(not given)");
    if (type == "lora")
      pet_lora = read_pet_lora(pet, warnings);
    else
      warnings.push_back(
          pet.key_path("pet_type") + " " + type +
          ": parameter-efficient fine-tuning is not modelled — priced as a full fine-tuning: the "
          "frozen weights' gradients, optimizer states, weight-gradient GEMMs and gradient "
          "reduction are counted, so memory and time are overstated (a run said not to fit may "
          "fit)");
  }
  cfg.legacy = !top.has("use_legacy") || doc.boolean(top.get("use_legacy"), "use_legacy");
  const Section parallel_config = top_key("parallel_config");
  const Section parallel = top_key("parallel");
  const Section runner = top_key("runner_config");
  const Section recompute = top_key("recompute_config");
  const Section context = top_key("context");
  const Section moe = top_key("moe_config");

  ModelSpec& m = cfg.model;
  if (cfg.legacy) {
    cfg.model_type = mc.string_or("type", "LlamaConfig");
    if (options.base)
      warnings.push_back("--model is ignored for a legacy yaml: model.model_config (" + cfg.model_type +
                         ") defines the network");
    read_legacy_model(doc, mc, moe, cfg.model_type, m, warnings);
  } else {
    bool have_base = false;
    if (options.base) {
      m = *options.base;
      have_base = true;
    } else if (top.has("pretrained_model_dir")) {
      fs::path dir = doc.string(top.get("pretrained_model_dir"), "pretrained_model_dir");
      if (dir.is_relative()) dir = fs::path(source).parent_path() / dir;
      if (fs::exists(dir / "config.json")) {
        m = load_hf_config(dir.string(), &warnings);
        have_base = true;
      } else if (!mc.has("num_hidden_layers") && !mc.has("num_layers")) {
        throw doc.error(top.get("pretrained_model_dir"), "pretrained_model_dir",
                        "no config.json in '" + dir.string() +
                            "' and model.model_config has no architecture; give --model with a preset, a "
                            "config.json or a checkpoint folder (e.g. --model qwen3-32b)");
      }
    }
    if (!have_base && mc.string_or("model_type", "") == "deepseek_v3") {
      // MindFormers' DeepseekV3Config (mindformers/models/deepseek3/configuration_deepseek_v3.py) defaults
      // every field to DeepSeek-V3's Hugging Face config, and its own pretrain yaml leaves most of them out
      // (no head count, no experts): those fields are the deepseek-v3 preset's.
      m = preset_model("deepseek-v3");
      have_base = true;
      warnings.push_back(
          "model.model_config.model_type deepseek_v3: the fields it leaves out take "
          "MindFormers' DeepseekV3Config defaults (DeepSeek-V3's config.json, the deepseek-v3 "
          "preset)");
    }
    if (!have_base) {
      m.normalization = Normalization::RMSNorm;
      m.position_embedding = PositionEmbedding::Rope;
      m.activation = Activation::SwiGLU;
      m.add_bias_linear = false;
      m.attention_dropout = 0;
      m.hidden_dropout = 0;
    }
    read_new_style_model(doc, mc, m, have_base, warnings);
    cfg.model_type = mc.string_or("model_type", m.name.empty() ? "new style" : m.name);
    if (m.name.empty()) m.name = cfg.model_type;
  }
  if (m.moe.enabled())
    warnings.push_back(
        "MoE on MindSpore: the experts' time is priced with Megatron's token dispatch and grouped "
        "GEMMs, not validated — MindFormers' published MoE runs (Atlas 900 A2 PoDc) ran Mixtral-8x7B "
        "1.7x faster and Qwen2-57B-A14B / DeepSeek-V2-236B 1.5x / 2x slower than priced");

  // --- parallel layout ---
  parallel_config.only({"data_parallel", "model_parallel", "context_parallel", "expert_parallel", "pipeline_stage",
                        "micro_batch_num", "seq_split_num", "recompute", "use_seq_parallel", "optimizer_shard",
                        "gradient_aggregation_group", "vocab_emb_dp", "context_parallel_algo",
                        "ulysses_degree_in_cp", "mem_coeff", "swap"});
  int dp = static_cast<int>(parallel_config.positive_or("data_parallel", 1));
  int tp = static_cast<int>(parallel_config.positive_or("model_parallel", 1));
  int pp = static_cast<int>(parallel_config.positive_or("pipeline_stage", 1));
  int cp = static_cast<int>(parallel_config.positive_or("context_parallel", 1));
  int ep = static_cast<int>(parallel_config.positive_or("expert_parallel", 1));
  int mbn = static_cast<int>(parallel_config.positive_or("micro_batch_num", 1));
  const int seq_split = static_cast<int>(parallel_config.positive_or("seq_split_num", 1));
  bool use_parallel = top.has("use_parallel") ? doc.boolean(top.get("use_parallel"), "use_parallel") : true;
  if (options.use_parallel) use_parallel = *options.use_parallel;
  const int parallel_mode = static_cast<int>(parallel.integer_or("parallel_mode", 1));
  if (parallel_mode < 0 || parallel_mode > 3)
    throw parallel.error("parallel_mode", "must be 0 (data), 1 (semi-auto), 2 (auto) or 3 (hybrid)");
  if (!use_parallel) {
    if (dp * tp * pp * cp > 1) warnings.push_back("use_parallel is False: one device, parallel_config ignored");
    dp = tp = pp = cp = ep = 1;
  } else if (parallel_mode == 0) {
    // Data parallel: parallel_config is forced to all-1 and every device holds the whole model.
    const int world = options.world_size > 0 ? options.world_size : dp;
    if (tp * pp * cp > 1) warnings.push_back("parallel.parallel_mode 0 (data parallel): model_parallel, "
                                             "pipeline_stage and context_parallel are ignored");
    dp = world;
    tp = pp = cp = 1;
    ep = 1;
  } else if (parallel_mode >= 2) {
    // Auto / hybrid parallel: MindSpore chooses the operators' layouts itself, and MindFormers' check_rules
    // ties dp·mp·cp·pp to the device count in semi-auto mode only (tools/check_rules.py, _check_parallel).
    // A launch with more workers than parallel_config lays out is priced with the remainder as data parallel.
    const int model_ranks = tp * cp * pp;
    if (options.world_size > 0 && options.world_size != dp * model_ranks) {
      if (options.world_size % model_ranks != 0)
        throw InputError(options.world_source, "the launch starts " + num(options.world_size) +
                                                   " workers, which tp·cp·pp = " + num(tp) + "·" + num(cp) +
                                                   "·" + num(pp) + " = " + num(model_ranks) + " of " +
                                                   source + " do not divide");
      dp = options.world_size / model_ranks;
      warnings.push_back(
          "parallel.parallel_mode " + num(parallel_mode) +
          " (auto/hybrid parallel): MindSpore searches the layout; analysed as parallel_config's "
          "tp·cp·pp with data parallel over the rest of the " +
          num(options.world_size) + " workers (dp " + num(dp) + ")");
    } else {
      warnings.push_back(
          "parallel.parallel_mode " + num(parallel_mode) +
          " (auto/hybrid parallel): analysed with parallel_config's layout, not the one MindSpore's "
          "search may choose");
    }
  }
  const int world = dp * tp * cp * pp;
  if (options.world_size > 0 && options.world_size != world)
    throw InputError(options.world_source, "the launch starts " + num(options.world_size) + " workers but " +
                                               source + " lays out dp·tp·cp·pp = " + num(dp) + "·" + num(tp) +
                                               "·" + num(cp) + "·" + num(pp) + " = " + num(world) +
                                               " ranks; MindFormers requires them to be equal (check_rules)");

  // --- batch ---
  // per_epoch_size: releases before r1.3 name the data-sink size so.
  runner.only({"epochs", "batch_size", "sink_mode", "sink_size", "per_epoch_size",
               "gradient_accumulation_steps", "global_batch_size", "mini_batch_size", "stop_step",
               "initial_epoch", "initial_step", "train_batch_size"});
  cfg.batch_size = static_cast<int>(runner.positive_or("batch_size", 1));
  cfg.micro_batch_interleave_num = static_cast<int>(top.positive_or("micro_batch_interleave_num", 1));
  if (!cfg.legacy && cfg.micro_batch_interleave_num > 1)
    throw doc.error(top.get("micro_batch_interleave_num"), "micro_batch_interleave_num",
                    "must be 1 with use_legacy: False (MindFormers rejects it, base_trainer.py)");
  int ga = static_cast<int>(runner.positive_or("gradient_accumulation_steps", 1));
  if (pp > 1 && ga > 1) {
    warnings.push_back("runner_config.gradient_accumulation_steps " + num(ga) +
                       " is reset to 1 with pipeline stages (MindFormers); micro_batch_num sets the micro batches");
    ga = 1;
  }
  if (pp > 1 && mbn < pp)
    throw parallel_config.error("micro_batch_num", "is " + num(mbn) + " but must be at least pipeline_stage = " + num(pp));
  cfg.micro_batch_num = mbn;
  cfg.gradient_accumulation_steps = ga;
  const int micro_batches = pp > 1 ? mbn : ga;

  // --- layer split ---
  const Section pipe_cfg = section(doc, parallel.node, "pipeline_config", "parallel.pipeline_config");
  const bool interleave = pipe_cfg.bool_or("pipeline_interleave", false);
  int V = static_cast<int>(mc.positive_or("pp_interleave_num", 1));
  if (!cfg.legacy && mc.has("virtual_pipeline_model_parallel_size"))
    V = static_cast<int>(mc.positive_or("virtual_pipeline_model_parallel_size", 1));
  if (V > 1 && !interleave) {
    warnings.push_back("model.model_config.pp_interleave_num " + num(V) +
                       " has no effect without parallel.pipeline_config.pipeline_interleave: True (1 chunk)");
    V = 1;
  }
  if (V > 1 && pp == 1) {
    warnings.push_back("pp_interleave_num " + num(V) + " with one pipeline stage: 1 chunk");
    V = 1;
  }
  const std::string scheduler = pipe_cfg.string_or("pipeline_scheduler", "1f1b");
  if (scheduler == "zero_bubble_v")
    warnings.push_back("parallel.pipeline_config.pipeline_scheduler zero_bubble_v: its V-shaped placement (loss "
                       "on stage 0) is analysed as interleaved 1F1B");
  else if (scheduler == "gpipe")
    warnings.push_back("pipeline_scheduler gpipe keeps every micro batch's activations; analysed as 1F1B");
  else if (scheduler != "1f1b" && scheduler != "seqpipe" && scheduler != "seqvpp" &&
           scheduler != "seqsmartvpp")
    warnings.push_back(pipe_cfg.key_path("pipeline_scheduler") + " '" + scheduler +
                       "' is none of MindSpore's (1f1b, gpipe, seqpipe, seqvpp, seqsmartvpp, zero_bubble_v): "
                       "analysed as 1F1B");
  cfg.interleave = V;
  const int mtp_in_split = cfg.legacy ? m.mtp_num_layers : 0;
  const int L = m.num_layers + mtp_in_split;
  cfg.split_layers = L;
  cfg.offset = read_offset(doc, mc, L, pp, V);
  cfg.layers.assign(static_cast<std::size_t>(V), std::vector<int>(static_cast<std::size_t>(pp), 0));
  int placed = 0;
  for (int v = 0; v < V; ++v)
    for (int s = 0; s < pp; ++s) {
      cfg.layers[v][s] = L / (pp * V) + cfg.offset[v][s];
      placed += cfg.layers[v][s];
      if (cfg.layers[v][s] < 0)
        throw mc.error("offset", "gives chunk " + num(v) + " of stage " + num(s) + " " + num(cfg.layers[v][s]) +
                                     " layers (" + num(L / (pp * V)) + " each + offset)");
    }
  if (placed != L)
    throw mc.error("offset", "places " + num(placed) + " layers once broadcast to every stage, but the model has " +
                                 num(L) + (mtp_in_split ? " (" + num(m.num_layers) + " + " + num(mtp_in_split) + " MTP)" : "") +
                                 "; give one value per stage");
  // The MTP layers of the legacy split sit at the end of the last stage's last chunk.
  ChunkGrid transformer = cfg.layers;
  if (mtp_in_split > 0) {
    int& last = transformer[V - 1][pp - 1];
    if (last < mtp_in_split)
      throw mc.error("offset", "leaves the last stage " + num(last) + " layers, fewer than the " + num(mtp_in_split) +
                                   " MTP layers counted there");
    last -= mtp_in_split;
  }

  // --- recompute ---
  recompute.only({"recompute", "select_recompute", "select_comm_recompute", "parallel_optimizer_comm_recompute",
                  "mp_comm_recompute", "recompute_slice_activation", "select_recompute_exclude",
                  "select_comm_recompute_exclude"});
  const Section swap = top_key("swap_config");
  if (swap.bool_or("swap", false))
    throw swap.error("swap", "activation swap (the recompute lists then name layers, not counts) is not modelled");
  const ChunkGrid& buckets = cfg.layers;
  cfg.recompute.full = resolve_counts(doc, recompute.get("recompute"), "recompute_config.recompute", buckets, warnings);
  auto selects = resolve_select(doc, recompute.get("select_recompute"), "recompute_config.select_recompute", buckets,
                                "mlp_act", warnings);
  auto comms = resolve_select(doc, recompute.get("select_comm_recompute"), "recompute_config.select_comm_recompute",
                              buckets, "layernorm", warnings);
  auto excl_select = resolve_select(doc, recompute.get("select_recompute_exclude"),
                                    "recompute_config.select_recompute_exclude", buckets, "mlp_act", warnings);
  auto excl_comm = resolve_select(doc, recompute.get("select_comm_recompute_exclude"),
                                  "recompute_config.select_comm_recompute_exclude", buckets, "layernorm", warnings);
  auto max_grid = [&](const std::vector<std::pair<std::string, ChunkGrid>>& list) {
    ChunkGrid g(static_cast<std::size_t>(V), std::vector<int>(static_cast<std::size_t>(pp), 0));
    for (const auto& [mod, grid] : list)
      for (int v = 0; v < V; ++v)
        for (int s = 0; s < pp; ++s) g[v][s] = std::max(g[v][s], grid[v][s]);
    return g;
  };
  cfg.recompute.select = max_grid(selects);
  cfg.recompute.comm = max_grid(comms);

  // Per transformer layer (global, chunk-major), the first n of each bucket.
  Strategy& st = cfg.strategy;
  st.per_layer_recompute.assign(static_cast<std::size_t>(m.num_layers), {});
  bool any_recompute = false;
  {
    int layer = 0;
    for (int v = 0; v < V; ++v)
      for (int s = 0; s < pp; ++s)
        for (int i = 0; i < transformer[v][s]; ++i, ++layer) {
          auto& choice = st.per_layer_recompute[static_cast<std::size_t>(layer)];
          if (i < cfg.recompute.full[v][s]) {
            choice.full = true;
            any_recompute = true;
            continue;
          }
          std::set<std::string> mods;
          for (const auto* list : {&selects, &comms})
            for (const auto& [mod, grid] : *list)
              if (i < grid[v][s]) mods.insert(mod);
          for (const auto* list : {&excl_select, &excl_comm})
            for (const auto& [mod, grid] : *list)
              if (i < grid[v][s]) mods.erase(mod);
          choice.modules.assign(mods.begin(), mods.end());
          if (!mods.empty()) any_recompute = true;
        }
  }
  if (!any_recompute) st.per_layer_recompute.clear();
  if (mtp_in_split > 0 && cfg.recompute.full[V - 1][pp - 1] > transformer[V - 1][pp - 1])
    warnings.push_back("recompute of the MTP layer counted on the last stage is not modelled");

  // --- strategy ---
  st.world_size = world;
  st.gpus_per_node = std::min(8, world);
  st.tp = tp;
  st.pp = pp;
  st.cp = cp;
  st.ep = ep;
  st.vpp = V;
  st.pp_comm_overlap = false;  // the cost model times interleaving with blocking sends only
  st.sequence_parallel = parallel_config.bool_or("use_seq_parallel", false) && tp > 1;
  st.chunk_layout = transformer;
  st.seq_length = mc.positive_or("seq_length", cfg.legacy ? 2048 : 4096);
  if (seq_split > 1) {
    // The sequence pipeline ("seqpipe"): MindFormers forbids full recompute with it (its notes; SAPP drops
    // the class); modelled without interleaving or context parallelism (Strategy::seq_split).
    bool full = false;
    for (const auto& c : st.per_layer_recompute) full = full || c.full;
    if (full)
      throw parallel_config.error("seq_split_num",
                                  num(seq_split) +
                                      " (seqpipe) cannot run with full recompute "
                                      "(recompute_config.recompute): MindFormers forbids it");
    if (cp == 1 && V == 1 && !m.mla.enabled) {
      if (st.seq_length % seq_split != 0)
        throw parallel_config.error("seq_split_num", "does not divide seq_length " + num(st.seq_length));
      st.seq_split = seq_split;
    } else {
      warnings.push_back(
          "parallel_config.seq_split_num " + num(seq_split) + " (seqpipe) with " +
          (cp > 1  ? "context_parallel"
           : V > 1 ? "pipeline interleaving"
                   : "multi-latent attention") +
          ": the sequence split of each micro batch is not modelled; activations are for whole micro "
          "batches (upper bound)");
    }
  }
  m.name = fs::path(source).stem().string() + " (" + cfg.model_type + ")";
  m.lora = pet_lora;
  if (m.position_embedding != PositionEmbedding::LearnedAbsolute && m.max_position_embeddings < st.seq_length)
    m.max_position_embeddings = st.seq_length;
  try {
    m.validate();
  } catch (const InputError& e) {
    rethrow_in_yaml_terms(e, source);
  }
  st.micro_batch_size = cfg.batch_size * cfg.micro_batch_interleave_num;
  st.global_batch_size = st.micro_batch_size * dp * micro_batches;
  st.precision = compute_precision(mc, "compute_dtype", cfg.legacy ? Precision::FP16 : Precision::BF16);
  st.param_bytes = cfg.legacy ? dtype_bytes(mc, "param_init_type", 2)
                              : dtype_bytes(mc, mc.has("params_dtype") ? "params_dtype" : "param_init_type", 4);
  // MindSpore's optimizer parallel slices a parameter over its replicas: dp·cp for the dense layers, whose
  // activations MindFormers shards over dp·cp (llama.py: strategy_matmul ((dp * cp, 1), (mp, 1))) — with dp 1
  // and cp > 1 too.
  st.shard_weights = use_parallel && parallel.bool_or("enable_parallel_optimizer", false) && dp * cp > 1;
  if (st.shard_weights) {
    const Section opt =
        section(doc, parallel.node, "parallel_optimizer_config", "parallel.parallel_optimizer_config");
    const I64 k = opt.integer_or("optimizer_weight_shard_size", -1);
    if (k == 0 || k < -1)
      throw opt.error("optimizer_weight_shard_size", "must be -1 (all replicas) or a positive group size");
    if (k > 0) {
      st.shard_group_size = static_cast<int>(k);
      if ((dp * cp) % k != 0)
        warnings.push_back(opt.key_path("optimizer_weight_shard_size") + " " + num(k) +
                           " does not divide the " + num(dp * cp) +
                           " replicas (dp·cp) of a dense parameter: MindSpore shards over all of them");
    }
    if (opt.bool_or("gradient_accumulation_shard", false))
      warnings.push_back(
          opt.key_path("gradient_accumulation_shard") +
          ": the sliced gradient-accumulation buffers are not modelled: gradients are priced whole "
          "(memory here is high)");
  }
  st.attention_backend = mc.bool_or("use_flash_attention", !cfg.legacy) ? AttentionBackend::Flash : AttentionBackend::Math;
  // Context parallelism (parallel_config.context_parallel_algo, op_parallel_config.py / experimental
  // transformer_config.py): colossalai_cp (the default) gathers the k/v sequence — or passes it round a ring
  // with model_config.use_ring_attention —, ulysses_cp exchanges heads all-to-all over the cp group,
  // hybrid_cp runs an all-to-all of ulysses_degree_in_cp ranks around a ring.
  if (!st.context_parallel_problem(static_cast<int>(cp)).empty())
    // MindFormers refuses it too (tools/check_rules.py, parallel_core/transformer_config.py:
    // "context_parallel is only available for flash attention").
    throw parallel_config.error("context_parallel", num(cp) +
                                                        ": context parallelism needs flash attention "
                                                        "(model.model_config.use_flash_attention: True), "
                                                        "as MindFormers' check_rules requires");
  if (cp > 1) {
    const std::string algo = parallel_config.string_or("context_parallel_algo", "colossalai_cp");
    const bool ring = mc.bool_or("use_ring_attention", false);
    if (algo == "ulysses_cp") {
      st.cp_comm_type = CpCommType::AllToAll;
    } else if (algo == "hybrid_cp") {
      const I64 ulysses = parallel_config.positive_or("ulysses_degree_in_cp", 1);
      if (cp % ulysses != 0)
        throw parallel_config.error("ulysses_degree_in_cp", "must divide context_parallel " + num(cp) +
                                                                " (MindFormers' hybrid_cp check)");
      if (!ring)
        warnings.push_back(
            parallel_config.key_path("context_parallel_algo") +
            " hybrid_cp without model_config.use_ring_attention: priced as a ring (MindFormers "
            "warns that the setting does not take effect)");
      st.cp_comm_type = CpCommType::P2P;
      st.cp_a2a_size = static_cast<int>(ulysses);
    } else if (algo == "colossalai_cp") {
      st.cp_comm_type = ring ? CpCommType::P2P : CpCommType::AllGather;
    } else {
      throw parallel_config.error("context_parallel_algo",
                                  "unknown algorithm '" + algo + "' (colossalai_cp, ulysses_cp, hybrid_cp)");
    }
  }
  // Vocabulary over tp: not with vocab_emb_dp (reset to False when pp > 1; new style: always False), and
  // only when tp divides it (llama.py @ r1.5.0:525-529, tensor_parallel/layers.py @ master:110).
  bool vocab_emb_dp = cfg.legacy && parallel_config.bool_or("vocab_emb_dp", true) && pp == 1;
  st.vocab_parallel = tp > 1 && !vocab_emb_dp && m.vocab_size % tp == 0;
  if (tp > 1 && !vocab_emb_dp && m.vocab_size % tp != 0)
    warnings.push_back("the vocabulary (" + num(m.vocab_size) + ") is not divisible by model_parallel " + num(tp) +
                       ": embedding, lm_head and loss are not split over tp (MindFormers' fall-back)");
  if (m.moe.enabled()) {
    // Experts over ep carved from dp (MoEV2) or dp·tp (grouped matmul, new style): expert weights are
    // split over tp only on the MoEV2 path.
    const bool gmm = !cfg.legacy || moe.bool_or("use_gmm", false);
    st.etp = gmm ? 1 : 0;  // 0: the expert tp is tp, whatever tp is (the search varies it)
    if (moe.has("expert_model_parallel")) st.etp = static_cast<int>(moe.positive_or("expert_model_parallel", 1));
  } else if (ep > 1) {
    warnings.push_back("parallel_config.expert_parallel " + num(ep) + " on a dense model has no effect");
    st.ep = 1;
  }
  const Section optimizer = top_key("optimizer");
  const std::string opt = optimizer.string_or("type", "AdamW");
  if (opt.find("Adam") == std::string::npos && opt.find("adam") == std::string::npos &&
      opt.find("Lamb") == std::string::npos)
    st.optimizer = Optimizer::SGD;
  cfg.max_device_memory_gib = memory_gib(doc, context);

  if (options.moe_load_imbalance) {
    st.moe_load_imbalance = *options.moe_load_imbalance;
    for (auto& w : check_moe_load_imbalance(m, st, "--moe-load-imbalance")) warnings.push_back(std::move(w));
  }
  try {
    // MindFormers' attention refuses kv heads that model_parallel does not divide (llama_transformer.py, its
    // research models: "n_kv_head % model_parallel"), where Megatron-LM now accepts tp a multiple of them.
    st.tp_beyond_kv_heads = false;
    st.validate(m);
  } catch (const InputError& e) {
    rethrow_in_yaml_terms(e, source);
  }
  return cfg;
}

MindFormersConfig load_mindformers_yaml(const fs::path& file, const MindFormersOptions& options) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), "cannot open the MindFormers yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_mindformers_yaml(ss.str(), file.string(), options);
}

// ------------------------------------------------------------------------------------------------
// --write-yaml: replace four values in the text, keep every other byte.

namespace {

struct Edit {
  std::size_t begin = 0, end = 0;
  std::string text;
  int order = 0;  // among edits at the same place: the order of the new lines
};

std::size_t line_end(const std::string& t, std::size_t pos) {
  std::size_t e = t.find('\n', pos);
  return e == std::string::npos ? t.size() : e;
}
int indent_of(const std::string& t, std::size_t line_begin) {
  int n = 0;
  while (line_begin + n < t.size() && t[line_begin + n] == ' ') ++n;
  return n;
}

/// End of a flow collection starting at `pos` ('[' or '{'), past the matching bracket.
std::size_t flow_end(const std::string& t, std::size_t pos) {
  int depth = 0;
  char quote = 0;
  for (std::size_t i = pos; i < t.size(); ++i) {
    const char c = t[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '[' || c == '{') ++depth;
    else if ((c == ']' || c == '}') && --depth == 0) return i + 1;
  }
  return t.size();
}

/// Byte offset of the start of line `line` (0-based) — yaml-cpp's Mark::pos counts characters, not bytes.
std::size_t line_offset(const std::string& t, int line) {
  std::size_t pos = 0;
  for (int i = 0; i < line && pos < t.size(); ++i) {
    std::size_t nl = t.find('\n', pos);
    if (nl == std::string::npos) return t.size();
    pos = nl + 1;
  }
  return pos;
}

/// [begin, end) of the value of the key whose mark is `km`: on the key's line up to a comment, a flow
/// collection, or the block below the key (more indented lines, or "- " items at the key's indentation).
/// begin is just past the ':' (and an anchor, which is kept).
std::pair<std::size_t, std::size_t> value_extent(const std::string& t, const YAML::Mark& km, const std::string& key,
                                                 const std::string& source) {
  const std::size_t ls = line_offset(t, km.line);
  const std::size_t key_pos = ls + static_cast<std::size_t>(km.column);
  std::size_t colon = t.find(':', key_pos + key.size());
  if (colon == std::string::npos || colon > line_end(t, key_pos))
    throw InputError(location(source, km.line + 1), "cannot find ':' after " + key);
  const int key_indent = km.column;
  std::size_t begin = colon + 1;
  std::size_t p = begin;
  while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
  if (p < t.size() && t[p] == '&') {  // keep an anchor
    while (p < t.size() && t[p] != ' ' && t[p] != '\n') ++p;
    begin = p;
    while (p < t.size() && t[p] == ' ') ++p;
  }
  if (p < t.size() && (t[p] == '[' || t[p] == '{')) return {begin, flow_end(t, p)};
  if (p < t.size() && t[p] != '\n' && t[p] != '\r' && t[p] != '#') {
    std::size_t end = line_end(t, p);
    std::size_t hash = t.find(" #", p);
    if (hash != std::string::npos && hash < end) end = hash;
    while (end > p && (t[end - 1] == ' ' || t[end - 1] == '\r')) --end;
    return {begin, end};
  }
  std::size_t end = line_end(t, p);
  std::size_t next = end;
  while (next < t.size()) {
    const std::size_t s = next + 1;
    if (s >= t.size()) break;
    const std::size_t e = line_end(t, s);
    const std::string line = t.substr(s, e - s);
    const bool blank = line.find_first_not_of(" \t\r") == std::string::npos;
    const int ind = indent_of(t, s);
    const bool comment = !blank && line[static_cast<std::size_t>(ind)] == '#';
    const bool item = !blank && line[static_cast<std::size_t>(ind)] == '-';
    if (blank || comment || ind > key_indent || (ind == key_indent && item)) {
      if (!blank && !comment) end = e;
      next = e;
    } else {
      break;
    }
  }
  return {begin, end};
}

/// The edit setting `key` of mapping `map` to `value` (flow text); a missing key is added after the
/// mapping's last entry, at the indentation of its keys.
Edit value_edit(const std::string& t, const YAML::Node& map, const std::string& key, const std::string& value,
                const std::string& source) {
  YAML::Mark last{};
  std::string last_key;
  bool found = false;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const YAML::Mark km = it->first.Mark();
    if (it->first.Scalar() == key) {
      auto [b, e] = value_extent(t, km, key, source);
      return {b, e, " " + value, 0};
    }
    if (!found || km.line > last.line) {
      last = km;
      last_key = it->first.Scalar();
      found = true;
    }
  }
  if (!found) throw InputError(source, "cannot add " + key + " to an empty section");
  const std::size_t after = line_end(t, value_extent(t, last, last_key, source).second);
  return {after, after, "\n" + std::string(static_cast<std::size_t>(last.column), ' ') + key + ": " + value, 0};
}

}  // namespace

std::string rewrite_mindformers_yaml(const std::string& text, const std::string& source, const ChunkGrid& offset,
                                     const ChunkGrid& recompute, const ChunkGrid& select_recompute,
                                     const ChunkGrid& select_comm_recompute) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(location(source, e.mark.line + 1), "malformed yaml: " + e.msg);
  }
  if (!root.IsMap() || !root["model"] || !root["model"].IsMap() || !root["model"]["model_config"] ||
      !root["model"]["model_config"].IsMap())
    throw InputError(source, "no model.model_config mapping to write the offsets into");
  std::vector<Edit> edits;
  const YAML::Node mc = root["model"]["model_config"];
  edits.push_back(value_edit(text, mc, "offset", grid_text(offset), source));
  if (offset.size() > 1 && !mc["pp_interleave_num"])
    edits.push_back(value_edit(text, mc, "pp_interleave_num", num(static_cast<I64>(offset.size())), source));
  const YAML::Node rc = root["recompute_config"];
  if (rc && rc.IsMap()) {
    edits.push_back(value_edit(text, rc, "recompute", grid_text(recompute), source));
    edits.push_back(value_edit(text, rc, "select_recompute", grid_text(select_recompute), source));
    edits.push_back(value_edit(text, rc, "select_comm_recompute", grid_text(select_comm_recompute), source));
  } else {
    std::string block = "\nrecompute_config:\n  recompute: " + grid_text(recompute) +
                        "\n  select_recompute: " + grid_text(select_recompute) +
                        "\n  select_comm_recompute: " + grid_text(select_comm_recompute) + "\n";
    if (!text.empty() && text.back() != '\n') block = "\n" + block;
    edits.push_back({text.size(), text.size(), block, 0});
  }
  for (std::size_t i = 0; i < edits.size(); ++i) edits[i].order = static_cast<int>(i);
  // Applied back to front; of two insertions at one place the later one first, so they read in order.
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    return a.begin != b.begin ? a.begin > b.begin : a.order > b.order;
  });
  std::string out = text;
  for (const auto& e : edits) out.replace(e.begin, e.end - e.begin, e.text);
  return out;
}

}  // namespace preflight::analyzer
