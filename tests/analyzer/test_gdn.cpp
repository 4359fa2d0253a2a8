// Gated delta net layers as Megatron builds them (--experimental-attention-variant gated_delta_net,
// megatron/core/ssm/gated_delta_net/gdn.py, models/gpt/experimental_attention_variant_module_specs.py): the
// layer pattern, the parameters and saved activations of the mixer, the FLOPs Megatron's MFU counts
// (training.py transformer_flops, linear_self_attn_term), the cost model pricing every op, and a Hugging Face
// qwen3_next config.json read as the same model — each number computed here by hand from Qwen3-Next-80B-A3B's
// published configuration (hidden 2048, 16 key / 32 value heads of 128, 3 gated delta nets per softmax
// attention layer).
#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

#include "layer_graph_support.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/common/error.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {

// Qwen3-Next-80B-A3B as a Megatron command line (8 of its 48 layers unless --num-layers is given again).
Words qwen3_next(const Words& more = {}, bool gdn = true) {
  Words a = {"--num-layers",
             "8",
             "--hidden-size",
             "2048",
             "--ffn-hidden-size",
             "5120",
             "--num-attention-heads",
             "16",
             "--group-query-attention",
             "--num-query-groups",
             "2",
             "--kv-channels",
             "256",
             "--qk-layernorm",
             "--attention-output-gate",
             "--swiglu",
             "--normalization",
             "RMSNorm",
             "--untie-embeddings-and-output-weights",
             "--disable-bias-linear",
             "--position-embedding-type",
             "rope",
             "--rotary-percent",
             "0.25",
             "--num-experts",
             "512",
             "--moe-router-topk",
             "10",
             "--moe-ffn-hidden-size",
             "512",
             "--moe-shared-expert-intermediate-size",
             "512",
             "--moe-shared-expert-gate",
             "--moe-grouped-gemm",
             "--vocab-size",
             "151936",
             "--seq-length",
             "4096",
             "--max-position-embeddings",
             "262144",
             "--attention-dropout",
             "0",
             "--hidden-dropout",
             "0",
             "--bf16",
             "--micro-batch-size",
             "1",
             "--global-batch-size",
             "8"};
  if (gdn)
    for (const char* w :
         {"--experimental-attention-variant", "gated_delta_net", "--linear-attention-freq", "4",
          "--linear-key-head-dim", "128", "--linear-value-head-dim", "128", "--linear-num-key-heads", "16",
          "--linear-num-value-heads", "32", "--linear-conv-kernel-dim", "4"})
      a.push_back(w);
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

using preflight::test::layer_ops;

void expect_refused(const Words& args, const std::string& where) {
  try {
    const MegatronConfig c = parse_megatron_args(args);
    c.model.validate();
    c.strategy.validate(c.model);
    ADD_FAILURE() << "accepted, expected an error at " << where;
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), where) << e.what();
  }
}

}  // namespace

TEST(GatedDeltaNet, LinearAttentionFreqMarksTheLayers) {
  const MegatronConfig c = parse_megatron_args(qwen3_next());
  // --linear-attention-freq 4: layers 4, 8 (1-based) keep softmax attention, the others are gated delta nets.
  for (int l = 0; l < 8; ++l) EXPECT_EQ(c.model.is_gdn_layer(l), l != 3 && l != 7) << l;
  const MegatronConfig list = parse_megatron_args(qwen3_next({"--linear-attention-freq", "([0]+[1]*3)*2"}));
  for (int l = 0; l < 8; ++l) EXPECT_EQ(list.model.is_gdn_layer(l), l % 4 != 0) << l;
  // The deprecated spelling and the new one are the same variant.
  Words gdn = qwen3_next();
  for (auto& w : gdn)
    if (w == "gated_delta_net") w = "gdn";
  EXPECT_EQ(parse_megatron_args(gdn).model.gdn_layers, c.model.gdn_layers);
  // A GDN layer's ops: the fused input norm, in_proj, the delta rule, the gated norm, out_proj.
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  bool rule = false, attention = false;
  for (const Op* op : layer_ops(g, 0)) {
    rule = rule || op->role == OpRole::GdnRule;
    attention = attention || op->role == OpRole::CoreAttention;
  }
  EXPECT_TRUE(rule);
  EXPECT_FALSE(attention);
  attention = false;
  for (const Op* op : layer_ops(g, 3)) attention = attention || op->role == OpRole::CoreAttention;
  EXPECT_TRUE(attention);
}

