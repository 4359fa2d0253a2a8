// Built-in presets: every preset against its published parameter total, presets equal to the real
// config.json files, name resolution, and `--model` loading with Megatron overrides.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "frontends_test_data.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using preflight::InputError;
using preflight::test::hf_config_path;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

void expect_same_architecture(const ModelSpec& a, const ModelSpec& b) {
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.hidden_size, b.hidden_size);
  EXPECT_EQ(a.ffn_hidden_size, b.ffn_hidden_size);
  EXPECT_EQ(a.num_attention_heads, b.num_attention_heads);
  EXPECT_EQ(a.num_query_groups, b.num_query_groups);
  EXPECT_EQ(a.kv_channels, b.kv_channels);
  EXPECT_EQ(a.vocab_size, b.vocab_size);
  EXPECT_EQ(a.activation, b.activation);
  EXPECT_EQ(a.add_bias_linear, b.add_bias_linear);
  EXPECT_EQ(a.add_qkv_bias, b.add_qkv_bias);
  EXPECT_EQ(a.qk_layernorm, b.qk_layernorm);
  EXPECT_EQ(a.normalization, b.normalization);
  EXPECT_EQ(a.untie_embeddings_and_output_weights, b.untie_embeddings_and_output_weights);
  EXPECT_EQ(a.position_embedding, b.position_embedding);
  EXPECT_EQ(a.moe.num_experts, b.moe.num_experts);
  EXPECT_EQ(a.moe.router_topk, b.moe.router_topk);
  EXPECT_EQ(a.moe.ffn_hidden_size, b.moe.ffn_hidden_size);
  EXPECT_EQ(a.moe.shared_expert_ffn_hidden_size, b.moe.shared_expert_ffn_hidden_size);
  EXPECT_EQ(a.moe.layer_is_moe, b.moe.layer_is_moe);
  EXPECT_EQ(a.mla.enabled, b.mla.enabled);
  EXPECT_EQ(a.mla.q_lora_rank, b.mla.q_lora_rank);
  EXPECT_EQ(a.mla.kv_lora_rank, b.mla.kv_lora_rank);
  EXPECT_EQ(count_parameters(a), count_parameters(b));
}

}  // namespace

TEST(Presets, TheIssueListIsThere) {
  std::vector<std::string> names = preset_names();
  for (const char* required :
       {"llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b",
        "mixtral-8x7b", "deepseek-v2", "deepseek-v3", "qwen3-32b"})
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
}

// Published totals: exact counts where the release states them (safetensors metadata shown on the model
// page), else the model card's / paper's rounded total, which the count must match within 1 %.
struct Published {
  const char* name;
  double total;
  bool exact;
};

