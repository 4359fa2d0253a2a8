// Hugging Face config.json → ModelSpec: each supported family against hand-computed parameter counts,
// and the bad inputs (field-named errors).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frontends_test_data.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using preflight::InputError;
using preflight::test::hf_config_path;
using preflight::test::words;

namespace {

ModelSpec load(const std::string& model, std::vector<std::string>* warnings = nullptr) {
  return load_hf_config(hf_config_path(model), warnings);
}

/// Runs `f`, which must throw InputError; returns it.
template <class F>
InputError input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError thrown";
  return InputError("", "");
}

InputError parse_error(const std::string& text) {
  return input_error([&] { parse_hf_config(text, "config.json"); });
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(HfConfig, Llama3_8B) {
  ModelSpec m = load("llama3-8b");
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.ffn_hidden_size, 14336);
  EXPECT_EQ(m.num_attention_heads, 32);
  EXPECT_EQ(m.num_query_groups, 8);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.vocab_size, 128256);
  EXPECT_EQ(m.max_position_embeddings, 8192);
  EXPECT_TRUE(m.gated());
  EXPECT_EQ(m.normalization, Normalization::RMSNorm);
  EXPECT_EQ(m.position_embedding, PositionEmbedding::Rope);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_FALSE(m.add_qkv_bias);
  EXPECT_TRUE(m.untie_embeddings_and_output_weights);
  EXPECT_DOUBLE_EQ(m.hidden_dropout, 0.0);
  EXPECT_FALSE(m.moe.enabled());
  EXPECT_EQ(m.name, "llama3-8b");  // the checkpoint folder's name
  // Per layer: q 4096·4096 + k,v 2·4096·1024 + o 4096·4096 = 41,943,040; MLP 3·4096·14336 = 176,160,768;
  // two norms 8,192 → 218,112,000 · 32 = 6,979,584,000.  Embedding + untied head 2·128256·4096 =
  // 1,050,673,152; final norm 4,096.  Total 8,030,261,248 (the model card's 8.03 B).
  EXPECT_EQ(count_parameters(m), 8'030'261'248);
}

TEST(HfConfig, Mixtral8x7B) {
  ModelSpec m = load("mixtral-8x7b");
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_EQ(m.moe.router_topk, 2);
  EXPECT_EQ(m.moe.ffn_hidden_size, 14336);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 0);
  for (int l = 0; l < m.num_layers; ++l) EXPECT_TRUE(m.is_moe_layer(l));
  // Per layer: attention 41,943,040; experts 8·3·4096·14336 = 1,409,286,144; router 8·4096 = 32,768;
  // norms 8,192 → 1,451,270,144 · 32 = 46,440,644,608; + 2·32000·4096 + 4096 = 46,702,792,704.
  std::int64_t n = count_parameters(m);
  EXPECT_EQ(n, 46'702'792'704);
  EXPECT_NEAR(n / 46.7e9, 1.0, 0.01);  // "46.7B total parameters" (Jiang et al. 2024)
}

TEST(HfConfig, DeepSeekV3) {
  std::vector<std::string> warnings;
  ModelSpec m = load("deepseek-v3", &warnings);
  EXPECT_TRUE(m.mla.enabled);
  EXPECT_EQ(m.mla.q_lora_rank, 1536);
  EXPECT_EQ(m.mla.kv_lora_rank, 512);
  EXPECT_EQ(m.mla.qk_head_dim, 128);
  EXPECT_EQ(m.mla.qk_pos_emb_head_dim, 64);
  EXPECT_EQ(m.mla.v_head_dim, 128);
  EXPECT_EQ(m.moe.num_experts, 256);
  EXPECT_EQ(m.moe.router_topk, 8);
  EXPECT_EQ(m.moe.ffn_hidden_size, 2048);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 2048);  // 1 shared expert × 2048
  // node-limited routing: 8 groups, each token to experts of 4 of them (n_group / topk_group)
  EXPECT_EQ(m.moe.router_num_groups, 8);
  EXPECT_EQ(m.moe.router_group_topk, 4);
  EXPECT_EQ(m.ffn_hidden_size, 18432);
  for (int l = 0; l < 3; ++l) EXPECT_FALSE(m.is_moe_layer(l)) << l;  // first_k_dense_replace = 3
  for (int l = 3; l < 61; ++l) EXPECT_TRUE(m.is_moe_layer(l)) << l;
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m.checkpoint_mtp_layers, 1);
  EXPECT_TRUE(contains(mtp_left_out_note(m), "num_nextn_predict_layers 1")) << m.checkpoint_mtp_note;
  // MLA per layer: q_a 7168·1536 + q norm 1536 + q_b 1536·128·192 + kv_a 7168·576 + kv norm 512
  //   + kv_b 512·128·256 + o 128·128·7168 = 187,107,328.
  // Dense layer: + 3·7168·18432 + 2·7168 = 583,482,368.  MoE layer: + 256·3·7168·2048 (experts)
  //   + 3·7168·2048 (shared) + 256·7168 (router) + 2·7168 = 11,507,003,392.
  // 3 dense + 58 MoE + 2·129280·7168 + 7168 = 671,026,404,352 — the 671 B main model (MTP excluded).
  std::int64_t n = count_parameters(m);
  EXPECT_EQ(n, 671'026'404'352);
  EXPECT_NEAR(n / 671e9, 1.0, 0.01);
}

TEST(HfConfig, DeepSeekV2LiteHasNoQueryCompression) {
  ModelSpec m = load("deepseek-v2-lite");
  EXPECT_TRUE(m.mla.enabled);
  EXPECT_EQ(m.mla.q_lora_rank, 0);  // "q_lora_rank": null
  EXPECT_EQ(m.moe.num_experts, 64);
  EXPECT_EQ(m.moe.router_topk, 6);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 2 * 1408);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  // MLA: q 2048·16·192 + kv_a 2048·576 + 512 + kv_b 512·16·256 + o 16·128·2048 = 13,763,072.
  // Dense layer 13,763,072 + 3·2048·10944 + 4096 = 81,008,640; MoE layer 13,763,072 + 64·3·2048·1408
  // + 3·2048·2816 + 64·2048 + 4096 = 584,355,840 (× 26); embeddings 2·102400·2048 + 2048.
  EXPECT_EQ(count_parameters(m), 15'706'484'224);  // model card: 15.7 B
}

