// Per-module precision (`--te-precision-config-file`, Megatron's quantization recipe: configs + ordered glob
// matchers over module paths inside a model chunk).  Checked: the file read as Megatron reads it (order,
// `enabled` defaulting to false, glob only, the configs named), a 16-bit matcher's linears with 16-bit saved
// inputs and GEMMs at the 16-bit rate, the chunk-local layer numbers, MTP's paths, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "input_error.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;
using preflight::test::input_error;
using preflight::test::TempDir;
using preflight::test::write_file;

namespace {
// 4 layers, h 2048, 16 heads, FP8 current scaling on one H100; pp 2 when asked.
Words fp8(const Words& more) {
  Words a = preflight::test::words(
      "--num-layers 4 --hidden-size 2048 --num-attention-heads 16 --ffn-hidden-size 8192 --swiglu "
      "--seq-length 4096 "
      "--max-position-embeddings 4096 --position-embedding-type rope --disable-bias-linear --normalization "
      "RMSNorm "
      "--untie-embeddings-and-output-weights --vocab-size 32000 --micro-batch-size 1 --global-batch-size 8 "
      "--bf16 "
      "--use-flash-attn --fp8-format hybrid --fp8-recipe tensorwise");
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

const std::string kRecipe = R"(configs:
  bf16:
    transformer_engine_config_type: "TEQuantizationParams"
    training_recipe: {}
  mxfp8:
    transformer_engine_config_type: "TEQuantizationParams"
    training_recipe:
      fp8_quantization_recipe: "mxfp8"
  kitchen:
    kitchen_config_type: "QLinearParams"
    recipe_idx: 1
matchers:
  off:
    config: "bf16"
    type: "glob"
    pattern: "*"
  qkv:
    config: "bf16"
    type: "glob"
    pattern: "*.linear_qkv"
    enabled: true
  first_fc1:
    config: "bf16"
    type: "glob"
    pattern: "decoder.layers.0.mlp.linear_fc1"
    enabled: true
  fc2:
    config: "mxfp8"
    type: "glob"
    pattern: "*.linear_fc2"
    enabled: true
  proj:
    config: "kitchen"
    type: "glob"
    pattern: "*.linear_proj"
    enabled: true
)";

const Op& op_at(const LayerGraph& g, int layer, OpRole role) {
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == layer && op.role == role) return op;
  throw std::runtime_error("no such op");
}

std::int64_t saved_input(const Op& op) {
  for (const auto& t : op.saved)
    if (t.name == "input") return t.bytes;
  return -1;
}