TEST(Presets, EveryPresetMatchesItsPublishedTotal) {
  const Published table[] = {
      {"llama2-7b", 6'738'415'616, true},
      {"llama2-13b", 13'015'864'320, true},
      {"llama2-70b", 68'976'648'192, true},
      {"llama3-8b", 8'030'261'248, true},
      {"llama3-70b", 70'553'706'496, true},
      {"llama3-405b", 405'853'388'800, true},
      {"mistral-7b", 7'241'732'096, true},
      {"gpt3-175b", 175e9, false},
      {"mixtral-8x7b", 46.7e9, false},
      {"mixtral-8x22b", 141e9, false},
      {"qwen2.5-7b", 7.61e9, false},
      {"qwen2.5-72b", 72.7e9, false},
      // Qwen3-0.6B by hand: 28 layers of (1024·2048 + 2·1024·1024 + 2048·1024 q, k, v, o; 2·128 q / k norms;
      // 3·1024·3072 MLP; 2·1024 norms), one tied 151936×1024 embedding, the final norm.  The others: their
      // model cards' 4.0 B, 14.8 B.
      {"qwen3-0.6b", 596'049'920, true},
      // Qwen3-1.7B likewise: 28 · (2048·2048 + 2·2048·1024 + 2048·2048 + 256 + 3·2048·6144 + 2·2048) and a
      // tied 151936×2048 embedding (its card: 1.7 B, 1.4 B without the embedding).
      {"qwen3-1.7b", 1'720'574'976, true},
      {"qwen3-4b", 4.0e9, false},
      {"qwen3-14b", 14.8e9, false},
      {"qwen3-8b", 8.2e9, false},
      {"qwen3-32b", 32.8e9, false},
      {"qwen3-30b-a3b", 30.5e9, false},
      {"qwen3-235b-a22b", 235e9, false},
      {"deepseek-v2-lite", 15.7e9, false},
      {"deepseek-v2", 236e9, false},
      {"deepseek-v3", 671e9, false},
      // OpenAI's gpt-oss model card (116.8 B / 20.9 B), Qwen3-Next's model card (80 B).
      {"gpt-oss-120b", 116.8e9, false},
      {"gpt-oss-20b", 20.9e9, false},
      {"qwen3-next-80b-a3b", 80e9, false},
      {"nemotron-3-nano", 31.6e9, false},  // NVIDIA's model card
      // Nemotron-3 Super: its card's 120.6 B and the MTP block the preset keeps, by hand 2.94 B (eh_proj
      // 8192·4096, attention 4096·4608 + 4096·4096, a latent MoE layer: 512 experts of 2·1024·2688, the two
      // 4096↔1024 projections, a 512×4096 router, a shared expert of 2·4096·5376).
      {"nemotron-3-super", 123.6e9, false},
      // Kimi-K2 (its report's "1.04 T" is rounded up): by hand from its config.json — 60 MoE layers of 384
      // experts and a shared one (3·7168·2048 each) with a 384×7168 router, one dense layer (3·7168·18432),
      // 61 MLA blocks (7168·1536 + 1536·64·192 + 7168·576 + 512·64·256 + 64·128·7168) with their four norms
      // (2·7168 + 1536 + 512), the final norm and two 163840×7168 embeddings.
      {"kimi-k2", 1'026'408'209'408, true},
  };
  ASSERT_EQ(std::size(table), preset_names().size()) << "a preset without a published total to test against";
  for (const auto& p : table) {
    ModelSpec m = preset_model(p.name);
    EXPECT_EQ(m.name, p.name);
    EXPECT_FALSE(preset_source(p.name).empty());
    double n = static_cast<double>(count_parameters(m));
    if (p.exact)
      EXPECT_EQ(n, p.total) << p.name;
    else
      EXPECT_NEAR(n / p.total, 1.0, 0.01) << p.name << ": " << n;
    // Every preset can be laid out on one GPU without tripping a consistency check.
    Strategy st;
    st.seq_length =
        m.position_embedding == PositionEmbedding::LearnedAbsolute ? m.max_position_embeddings : 4096;
    EXPECT_NO_THROW(build_layer_graph(m, st)) << p.name;
  }
}

TEST(Presets, Gpt3_175B) {
  ModelSpec m = preset_model("gpt3-175b");
  EXPECT_EQ(m.num_layers, 96);
  EXPECT_EQ(m.hidden_size, 12288);
  EXPECT_EQ(m.num_attention_heads, 96);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.max_position_embeddings, 2048);
  EXPECT_EQ(m.position_embedding, PositionEmbedding::LearnedAbsolute);
  // 96·(12·12288² + 13·12288) + 50304·12288 (GPT-2 vocabulary padded to 128) + 2048·12288 + 2·12288.
  EXPECT_EQ(count_parameters(m), 174'604'836'864);
}

TEST(Presets, EqualTheRealConfigFiles) {
  for (const char* name : {"llama3-8b", "mixtral-8x7b", "deepseek-v3", "deepseek-v2-lite", "qwen3-32b",
                           "qwen2.5-7b", "qwen3-30b-a3b"}) {
    SCOPED_TRACE(name);
    expect_same_architecture(preset_model(name), load_hf_config(hf_config_path(name)));
  }
}

TEST(Presets, NamesAliasesAndRepositoryIds) {
  EXPECT_EQ(preset_model("LLAMA3_8B").name, "llama3-8b");
  EXPECT_EQ(preset_model("meta-llama/Meta-Llama-3-8B").name, "llama3-8b");
  EXPECT_EQ(preset_model("llama3.1-405b").name, "llama3-405b");
  EXPECT_EQ(preset_model("deepseek-ai/DeepSeek-V3").name, "deepseek-v3");
  EXPECT_TRUE(is_preset("Qwen/Qwen3-32B"));
  EXPECT_FALSE(is_preset("llama4-8b"));
}

// A chat / instruct / base variant's repository id is its base model's preset, said (ms-swift's examples name
// Qwen/Qwen2.5-7B-Instruct; offline it had been a failed download).
TEST(Presets, VariantRepositoryIdsAreTheirBaseModelsPreset) {
  std::vector<std::string> w;
  EXPECT_EQ(load_model("Qwen/Qwen2.5-7B-Instruct", &w).name, "qwen2.5-7b");
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("the qwen2.5-7b preset (Qwen/Qwen2.5-7B's architecture"), std::string::npos) << w[0];
  EXPECT_EQ(load_model("meta-llama/Llama-2-70b-chat-hf").name, "llama2-70b");
  EXPECT_EQ(load_model("Qwen/Qwen3-30B-A3B-Base").name, "qwen3-30b-a3b");
  EXPECT_EQ(load_model("Qwen/Qwen3-235B-A22B-Instruct-2507").name, "qwen3-235b-a22b");
  EXPECT_EQ(load_model("Qwen/Qwen3-30B-A3B-Thinking-2507-FP8").name, "qwen3-30b-a3b");
  // the suffix is stripped only at the end: another model of the family stays itself
  EXPECT_FALSE(is_preset("Qwen/Qwen2.5-7B-Instruct"));
  // Llama 3.1's repositories (both of Meta's spellings) are the Llama 3 architecture
  // (NeMo-Framework-Launcher's llama3_1 configs name them as their tokenizer)
  EXPECT_EQ(load_model("meta-llama/Meta-Llama-3.1-8B").name, "llama3-8b");
  EXPECT_EQ(load_model("meta-llama/Llama-3.1-70B-Instruct").name, "llama3-70b");
  EXPECT_EQ(load_model("meta-llama/Meta-Llama-3.1-405B").name, "llama3-405b");
  EXPECT_TRUE(is_preset("meta-llama/Llama-3.1-8B"));
}

// A re-upload of a preset's repository under another organisation, by its repository name (variants too); the
// preset's own repository and its variants are preset_of_repository()'s, not this.
TEST(Presets, ReuploadsOfAPresetsRepository) {
  EXPECT_EQ(preset_of_reupload("NousResearch/Meta-Llama-3-8B"), "llama3-8b");
  EXPECT_EQ(preset_of_reupload("unsloth/Llama-3.1-8B-Instruct"), "llama3-8b");
  EXPECT_EQ(preset_of_reupload("NousResearch/Llama-2-7b-chat-hf"), "llama2-7b");
  EXPECT_EQ(preset_of_reupload("someone/Mixtral-8x7B-v0.1"), "mixtral-8x7b");
  EXPECT_EQ(preset_of_reupload("meta-llama/Meta-Llama-3-8B"), "");  // the preset's own
  EXPECT_EQ(preset_of_reupload("NousResearch/Hermes-3-Llama-3.1-8B"), "");
  EXPECT_EQ(preset_of_reupload("Meta-Llama-3-8B"), "");  // not ORG/REPO
}

// DeepSeek-R1 and DeepSeek-V3.1 are DeepSeek-V3's architecture: `--model deepseek-ai/DeepSeek-R1` is the
// preset.
TEST(Presets, DeepSeekR1IsDeepSeekV3sArchitecture) {
  EXPECT_EQ(preset_of_repository("deepseek-ai/DeepSeek-R1"), "deepseek-v3");
  EXPECT_EQ(preset_of_repository("deepseek-ai/DeepSeek-V3.1-Base"), "deepseek-v3");
  EXPECT_EQ(preset_model("deepseek-ai/DeepSeek-R1").vocab_size, 129280);
  EXPECT_EQ(preset_of_repository("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"), "");  // a Qwen2.5, not V3
}

// A checkpoint folder of the training cluster that is not on this machine (MindSpeed FSDP2's
// `--model.model_name_or_path /home/data/Qwen3-8B/`): a folder named as a preset's repository, or a variant
// of it, is that preset, said; another name is refused naming the path and the presets.
TEST(Presets, AbsentFolderNamedAsAPresetsRepository) {
  std::vector<std::string> warnings;
  EXPECT_EQ(load_model("/home/data/Qwen3-8B/", &warnings).name, "qwen3-8b");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("/home/data/Qwen3-8B/ is not on this machine: the qwen3-8b preset"),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(load_model("./model_weights/Qwen3-30B-A3B-Instruct-2507", nullptr).name, "qwen3-30b-a3b");
  EXPECT_EQ(load_model("/data/ci/models/Qwen3-8B/hf/Qwen3-8B", nullptr).name, "qwen3-8b");
  // a preset's name, or the start of exactly one preset's name (MindSpeed's ./model_weights/qwen3-235b/)
  EXPECT_EQ(load_model("/x/deepseek-v2/", nullptr).name, "deepseek-v2");
  EXPECT_EQ(load_model("/x/deepseek-v2-lite", nullptr).name, "deepseek-v2-lite");
  EXPECT_EQ(load_model("./model_weights/qwen3-235b/", nullptr).name, "qwen3-235b-a22b");
  EXPECT_EQ(load_model("./qwen3-next/", nullptr).name, "qwen3-next-80b-a3b");
  // (qwen3 and gpt-oss begin several presets' names: ambiguous)
  for (const char* absent : {"/data/ci/models/Qwen3-30B-A3B/hf/Qwen3-30B-A3B-layer2/",
                             "/home/data/deepseek4-hf/", "/x/qwen3/", "/x/gpt-oss"})
    try {
      load_model(absent, nullptr);
      ADD_FAILURE() << absent << " was read";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), absent);
      EXPECT_NE(e.detail().find("no such file or folder on this machine, and its name is no preset's"),
                std::string::npos)
          << e.detail();
    }
}

TEST(Presets, UnknownNameListsTheKnownOnes) {
  try {
    preset_model("llama4-8b");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--model");
    EXPECT_TRUE(contains(e.detail(), "unknown model 'llama4-8b'")) << e.detail();
    for (const auto& n : preset_names()) EXPECT_TRUE(contains(e.detail(), n)) << n;
  }
}

TEST(LoadModel, PresetFileFolderOrMissing) {
  EXPECT_EQ(load_model("mixtral-8x7b").name, "mixtral-8x7b");
  ModelSpec file = load_model(hf_config_path("qwen3-32b"));
  EXPECT_EQ(file.name, "qwen3-32b");
  EXPECT_TRUE(file.qk_layernorm);
  ModelSpec folder = load_model((preflight::test::frontends_data() / "hf" / "gpt2").string());
  EXPECT_EQ(folder.hidden_size, 768);
  try {
    load_model("checkpoints/missing/config.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "checkpoints/missing/config.json");
    EXPECT_TRUE(contains(e.detail(), "no such file")) << e.detail();
  }
  try {
    load_model("nosuchmodel");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "--model");
  }
  // The preset's MTP layer is left out with a note, which only a launch without --mtp-num-layers prints.
  std::vector<std::string> warnings;
  const ModelSpec ds = load_model("deepseek-v3", &warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(ds.mtp_num_layers, 0);
  EXPECT_EQ(ds.checkpoint_mtp_layers, 1);
  EXPECT_TRUE(contains(mtp_left_out_note(ds), "preset deepseek-v3: num_nextn_predict_layers 1"))
      << ds.checkpoint_mtp_note;
  MegatronConfig with = parse_megatron_args({"--mtp-num-layers", "1", "--seq-length", "4096"}, {}, &ds);
  EXPECT_EQ(with.model.mtp_num_layers, 1);
  EXPECT_EQ(mtp_left_out_note(with.model), "");
}

// The preset as a base for a launch command line: parallel sizes come from the arguments, the
// architecture from the preset, and architecture flags override it.
TEST(LoadModel, PresetUnderMegatronArguments) {
  ModelSpec base = preset_model("llama3-70b");
  MegatronConfig c =
      parse_megatron_args({"--tensor-model-parallel-size", "8", "--pipeline-model-parallel-size", "2",
                           "--seq-length", "8192", "--nproc_per_node", "8", "--nnodes", "4", "--bf16"},
                          {}, &base);
  EXPECT_EQ(c.model.name, "llama3-70b");
  EXPECT_EQ(c.model.hidden_size, 8192);
  EXPECT_EQ(c.model.num_query_groups, 8);
  EXPECT_EQ(c.model.vocab_size, 128256);
  EXPECT_DOUBLE_EQ(c.model.attention_dropout, 0.0);
  EXPECT_EQ(c.strategy.world_size, 32);
  EXPECT_EQ(c.strategy.dp(), 2);
  EXPECT_EQ(count_parameters(c.model), 70'553'706'496);
  // Vocabulary padded for tp 8: a multiple of 128·8 = 1024 → 128,256 → 129,024.
  EXPECT_EQ(build_layer_graph(c.model, c.strategy).padded_vocab, 129'024);

  // A 2-layer cut of DeepSeek-V3 keeps its leading dense layers.
  ModelSpec ds = preset_model("deepseek-v3");
  MegatronConfig cut = parse_megatron_args({"--num-layers", "4", "--seq-length", "4096"}, {}, &ds);
  EXPECT_EQ(cut.model.num_layers, 4);
  EXPECT_FALSE(cut.model.is_moe_layer(2));
  EXPECT_TRUE(cut.model.is_moe_layer(3));
}

// The same model described twice: the Megatron flags of a Mixtral 8x7B launch script (written here in
// the style of Megatron-LM's examples/mixtral) and the preset give the same network.
TEST(LoadModel, PresetEqualsTheMegatronDescription) {
  MegatronConfig c =
      parse_megatron_args(preflight::test::words(preflight::test::mixtral_8x7b_megatron_args()));
  ModelSpec preset = preset_model("mixtral-8x7b");
  EXPECT_EQ(count_parameters(c.model), count_parameters(preset));
  Strategy st = c.strategy;
  LayerGraph a = build_layer_graph(c.model, st), b = build_layer_graph(preset, st);
  EXPECT_EQ(a.chunks[0].kept_activation_bytes(), b.chunks[0].kept_activation_bytes());
}

// A repository in the local Hugging Face cache (as `from_pretrained` finds it offline: models--ORG--REPO, the
// snapshot refs/main names) is read from there, before the Hub; with HF_HUB_OFFLINE set and no copy in the
// cache the message says where it looked instead of downloading.
TEST(Presets, HuggingFaceCacheIsReadBeforeTheHub) {
  preflight::test::TempDir cache;
  const std::filesystem::path repo = cache.path() / "models--example-org--Tiny-LM";
  std::filesystem::create_directories(repo / "refs");
  std::filesystem::create_directories(repo / "snapshots" / "abc123");
  std::filesystem::create_directories(repo / "snapshots" / "old999");
  preflight::test::write_file(repo / "refs" / "main", "abc123");
  const std::string config =
      R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256,
          "intermediate_size": 688, "num_attention_heads": 4, "num_key_value_heads": 2,
          "num_hidden_layers": LAYERS, "vocab_size": 32000, "max_position_embeddings": 2048,
          "hidden_act": "silu", "rms_norm_eps": 1e-5, "tie_word_embeddings": false})";
  auto with_layers = [&](const std::string& n) {
    std::string c = config;
    return c.replace(c.find("LAYERS"), 6, n);
  };
  preflight::test::write_file(repo / "snapshots" / "abc123" / "config.json", with_layers("6"));
  preflight::test::write_file(repo / "snapshots" / "old999" / "config.json", with_layers("2"));
  preflight::test::ScopedEnv hub("HF_HUB_CACHE", cache.path().c_str());
  preflight::test::ScopedEnv offline("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(hf_cached_snapshot("example-org/Tiny-LM"), (repo / "snapshots" / "abc123").string());
  EXPECT_EQ(load_model("example-org/Tiny-LM").num_layers, 6);
  EXPECT_EQ(hf_cached_snapshot("example-org/Other"), "");
  try {
    load_model("example-org/Other");
    ADD_FAILURE() << "a repository not in the cache was read with HF_HUB_OFFLINE set";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("HF_HUB_OFFLINE is set"), std::string::npos) << e.what();
  }
  // a Hugging Face tokenizer named by the repository: its vocabulary from the cached config.json
  const MegatronConfig c = parse_megatron_args(
      {"--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "2", "--seq-length", "16",
       "--micro-batch-size", "1", "--global-batch-size", "8", "--tokenizer-type", "HuggingFaceTokenizer",
       "--tokenizer-model", "example-org/Tiny-LM"});
  EXPECT_EQ(c.model.vocab_size, 32000);
  // without refs/main: the newest snapshot holding a config.json
  std::filesystem::remove(repo / "refs" / "main");
  std::filesystem::last_write_time(repo / "snapshots" / "old999" / "config.json",
                                   std::filesystem::file_time_type::clock::now() + std::chrono::hours(1));
  EXPECT_EQ(load_model("example-org/Tiny-LM").num_layers, 2);
}