TEST(HfConfig, Qwen3_32BHeadDimAndQkNorm) {
  ModelSpec m = load("qwen3-32b");
  EXPECT_EQ(m.kv_channels, 128);  // head_dim, not hidden / heads = 80
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_FALSE(m.add_qkv_bias);
  // Per layer: q 5120·8192 + k,v 2·5120·1024 + o 8192·5120 = 94,371,840; q/k norms 2·128; MLP 3·5120·25600
  // = 393,216,000; norms 10,240 → 487,598,336 · 64 = 31,206,293,504; + 2·151936·5120 + 5120.
  std::int64_t n = count_parameters(m);
  EXPECT_EQ(n, 32'762'123'264);
  EXPECT_NEAR(n / 32.8e9, 1.0, 0.01);  // model card: 32.8 B, non-embedding 31.2 B
  EXPECT_NEAR((n - 2 * 151936LL * 5120) / 31.2e9, 1.0, 0.01);
}

TEST(HfConfig, Qwen2HasQkvBiasOnly) {
  ModelSpec m = load("qwen2.5-7b");
  EXPECT_TRUE(m.add_qkv_bias);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_TRUE(m.qkv_bias());
  EXPECT_FALSE(m.qk_layernorm);
  // Per layer: q 3584² + bias 3584, k,v 2·(3584·512 + 512), o 3584², MLP 3·3584·18944, norms 7168
  // = 233,057,792 · 28 = 6,525,618,176; + 2·152064·3584 + 3584 = 7,615,616,512 (model card 7.61 B).
  EXPECT_EQ(count_parameters(m), 7'615'616'512);
}

TEST(HfConfig, Qwen3MoeAndQwen2Moe) {
  ModelSpec a = load("qwen3-30b-a3b");
  EXPECT_EQ(a.moe.num_experts, 128);
  EXPECT_EQ(a.moe.router_topk, 8);
  EXPECT_EQ(a.moe.ffn_hidden_size, 768);
  EXPECT_TRUE(a.qk_layernorm);
  // Per layer: attention 2048·4096 + 2·2048·512 + 4096·2048 + 256 = 18,874,624; experts 128·3·2048·768
  // = 603,979,776; router 128·2048; norms 4096 → 623,120,640 · 48 + 2·151936·2048 + 2048.
  EXPECT_EQ(count_parameters(a), 30'532'122'624);  // model card: 30.5 B

  ModelSpec b = load("qwen1.5-moe-a2.7b");  // model_type qwen2_moe
  EXPECT_TRUE(b.add_qkv_bias);
  EXPECT_EQ(b.moe.num_experts, 60);
  EXPECT_EQ(b.moe.router_topk, 4);
  EXPECT_EQ(b.moe.shared_expert_ffn_hidden_size, 5632);
  // Per layer: attention 4·2048² + 3·2048 = 16,783,360; experts 60·3·2048·1408 = 519,045,120; shared
  // 3·2048·5632 = 34,603,008 and its gate 2048 (shared_expert_gate); router 60·2048; norms 4096 → 570,560,512
  // · 24 + 2·151936·2048 + 2048 = 14,315,784,192 (model card 14.3 B).
  EXPECT_TRUE(b.moe.shared_expert_gate);
  EXPECT_EQ(count_parameters(b), 14'315'784'192);
}

TEST(HfConfig, Gpt2) {
  ModelSpec m = load("gpt2");
  EXPECT_EQ(m.activation, Activation::GeLU);
  EXPECT_EQ(m.normalization, Normalization::LayerNorm);
  EXPECT_EQ(m.position_embedding, PositionEmbedding::LearnedAbsolute);
  EXPECT_TRUE(m.add_bias_linear);
  EXPECT_FALSE(m.untie_embeddings_and_output_weights);
  EXPECT_EQ(m.ffn_hidden_size, 3072);
  EXPECT_EQ(m.max_position_embeddings, 1024);
  EXPECT_DOUBLE_EQ(m.hidden_dropout, 0.1);
  // 12·(12·768² + 13·768) + 50304·768 (vocab padded to 128 as Megatron trains it) + 1024·768 + 2·768
  // = 124,475,904 = Hugging Face's 124,439,808 + 47 padding rows · 768.
  EXPECT_EQ(count_parameters(m), 124'475'904);
}

TEST(HfConfig, ModelTypeFromArchitectures) {
  ModelSpec m = parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000})",
                                "config.json");
  EXPECT_EQ(m.num_query_groups, 4);  // num_key_value_heads absent → heads
  EXPECT_EQ(m.kv_channels, 64);
  EXPECT_TRUE(m.untie_embeddings_and_output_weights);  // LlamaConfig default: tie_word_embeddings false
}

TEST(HfConfig, VisionLanguageCheckpointReadsItsTextConfig) {
  // A LLaVA-style config.json: the language model sits in text_config (here Llama 3 8B's own config).
  std::ifstream in(hf_config_path("llama3-8b"));
  ASSERT_TRUE(in.good());
  const std::string llama((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string wrapped = R"({"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
      "_name_or_path": "org/llava-llama3", "vision_config": {"model_type": "clip_vision_model",
      "hidden_size": 1024}, "image_token_index": 128256, "text_config": )" +
                              llama + "}";
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(wrapped, "config.json", &warnings);
  EXPECT_EQ(count_parameters(m), 8'030'261'248);  // the language model alone
  EXPECT_EQ(m.num_layers, 32);
  EXPECT_EQ(m.name, "org/llava-llama3");
  bool said = false;
  for (const auto& w : warnings) said = said || contains(w, "vision tower");
  EXPECT_TRUE(said);
  // A text_config that lacks a field is reported under its own name.
  const InputError e = parse_error(R"({"model_type": "llava", "text_config": {"model_type": "llama"}})");
  EXPECT_TRUE(contains(e.where(), "config.json: text_config")) << e.where();
}

TEST(HfConfig, LlamaBiasesAndTiedEmbeddings) {
  const char* base = R"({"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1024, "tie_word_embeddings": true,
      "attention_bias": true, "mlp_bias": true})";
  ModelSpec m = parse_hf_config(base, "config.json");
  EXPECT_TRUE(m.add_bias_linear);
  EXPECT_FALSE(m.untie_embeddings_and_output_weights);
  // Per layer: 4·256² + 4·256 (qkv+o biases) + 3·256·512 + 2·512 + 256 (MLP biases) + 2·256 norms;
  // tied embedding 1024·256 once; final norm 256.
  std::int64_t layer = 4 * 256 * 256 + 4 * 256 + 3 * 256 * 512 + 2 * 512 + 256 + 2 * 256;
  EXPECT_EQ(count_parameters(m), 2 * layer + 1024 * 256 + 256);
}

TEST(HfConfig, QkLayernormInTheLayerGraph) {
  ModelSpec m = parse_hf_config(R"({"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 2,
      "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 3072,
      "vocab_size": 4096})",
                                "config.json");
  ModelSpec plain = m;
  plain.qk_layernorm = false;
  EXPECT_EQ(count_parameters(m) - count_parameters(plain), 2 * 2 * 128);  // q and k weights of width 128
  Strategy st;
  st.world_size = 2;
  st.gpus_per_node = 2;
  st.tp = 2;
  st.seq_length = 512;
  st.micro_batch_size = 2;
  st.precision = Precision::BF16;
  LayerGraph with = build_layer_graph(m, st), without = build_layer_graph(plain, st);
  // Per layer on one tp rank: q norm keeps its input, 2·512 tokens · 8 heads · 128 · 2 bytes, and fp32 rstd
  // per row, 2·512·8·4; k norm the same with 2 kv heads.
  std::int64_t tokens = 2 * 512;
  std::int64_t per_layer = tokens * 8 * 128 * 2 + tokens * 8 * 4 + tokens * 2 * 128 * 2 + tokens * 2 * 4;
  EXPECT_EQ(with.chunks[0].kept_activation_bytes() - without.chunks[0].kept_activation_bytes(),
            2 * per_layer);
}

TEST(HfConfig, MegatronQkLayernormFlag) {
  MegatronConfig c =
      parse_megatron_args({"--num-layers", "2", "--hidden-size", "256", "--num-attention-heads", "4",
                           "--seq-length", "128", "--vocab-size", "1000", "--qk-layernorm"});
  EXPECT_TRUE(c.model.qk_layernorm);
}