TEST(GatedDeltaNet, ParametersAndSavedActivationsByHand) {
  // tp 2: key heads 16 → 8 a rank, value heads 32 → 16.
  const MegatronConfig c = parse_megatron_args(
      qwen3_next({"--tensor-model-parallel-size", "2", "--sequence-parallel", "--nproc_per_node", "2"}));
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  const std::int64_t h = 2048, qk = 16 * 128, v = 32 * 128, nv = 32, tok = 4096;
  std::int64_t params = 0;
  const Op* rule = nullptr;
  const Op* norm = nullptr;
  for (const Op* op : layer_ops(g, 0)) {
    if (op->role == OpRole::GdnInProj || op->role == OpRole::GdnRule || op->role == OpRole::GdnNorm ||
        op->role == OpRole::GdnOutProj)
      params += op->param_numel();
    if (op->role == OpRole::GdnRule) rule = op;
    if (op->role == OpRole::GdnNorm) norm = op;
  }
  // A tp rank's share: in_proj h → 2·qk + 2·v + 2·nv, the depthwise conv (2·qk + v channels × 4), dt_bias
  // and A_log per value head, out_proj v → h, split over tp; the out_norm's 128 weights whole.
  EXPECT_EQ(params, (h * (2 * qk + 2 * v + 2 * nv) + (2 * qk + v) * 4 + 2 * nv + v * h) / 2 + 128);
  ASSERT_NE(rule, nullptr);
  ASSERT_NE(norm, nullptr);
  // What the rule keeps per token of a tp rank (bf16 but the fp32 gates and rstd): the convolution's input
  // (q, k, v: 4096 channels), the L2-normed q and k (2048) and their rstd (8 heads each), the repeated q, k
  // (16 value heads × 128 each) and v (2048), softplus' input and the cumulative g in fp32 and beta (16
  // heads), the WY matrix A (64 per value head), z (2048).
  const std::int64_t per_token =
      4096 * 2 + 2048 * 2 + 16 * 4 + (2 * 16 * 128 + 2048) * 2 + 16 * (4 + 4 + 2) + 16 * 64 * 2 + 2048 * 2;
  EXPECT_EQ(rule->saved_bytes(), tok * per_token);
  // The gated norm keeps its input, an fp32 rstd per value head and the normed output (the gate's input).
  EXPECT_EQ(norm->saved_bytes(), tok * (2048 * 2 + 16 * 4 + 2048 * 2));
  // Megatron's FLOPs of the rule (gdn_layer_flops): 2 · tokens · (4 · conv channels + 4 · nv · dv²), a
  // rank's.
  EXPECT_DOUBLE_EQ(rule->fwd_flops, 2.0 * tok * (4 * 4096 + 4.0 * 16 * 128 * 128));
}

TEST(GatedDeltaNet, MfuCountsMegatronsLinearAttentionTerm) {
  const MegatronConfig gdn = parse_megatron_args(qwen3_next());
  const MegatronConfig softmax = parse_megatron_args(qwen3_next({}, false));
  const double h = 2048, s = 4096;
  // transformer_flops per token, forward + backward (× 6 = 3 · 2): a GDN layer's in_proj, conv, delta rule
  // and out_proj in place of the softmax layer's gated qkv, output projection and core attention.
  const double linear =
      h * (2 * 2048 + 2 * 4096 + 64) + 4 * (2 * 2048 + 4096) + 32 * 128.0 * 128 * 4 + h * 4096;
  const double standard = h * (256 * 16 * 2 + 2 * 256 * 2) + h * h + 2 * s * h;
  const double d =
      cost::flops_per_token(gdn.model, 151936, 4096) - cost::flops_per_token(softmax.model, 151936, 4096);
  EXPECT_NEAR(d, 6 * 6 * (linear - standard), 1.0);
}

