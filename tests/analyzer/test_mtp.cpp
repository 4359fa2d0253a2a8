// Multi-token prediction (--mtp-num-layers): parameters, activations and weights on the last stage,
// against numbers computed by hand from Megatron-core's MultiTokenPredictionLayer.
#include <gtest/gtest.h>

#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {

// h = 64, ffn 256, 4 heads, GeLU, LayerNorm, biases, vocab 1000 → 1024, no dropout, bf16.
Words small_gpt(int tp, int pp, const std::string& mtp) {
  return {"--num-layers",
          "4",
          "--hidden-size",
          "64",
          "--ffn-hidden-size",
          "256",
          "--num-attention-heads",
          "4",
          "--seq-length",
          "128",
          "--max-position-embeddings",
          "128",
          "--vocab-size",
          "1000",
          "--micro-batch-size",
          "2",
          "--global-batch-size",
          "16",
          "--bf16",
          "--attention-dropout",
          "0",
          "--hidden-dropout",
          "0",
          "--position-embedding-type",
          "rope",
          "--tensor-model-parallel-size",
          std::to_string(tp),
          "--pipeline-model-parallel-size",
          std::to_string(pp),
          "--nproc_per_node",
          std::to_string(tp * pp),
          "--sequence-parallel",
          "--mtp-num-layers",
          mtp};
}

LayerGraph graph_of(Words w, const Words& extra = {}) {
  w.insert(w.end(), extra.begin(), extra.end());
  MegatronConfig c = parse_megatron_args(w, {});
  return build_layer_graph(c.model, c.strategy);
}

std::int64_t kept(const StageGraph& g, const std::string& prefix = "") {
  std::int64_t n = 0;
  for (const Op& op : g.ops)
    if (op.path.rfind(prefix, 0) == 0) n += op.kept_bytes;
  return n;
}

}  // namespace