// Sliding-window attention: Mistral's `sliding_window`, Qwen's only with `use_sliding_window`, Megatron's
// --window-size (left, right): the query and `left` keys before it.  The window cuts the core attention's
// FLOPs by keys attended / sequence (hand count: 2·b·heads·s·keys·(d_qk + d_v) per micro batch).
TEST(HfConfig, SlidingWindowAttention) {
  std::vector<std::string> w;
  ModelSpec m = parse_hf_config(R"({"model_type": "mistral", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 512, "vocab_size": 1000,
      "sliding_window": 4096})",
                                "config.json", &w);
  EXPECT_EQ(m.sliding_window, 4096);
  EXPECT_TRUE(w.empty());
  // Qwen keeps a sliding_window value but switches it off with use_sliding_window.
  EXPECT_EQ(load_hf_config(hf_config_path("qwen2.5-7b"), &w).sliding_window, 0);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(
      parse_megatron_args(words("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                                "--vocab-size 1000 --window-size (4095,0)"))
          .model.sliding_window,
      4096);
  EXPECT_EQ(
      parse_megatron_args(words("--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                                "--vocab-size 1000 --window-size -1,0"))
          .model.sliding_window,
      0);

  auto attention_flops = [&](std::int64_t window) {
    ModelSpec mm = m;
    mm.sliding_window = window;
    Strategy st;
    st.world_size = st.gpus_per_node = 1;
    st.seq_length = 8192;
    st.micro_batch_size = 1;
    st.global_batch_size = 1;
    st.precision = Precision::BF16;
    for (const Op& op : build_layer_ops(mm, st, 0))
      if (op.role == OpRole::CoreAttention) return op.fwd_flops;
    return 0.0;
  };
  // 4 heads of 64: 2 · 1 · 4 · 8192 · keys · (64 + 64).
  EXPECT_DOUBLE_EQ(attention_flops(0), 2.0 * 4 * 8192 * 8192 * 128);
  EXPECT_DOUBLE_EQ(attention_flops(4096), 2.0 * 4 * 8192 * 4096 * 128);
  EXPECT_DOUBLE_EQ(attention_flops(100000), attention_flops(0));  // a window longer than the sequence
}

TEST(HfConfigErrors, MalformedJsonNamesTheLine) {
  InputError e = parse_error("{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 4096,,\n}\n");
  EXPECT_EQ(e.where(), "config.json:3");
  EXPECT_TRUE(contains(e.detail(), "malformed JSON")) << e.detail();
  EXPECT_EQ(parse_error("").where(), "config.json:1");
  EXPECT_TRUE(contains(parse_error("[1, 2]").detail(), "expected a JSON object"));
}

TEST(HfConfigErrors, MissingMistypedAndNonPositiveFieldsAreNamed) {
  const std::string head = R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, )";
  const std::string tail = R"(, "intermediate_size": 11008, "vocab_size": 32000})";
  InputError missing = parse_error(R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
      "intermediate_size": 11008, "vocab_size": 32000})");
  EXPECT_EQ(missing.where(), "config.json: num_attention_heads");
  EXPECT_TRUE(contains(missing.detail(), "is missing")) << missing.detail();

  InputError text = parse_error(head + R"("num_attention_heads": "32")" + tail);
  EXPECT_EQ(text.where(), "config.json: num_attention_heads");
  EXPECT_TRUE(contains(text.detail(), "expected an integer, got \"32\"")) << text.detail();

  InputError zero = parse_error(head + R"("num_attention_heads": 0)" + tail);
  EXPECT_EQ(zero.where(), "config.json: num_attention_heads");
  EXPECT_TRUE(contains(zero.detail(), "positive")) << zero.detail();

  InputError fraction = parse_error(head + R"("num_attention_heads": 32.5)" + tail);
  EXPECT_EQ(fraction.where(), "config.json: num_attention_heads");

  InputError huge = parse_error(head + R"("num_attention_heads": 4294967328)" + tail);
  EXPECT_EQ(huge.where(), "config.json: num_attention_heads");
  EXPECT_TRUE(contains(huge.detail(), "out of range")) << huge.detail();

  InputError null_field = parse_error(head + R"("num_attention_heads": null)" + tail);
  EXPECT_TRUE(contains(null_field.detail(), "is null")) << null_field.detail();

  InputError bad_bool =
      parse_error(head + R"("num_attention_heads": 32, "tie_word_embeddings": "no")" + tail);
  EXPECT_EQ(bad_bool.where(), "config.json: tie_word_embeddings");
}

TEST(HfConfigErrors, InconsistentSizes) {
  const std::string head = R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
      "intermediate_size": 11008, "vocab_size": 32000, )";
  InputError kv = parse_error(head + R"("num_attention_heads": 32, "num_key_value_heads": 5})");
  EXPECT_EQ(kv.where(), "config.json: num_key_value_heads");
  EXPECT_TRUE(contains(kv.detail(), "do not divide the 32 attention heads")) << kv.detail();

  InputError hd = parse_error(head + R"("num_attention_heads": 30})");
  EXPECT_EQ(hd.where(), "config.json: hidden_size");
  EXPECT_TRUE(contains(hd.detail(), "head_dim")) << hd.detail();
  // With head_dim given, hidden need not divide.
  EXPECT_NO_THROW(parse_hf_config(head + R"("num_attention_heads": 30, "head_dim": 128})", "config.json"));

  const std::string moe = R"({"model_type": "mixtral", "hidden_size": 256, "num_hidden_layers": 2,
      "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000, )";
  InputError topk = parse_error(moe + R"("num_local_experts": 4, "num_experts_per_tok": 6})");
  EXPECT_EQ(topk.where(), "config.json: num_experts_per_tok");
  EXPECT_EQ(parse_error(moe + R"("num_experts_per_tok": 2})").where(), "config.json: num_local_experts");

  const std::string ds = R"({"model_type": "deepseek_v2", "hidden_size": 256, "num_hidden_layers": 4,
      "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "kv_lora_rank": 64,
      "qk_nope_head_dim": 32, "qk_rope_head_dim": 16, "v_head_dim": 32, "n_routed_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 128, )";
  EXPECT_EQ(parse_error(ds + R"("first_k_dense_replace": 9})").where(), "config.json: first_k_dense_replace");
  EXPECT_EQ(parse_error(ds + R"("moe_layer_freq": 0})").where(), "config.json: moe_layer_freq");
  InputError mla = parse_error(ds + R"("kv_lora_rank": null})");
  EXPECT_EQ(mla.where(), "config.json: kv_lora_rank");

  const std::string qm = R"({"model_type": "qwen3_moe", "hidden_size": 256, "num_hidden_layers": 4,
      "num_attention_heads": 4, "intermediate_size": 512, "vocab_size": 1000, "num_experts": 8,
      "num_experts_per_tok": 2, "moe_intermediate_size": 128, )";
  InputError layers = parse_error(qm + R"("mlp_only_layers": [1, 7]})");
  EXPECT_EQ(layers.where(), "config.json: mlp_only_layers");
  EXPECT_TRUE(contains(layers.detail(), "entry 7")) << layers.detail();
  // A valid pattern: layers 1 and 3 dense.
  ModelSpec m = parse_hf_config(qm + R"("mlp_only_layers": [1, 3]})", "config.json");
  EXPECT_TRUE(m.is_moe_layer(0));
  EXPECT_FALSE(m.is_moe_layer(1));
  EXPECT_TRUE(m.is_moe_layer(2));
  EXPECT_FALSE(m.is_moe_layer(3));
}

TEST(HfConfigErrors, KnownButUnmodelledModelTypesSayWhy) {
  // DeepSeek-V3.2's sparse attention and Gemma's sandwich norms are named, not reported as unknown types.
  InputError dsa =
      parse_error(R"({"model_type": "deepseek_v32", "architectures": ["DeepseekV32ForCausalLM"]})");
  EXPECT_EQ(dsa.where(), "config.json: model_type");
  EXPECT_TRUE(contains(dsa.detail(), "sparse attention")) << dsa.detail();
  EXPECT_TRUE(contains(parse_error(R"({"model_type": "gemma2"})").detail(), "soft-capping"));
  EXPECT_TRUE(
      contains(parse_error(R"({"model_type": "deepseek_v4"})").detail(), "compressed sparse attention"));
  EXPECT_TRUE(contains(parse_error(R"({"model_type": "nemotron-nas"})").detail(), "heterogeneous"));
}

TEST(HfConfigErrors, UnsupportedModelType) {
  InputError e = parse_error(R"({"model_type": "bert", "hidden_size": 768})");
  EXPECT_EQ(e.where(), "config.json: model_type");
  EXPECT_TRUE(contains(e.detail(), "unsupported model type 'bert'")) << e.detail();
  EXPECT_TRUE(contains(e.detail(), "deepseek_v3")) << e.detail();
  EXPECT_EQ(parse_error(R"({"hidden_size": 768})").where(), "config.json: model_type");
  EXPECT_EQ(parse_error(R"({"architectures": ["BertModel"]})").where(), "config.json: architectures");
}

TEST(HfConfigErrors, FilesAndFolders) {
  namespace fs = std::filesystem;
  InputError missing = input_error([] { load_hf_config("/nonexistent/dir/config.json"); });
  EXPECT_EQ(missing.where(), "/nonexistent/dir/config.json");
  EXPECT_TRUE(contains(missing.detail(), "no such file"));

  fs::path dir = fs::temp_directory_path() / ("preflight_hf_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  InputError empty = input_error([&] { load_hf_config(dir.string()); });
  EXPECT_TRUE(contains(empty.detail(), "no config.json")) << empty.detail();
  // A checkpoint folder is read through its config.json, and errors name that file.
  std::ofstream(dir / "config.json") << R"({"model_type": "llama", "hidden_size": 64})";
  InputError field = input_error([&] { load_hf_config(dir.string()); });
  EXPECT_EQ(field.where(), (dir / "config.json").string() + ": num_hidden_layers");
  fs::remove_all(dir);

  // Folder form works on real data too, and names the model after the folder.
  ModelSpec m = load_hf_config((preflight::test::frontends_data() / "hf" / "mixtral-8x7b").string());
  EXPECT_EQ(m.name, "mixtral-8x7b");
}

// GPT-OSS-120B (openai/gpt-oss-120b config.json, Apache-2.0): every layer MoE, a 128-key window on the
// layers `layer_types` marks sliding_attention (every other one).  Hand count: embedding and output
// 2·201088·2880; per layer q/k/v with biases (4096 + 2·512 outputs of 2880) and o (4096 → 2880, its bias not
// counted), router 2880·128, 128 experts of 2880·5760 + 2880·2880, two norms → 3,211,971,200 · 36, plus the
// final norm: 116,789,232,960 (the model card's 116.83 B counts the expert and o_proj biases and the sinks too).
TEST(HfConfig, GptOss120bWindowOnEveryOtherLayer) {
  const std::string text = R"({"architectures":["GptOssForCausalLM"],"attention_bias":true,"attention_dropout":0.0,"eos_token_id":200002,"experts_per_token":4,"head_dim":64,"hidden_act":"silu","hidden_size":2880,"initial_context_length":4096,"initializer_range":0.02,"intermediate_size":2880,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention","sliding_attention","full_attention"],"max_position_embeddings":131072,"model_type":"gpt_oss","num_attention_heads":64,"num_experts_per_tok":4,"num_hidden_layers":36,"num_key_value_heads":8,"num_local_experts":128,"output_router_logits":false,"pad_token_id":199999,"rms_norm_eps":1e-05,"rope_scaling":{"beta_fast":32.0,"beta_slow":1.0,"factor":32.0,"original_max_position_embeddings":4096,"rope_type":"yarn","truncate":false},"rope_theta":150000,"router_aux_loss_coef":0.9,"sliding_window":128,"swiglu_limit":7.0,"tie_word_embeddings":false,"transformers_version":"4.55.0.dev0","use_cache":true,"vocab_size":201088})";
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(text, "config.json", &warnings);
  EXPECT_EQ(m.num_layers, 36);
  EXPECT_EQ(m.kv_channels, 64);
  EXPECT_EQ(m.num_query_groups, 8);
  EXPECT_EQ(m.moe.num_experts, 128);
  EXPECT_EQ(m.moe.router_topk, 4);
  EXPECT_EQ(m.sliding_window, 128);
  for (int l = 0; l < m.num_layers; ++l) {
    EXPECT_TRUE(m.is_moe_layer(l));
    EXPECT_EQ(m.is_window_layer(l), l % 2 == 0) << l;
  }
  EXPECT_EQ(count_parameters(m), 116'789'232'960);
  // layer_types must name every layer, with known types.
  std::string short_types = text;
  short_types.replace(short_types.find("[\"sliding_attention\","), 21, "[");
  EXPECT_TRUE(contains(parse_error(short_types).what(), "35 entries for 36 layers"));
  std::string odd = text;
  odd.replace(odd.find("full_attention"), 14, "chunked_attention");
  EXPECT_TRUE(contains(parse_error(odd).what(), "unknown layer type 'chunked_attention'"));
}

