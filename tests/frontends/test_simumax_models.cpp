// Shared-data tier: our presets against the model JSONs SimuMax ships (../shared/configs/simumax/models),
// an independent transcription of the same published architectures.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/frontends/presets.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using namespace preflight::test;

namespace {

std::filesystem::path simumax_models() {
  return shared_data_dir() / ".." / "configs" / "simumax" / "models";
}

/// The SimuMax key → our value for one model (only keys that SimuMax's file sets are compared).
std::map<std::string, std::int64_t> as_simumax(const ModelSpec& m) {
  std::map<std::string, std::int64_t> v = {
      {"hidden_size", m.hidden_size},
      {"head_num", m.num_attention_heads},
      {"kv_head_num", m.num_query_groups},
      {"head_size", m.kv_channels},
      {"intermediate_size", m.ffn_hidden_size},
      {"layer_num", m.num_layers},
      {"vocab_size", m.vocab_size},
      {"use_swiglu", m.gated() ? 1 : 0},
  };
  if (m.moe.enabled()) {
    v["expert_num"] = m.moe.num_experts;
    v["topk"] = m.moe.router_topk;
    v["moe_ffn_hidden_size"] = m.moe.ffn_hidden_size;
    v["moe_shared_expert_intermediate_size"] = m.moe.shared_expert_ffn_hidden_size;
    int dense = 0;
    while (dense < m.num_layers && !m.is_moe_layer(dense)) ++dense;
    v["dense_layers"] = dense;
  }
  if (m.mla.enabled) {
    v["q_lora_rank"] = m.mla.q_lora_rank;
    v["kv_lora_rank"] = m.mla.kv_lora_rank;
    v["qk_head_dim"] = m.mla.qk_head_dim;
    v["qk_pos_emb_head_dim"] = m.mla.qk_pos_emb_head_dim;
    v["v_head_dim"] = m.mla.v_head_dim;
  }
  return v;
}

}  // namespace

TEST(SimuMaxModels, PresetsAgreeWithSimuMaxConfigs) {
  if (!shared_data_available() || !std::filesystem::is_directory(simumax_models()))
    GTEST_SKIP() << shared_data_missing();
  struct Case {
    const char* preset;
    const char* file;
    std::set<std::string> differs;  // fields where SimuMax deliberately departs from the release
  };
  const Case cases[] = {
      {"llama2-7b", "llama2-7b.json", {}},
      {"llama2-13b", "llama2-13b.json", {}},
      {"llama2-70b", "llama2-70b.json", {}},
      {"llama3-8b", "llama3-8b.json", {"vocab_size"}},  // SimuMax: 128257 (tokenizer + 1); release: 128256
      {"llama3-70b", "llama3-70b.json", {}},
      {"qwen3-32b", "qwen3-32b.json", {}},
      {"mixtral-8x7b", "mixtral-8x7b.json", {}},
      {"deepseek-v2", "deepseekv2.json", {}},
      {"deepseek-v3", "deepseekv3.json", {}},
      {"deepseek-v2-lite", "deepseekv2-lite.json", {"layer_num"}},  // SimuMax: 28 (padded); release: 27
      // SimuMax pads the GPT-2 vocabulary to 51200 itself and gives GPT-3 a SwiGLU-free 4h MLP as we do.
      {"gpt3-175b", "gpt3-175b.json", {"vocab_size"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.preset);
    nlohmann::json j = nlohmann::json::parse(read_file(simumax_models() / c.file));
    auto ours = as_simumax(preset_model(c.preset));
    int compared = 0;
    for (const auto& [key, value] : ours) {
      if (!j.contains(key) || c.differs.count(key)) continue;
      std::int64_t theirs = j[key].is_null()      ? 0
                            : j[key].is_boolean() ? (j[key].get<bool>() ? 1 : 0)
                                                  : j[key].get<std::int64_t>();
      EXPECT_EQ(value, theirs) << key;
      ++compared;
    }
    EXPECT_GE(compared, 7);
  }
}