TEST(GatedDeltaNet, EveryOpPriced) {
  cost::EstimateOptions opt;
  opt.layer_ops = true;
  opt.strict = true;
  const MegatronConfig run =
      parse_megatron_args(qwen3_next({"--expert-model-parallel-size", "8", "--nproc_per_node", "8"}));
  const cost::Estimate est = cost::estimate(run.model, run.strategy, cost::load_simumax_system("b200"), opt);
  int rules = 0, cores = 0;
  for (const auto& lo : est.layer_ops)
    for (const auto& op : lo.ops) {
      if (op.kind == "GatedDeltaRule") {
        ++rules;
        EXPECT_DOUBLE_EQ(op.work.fwd_flops, 2.0 * 4096 * (4 * 8192 + 4.0 * 32 * 128 * 128));
        EXPECT_GT(op.times.fwd_compute_ms, 0);
        EXPECT_GT(op.times.bwd_grad_act_ms, op.times.fwd_compute_ms);
      }
      if (op.kind == "CoreAttention") ++cores;
    }
  EXPECT_EQ(rules, 1);  // one GDN layer kind and one softmax layer kind are priced
  EXPECT_EQ(cores, 1);
  EXPECT_GT(est.iteration_ms, 0);
  // SimuMax v1.2 has no gated delta net: its switch refuses the model by the variant's flag.
  Words compat = qwen3_next({"--expert-model-parallel-size", "8", "--nproc_per_node", "8"});
  const MegatronConfig c = parse_megatron_args(compat);
  Strategy st = c.strategy;
  st.simumax_compat = true;
  try {
    cost::estimate(c.model, st, cost::load_simumax_system("b200"));
    ADD_FAILURE() << "--simumax-compat priced a gated delta net";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--experimental-attention-variant");
  }
}

TEST(GatedDeltaNet, MegatronsChecksAndTheRefusedVariants) {
  // linear_attention_freq must be set for gdn (TransformerConfig asserts it).
  Words no_freq = qwen3_next();
  for (std::size_t i = 0; i < no_freq.size(); ++i)
    if (no_freq[i] == "--linear-attention-freq") no_freq.erase(no_freq.begin() + i, no_freq.begin() + i + 2);
  expect_refused(no_freq, "--linear-attention-freq");
  expect_refused(qwen3_next({"--linear-attention-freq", "[1,0]"}), "--linear-attention-freq");
  expect_refused(qwen3_next({"--linear-num-value-heads", "24"}), "--linear-num-value-heads");
  // fp8 needs in_proj's output a multiple of 16: 2 · 4 · 32 + 2 · 4 · 32 + 2 · 4 = 520 is not.
  expect_refused(
      qwen3_next({"--linear-num-key-heads", "4", "--linear-num-value-heads", "4", "--linear-key-head-dim",
                  "32", "--linear-value-head-dim", "32", "--fp8-format", "hybrid"}),
      "--linear-num-value-heads");
  EXPECT_NO_THROW({
    const MegatronConfig ok =
        parse_megatron_args(qwen3_next({"--linear-num-key-heads", "4", "--linear-num-value-heads", "4",
                                        "--linear-key-head-dim", "32", "--linear-value-head-dim", "32"}));
    ok.strategy.validate(ok.model);
  });
  // Heads split over tp · cp: 16 key heads over tp 32.
  expect_refused(
      qwen3_next({"--tensor-model-parallel-size", "32", "--sequence-parallel", "--nproc_per_node", "32"}),
      "--tensor-model-parallel-size");
  expect_refused(qwen3_next({"--context-parallel-size", "32", "--nproc_per_node", "32"}),
                 "--tensor-model-parallel-size");  // 16 key heads over tp 1 · cp 32
  Words other = qwen3_next();
  for (auto& w : other)
    if (w == "gated_delta_net") w = "gdn2";
  expect_refused(other, "--experimental-attention-variant");
  for (auto& w : other)
    if (w == "gdn2") w = "dsa";
  expect_refused(other, "--experimental-attention-variant");
}