// GLM-4.5 (zai-org/GLM-4.5 config.json, model_type glm4_moe): GQA attention with q / k / v biases (o_proj has
// none), three dense layers then 89 MoE layers of 160 experts (1536 wide, top 8) and one shared expert.
// Parameters by hand: 352,797,791,232 (Zhipu's 355 B counts the MTP layer too, which the config's
// num_nextn_predict_layers leaves out here, with a note).
TEST(HfConfig, Glm45MoeLayout) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["Glm4MoeForCausalLM"], "attention_bias": true,
      "head_dim": 128, "hidden_size": 5120, "partial_rotary_factor": 0.5, "intermediate_size": 12288,
      "max_position_embeddings": 131072, "model_type": "glm4_moe", "moe_intermediate_size": 1536,
      "num_attention_heads": 96, "n_group": 1, "topk_group": 1, "n_routed_experts": 160, "n_shared_experts": 1,
      "num_experts_per_tok": 8, "first_k_dense_replace": 3, "num_hidden_layers": 92, "num_key_value_heads": 8,
      "num_nextn_predict_layers": 1, "tie_word_embeddings": false, "use_qk_norm": false, "vocab_size": 151552})",
                                      "config.json", &warnings);
  EXPECT_TRUE(m.add_qkv_bias);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_FALSE(m.qk_layernorm);
  EXPECT_EQ(m.moe.num_experts, 160);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 1536);
  for (int l = 0; l < 92; ++l) EXPECT_EQ(m.is_moe_layer(l), l >= 3) << l;
  const std::int64_t h = 5120;
  const std::int64_t attn = h * (96 * 128 + 2 * 8 * 128) + (96 * 128 + 2 * 8 * 128) + 96 * 128 * h;
  const std::int64_t dense = 3 * h * 12288, moe = 160 * 3 * h * 1536 + 3 * h * 1536 + 160 * h;
  EXPECT_EQ(count_parameters(m), 92 * (attn + 2 * h) + 3 * dense + 89 * moe + 2 * 151552 * h + h);
  EXPECT_EQ(count_parameters(m), 352'797'791'232);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m.checkpoint_mtp_layers, 1);
}

// A model type of its own on a known architecture: Kimi-K2's config.json says model_type "kimi_k2" and
// DeepseekV3ForCausalLM — read as DeepSeek-V3 (384 experts, MLA), with a note; an unknown type on an unknown
// architecture is still an error naming model_type.
TEST(HfConfig, UnknownModelTypeOnAKnownArchitecture) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
      "first_k_dense_replace": 1, "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
      "moe_intermediate_size": 2048, "n_group": 1, "n_routed_experts": 384, "n_shared_experts": 1,
      "num_attention_heads": 64, "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 64,
      "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "tie_word_embeddings": false,
      "topk_group": 1, "v_head_dim": 128, "vocab_size": 163840})",
                                      "config.json", &warnings);
  EXPECT_TRUE(m.mla.enabled);
  EXPECT_EQ(m.moe.num_experts, 384);
  ASSERT_FALSE(warnings.empty());
  EXPECT_TRUE(contains(warnings[0], "kimi_k2")) << warnings[0];
  EXPECT_EQ(
      parse_error(R"({"model_type": "bert", "architectures": ["BertModel"], "hidden_size": 768})").where(),
      "config.json: model_type");
}

// Qwen3.5's checkpoints keep Qwen3-Next's language model in text_config (model_type qwen3_5_moe_text):
// gated delta nets on the layer_types "linear_attention" layers, gated softmax attention on the others.
TEST(HfConfig, Qwen35TextConfigIsQwen3NextLayers) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["Qwen3_5MoeForConditionalGeneration"],
      "model_type": "qwen3_5_moe", "vision_config": {"depth": 2},
      "text_config": {"model_type": "qwen3_5_moe_text", "hidden_size": 1024, "num_hidden_layers": 4,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 2048,
        "vocab_size": 1000, "layer_types": ["linear_attention", "linear_attention", "linear_attention",
        "full_attention"], "linear_key_head_dim": 64, "linear_value_head_dim": 64, "linear_num_key_heads": 4,
        "linear_num_value_heads": 8, "linear_conv_kernel_dim": 4, "num_experts": 16, "num_experts_per_tok": 4,
        "moe_intermediate_size": 256, "shared_expert_intermediate_size": 256, "mtp_num_hidden_layers": 1}})",
                                      "config.json", &warnings);
  ASSERT_EQ(m.gdn_layers.size(), 4u);
  EXPECT_EQ(m.checkpoint_mtp_layers, 1);  // Qwen's name for the MTP depth
  EXPECT_EQ(m.gdn_layers, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(m.gdn.num_value_heads, 8);
  EXPECT_TRUE(m.attention_output_gate);
  EXPECT_EQ(m.moe.num_experts, 16);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 256);
}

// Llama 4 (model_type llama4, its language model in text_config, llama4_text): Scout's 48 MoE layers of 16
// experts (8192 wide, top 1) with a shared expert of 8192; Maverick-style interleave_moe_layer_step 2 puts
// MoE on every other layer and a dense MLP of intermediate_size_mlp on the rest.  Chunked attention is said,
// not priced.  Parameters by hand: 107,770,528,768 (the model card's 109 B counts the vision tower too).
TEST(HfConfig, Llama4TextConfig) {
  const std::string scout = R"({"architectures": ["Llama4ForConditionalGeneration"], "model_type": "llama4",
      "text_config": {"attention_chunk_size": 8192, "head_dim": 128, "hidden_size": 5120,
        "interleave_moe_layer_step": 1, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
        "model_type": "llama4_text", "num_attention_heads": 40, "num_experts_per_tok": 1, "num_hidden_layers": 48,
        "num_key_value_heads": 8, "num_local_experts": 16, "tie_word_embeddings": false, "use_qk_norm": true,
        "vocab_size": 202048}, "vision_config": {"hidden_size": 1408}})";
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(scout, "config.json", &warnings);
  EXPECT_EQ(m.moe.num_experts, 16);
  EXPECT_EQ(m.moe.router_topk, 1);
  EXPECT_EQ(m.moe.ffn_hidden_size, 8192);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 8192);
  EXPECT_EQ(m.ffn_hidden_size, 16384);
  EXPECT_TRUE(m.qk_layernorm);
  for (int l = 0; l < 48; ++l) EXPECT_TRUE(m.is_moe_layer(l)) << l;
  const std::int64_t h = 5120;
  const std::int64_t attention = h * (40 * 128 + 2 * 8 * 128) + 40 * 128 * h + 2 * 128;
  const std::int64_t moe = 16 * 3 * h * 8192 + 3 * h * 8192 + 16 * h;
  EXPECT_EQ(count_parameters(m), 48 * (attention + moe + 2 * h) + 2 * 202112 * h + h);
  EXPECT_EQ(count_parameters(m), 107'770'528'768);
  bool chunk_said = false;
  for (const auto& w : warnings) chunk_said = chunk_said || contains(w, "attention_chunk_size");
  EXPECT_TRUE(chunk_said);
  std::string maverick = scout;
  maverick.replace(maverick.find("\"interleave_moe_layer_step\": 1"), 30, "\"interleave_moe_layer_step\": 2");
  const ModelSpec v = parse_hf_config(maverick, "config.json");
  for (int l = 0; l < 48; ++l) EXPECT_EQ(v.is_moe_layer(l), l % 2 == 1) << l;
  // A step beyond the layers leaves none: the error names the field given.
  std::string none = scout;
  none.replace(none.find("\"interleave_moe_layer_step\": 1"), 30, "\"interleave_moe_layer_step\": 99");
  EXPECT_EQ(parse_error(none).where(), "config.json: text_config: interleave_moe_layer_step");
}

// Phi-3 (model_type phi3): Llama's layers with fused qkv / gate-up projections; Phi-3-mini-4k: 32 × (4 ·
// 3072²
// + 3 · 3072 · 8192 + 2 · 3072) + 2 · 32128 · 3072 + 3072 = 3,821,472,768 (Hugging Face's 3,821,079,552 plus
// the 64 padding rows of each embedding Megatron adds), its 2047-key sliding window on, as Phi3Attention uses
// it.
TEST(HfConfig, Phi3IsLlamaWithItsWindow) {
  const ModelSpec m = parse_hf_config(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072,
      "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "phi3", "num_attention_heads": 32,
      "num_hidden_layers": 32, "num_key_value_heads": 32, "sliding_window": 2047, "tie_word_embeddings": false,
      "vocab_size": 32064})",
                                      "config.json");
  EXPECT_EQ(count_parameters(m), 3'821'472'768);
  EXPECT_EQ(m.sliding_window, 2047);
  EXPECT_EQ(m.activation, Activation::SwiGLU);
}