TEST(Mtp, ParametersOfOneLayer) {
  // Per decoder layer: 2 LayerNorms 2·(64+64) = 256; qkv 192·64 + 192 = 12,480; proj 64·64 + 64 = 4,160;
  // fc1 256·64 + 256 = 16,640; fc2 64·256 + 64 = 16,448 → 49,984.  One MTP layer adds enorm, hnorm and
  // final_layernorm (128 each), eh_proj 64·128 = 8,192 (no bias) and one such layer: 58,560.  Embedding and
  // output layer are the model's own.
  std::int64_t base = count_parameters(parse_megatron_args(small_gpt(1, 1, "0"), {}).model);
  EXPECT_EQ(base, 4 * 49'984 + 1024 * 64 + 128);
  EXPECT_EQ(count_parameters(parse_megatron_args(small_gpt(1, 1, "1"), {}).model) - base, 58'560);
  EXPECT_EQ(count_parameters(parse_megatron_args(small_gpt(1, 1, "2"), {}).model) - base, 2 * 58'560);
}

TEST(Mtp, DeepSeekV3WithItsMtpLayer) {
  // The MTP layer is built like the last (MoE) decoder layer.  h = 7168: MLA attention
  // q_down 1536·h + q_norm 1536 + q_up 24576·1536 + kv_down 576·h + kv_norm 512 + kv_up 32768·512 +
  // proj h·16384 = 187,107,328; 2 RMSNorms 2h; router 256·h; shared expert (4096 + 2048)·h; 256 experts
  // 256·(4096 + 2048)·h = 11,274,289,152 → layer 11,507,286,016; + eh_proj 2h² + 3 norms 3h.
  ModelSpec m = preset_model("deepseek-v3");
  std::int64_t without = count_parameters(m);
  m.mtp_num_layers = 1;
  const std::int64_t h = 7168;
  EXPECT_EQ(count_parameters(m) - without, 11'507'286'016 + 2 * h * h + 3 * h);
  // 671,026,404,352 + 11,610,067,968: DeepSeek's 685 B less the MTP's own copies of embedding and head
  // (2 · 129280 · 7168), which Megatron shares with the main model.
  EXPECT_EQ(count_parameters(m), 682'636'472'320);
}

TEST(Mtp, ActivationsOnTheLastStage) {
  // tp 2 with sequence parallelism, pp 2: T = 2·128 = 256 tokens, 128 per rank outside TP regions,
  // bf16 (2 B), h = 64, vocab 1024 → 512 per rank.  One MTP layer keeps:
  //   lookup: token ids T·8 = 2,048
  //   enorm: input 128·64·2 = 16,384 + LayerNorm mean/rstd fp32 2·128·4 = 1,024
  //   hnorm: statistics 1,024 (its input is the output layer's input, kept there)
  //   eh_proj: the concatenation 128·128·2 = 32,768
  //   the transformer layer: as the decoder's last layer (L)
  //   final_layernorm: 16,384 + 1,024; output layer input 16,384; fp32 softmax 256·512·4 = 524,288
  LayerGraph without = graph_of(small_gpt(2, 2, "0"));
  LayerGraph with = graph_of(small_gpt(2, 2, "1"));
  const StageGraph& last = with.chunks.back();
  std::int64_t L = kept(last, "decoder.layers.3.");
  ASSERT_GT(L, 0);
  EXPECT_EQ(kept(last, "mtp.layers.0.transformer_layer."), L);
  EXPECT_EQ(kept(last) - kept(without.chunks.back()),
            2'048 + 17'408 + 1'024 + 32'768 + L + 17'408 + 16'384 + 524'288);
  EXPECT_EQ(kept(with.chunks.front()), kept(without.chunks.front()));  // stage 0 unchanged

  // Full recompute checkpoints enorm … final_layernorm, keeping the embedding output (16,384); the lookup,
  // the output layer's input and the loss stay.
  Words full = {"--recompute-granularity", "full", "--recompute-method", "uniform",
                "--recompute-num-layers",  "1"};
  LayerGraph fw = graph_of(small_gpt(2, 2, "0"), full);
  LayerGraph fm = graph_of(small_gpt(2, 2, "1"), full);
  EXPECT_EQ(kept(fm.chunks.back()) - kept(fw.chunks.back()), 2'048 + 16'384 + 16'384 + 524'288);
}

TEST(Mtp, WeightsOnTheLastStage) {
  // The last stage builds its own embedding for the MTP lookups (vocab/tp · h = 512·64 = 32,768); a tied
  // output layer uses it instead of a copy of its own, an untied one keeps its weight.
  // MTP parameters per rank: enorm, hnorm, final_layernorm 3·128; eh_proj (64/2)·128 = 4,096; the layer as
  // the decoder's last layer on this rank.
  for (bool untied : {false, true}) {
    Words extra = untied ? Words{"--untie-embeddings-and-output-weights"} : Words{};
    LayerGraph without = graph_of(small_gpt(2, 2, "0"), extra);
    LayerGraph with = graph_of(small_gpt(2, 2, "1"), extra);
    std::int64_t layer = 0;
    for (const Op& op : with.chunks.back().ops)
      if (op.layer == 3) layer += op.param_numel();
    EXPECT_EQ(with.chunks.back().param_numel() - without.chunks.back().param_numel(),
              3 * 128 + 4'096 + layer + (untied ? 32'768 : 0))
        << (untied ? "untied" : "tied");
  }
  // pp = 1: the one embedding serves the decoder, the MTP lookups and (tied) the output layer.
  LayerGraph one = graph_of(small_gpt(2, 1, "1"));
  int word_embeddings = 0;
  for (const Op& op : one.chunks.front().ops)
    for (const auto& p : op.params)
      if (p.full_shape == std::vector<std::int64_t>{1024, 64}) ++word_embeddings;
  EXPECT_EQ(word_embeddings, 1);
}

TEST(Mtp, ArgumentsAndRefusals) {
  using preflight::test::run_preflight;
  std::string args = "analyze --json";
  for (const auto& w : small_gpt(2, 2, "1")) args += " " + w;
  auto r = run_preflight(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"mtp_num_layers\": 1"), std::string::npos);
  EXPECT_THROW(parse_megatron_args(small_gpt(1, 1, "-1"), {}).model.validate(), preflight::InputError);
  Words cpu = small_gpt(1, 1, "1");
  cpu.erase(cpu.end() - 3);  // --sequence-parallel
  cpu.insert(cpu.end(), {"--transformer-impl", "torch_cpu", "--position-embedding-type", "learned_absolute",
                         "--attention-backend", "unfused"});
  try {
    graph_of(cpu);
    FAIL() << "torch_cpu with MTP";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--mtp-num-layers");
  }
}