// Qwen3-Next-80B-A3B's published config.json.
const char* const kQwen3NextConfig = R"({
    "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "attention_bias": false,
    "decoder_sparse_step": 1, "full_attention_interval": 4, "head_dim": 256, "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_value_head_dim": 128,
    "max_position_embeddings": 262144, "mlp_only_layers": [], "moe_intermediate_size": 512,
    "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
    "num_key_value_heads": 2, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06, "rope_theta": 10000000,
    "shared_expert_intermediate_size": 512, "tie_word_embeddings": false, "vocab_size": 151936})";

TEST(GatedDeltaNet, Qwen3NextConfigJsonIsTheSameModel) {
  const std::string config = kQwen3NextConfig;
  const ModelSpec hf = parse_hf_config(config, "config.json");
  const MegatronConfig args = parse_megatron_args(qwen3_next({"--num-layers", "48"}));
  EXPECT_EQ(hf.gdn_layers, args.model.gdn_layers);
  EXPECT_TRUE(hf.attention_output_gate);
  EXPECT_TRUE(hf.qk_layernorm);
  EXPECT_TRUE(hf.moe.shared_expert_gate);
  EXPECT_EQ(count_parameters(hf), count_parameters(args.model));
  // By hand: 36 GDN layers, 12 gated softmax ones, 48 MoE MLPs (512 experts and a gated shared one), two
  // embeddings, two norms a layer and the final norm.
  const std::int64_t h = 2048;
  const std::int64_t gdn = h * 12352 + 8192 * 4 + 64 + 128 + 4096 * h;
  const std::int64_t attn = h * (16 * 256 * 2 + 2 * 2 * 256) + 2 * 256 + 16 * 256 * h;
  const std::int64_t moe = 512 * h + 512 * 3 * h * 512 + 3 * h * 512 + h;  // router, experts, gated shared
  EXPECT_EQ(count_parameters(hf), 36 * gdn + 12 * attn + 48 * (moe + 2 * h) + 2 * 151936 * h + h);
  // layer_types, when given, says the same.
  std::string typed = config;
  std::string types = "\"layer_types\": [";
  for (int l = 0; l < 48; ++l)
    types += std::string(l ? ", " : "") + ((l + 1) % 4 ? "\"linear_attention\"" : "\"full_attention\"");
  typed.insert(typed.find('{') + 1, types + "],");
  EXPECT_EQ(parse_hf_config(typed, "config.json").gdn_layers, hf.gdn_layers);
  try {
    std::string bad = typed;
    bad.replace(bad.find("linear_attention"), 16, "mamba_attention1");
    parse_hf_config(bad, "config.json");
    ADD_FAILURE() << "accepted an unknown layer type";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "config.json: layer_types");
  }
}