// Qwen's vision-language checkpoints keep their language model in text_config under a model type of its own
// (qwen3_vl_moe_text, qwen3_vl_text, qwen2_5_vl_text): read as Qwen3-MoE / Qwen3 / Qwen2 layers, with the
// note that the vision tower is not counted.
TEST(HfConfig, QwenVisionLanguageTextConfigs) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["Qwen3VLMoeForConditionalGeneration"],
      "model_type": "qwen3_vl_moe", "vision_config": {"depth": 27},
      "text_config": {"model_type": "qwen3_vl_moe_text", "hidden_size": 2048, "num_hidden_layers": 48,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
        "vocab_size": 151936, "tie_word_embeddings": false}})",
                                      "config.json", &warnings);
  EXPECT_EQ(m.moe.num_experts, 128);
  EXPECT_TRUE(m.qk_layernorm);
  ASSERT_FALSE(warnings.empty());
  EXPECT_TRUE(contains(warnings[0], "vision tower")) << warnings[0];
  const ModelSpec q25 = parse_hf_config(R"({"model_type": "qwen2_5_vl", "text_config": {"model_type":
      "qwen2_5_vl_text", "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
      "intermediate_size": 2048, "vocab_size": 1000}})",
                                        "config.json");
  EXPECT_TRUE(q25.add_qkv_bias);
}

// Gemma 3 (model_type gemma3, its language model in text_config, gemma3_text): a norm before and after each
// block (post_attention_layernorm, post_feedforward_layernorm), q / k norms, tied embeddings, a 1024-key
// window on five of every six layers.  27B: 62 × (66,060,288 attention + 346,816,512 MLP + 4 · 5376 norms + 2
// · 128 q / k norms) + 262272 · 5376 (tied, padded) + 5376 = 27,009,690,368 (Google's 27 B language model).
TEST(HfConfig, Gemma3SandwichNormsAndWindows) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["Gemma3ForConditionalGeneration"],
      "model_type": "gemma3", "text_config": {"head_dim": 128, "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 5376, "intermediate_size": 21504, "model_type": "gemma3_text", "num_attention_heads": 32,
        "num_hidden_layers": 62, "num_key_value_heads": 16, "sliding_window": 1024, "vocab_size": 262208},
      "vision_config": {"hidden_size": 1152}})",
                                      "config.json", &warnings);
  EXPECT_TRUE(m.sandwich_norms);
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_FALSE(m.untie_embeddings_and_output_weights);
  EXPECT_EQ(m.sliding_window, 1024);
  for (int l = 0; l < 62; ++l) EXPECT_EQ(m.is_window_layer(l), (l + 1) % 6 != 0) << l;
  const std::int64_t h = 5376;
  const std::int64_t layer = h * (32 * 128 + 2 * 16 * 128) + 32 * 128 * h + 3 * h * 21504 + 4 * h + 2 * 128;
  EXPECT_EQ(count_parameters(m), 62 * layer + 262272 * h + h);
  EXPECT_EQ(count_parameters(m), 27'009'690'368);
  // The post norms are ops of the layer: each keeps its input (the block's output) and its statistics.
  Strategy st;
  st.seq_length = 4096;
  st.micro_batch_size = 1;
  const LayerGraph g = build_layer_graph(m, st);
  int post = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == 0 && (op.role == OpRole::PostAttnNorm || op.role == OpRole::PostMlpNorm)) ++post;
  EXPECT_EQ(post, 2);
  // Gemma 2's soft-capped attention logits stay refused by name.
  EXPECT_TRUE(contains(parse_error(R"({"model_type": "gemma2"})").detail(), "soft-capping"));
  EXPECT_TRUE(
      contains(parse_error(R"({"model_type": "deepseek_v4"})").detail(), "compressed sparse attention"));
  EXPECT_TRUE(contains(parse_error(R"({"model_type": "nemotron-nas"})").detail(), "heterogeneous"));
}

// MiniMax-M2 (model_type minimax_m2, as Megatron-Bridge's MiniMaxM2Bridge maps it): 62 MoE layers of 256
// experts of intermediate_size 1536 (top 8), GQA 48 / 8 heads of 128 with q / k norms.  By hand: 62 ×
// (44,040,192 attention + 2 · 128 + 256 · 3 · 3072 · 1536 experts + 256 · 3072 router + 2 · 3072) + 2 ·
// 200064 · 3072 + 3072 = 228,689,320,448 (MiniMax's 230 B counts its MTP modules too).
TEST(HfConfig, MinimaxM2) {
  const ModelSpec m =
      parse_hf_config(R"({"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2",
      "head_dim": 128, "hidden_size": 3072, "intermediate_size": 1536, "num_attention_heads": 48,
      "num_experts_per_tok": 8, "num_hidden_layers": 62, "num_key_value_heads": 8, "num_local_experts": 256,
      "rotary_dim": 64, "shared_intermediate_size": 0, "tie_word_embeddings": false, "use_qk_norm": true,
      "vocab_size": 200064})",
                      "config.json");
  EXPECT_EQ(m.moe.num_experts, 256);
  EXPECT_EQ(m.moe.ffn_hidden_size, 1536);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 0);
  const std::int64_t h = 3072;
  const std::int64_t layer =
      h * (48 * 128 + 2 * 8 * 128) + 48 * 128 * h + 2 * 128 + 256 * 3 * h * 1536 + 256 * h + 2 * h;
  EXPECT_EQ(count_parameters(m), 62 * layer + 2 * 200064 * h + h);
  EXPECT_EQ(count_parameters(m), 228'689'320'448);
}

// OLMoE-1B-7B (model_type olmoe, as Megatron-Bridge's OlmoeBridge maps it): 16 MoE layers of 64 experts of
// 1024 (top 8), q / k norms.  By hand: 16 × (4 · 2048² + 2 · 128 + 64 · 3 · 2048 · 1024 + 64 · 2048 + 2 ·
// 2048)
// + 2 · 50304 · 2048 + 2048 = 6,919,100,416 (AI2's 6.9 B).
TEST(HfConfig, Olmoe) {
  const ModelSpec m = parse_hf_config(R"({"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe",
      "hidden_size": 2048, "intermediate_size": 1024, "num_attention_heads": 16, "num_experts": 64,
      "num_experts_per_tok": 8, "num_hidden_layers": 16, "num_key_value_heads": 16, "tie_word_embeddings": false,
      "vocab_size": 50304})",
                                      "config.json");
  EXPECT_EQ(m.moe.num_experts, 64);
  EXPECT_EQ(m.moe.router_topk, 8);
  EXPECT_TRUE(m.qk_layernorm);
  const std::int64_t h = 2048;
  EXPECT_EQ(count_parameters(m),
            16 * (4 * h * h + 2 * 128 + 64 * 3 * h * 1024 + 64 * h + 2 * h) + 2 * 50304 * h + h);
}

// ERNIE 4.5 MoE (model_type ernie4_5_moe, as Megatron-Bridge's Ernie45Bridge maps it): the text pool of
// moe_num_experts ([64, 64] → 64) of moe_intermediate_size ([1536, 512] → 1536), top moe_k, two shared
// experts of 1536, layer 0 dense (moe_layer_start_index 1) with intermediate_size.  21B-A3B by hand: 28
// attention layers of 15,728,640 + 27 MoE MLPs of 64 · 3 · 2560 · 1536 + 3 · 2560 · 3072 + 64 · 2560 + one
// dense of 3 · 2560 · 12288, two norms a layer, a tied embedding of 103424 · 2560 and the final norm.
TEST(HfConfig, Ernie45Moe) {
  std::vector<std::string> warnings;
  const ModelSpec m =
      parse_hf_config(R"({"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe",
      "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28, "num_attention_heads": 20,
      "num_key_value_heads": 4, "head_dim": 128, "moe_num_experts": [64, 64], "moe_k": 6,
      "moe_intermediate_size": [1536, 512], "moe_num_shared_experts": 2, "moe_layer_start_index": [1, 1],
      "tie_word_embeddings": true, "vocab_size": 103424})",
                      "config.json", &warnings);
  EXPECT_EQ(m.moe.num_experts, 64);
  EXPECT_EQ(m.moe.router_topk, 6);
  EXPECT_EQ(m.moe.ffn_hidden_size, 1536);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 3072);
  for (int l = 0; l < 28; ++l) EXPECT_EQ(m.is_moe_layer(l), l >= 1) << l;
  const std::int64_t h = 2560;
  const std::int64_t attention = h * (20 * 128 + 2 * 4 * 128) + 20 * 128 * h;
  const std::int64_t moe = 64 * 3 * h * 1536 + 3 * h * 3072 + 64 * h;
  EXPECT_EQ(count_parameters(m), 28 * (attention + 2 * h) + 27 * moe + 3 * h * 12288 + 103424 * h + h);
  // mlp_layer_types, when given, says which layers are dense.
  const ModelSpec t =
      parse_hf_config(R"({"model_type": "ernie4_5_moe", "hidden_size": 256, "intermediate_size": 512,
      "num_hidden_layers": 3, "num_attention_heads": 4, "moe_num_experts": 8, "moe_k": 2,
      "moe_intermediate_size": 128, "mlp_layer_types": ["dense", "sparse", "dense"], "vocab_size": 1000})",
                      "config.json");
  EXPECT_FALSE(t.is_moe_layer(0));
  EXPECT_TRUE(t.is_moe_layer(1));
  EXPECT_FALSE(t.is_moe_layer(2));
}