bool said(const MegatronConfig& c, const std::string& text) {
  for (const auto& w : c.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(PrecisionConfig, ReadAsMegatronReadsIt) {
  TempDir dir;
  write_file(dir / "q.yaml", kRecipe);
  const MegatronConfig c =
      parse_megatron_args(fp8({"--te-precision-config-file", (dir / "q.yaml").string()}));
  const auto& o = c.strategy.precision_overrides;
  ASSERT_EQ(o.size(), 4u);  // "off" is not enabled (Megatron's default)
  EXPECT_EQ(o[0].matcher, "qkv");
  EXPECT_TRUE(o[0].sixteen_bit);
  EXPECT_FALSE(o[2].sixteen_bit);
  EXPECT_EQ(o[2].recipe, "mxfp8");
  EXPECT_EQ(c.strategy.precision_override_for("decoder.layers.3.self_attention.linear_qkv"), &o[0]);
  EXPECT_EQ(c.strategy.precision_override_for("decoder.layers.1.mlp.linear_fc1"), nullptr);
  EXPECT_TRUE(said(c, "linears matching *.linear_qkv, decoder.layers.0.mlp.linear_fc1 run in 16 bits"));
  EXPECT_TRUE(said(c, "*.linear_fc2 → mxfp8"));
  // A config that is not a Transformer Engine training recipe (a Kitchen one) keeps the run's recipe.
  EXPECT_FALSE(o[3].sixteen_bit);
  EXPECT_TRUE(said(c, "not Transformer Engine training recipes (proj)"));

  // Not on this machine: said, nothing applied.  Without fp8 / fp4: no effect, said.
  const MegatronConfig missing =
      parse_megatron_args(fp8({"--te-precision-config-file", "/nonexistent/q.yaml"}));
  EXPECT_TRUE(missing.strategy.precision_overrides.empty());
  EXPECT_TRUE(said(missing, "not readable here"));
  Words plain = fp8({"--te-precision-config-file", (dir / "q.yaml").string()});
  const auto fp8_at = std::find(plain.begin(), plain.end(), "--fp8-format");
  plain.erase(fp8_at, fp8_at + 4);  // --fp8-format hybrid --fp8-recipe tensorwise
  const MegatronConfig bf16 = parse_megatron_args(plain);
  EXPECT_TRUE(bf16.strategy.precision_overrides.empty());
  EXPECT_TRUE(said(bf16, "no effect without --fp8-format"));

  // What Megatron refuses: another matcher type, a config the file does not define; malformed YAML by line.
  write_file(dir / "regex.yaml",
             "configs: {}\nmatchers:\n  a:\n    config: x\n    type: regex\n    pattern: y\n"
             "    enabled: true\n");
  auto e = input_error([&] {
    parse_megatron_args(fp8({"--te-precision-config-file", (dir / "regex.yaml").string()}));
  });
  EXPECT_NE(e.where().find("matchers.a.type"), std::string::npos) << e.where();
  write_file(dir / "nocfg.yaml",
             "configs: {}\nmatchers:\n  a:\n    config: x\n    type: glob\n    pattern: y\n"
             "    enabled: true\n");
  e = input_error([&] {
    parse_megatron_args(fp8({"--te-precision-config-file", (dir / "nocfg.yaml").string()}));
  });
  EXPECT_NE(e.where().find("nocfg.yaml:4: matchers.a.config"), std::string::npos) << e.where();
  write_file(dir / "bad.yaml", "configs:\n  a: [1, 2\n");
  e = input_error([&] {
    parse_megatron_args(fp8({"--te-precision-config-file", (dir / "bad.yaml").string()}));
  });
  EXPECT_NE(e.detail().find("malformed YAML"), std::string::npos) << e.detail();
}

// The layer graph: a 16-bit matcher's linear keeps a 16-bit input (twice FP8's byte), the others stay; a
// pattern naming layer 0 matches the first layer of every model chunk (Megatron's module names count from 0
// in each chunk): global layers 0 and 2 at pp 2, not 1 or 3.
TEST(PrecisionConfig, SixteenBitLinearsInTheGraph) {
  TempDir dir;
  write_file(dir / "q.yaml", kRecipe);
  const MegatronConfig base = parse_megatron_args(fp8({"--pipeline-model-parallel-size", "2"}));
  const MegatronConfig over = parse_megatron_args(
      fp8({"--pipeline-model-parallel-size", "2", "--te-precision-config-file", (dir / "q.yaml").string()}));
  const LayerGraph gb = build_layer_graph(base.model, base.strategy);
  const LayerGraph go = build_layer_graph(over.model, over.strategy);
  for (int layer = 0; layer < 4; ++layer) {
    const Op& q = op_at(go, layer, OpRole::Qkv);
    EXPECT_TRUE(q.sixteen_bit) << layer;
    EXPECT_EQ(saved_input(q), 2 * saved_input(op_at(gb, layer, OpRole::Qkv))) << layer;
    const bool first_of_chunk = layer == 0 || layer == 2;
    EXPECT_EQ(op_at(go, layer, OpRole::Fc1).sixteen_bit, first_of_chunk) << layer;
    EXPECT_FALSE(op_at(go, layer, OpRole::Fc2).sixteen_bit) << layer;  // another recipe: the run's
    EXPECT_FALSE(op_at(go, layer, OpRole::AttnProj).sixteen_bit) << layer;  // a Kitchen config: the run's
    EXPECT_EQ(saved_input(op_at(go, layer, OpRole::Fc2)), saved_input(op_at(gb, layer, OpRole::Fc2)));
  }
}

// Time: the 16-bit qkv has no quantizer and its GEMMs run at the 16-bit rate (slower than FP8's), the fc2 of
// another recipe is unchanged; the step is longer, the model FLOPs the same.  MTP's linears match by their
// own paths ("mtp.*").
TEST(PrecisionConfig, SixteenBitLinearsPricedAtTheSixteenBitRate) {
  TempDir dir;
  write_file(dir / "q.yaml", kRecipe);
  write_file(dir / "mtp.yaml",
             "configs:\n  bf16:\n    transformer_engine_config_type: TEQuantizationParams\n"
             "    training_recipe: {}\nmatchers:\n  mtp:\n    config: bf16\n    type: glob\n"
             "    pattern: \"mtp.*\"\n    enabled: true\n");
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  cost::EstimateOptions eo;
  eo.layer_ops = true;
  const MegatronConfig base = parse_megatron_args(fp8({}));
  const MegatronConfig over =
      parse_megatron_args(fp8({"--te-precision-config-file", (dir / "q.yaml").string()}));
  const cost::Estimate eb = cost::estimate(base.model, base.strategy, sys, eo);
  const cost::Estimate eo16 = cost::estimate(over.model, over.strategy, sys, eo);
  auto find = [](const cost::Estimate& e, int layer, const std::string& name) -> const cost::OpEstimate* {
    for (const auto& l : e.layer_ops)
      if (l.layer == layer)
        for (const auto& op : l.ops)
          if (op.name == name) return &op;
    return nullptr;
  };
  const cost::OpEstimate* q8 = find(eb, 0, "attention.linear_qkv.linear");
  const cost::OpEstimate* q16 = find(eo16, 0, "attention.linear_qkv");
  ASSERT_TRUE(q8 && q16);
  EXPECT_NE(find(eb, 0, "attention.linear_qkv.quantizer"), nullptr);  // the fp8 linear quantizes its input
  EXPECT_EQ(find(eo16, 0, "attention.linear_qkv.quantizer"), nullptr);
  EXPECT_GT(q16->times.fwd_compute_ms, 1.3 * q8->times.fwd_compute_ms);
  EXPECT_DOUBLE_EQ(q16->work.fwd_flops, q8->work.fwd_flops);
  const cost::OpEstimate *f8 = find(eb, 0, "mlp.linear_fc2.linear"),
                         *f16 = find(eo16, 0, "mlp.linear_fc2.linear");
  ASSERT_TRUE(f8 && f16);
  EXPECT_DOUBLE_EQ(f16->times.fwd_compute_ms, f8->times.fwd_compute_ms);
  EXPECT_GT(eo16.iteration_ms, eb.iteration_ms);
  EXPECT_DOUBLE_EQ(eo16.flops_per_token, eb.flops_per_token);

  const MegatronConfig mtp = parse_megatron_args(
      fp8({"--mtp-num-layers", "1", "--te-precision-config-file", (dir / "mtp.yaml").string()}));
  const LayerGraph g = build_layer_graph(mtp.model, mtp.strategy);
  int mtp_sixteen = 0, decoder_sixteen = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.sixteen_bit) ++(op.path.rfind("mtp.", 0) == 0 ? mtp_sixteen : decoder_sixteen);
  EXPECT_GE(mtp_sixteen, 4);  // qkv, proj, fc1, fc2 of its transformer layer (eh_proj is 16-bit already)
  EXPECT_EQ(decoder_sixteen, 0);
}