TEST(GatedDeltaNet, ContextParallelIsAnAllToAllOfHeads) {
  // cp 2 (tp 1): a rank holds 2048 of the 4096 tokens; the all-to-all before the convolution sends in_proj's
  // 12352 features of them to head shards (the whole sequence of 16 value heads a rank), the output's 4096
  // come back after the gated norm, and the gradients go the other way.
  const MegatronConfig c =
      parse_megatron_args(qwen3_next({"--context-parallel-size", "2", "--nproc_per_node", "2"}));
  c.strategy.validate(c.model);
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  const Op* rule = nullptr;
  for (const Op* op : layer_ops(g, 0))
    if (op->role == OpRole::GdnRule) rule = op;
  ASSERT_NE(rule, nullptr);
  ASSERT_EQ(rule->comms.size(), 4u);
  EXPECT_EQ(rule->comms[0].bytes, 2048LL * 12352 * 2);
  EXPECT_EQ(rule->comms[1].bytes, 2048LL * 4096 * 2);
  for (const auto& cm : rule->comms) {
    EXPECT_EQ(cm.kind, Collective::AllToAll);
    EXPECT_EQ(cm.group, ParallelDim::CP);
  }
  // The rank's elements are the same as at cp 1 on its 2048 tokens: what it keeps scales with them.
  const MegatronConfig one = parse_megatron_args(qwen3_next({"--seq-length", "2048"}));
  const LayerGraph g1 = build_layer_graph(one.model, one.strategy);
  for (const Op* op : layer_ops(g1, 0))
    if (op->role == OpRole::GdnRule) {
      EXPECT_EQ(op->saved_bytes(), rule->saved_bytes());
      EXPECT_TRUE(op->comms.empty());
    }
  // Priced: the exchanges' time at cp 2, none at cp 1.
  cost::EstimateOptions opt;
  opt.layer_ops = true;
  auto rule_net = [&](const MegatronConfig& cfg) {
    const cost::Estimate est =
        cost::estimate(cfg.model, cfg.strategy, cost::load_simumax_system("b200"), opt);
    for (const auto& lo : est.layer_ops)
      for (const auto& op : lo.ops)
        if (op.kind == "GatedDeltaRule") return op.times.fwd_net_ms;
    return -1.0;
  };
  EXPECT_GT(rule_net(c), 0);
  EXPECT_EQ(rule_net(one), 0);
}

TEST(GatedDeltaNet, RecomputeOfTheGatedNorm) {
  // --recompute-modules gdn_norm_out: the gated norm keeps only its input (the rule's output, 4096 bf16 a
  // token), its rstd and normed output go, and out_proj no longer keeps the gated output it reads.
  const MegatronConfig plain = parse_megatron_args(qwen3_next());
  const MegatronConfig rc = parse_megatron_args(
      qwen3_next({"--recompute-granularity", "selective", "--recompute-modules", "gdn_norm_out"}));
  auto kept = [](const MegatronConfig& c) {
    const LayerGraph g = build_layer_graph(c.model, c.strategy);
    std::int64_t norm = 0, out = 0;
    for (const Op* op : layer_ops(g, 0)) {
      if (op->role == OpRole::GdnNorm) norm = op->kept_bytes;
      if (op->role == OpRole::GdnOutProj) out = op->kept_bytes;
    }
    return std::pair{norm, out};
  };
  const auto [norm0, out0] = kept(plain);
  const auto [norm1, out1] = kept(rc);
  EXPECT_EQ(norm0, 4096LL * (4096 * 2 + 32 * 4 + 4096 * 2));
  EXPECT_EQ(norm1, 4096LL * 4096 * 2);
  EXPECT_EQ(out0 - out1, 4096LL * 4096 * 2);
  // Priced: the norm's forward runs again in backward.
  cost::EstimateOptions opt;
  opt.layer_ops = true;
  auto norm_recompute_ms = [&](const MegatronConfig& c) {
    const cost::Estimate est = cost::estimate(c.model, c.strategy, cost::load_simumax_system("b200"), opt);
    for (const auto& lo : est.layer_ops)
      for (const auto& op : lo.ops)
        if (op.name == "self_attention.out_norm") return op.times.recompute_compute_ms;
    return -1.0;
  };
  EXPECT_EQ(norm_recompute_ms(plain), 0);
  EXPECT_GT(norm_recompute_ms(rc), 0);
}

