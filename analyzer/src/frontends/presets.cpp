#include "preflight/analyzer/frontends/presets.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>

#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/http.hpp"

namespace preflight::analyzer {

namespace {

struct Preset {
  const char* name;
  std::vector<const char*> aliases;
  const char* hf_repo;  ///< Hugging Face repository id ("" when the model has none)
  const char* source;   ///< where the numbers come from
  const char* config;   ///< the architecture fields of its config.json
};

// Each config below holds the architecture fields of the published config.json of `hf_repo` (values as
// listed in the repository's config.json and model card); fields that do not change the analysis
// (token ids, rope theta, dtype) are left out.
const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      // Llama 2 (Touvron et al. 2023, arXiv 2307.09288, Table 1; GQA only at 70B).
      {"llama2-7b",
       {},
       "meta-llama/Llama-2-7b-hf",
       "huggingface.co/meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023 (arXiv 2307.09288)",
       R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 32, "max_position_embeddings": 4096,
           "vocab_size": 32000, "tie_word_embeddings": false})"},
      {"llama2-13b",
       {},
       "meta-llama/Llama-2-13b-hf",
       "huggingface.co/meta-llama/Llama-2-13b-hf config.json; Touvron et al. 2023 (arXiv 2307.09288)",
       R"({"model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824, "num_hidden_layers": 40,
           "num_attention_heads": 40, "num_key_value_heads": 40, "max_position_embeddings": 4096,
           "vocab_size": 32000, "tie_word_embeddings": false})"},
      {"llama2-70b",
       {},
       "meta-llama/Llama-2-70b-hf",
       "huggingface.co/meta-llama/Llama-2-70b-hf config.json; Touvron et al. 2023 (arXiv 2307.09288)",
       R"({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
           "num_attention_heads": 64, "num_key_value_heads": 8, "max_position_embeddings": 4096,
           "vocab_size": 32000, "tie_word_embeddings": false})"},
      // Llama 3 / 3.1 (Grattafiori et al. 2024, "The Llama 3 Herd of Models", arXiv 2407.21783, Table 3).
      {"llama3-8b",
       {"llama3.1-8b"},
       "meta-llama/Meta-Llama-3-8B",
       "huggingface.co/meta-llama/Meta-Llama-3-8B config.json; Llama 3 Herd of Models (arXiv 2407.21783) "
       "Table 3",
       R"({"model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 8192,
           "vocab_size": 128256, "tie_word_embeddings": false})"},
      {"llama3-70b",
       {"llama3.1-70b"},
       "meta-llama/Meta-Llama-3-70B",
       "huggingface.co/meta-llama/Meta-Llama-3-70B config.json; Llama 3 Herd of Models (arXiv 2407.21783) "
       "Table 3",
       R"({"model_type": "llama", "hidden_size": 8192, "intermediate_size": 28672, "num_hidden_layers": 80,
           "num_attention_heads": 64, "num_key_value_heads": 8, "max_position_embeddings": 8192,
           "vocab_size": 128256, "tie_word_embeddings": false})"},
      {"llama3-405b",
       {"llama3.1-405b"},
       "meta-llama/Llama-3.1-405B",
       "huggingface.co/meta-llama/Llama-3.1-405B config.json; Llama 3 Herd of Models (arXiv 2407.21783) "
       "Table 3",
       R"({"model_type": "llama", "hidden_size": 16384, "intermediate_size": 53248, "num_hidden_layers": 126,
           "num_attention_heads": 128, "num_key_value_heads": 8, "max_position_embeddings": 131072,
           "vocab_size": 128256, "tie_word_embeddings": false})"},
      // GPT-3 175B has no Hugging Face release: Brown et al. 2020 (arXiv 2005.14165) Table 2.1 — 96 layers,
      // d_model 12288, 96 heads of 128, context 2048 — with the GPT-2 BPE vocabulary (50257) and GPT-2's
      // architecture (learned positions, LayerNorm, GeLU, biases, tied embeddings), as Megatron-LM's
      // examples/gpt3/train_gpt3_175b_distributed.sh trains it.
      {"gpt3-175b",
       {"gpt3"},
       "",
       "Brown et al. 2020 (arXiv 2005.14165) Table 2.1; Megatron-LM "
       "examples/gpt3/train_gpt3_175b_distributed.sh",
       R"({"model_type": "gpt2", "n_embd": 12288, "n_layer": 96, "n_head": 96, "n_inner": null,
           "n_positions": 2048, "vocab_size": 50257, "attn_pdrop": 0.1, "resid_pdrop": 0.1})"},
      // Mistral AI (Jiang et al. 2023, arXiv 2310.06825; Mixtral: arXiv 2401.04088).
      {"mistral-7b",
       {},
       "mistralai/Mistral-7B-v0.1",
       "huggingface.co/mistralai/Mistral-7B-v0.1 config.json; Jiang et al. 2023 (arXiv 2310.06825) Table 1",
       R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768,
           "sliding_window": 4096, "vocab_size": 32000, "tie_word_embeddings": false})"},
      {"mixtral-8x7b",
       {},
       "mistralai/Mixtral-8x7B-v0.1",
       "huggingface.co/mistralai/Mixtral-8x7B-v0.1 config.json; Jiang et al. 2024 (arXiv 2401.04088) Table 1",
       R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
           "num_attention_heads": 32, "num_key_value_heads": 8, "max_position_embeddings": 32768,
           "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null, "vocab_size": 32000,
           "tie_word_embeddings": false})"},
      {"mixtral-8x22b",
       {},
       "mistralai/Mixtral-8x22B-v0.1",
       "huggingface.co/mistralai/Mixtral-8x22B-v0.1 config.json (141 B total, 39 B active per the model "
       "card)",
       R"({"model_type": "mixtral", "hidden_size": 6144, "intermediate_size": 16384, "num_hidden_layers": 56,
           "num_attention_heads": 48, "num_key_value_heads": 8, "max_position_embeddings": 65536,
           "num_local_experts": 8, "num_experts_per_tok": 2, "sliding_window": null, "vocab_size": 32000,
           "tie_word_embeddings": false})"},
      // Qwen2.5 (arXiv 2412.15115) and Qwen3 (arXiv 2505.09388).
      {"qwen2.5-7b",
       {},
       "Qwen/Qwen2.5-7B",
       "huggingface.co/Qwen/Qwen2.5-7B config.json (7.61 B per the model card)",
       R"({"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
           "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 131072,
           "use_sliding_window": false, "sliding_window": 131072, "vocab_size": 152064,
           "tie_word_embeddings": false})"},
      {"qwen2.5-72b",
       {},
       "Qwen/Qwen2.5-72B",
       "huggingface.co/Qwen/Qwen2.5-72B config.json (72.7 B per the model card)",
       R"({"model_type": "qwen2", "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80,
           "num_attention_heads": 64, "num_key_value_heads": 8, "max_position_embeddings": 131072,
           "use_sliding_window": false, "sliding_window": 131072, "vocab_size": 152064,
           "tie_word_embeddings": false})"},
      {"qwen3-8b",
       {},
       "Qwen/Qwen3-8B",
       "huggingface.co/Qwen/Qwen3-8B config.json (8.2 B per the model card)",
       R"({"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
           "attention_bias": false, "use_sliding_window": false, "vocab_size": 151936,
           "tie_word_embeddings": false})"},
      {"qwen3-32b",
       {},
       "Qwen/Qwen3-32B",
       "huggingface.co/Qwen/Qwen3-32B config.json (32.8 B per the model card)",
       R"({"model_type": "qwen3", "hidden_size": 5120, "intermediate_size": 25600, "num_hidden_layers": 64,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
           "attention_bias": false, "use_sliding_window": false, "vocab_size": 151936,
           "tie_word_embeddings": false})"},
      {"qwen3-30b-a3b",
       {},
       "Qwen/Qwen3-30B-A3B",
       "huggingface.co/Qwen/Qwen3-30B-A3B config.json (30.5 B total, 3.3 B active per the model card)",
       R"({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
           "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
           "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
           "max_position_embeddings": 40960, "attention_bias": false, "use_sliding_window": false,
           "vocab_size": 151936, "tie_word_embeddings": false})"},
      {"qwen3-235b-a22b",
       {},
       "Qwen/Qwen3-235B-A22B",
       "huggingface.co/Qwen/Qwen3-235B-A22B config.json (235 B total, 22 B active per the model card)",
       R"({"model_type": "qwen3_moe", "hidden_size": 4096, "intermediate_size": 12288, "moe_intermediate_size": 1536,
           "num_hidden_layers": 94, "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 128,
           "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
           "max_position_embeddings": 40960, "attention_bias": false, "use_sliding_window": false,
           "vocab_size": 151936, "tie_word_embeddings": false})"},
      // DeepSeek-V2 (arXiv 2405.04434 §3.1.2) and DeepSeek-V3 (arXiv 2412.19437 §4.2).
      {"deepseek-v2-lite",
       {},
       "deepseek-ai/DeepSeek-V2-Lite",
       "huggingface.co/deepseek-ai/DeepSeek-V2-Lite config.json (15.7 B total per the model card)",
       R"({"model_type": "deepseek_v2", "hidden_size": 2048, "intermediate_size": 10944,
           "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16,
           "num_key_value_heads": 16, "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
           "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": null, "kv_lora_rank": 512,
           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
           "max_position_embeddings": 163840, "vocab_size": 102400, "tie_word_embeddings": false})"},
      {"deepseek-v2",
       {},
       "deepseek-ai/DeepSeek-V2",
       "huggingface.co/deepseek-ai/DeepSeek-V2 config.json; DeepSeek-V2 (arXiv 2405.04434) §3.1.2: 236 B "
       "total",
       R"({"model_type": "deepseek_v2", "hidden_size": 5120, "intermediate_size": 12288,
           "moe_intermediate_size": 1536, "num_hidden_layers": 60, "num_attention_heads": 128,
           "num_key_value_heads": 128, "n_routed_experts": 160, "n_shared_experts": 2, "num_experts_per_tok": 6,
           "first_k_dense_replace": 1, "moe_layer_freq": 1, "q_lora_rank": 1536, "kv_lora_rank": 512,
           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
           "max_position_embeddings": 163840, "vocab_size": 102400, "tie_word_embeddings": false})"},
      {"deepseek-v3",
       {},
       "deepseek-ai/DeepSeek-V3",
       "huggingface.co/deepseek-ai/DeepSeek-V3 config.json; DeepSeek-V3 (arXiv 2412.19437) §4.2: 671 B total",
       R"({"model_type": "deepseek_v3", "hidden_size": 7168, "intermediate_size": 18432,
           "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
           "num_key_value_heads": 128, "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
           "first_k_dense_replace": 3, "moe_layer_freq": 1, "q_lora_rank": 1536, "kv_lora_rank": 512,
           "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "num_nextn_predict_layers": 1,
           "max_position_embeddings": 163840, "vocab_size": 129280, "tie_word_embeddings": false})"},
  };
  return all;
}