// Gemma-7B (model_type gemma, as Megatron-Bridge's GemmaBridge maps it): 28 layers of 16 heads of 256 (q, k,
// v and o each 3072 × 4096), a gated MLP of 24576, embeddings tied (GemmaForCausalLM always ties).  By hand:
// 28 · (4 · 3072 · 4096 + 3 · 3072 · 24576 + 2 · 3072) + 256000 · 3072 + 3072 = 8,537,680,896 (Google's
// 8.54 B).
TEST(HfConfig, GemmaTiedAndGated) {
  const ModelSpec m = parse_hf_config(R"({"architectures": ["GemmaForCausalLM"], "model_type": "gemma",
      "hidden_size": 3072, "intermediate_size": 24576, "num_hidden_layers": 28, "num_attention_heads": 16,
      "num_key_value_heads": 16, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh", "vocab_size": 256000,
      "max_position_embeddings": 8192})",
                                      "config.json");
  EXPECT_EQ(m.kv_channels, 256);
  EXPECT_TRUE(m.gated());
  EXPECT_FALSE(m.untie_embeddings_and_output_weights);
  EXPECT_EQ(count_parameters(m), 8'537'680'896);
}

// Nemotron-4-15B (model_type nemotron; NemotronBridge): LayerNorm1P with weight and bias, squared ReLU
// without a gate, 48 heads in 8 groups, untied embeddings.  By hand: 32 · (6144 · 6144 + 2 · 6144 · 1024 +
// 6144 · 6144 + 2 · 6144 · 24576 + 4 · 6144) + 2 · 256000 · 6144 + 2 · 6144 = 15,628,775,424 (15.6 B: 12.5 B
// outside the embeddings, as the report counts them).
TEST(HfConfig, NemotronLayerNormAndSquaredRelu) {
  const std::string cfg = R"({"architectures": ["NemotronForCausalLM"], "model_type": "nemotron",
      "hidden_size": 6144, "intermediate_size": 24576, "num_hidden_layers": 32, "num_attention_heads": 48,
      "num_key_value_heads": 8, "hidden_act": "relu2", "partial_rotary_factor": 0.5, "vocab_size": 256000,
      "tie_word_embeddings": false, "max_position_embeddings": 4096})";
  const ModelSpec m = parse_hf_config(cfg, "config.json");
  EXPECT_EQ(m.normalization, Normalization::LayerNorm);
  EXPECT_EQ(m.activation, Activation::SquaredReLU);
  EXPECT_FALSE(m.gated());
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(count_parameters(m), 15'628'775'424);
  std::string other = cfg;
  other.replace(other.find("\"relu2\""), 7, "\"silu\"");
  InputError e = parse_error(other);
  EXPECT_EQ(e.where(), "config.json: hidden_act");
  EXPECT_TRUE(contains(e.detail(), "'silu'")) << e.detail();
}

// GLM-4.7-Flash (model_type glm4_moe_lite; Glm4MoeLiteBridge): DeepSeek-V3's layers at its own sizes.  By
// hand: MLA 2048 · 768 + 768 + 768 · 20 · 256 + 2048 · 576 + 512 + 512 · 20 · 448 + 20 · 256 · 2048 =
// 21,759,232; layer 0 dense (+ 3 · 2048 · 10240 + 2 · 2048); 46 MoE layers (+ 64 · 3 · 2048 · 1536 + 3 ·
// 2048 · 1536 + 64 · 2048 + 2 · 2048); untied 154880 · 2048 twice and the final norm: 29,943,390,976
// (Zhipu's 30B-A3B; the MTP layer left out, said).
TEST(HfConfig, Glm47FlashIsDeepSeekV3Layers) {
  std::vector<std::string> warnings;
  const ModelSpec m =
      parse_hf_config(R"({"architectures": ["Glm4MoeLiteForCausalLM"], "model_type": "glm4_moe_lite",
      "hidden_size": 2048, "intermediate_size": 10240, "num_hidden_layers": 47, "num_attention_heads": 20,
      "num_key_value_heads": 20, "q_lora_rank": 768, "kv_lora_rank": 512, "qk_nope_head_dim": 192,
      "qk_rope_head_dim": 64, "v_head_dim": 256, "n_routed_experts": 64, "n_shared_experts": 1,
      "num_experts_per_tok": 4, "moe_intermediate_size": 1536, "first_k_dense_replace": 1, "n_group": 1,
      "topk_group": 1, "num_nextn_predict_layers": 1, "vocab_size": 154880, "tie_word_embeddings": false})",
                      "config.json", &warnings);
  EXPECT_TRUE(m.mla.enabled);
  EXPECT_EQ(m.moe.num_experts, 64);
  EXPECT_EQ(m.moe.router_topk, 4);
  EXPECT_EQ(m.moe.router_num_groups, 0);  // n_group 1: no group limit
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_EQ(m.mtp_num_layers, 0);
  EXPECT_EQ(count_parameters(m), 29'943'390'976);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m.checkpoint_mtp_layers, 1);
  EXPECT_TRUE(contains(mtp_left_out_note(m), "--mtp-num-layers 1 includes them")) << m.checkpoint_mtp_note;
}

// Ling-mini-2.0 (model_type bailing_moe_v2; BailingMoeV2Bridge): GQA with q / k norms, DeepSeek's MoE layout
// under Ling's field names.  By hand: attention 2048 · 2048 · 2 + 2 · 2048 · 512 + 2 · 128 per layer; layer 0
// dense (3 · 2048 · 5120); 19 MoE layers of 256 · 3 · 2048 · 512 + a shared expert 3 · 2048 · 512 + the
// router 256 · 2048; two norms a layer; untied 157184 · 2048 twice: 16,255,638,528 (inclusionAI's 16 B).
TEST(HfConfig, LingMoeV2) {
  std::vector<std::string> warnings;
  const ModelSpec m =
      parse_hf_config(R"({"architectures": ["BailingMoeV2ForCausalLM"], "model_type": "bailing_moe_v2",
      "hidden_size": 2048, "intermediate_size": 5120, "num_hidden_layers": 20, "num_attention_heads": 16,
      "num_key_value_heads": 4, "head_dim": 128, "num_experts": 256, "num_shared_experts": 1,
      "num_experts_per_tok": 8, "n_group": 8, "topk_group": 4, "moe_intermediate_size": 512,
      "first_k_dense_replace": 1, "use_qk_norm": true, "use_qkv_bias": false, "use_bias": false,
      "num_nextn_predict_layers": 0, "vocab_size": 157184, "tie_word_embeddings": false})",
                      "config.json", &warnings);
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_EQ(m.moe.num_experts, 256);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 512);
  EXPECT_EQ(m.moe.router_num_groups, 8);
  EXPECT_EQ(m.moe.router_group_topk, 4);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(19));
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(m.checkpoint_mtp_layers, 0);
  EXPECT_EQ(count_parameters(m), 16'255'638'528);
}

// Sarvam-30B (model_type sarvam_moe; SarvamMoEBridge; transformers' SarvamMoeConfig defaults): Ling 2.0's
// layers under the same field names, with heads of 256.  By hand: attention 4096 · 4096 · 2 + 2 · 4096 · 1024
// + q / k norms 2 · 256 per layer; layer 0 dense (3 · 4096 · 8192); 18 MoE layers of 128 · 3 · 4096 · 1024 +
// a shared expert 3 · 4096 · 1024 + the router 128 · 4096; two norms a layer; untied 262144 · 4096 twice:
// 32,272,193,024.  n_group 1 is no group limit; linear biases are refused by its own name.
TEST(HfConfig, SarvamMoe) {
  std::vector<std::string> warnings;
  const std::string config = R"({"architectures": ["SarvamMoEForCausalLM"], "model_type": "sarvam_moe",
      "vocab_size": 262144, "hidden_size": 4096, "intermediate_size": 8192, "num_hidden_layers": 19,
      "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256, "hidden_act": "silu",
      "use_qkv_bias": false, "use_bias": false, "tie_word_embeddings": false, "num_experts": 128,
      "num_shared_experts": 1, "num_experts_per_tok": 6, "n_group": 1, "topk_group": 1,
      "moe_intermediate_size": 1024, "first_k_dense_replace": 1, "use_qk_norm": true})";
  const ModelSpec m = parse_hf_config(config, "config.json", &warnings);
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_EQ(m.kv_channels, 256);
  EXPECT_EQ(m.moe.router_topk, 6);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 1024);
  EXPECT_EQ(m.moe.router_num_groups, 0);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(18));
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(count_parameters(m), 32'272'193'024);
  std::string biased = config;
  biased.replace(biased.find(R"("use_bias": false)"), 17, R"("use_bias": true)");
  try {
    parse_hf_config(biased, "config.json", &warnings);
    ADD_FAILURE() << "linear biases accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_TRUE(contains(e.detail(), "sarvam_moe")) << e.detail();
  }
}