TEST(GatedDeltaNet, HybridPatternGLayers) {
  // A hybrid pattern's G (hybrid_layer_specs.py gdn_layer): a layer whose one block is a gated delta net, its
  // norm fused into in_proj, sized by --linear-*; no MLP in it.
  const Words args = {"--hybrid-layer-pattern",
                      "MG*-G",
                      "--hidden-size",
                      "1024",
                      "--num-attention-heads",
                      "8",
                      "--seq-length",
                      "2048",
                      "--vocab-size",
                      "32000",
                      "--micro-batch-size",
                      "1",
                      "--global-batch-size",
                      "4",
                      "--bf16",
                      "--normalization",
                      "RMSNorm",
                      "--disable-bias-linear",
                      "--linear-num-key-heads",
                      "8",
                      "--linear-num-value-heads",
                      "16",
                      "--linear-key-head-dim",
                      "64",
                      "--linear-value-head-dim",
                      "64"};
  const MegatronConfig c = parse_megatron_args(args);
  c.model.validate();
  c.strategy.validate(c.model);
  for (int l = 0; l < 5; ++l) EXPECT_EQ(c.model.is_gdn_layer(l), l == 1 || l == 4) << l;
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  std::int64_t params = 0;
  bool rule = false, mlp = false;
  for (const Op* op : layer_ops(g, 1)) {
    params += op->param_numel();
    rule = rule || op->role == OpRole::GdnRule;
    mlp = mlp || op->role == OpRole::PreMlpNorm;
  }
  EXPECT_TRUE(rule);
  EXPECT_FALSE(mlp);
  // The norm (1024), in_proj 1024 → 2·512 + 2·1024 + 2·16, the conv (2048 channels × 4), dt_bias and A_log,
  // out_norm (64), out_proj 1024 → 1024.
  EXPECT_EQ(params, 1024 + 1024 * (2 * 512 + 2 * 1024 + 32) + 2048 * 4 + 32 + 64 + 1024 * 1024);
  // Megatron's hybrid_flops adds gdn_layer_flops for each G layer: the same model with those layers as
  // attention ('*') differs by the two layers' terms (forward × 3).
  Words attn = args;
  attn[1] = "M**-*";
  const MegatronConfig a = parse_megatron_args(attn);
  const double h = 1024, s = 2048;
  const double gdn = 2 * (h * (2 * 512 + 2 * 1024 + 32) + 4 * 2048 + 16 * 64.0 * 64 * 4 + h * 1024);
  const double softmax = 4 * h * (h + h) + 2 * s * h;  // no GQA: kv heads = heads
  EXPECT_NEAR(cost::flops_per_token(c.model, 32000, 2048) - cost::flops_per_token(a.model, 32000, 2048),
              3 * 2 * (gdn - softmax), 1.0);
  cost::EstimateOptions opt;
  opt.strict = true;
  opt.layer_ops = true;
  const cost::Estimate est = cost::estimate(c.model, c.strategy, cost::load_simumax_system("b200"), opt);
  int rules = 0;
  for (const auto& lo : est.layer_ops)
    for (const auto& op : lo.ops) rules += op.kind == "GatedDeltaRule" ? 1 : 0;
  EXPECT_EQ(rules, 1);
  // --linear-attention-freq is a GPT model's; a G in an MTP depth is refused by name.
  Words mtp = args;
  mtp[1] = "MG*-G/*G";
  expect_refused(mtp, "--hybrid-layer-pattern");
}