std::string normalize(const std::string& s) {
  std::string n;
  for (unsigned char c : s) n += c == '_' ? '-' : static_cast<char>(std::tolower(c));
  return n;
}

const Preset* find_preset(const std::string& name) {
  std::string key = normalize(name);
  for (const auto& p : presets()) {
    if (key == p.name || (*p.hf_repo && key == normalize(p.hf_repo))) return &p;
    for (const char* a : p.aliases)
      if (key == a) return &p;
  }
  return nullptr;
}

std::string known_list() {
  std::string s;
  for (const auto& p : presets()) s += (s.empty() ? "" : ", ") + std::string(p.name);
  return s;
}

const Preset& require_preset(const std::string& name) {
  const Preset* p = find_preset(name);
  if (!p)
    throw InputError("--model", "unknown model '" + name + "': not a preset (known: " + known_list() +
                                    "), a config.json file, a checkpoint folder or an http(s) URL");
  return *p;
}

ModelSpec build_preset(const Preset& p, std::vector<std::string>* warnings) {
  ModelSpec m = parse_hf_config(p.config, std::string("preset ") + p.name, warnings);
  m.name = p.name;
  return m;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

bool is_preset(const std::string& name) {
  return find_preset(name) != nullptr;
}

ModelSpec preset_model(const std::string& name) {
  return build_preset(require_preset(name), nullptr);
}

std::string preset_source(const std::string& name) {
  return require_preset(name).source;
}

namespace {

/// "ORG/REPO" as the Hub names repositories: two non-empty names of [A-Za-z0-9._-], not starting with '.'
/// or '-' (so "./x", "../x" and "/abs" stay paths).
bool is_hf_repo_id(const std::string& s) {
  auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() ||
      s.find('/', slash + 1) != std::string::npos)
    return false;
  auto ok_part = [](std::string_view part) {
    if (part.front() == '.' || part.front() == '-' || part.ends_with(".json")) return false;
    return std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
  };
  std::string_view v = s;
  return ok_part(v.substr(0, slash)) && ok_part(v.substr(slash + 1));
}

}  // namespace