// MiMo (Qwen2's layers; its MTP layers said, left out) and Ministral 3's language model (Mistral's layers,
// read from the text_config of a Mistral3ForConditionalGeneration checkpoint).
TEST(HfConfig, MimoAndMinistral3) {
  std::vector<std::string> warnings;
  const ModelSpec mimo = parse_hf_config(R"({"architectures": ["MiMoForCausalLM"], "model_type": "mimo",
      "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 32,
      "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "vocab_size": 151680})",
                                         "config.json", &warnings);
  EXPECT_TRUE(mimo.add_qkv_bias);
  EXPECT_EQ(mimo.checkpoint_mtp_layers, 1);

  warnings.clear();
  const ModelSpec m = parse_hf_config(R"({"architectures": ["Mistral3ForConditionalGeneration"],
      "model_type": "mistral3", "text_config": {"model_type": "ministral3", "hidden_size": 3072,
      "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 128, "vocab_size": 131072, "tie_word_embeddings": true}})",
                                      "config.json", &warnings);
  EXPECT_EQ(m.num_layers, 26);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_FALSE(m.untie_embeddings_and_output_weights);
  const std::int64_t h = 3072;
  EXPECT_EQ(count_parameters(m),
            26 * (h * 4096 + 2 * h * 1024 + 4096 * h + 3 * h * 9216 + 2 * h) + 131072 * h + h);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "text_config")) << warnings[0];
}

// GLM-4-9B-0414 (model_type glm4): q / k / v biases, 2 key/value heads, and a norm after attention and after
// the MLP besides the two before them.  By hand: 40 · (4096 · 4096 + 2 · 4096 · 256 + 4096 + 2 · 256 + 4096 ·
// 4096 + 3 · 4096 · 13696 + 4 · 4096) + 2 · 151552 · 4096 + 4096 = 9,400,279,040 (Zhipu's 9.4 B);
// GLM-4-9B-chat (glm) has the two norms a layer fewer.
TEST(HfConfig, Glm4SandwichNormsAndGlm) {
  const std::string glm4 =
      R"({"architectures": ["Glm4ForCausalLM"], "model_type": "glm4", "hidden_size": 4096,
      "intermediate_size": 13696, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2,
      "head_dim": 128, "attention_bias": true, "partial_rotary_factor": 0.5, "vocab_size": 151552,
      "tie_word_embeddings": false})";
  const ModelSpec m = parse_hf_config(glm4, "config.json");
  EXPECT_TRUE(m.sandwich_norms);
  EXPECT_TRUE(m.add_qkv_bias);
  EXPECT_FALSE(m.add_bias_linear);
  EXPECT_EQ(count_parameters(m), 9'400'279'040);
  std::string glm = glm4;
  glm.replace(glm.find("\"glm4\""), 6, "\"glm\"");
  glm.replace(glm.find("Glm4ForCausalLM"), 15, "GlmForCausalLM");
  const ModelSpec g = parse_hf_config(glm, "config.json");
  EXPECT_FALSE(g.sandwich_norms);
  EXPECT_EQ(count_parameters(g), 9'400'279'040 - 40 * 2 * 4096);
}

// Sarvam-105B (model_type sarvam_mla; SarvamMLABridge; the shapes of Megatron-Bridge's test config and the
// released config.json, whose unused head_dim 576 is the latent + rope width): MLA with one q projection.  By
// hand per layer: q 4096 · 64 · 192, kv down 4096 · (512 + 64), kv norm 512, kv up 512 · 64 · (128 + 128),
// out 64 · 128 · 4096, two norms; layer 0 dense 3 · 4096 · 16384; 31 MoE layers of 128 · 3 · 4096 · 2048 +
// a shared expert 3 · 4096 · 2048 + the router 128 · 4096; untied 262144 · 4096 twice; the final norm:
// 106,031,763,456 (Sarvam's "105B"; 106.0 B counted the same way by hand elsewhere).
TEST(HfConfig, SarvamMla) {
  std::vector<std::string> warnings;
  const std::string config = R"({"architectures": ["SarvamMLAForCausalLM"], "model_type": "sarvam_mla",
      "num_hidden_layers": 32, "hidden_size": 4096, "intermediate_size": 16384, "moe_intermediate_size": 2048,
      "num_attention_heads": 64, "head_dim": 576, "num_experts": 128, "num_experts_per_tok": 8,
      "num_shared_experts": 1, "first_k_dense_replace": 1, "vocab_size": 262144,
      "max_position_embeddings": 131072, "kv_lora_rank": 512, "q_lora_rank": null, "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64, "v_head_dim": 128, "tie_word_embeddings": false})";
  const ModelSpec m = parse_hf_config(config, "config.json", &warnings);
  EXPECT_TRUE(m.mla.enabled);
  EXPECT_EQ(m.mla.q_lora_rank, 0);
  EXPECT_EQ(m.kv_channels, 128);
  EXPECT_EQ(m.moe.num_experts, 128);
  EXPECT_EQ(m.moe.router_topk, 8);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 2048);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(31));
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(count_parameters(m), 106'031'763'456);
  // Read by its architecture when model_type is absent.
  std::string by_arch = config;
  by_arch.replace(by_arch.find(R"("model_type": "sarvam_mla",)"), 27, "");
  EXPECT_EQ(count_parameters(parse_hf_config(by_arch, "config.json")), 106'031'763'456);
}

// K-EXAONE's shapes (SGLang's EXAONE-MoE test config; 48 layers): GQA 64 / 8 heads of 128 with q / k norms,
// three sliding-window layers of 128 keys to one full layer ("LLLG"), layer 0 dense (is_moe_layer), 128
// experts top 8 and a shared expert of 2048, untied 153600-token embeddings.  By hand: 48 · (6144 · 8192 · 2
// + 2 · 6144 · 1024 + 2 · 128 + 2 · 6144) + 3 · 6144 · 18432 + 47 · (128 · 3 · 6144 · 2048 + 3 · 6144 · 2048
// + 128 · 6144) + 2 · 153600 · 6144 + 6144 = 236,571,150,336 (K-EXAONE's "236B").  The same schedule from
// mlp_layer_types, the windows from sliding_windows, and different windows refused by field.
TEST(HfConfig, ExaoneMoe) {
  std::vector<std::string> warnings;
  std::string layers, is_moe;
  for (int i = 0; i < 48; ++i) {
    layers += std::string(i ? ", " : "") + (i % 4 == 3 ? "\"full_attention\"" : "\"sliding_attention\"");
    is_moe += std::string(i ? ", " : "") + (i == 0 ? "false" : "true");
  }
  const std::string head = R"({"architectures": ["ExaoneMoEForCausalLM"], "model_type": "exaone_moe",
      "head_dim": 128, "hidden_size": 6144, "intermediate_size": 18432, "moe_intermediate_size": 2048,
      "n_group": 1, "topk_group": 1, "num_attention_heads": 64, "num_experts": 128, "num_experts_per_tok": 8,
      "num_hidden_layers": 48, "num_key_value_heads": 8, "num_shared_experts": 1, "num_nextn_predict_layers": 1,
      "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "sliding_window": 128,
      "sliding_window_pattern": "LLLG", "tie_word_embeddings": false, "vocab_size": 153600, )";
  const ModelSpec m =
      parse_hf_config(head + "\"is_moe_layer\": [" + is_moe + "], \"layer_types\": [" + layers + "]}",
                      "config.json", &warnings);
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_EQ(m.sliding_window, 128);
  ASSERT_EQ(m.layer_has_window.size(), 48u);
  EXPECT_TRUE(m.layer_has_window[0]);
  EXPECT_FALSE(m.layer_has_window[3]);
  EXPECT_TRUE(m.layer_has_window[46]);
  EXPECT_FALSE(m.layer_has_window[47]);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_EQ(m.moe.router_num_groups, 0);
  EXPECT_EQ(m.checkpoint_mtp_layers, 1);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(count_parameters(m), 236'571'150'336);

  // mlp_layer_types and the pattern string give the same model; so do sliding_windows.
  std::string mlp_types, windows;
  for (int i = 0; i < 48; ++i) {
    mlp_types += std::string(i ? ", " : "") + (i == 0 ? "\"dense\"" : "\"sparse\"");
    windows += std::string(i ? ", " : "") + (i % 4 == 3 ? "0" : "128");
  }
  const ModelSpec by_types =
      parse_hf_config(head + "\"mlp_layer_types\": [" + mlp_types + "]}", "config.json");
  EXPECT_EQ(by_types.layer_has_window, m.layer_has_window);
  EXPECT_EQ(count_parameters(by_types), 236'571'150'336);
  const ModelSpec by_windows = parse_hf_config(
      head + "\"first_k_dense_replace\": 1, \"sliding_windows\": [" + windows + "]}", "config.json");
  EXPECT_EQ(by_windows.layer_has_window, m.layer_has_window);
  EXPECT_EQ(by_windows.sliding_window, 128);

  std::string mixed = windows;
  mixed.replace(0, 3, "256");
  InputError e = parse_error(head + "\"first_k_dense_replace\": 1, \"sliding_windows\": [" + mixed + "]}");
  EXPECT_TRUE(contains(e.where(), "sliding_windows")) << e.where();
  EXPECT_TRUE(contains(e.detail(), "256")) << e.detail();
  e = parse_error(head + "\"mlp_layer_types\": [\"dense\", \"sparse\"]}");
  EXPECT_TRUE(contains(e.where(), "mlp_layer_types")) << e.where();
  EXPECT_TRUE(contains(e.detail(), "2 entries for 48 layers")) << e.detail();
  e = parse_error(head + "\"mlp_layer_types\": [" + std::string(mlp_types).replace(0, 7, "\"moe\"") + "]}");
  EXPECT_TRUE(contains(e.detail(), "unknown layer type 'moe'")) << e.detail();
}

// A Hy3-shaped config (HYV3Bridge; the field names of transformers' HYV3Config, the expert width under its
// older name expert_hidden_dim): GQA 32 / 8 heads of 128 with q / k norms, one dense layer, 64 experts of
// 1536 top 8 and a shared expert.  By hand: 8 · (4096 · 4096 · 2 + 2 · 4096 · 1024 + 2 · 128 + 2 · 4096) +
// 3 · 4096 · 12288 + 7 · (64 · 3 · 4096 · 1536 + 3 · 4096 · 1536 + 64 · 4096) + 2 · 120832 · 4096 + 4096.
TEST(HfConfig, HyV3) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["HYV3ForCausalLM"], "model_type": "hy_v3",
      "hidden_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 128, "intermediate_size": 12288, "expert_hidden_dim": 1536, "first_k_dense_replace": 1,
      "num_experts": 64, "num_experts_per_tok": 8, "num_shared_experts": 1, "qk_norm": true,
      "router_scaling_factor": 2.826, "tie_word_embeddings": false, "vocab_size": 120832})",
                                      "config.json", &warnings);
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_EQ(m.moe.ffn_hidden_size, 1536);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 1536);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(7));
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(count_parameters(m), 10'066'139'136);
}