TEST(GatedDeltaNet, PaiMegatronPatchHybridPatternIsQwen3Next) {
  // Pai-Megatron-Patch's examples/qwen3_next launch (our words, its flags): a Megatron hybrid pattern whose
  // symbols its own layer spec builds as Qwen3-Next's layers — M a gated delta net, * gated attention, - MoE
  // with a gated shared expert — and --mamba-* flags its mixer does not read.  Read as the Hugging Face
  // checkpoint's model: the same parameters.
  std::string pattern;
  for (int i = 0; i < 12; ++i) pattern += "M-M-M-*-";
  Words pai = {"--hybrid-override-pattern",
               pattern,
               "--is-hybrid-model",
               "--hybrid-attention-ratio",
               "0.125",
               "--hybrid-mlp-ratio",
               "0.5",
               "--mamba-state-dim",
               "128",
               "--mamba-head-dim",
               "128",
               "--mamba-num-groups",
               "16",
               "--mamba-num-heads",
               "32",
               "--patch-tokenizer-type",
               "Qwen3Tokenizer",
               "--padded-vocab-size",
               "151936"};
  Words base = qwen3_next({}, false);
  for (const char* drop : {"--attention-output-gate", "--moe-shared-expert-gate", "--qk-layernorm"})
    base.erase(std::find(base.begin(), base.end(), drop));
  base.erase(base.begin(), base.begin() + 2);  // --num-layers 8: the pattern gives 96 hybrid layers
  pai.insert(pai.end(), base.begin(), base.end());
  const MegatronConfig c = parse_megatron_args(pai);
  c.model.validate();
  c.strategy.validate(c.model);
  const ModelSpec hf = parse_hf_config(kQwen3NextConfig, "config.json");
  EXPECT_EQ(count_parameters(c.model), count_parameters(hf));
  EXPECT_EQ(count_parameters(c.model), 79'674'391'296);
  for (int l = 0; l < 96; ++l) {
    EXPECT_EQ(c.model.is_gdn_layer(l), l % 2 == 0 && l % 8 != 6) << l;
    EXPECT_EQ(c.model.is_moe_layer(l), l % 2 == 1) << l;
  }
  EXPECT_TRUE(c.model.attention_output_gate);
  EXPECT_TRUE(c.model.moe.shared_expert_gate);
  EXPECT_TRUE(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string& w) {
    return w.find("Pai-Megatron-Patch") != std::string::npos;
  }));
  // Its '-' layers are MoE: without --num-experts the launch is refused, naming the flag.
  Words dense = pai;
  dense.erase(std::find(dense.begin(), dense.end(), "--num-experts"),
              std::find(dense.begin(), dense.end(), "--num-experts") + 2);
  expect_refused(dense, "--num-experts");
  // Megatron's own hybrid model with --num-experts and no E layer builds no experts: said, priced dense.
  Words megatron = pai;
  megatron.erase(std::find(megatron.begin(), megatron.end(), "--patch-tokenizer-type"),
                 std::find(megatron.begin(), megatron.end(), "--patch-tokenizer-type") + 2);
  const MegatronConfig m = parse_megatron_args(megatron);
  EXPECT_FALSE(m.model.is_moe_layer(1));
  EXPECT_TRUE(std::any_of(m.warnings.begin(), m.warnings.end(), [](const std::string& w) {
    return w.find("builds no experts") != std::string::npos;
  }));
}

TEST(GatedDeltaNet, SharedExpertGateKeepsTheSharedOutput) {
  // --moe-shared-expert-gate (Qwen3-Next's shared_expert_gate; SharedExpertMLP with gate): a [1, hidden]
  // weight per MoE layer, and output · sigmoid(score) keeps the shared expert's output (4096 tokens × 2048,
  // bf16) and the score (one a token).
  Words plain = qwen3_next();
  plain.erase(std::find(plain.begin(), plain.end(), "--moe-shared-expert-gate"));
  const MegatronConfig without = parse_megatron_args(plain);
  const MegatronConfig with = parse_megatron_args(qwen3_next());
  EXPECT_FALSE(without.model.moe.shared_expert_gate);
  EXPECT_TRUE(with.model.moe.shared_expert_gate);
  EXPECT_EQ(count_parameters(with.model) - count_parameters(without.model), 8 * 2048);
  auto shared_fc2_saved = [](const MegatronConfig& c) {
    const LayerGraph g = build_layer_graph(c.model, c.strategy);
    for (const Op* op : layer_ops(g, 0))
      if (op->role == OpRole::SharedFc2) return op->saved_bytes();
    return std::int64_t{-1};
  };
  EXPECT_EQ(shared_fc2_saved(with) - shared_fc2_saved(without), 4096LL * 2048 * 2 + 4096LL * 2);
}