ModelSpec load_model(const std::string& spec, std::vector<std::string>* warnings) {
  namespace fs = std::filesystem;
  if (spec.empty())
    throw InputError("--model", "expects a preset name, a config.json path or an http(s) URL");
  if (is_http_url(spec)) return load_hf_config(spec, warnings);
  std::error_code ec;
  fs::path p = spec;
  bool usable_path = fs::is_regular_file(p, ec) || fs::is_regular_file(p / "config.json", ec);
  if (usable_path) return load_hf_config(spec, warnings);
  if (const Preset* preset = find_preset(spec)) return build_preset(*preset, warnings);
  if (is_hf_repo_id(spec)) {
    // Not a file or folder here and not a preset: a repository on the Hub, as `from_pretrained` reads it.
    std::string url = hf_endpoint() + "/" + spec + "/resolve/main/config.json";
    try {
      return load_hf_config(url, warnings);
    } catch (const InputError& e) {
      throw InputError(e.where(),
                       e.detail() + " (--model " + spec +
                           " is not a file or folder here, so it was read as a Hugging Face repository)");
    }
  }
  bool looks_like_path = spec.find('/') != std::string::npos || (spec.size() > 5 && spec.ends_with(".json"));
  if (looks_like_path) return load_hf_config(spec, warnings);  // reports the missing file or folder
  return build_preset(require_preset(spec), warnings);         // reports the unknown name
}

}  // namespace preflight::analyzer