// MiniMax-M3 (model_type minimax_m3_vl; MiniMaxM3Bridge): its language model from text_config, which names
// no model_type (read by its architecture MiniMaxM3SparseForCausalLM).  Megatron-Bridge's toy config with
// the shape of the released one: a dense layer of dense_intermediate_size, then MoE layers by the 0 / 1
// list moe_layer_freq of 8 experts of intermediate_size and a shared expert of shared_intermediate_size,
// GQA with q / k norms.  By hand: 4 · (64 · 128 + 2 · 64 · 64 + 128 · 64 + 2 · 16 + 2 · 64) + 3 · 64 · 128 +
// 3 · (8 · 3 · 64 · 32 + 3 · 64 · 32 + 8 · 64) + 2 · 1024 · 64 + 64 = 422,080.  The lightning indexer and
// the vision tower are said, not counted.
TEST(HfConfig, MinimaxM3LanguageModel) {
  std::vector<std::string> warnings;
  const ModelSpec m = parse_hf_config(R"({"architectures": ["MiniMaxM3SparseForConditionalGeneration"],
      "model_type": "minimax_m3_vl", "text_config": {"architectures": ["MiniMaxM3SparseForCausalLM"],
      "hidden_size": 64, "intermediate_size": 32, "dense_intermediate_size": 128, "shared_intermediate_size": 32,
      "n_shared_experts": 1, "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 4,
      "head_dim": 16, "hidden_act": "swigluoai", "rotary_dim": 8, "partial_rotary_factor": 0.5,
      "vocab_size": 1024, "tie_word_embeddings": false, "num_local_experts": 8, "num_experts_per_tok": 2,
      "scoring_func": "sigmoid", "use_qk_norm": true, "use_gemma_norm": true, "moe_layer_freq": [0, 1, 1, 1],
      "sparse_attention_config": {"sparse_num_index_heads": 2, "sparse_index_dim": 8,
      "sparse_attention_freq": [0, 1, 1, 1]}, "num_nextn_predict_layers": 1, "swiglu_limit": 7.0}})",
                                      "config.json", &warnings);
  EXPECT_EQ(m.ffn_hidden_size, 128);
  EXPECT_EQ(m.moe.ffn_hidden_size, 32);
  EXPECT_EQ(m.moe.shared_expert_ffn_hidden_size, 32);
  EXPECT_EQ(m.moe.num_experts, 8);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_TRUE(m.qk_layernorm);
  EXPECT_EQ(count_parameters(m), 422'080);
  bool indexer = false, tower = false;
  for (const auto& w : warnings) {
    indexer = indexer || contains(w, "lightning indexer");
    tower = tower || contains(w, "vision tower");
  }
  EXPECT_TRUE(indexer);
  EXPECT_TRUE(tower);
  // A per-layer moe_layer_freq holds 0 / 1 and one entry a layer.
  EXPECT_TRUE(contains(parse_error(R"({"model_type": "minimax_m3", "hidden_size": 64, "intermediate_size": 32,
      "num_hidden_layers": 2, "num_attention_heads": 8, "vocab_size": 1024, "num_local_experts": 8,
      "num_experts_per_tok": 2, "moe_layer_freq": [0, 1, 1]})")
                           .detail(),
                       "3 entries for 2 layers"));
}

// Post-norm layers (EXAONE 4, OLMo 2 / 3): a norm after attention and after the MLP and none before — the
// same two norms a layer over tensors of the same shape as pre-norm layers, priced as those and said; they
// were refused.  OLMo-2-7B by hand: 32 · (4 · 4096² + 3 · 4096 · 11008 + 2 · 128 (q / k norms per head;
// OLMo's span the projection: 7936 more a layer) + 2 · 4096) + 2 · 100352 · 4096 + 4096 = 7,298,363,392 (7.30
// B). EXAONE-4.0-32B's shape: 64 · (5120 · 5120 · 2 + 2 · 5120 · 1024 + 2 · 128 + 2 · 5120 + 3 · 5120 ·
// 27392)
// + 2 · 102400 · 5120 + 5120 = 32,003,216,384, three sliding-window layers of 4096 keys to one full ("LLLG").
TEST(HfConfig, PostNormLayers) {
  std::vector<std::string> warnings;
  const ModelSpec olmo = parse_hf_config(R"({"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2",
      "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
      "num_key_value_heads": 32, "vocab_size": 100352, "tie_word_embeddings": false, "attention_bias": false})",
                                         "config.json", &warnings);
  EXPECT_TRUE(olmo.qk_layernorm);
  EXPECT_EQ(olmo.sliding_window, 0);
  EXPECT_EQ(count_parameters(olmo), 7'298'363'392);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(contains(warnings[0], "post-norm layers")) << warnings[0];

  warnings.clear();
  const ModelSpec exaone =
      parse_hf_config(R"({"architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4",
      "hidden_size": 5120, "intermediate_size": 27392, "num_hidden_layers": 64, "num_attention_heads": 40,
      "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 102400, "tie_word_embeddings": false,
      "sliding_window": 4096, "sliding_window_pattern": "LLLG"})",
                      "config.json", &warnings);
  EXPECT_EQ(count_parameters(exaone), 32'003'216'384);
  EXPECT_EQ(exaone.sliding_window, 4096);
  ASSERT_EQ(exaone.layer_has_window.size(), 64u);
  EXPECT_TRUE(exaone.layer_has_window[2]);
  EXPECT_FALSE(exaone.layer_has_window[3]);
  // OLMo 3: its windows from layer_types.
  const ModelSpec olmo3 = parse_hf_config(R"({"model_type": "olmo3", "hidden_size": 1024,
      "intermediate_size": 4096, "num_hidden_layers": 4, "num_attention_heads": 8, "vocab_size": 1000,
      "sliding_window": 512, "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
      "full_attention"]})",
                                          "config.json");
  EXPECT_EQ(olmo3.layer_has_window, (std::vector<bool>{true, true, true, false}));
}

// Hugging Face model types whose layers preflight does not price are refused by what they are.
TEST(HfConfig, HybridHeadLayoutsRefusedByName) {
  for (const auto& [type, what] :
       std::vector<std::pair<std::string, std::string>>{{"mimo_v2_flash", "key/value head counts"},
                                                        {"step3p5", "their own head counts"},
                                                        {"kimi_k3", "Kimi-delta-attention"},
                                                        {"gemma4_text", "key/value sharing"}}) {
    const InputError e = parse_error(R"({"model_type": ")" + type + R"(", "hidden_size": 4096})");
    EXPECT_TRUE(contains(e.where(), "model_type")) << e.where();
    EXPECT_TRUE(contains(e.detail(), what)) << e.detail();
  }
  // Gemma 4's language model inside its multimodal config.
  const InputError e =
      parse_error(R"({"model_type": "gemma4", "text_config": {"model_type": "gemma4_text"}})");
  EXPECT_TRUE(contains(e.where(), "text_config")) << e.where();
  EXPECT_TRUE(contains(e.detail(), "Gemma 4")) << e.detail();
}
