// Hybrid (Mamba) models as Megatron builds them (--hybrid-layer-pattern; megatron/core/models/hybrid,
// megatron/core/ssm/mamba_mixer.py): the pattern, the Mamba mixer's parameters and saved activations, the
// FLOPs Megatron's MFU counts, and the cost model pricing every op — each number computed here by hand from
// NVIDIA's Nemotron-3-Nano-30B-A3B configuration (Megatron-Bridge recipes/nemotronh/nemotron_3_nano.py).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "layer_graph_support.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/hf_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/common/error.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {
const char* kNanoPattern = "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME";

// The flags Nemotron-3's hybrid stacks share: 32 attention heads in 2 kv groups of 128, grouped GEMMs,
// squared-ReLU MLPs, no bias or position embedding, RMSNorm, untied 131072-token vocabulary, seq 8192, no
// dropout, bf16.
Words nemotron3_common() {
  return {"--num-attention-heads",
          "32",
          "--group-query-attention",
          "--num-query-groups",
          "2",
          "--kv-channels",
          "128",
          "--moe-grouped-gemm",
          "--squared-relu",
          "--seq-length",
          "8192",
          "--disable-bias-linear",
          "--position-embedding-type",
          "none",
          "--normalization",
          "RMSNorm",
          "--untie-embeddings-and-output-weights",
          "--vocab-size",
          "131072",
          "--attention-dropout",
          "0",
          "--hidden-dropout",
          "0",
          "--bf16"};
}

Words nano(const Words& more = {}) {
  Words a = {"--hybrid-layer-pattern",
             kNanoPattern,
             "--hidden-size",
             "2688",
             "--ffn-hidden-size",
             "1856",
             "--mamba-num-heads",
             "64",
             "--mamba-head-dim",
             "64",
             "--mamba-state-dim",
             "128",
             "--mamba-num-groups",
             "8",
             "--num-experts",
             "128",
             "--moe-ffn-hidden-size",
             "1856",
             "--moe-shared-expert-intermediate-size",
             "3712",
             "--moe-router-topk",
             "6",
             "--use-flash-attn",
             "--micro-batch-size",
             "1",
             "--expert-model-parallel-size",
             "8",
             "--nproc_per_node",
             "8"};
  const Words common = nemotron3_common();
  a.insert(a.end(), common.begin(), common.end());
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
// The ops of layer `layer` (global) in the first chunk holding it.
using preflight::test::layer_ops;
}  // namespace

TEST(Hybrid, PatternSetsTheLayers) {
  const MegatronConfig c = parse_megatron_args(nano({"--num-layers", "48"}));
  EXPECT_EQ(c.model.num_layers, 52);
  int mamba = 0, attention = 0, moe = 0;
  for (int l = 0; l < c.model.num_layers; ++l) {
    mamba += c.model.is_mamba_layer(l);
    attention += c.model.has_attention(l);
    moe += c.model.is_moe_layer(l);
    EXPECT_EQ(c.model.has_mlp(l), c.model.is_moe_layer(l)) << l;  // Nano's MLPs are all MoE
  }
  EXPECT_EQ(mamba, 23);
  EXPECT_EQ(attention, 6);
  EXPECT_EQ(moe, 23);
  EXPECT_EQ(c.model.mamba.heads(2688), 64);
  EXPECT_EQ(c.model.mamba.d_inner(2688), 4096);
  EXPECT_EQ(c.model.mamba.in_proj_out(2688), 2 * 4096 + 2 * 8 * 128 + 64);
  bool said = false;
  for (const auto& w : c.warnings) said = said || w.find("--num-layers 48 is ignored") != std::string::npos;
  EXPECT_TRUE(said);
  // Without --mamba-num-heads the mixer has expand 2: 2 · hidden / head_dim heads.
  const MegatronConfig d =
      parse_megatron_args({"--hybrid-layer-pattern", "M*-", "--hidden-size", "1024", "--num-attention-heads",
                           "8", "--seq-length", "128", "--vocab-size", "1000"});
  EXPECT_EQ(d.model.mamba.heads(1024), 32);
  EXPECT_FALSE(d.model.is_moe_layer(2));
  EXPECT_TRUE(d.model.has_mlp(2));
}

// One Mamba layer of Nano at tp 1: its norm [2688], in_proj [10304, 2688], the convolution [6144, 1, 4] and
// its bias, A_log / D / dt_bias [64], the gated norm [4096], out_proj [2688, 4096]; tp 2 splits all but the
// layer's norm.
TEST(Hybrid, MambaLayerParametersAndActivations) {
  const MegatronConfig c = parse_megatron_args(nano());
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  std::int64_t params = 0, kept = 0;
  for (const Op* op : layer_ops(g, 0)) {
    params += op->param_numel();
    kept += op->kept_bytes;
  }
  const std::int64_t in_proj = 10304LL * 2688, conv = 6144LL * 4 + 6144, heads = 3 * 64,
                     out_proj = 2688LL * 4096;
  EXPECT_EQ(params, 2688 + in_proj + conv + heads + 4096 + out_proj);
  // Saved for backward, one micro batch of 8192 tokens in bf16: the norm's input and its fp32 rstd, in_proj's
  // input, the scan's input (z, x, B, C, dt) and its ungated output, the gated norm's input and its rstd per
  // group (8), out_proj's input.
  const std::int64_t t = 8192;
  EXPECT_EQ(kept, t * 2688 * 2 + t * 4 + t * 2688 * 2 + t * 10304 * 2 + t * 4096 * 2 + t * 4096 * 2 +
                      t * 8 * 4 + t * 4096 * 2);

  const MegatronConfig c2 =
      parse_megatron_args(nano({"--tensor-model-parallel-size", "2", "--sequence-parallel"}));
  const LayerGraph g2 = build_layer_graph(c2.model, c2.strategy);
  std::int64_t params2 = 0;
  for (const Op* op : layer_ops(g2, 0)) params2 += op->param_numel();
  EXPECT_EQ(params2, 2688 + (in_proj + conv + heads + 4096 + out_proj) / 2);
}

TEST(Hybrid, MegatronsChecksOfTheMixer) {
  auto refused = [](const Words& a, const std::string& where) {
    try {
      const MegatronConfig c = parse_megatron_args(a);
      c.model.validate();
      c.strategy.validate(c.model);
      ADD_FAILURE() << "accepted, expected an error at " << where;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  // 16 tp ranks do not divide the 8 groups; 6 groups do not divide the 64 heads; MambaContextParallel's
  // checks: cp 128 leaves a rank no whole head; cp 3 divides neither the 8 groups nor the heads; 96 heads in
  // 4 groups split over cp 6 (16 heads a rank) but the 4 groups and the 6 ranks do not divide one another.
  refused(nano({"--tensor-model-parallel-size", "16", "--sequence-parallel", "--nproc_per_node", "16"}),
          "--tensor-model-parallel-size");
  refused(nano({"--mamba-num-groups", "6"}), "--mamba-num-groups");
  refused(nano({"--context-parallel-size", "128", "--nproc_per_node", "128"}), "--context-parallel-size");
  refused(nano({"--context-parallel-size", "3", "--nproc_per_node", "3"}), "--context-parallel-size");
  refused(nano({"--mamba-num-heads", "96", "--mamba-num-groups", "4", "--context-parallel-size", "6",
                "--nproc_per_node", "6"}),
          "--context-parallel-size");
  // MoE layers in the pattern need experts.
  refused({"--hybrid-layer-pattern", "M*-E", "--hidden-size", "1024", "--num-attention-heads", "8",
           "--seq-length", "128", "--vocab-size", "1000"},
          "--hybrid-layer-pattern");
}

// Megatron's MFU counts (training.py hybrid_flops): per token, ×3 for forward and backward, with the mixer at
// d_in = 2 · hidden.  NeMo's published Nano row (26.08, GB300: 39936 tokens/s/GPU at 901 model TFLOP/s/GPU)
// counts 22.56 GFLOP per token; Megatron's formula gives 1.2 % less (its mixer width).
TEST(Hybrid, FlopsAsMegatronCountsThem) {
  const MegatronConfig c = parse_megatron_args(nano());
  const double h = 2688, s = 8192, d_in = 2 * h;
  const double mamba = 2 * h * (2 * d_in + 2 * 8 * 128 + 64) + 7 * d_in * 128 + 2 * d_in * h;
  const double p = 128.0 * 32 / h;
  const double attention = 4 * h * p * (h + h * (2.0 / 32)) + 2 * s * h * p;
  const double moe = 4 * h * 1856 * 6 + 4 * h * 3712;
  const double per_token = 3 * (23 * mamba + 6 * attention + 23 * moe + 2 * h * 131072);
  EXPECT_NEAR(cost::flops_per_token(c.model, 131072, 8192), per_token, per_token * 1e-12);
  const double published = 901e12 / 39936;
  EXPECT_NEAR(per_token / published, 1.0, 0.02);
}

// The cost model prices every op of the three layer kinds; the scan at Megatron's count, 7 · tokens · d_inner
// · state forward plus the depthwise convolution.
TEST(Hybrid, CostModelPricesEveryOp) {
  const MegatronConfig c = parse_megatron_args(nano({"--global-batch-size", "64"}));
  const SystemSpec sys = cost::load_simumax_system("gb300");
  EXPECT_TRUE(cost::unpriced_ops(c.model, c.strategy, sys).empty());
  cost::EstimateOptions opt;
  opt.layer_ops = true;
  opt.strict = true;
  const cost::Estimate est = cost::estimate(c.model, c.strategy, sys, opt);
  EXPECT_GT(est.iteration_ms, 0);
  bool scan = false;
  for (const auto& lo : est.layer_ops)
    for (const auto& op : lo.ops)
      if (op.kind == "MambaScan") {
        scan = true;
        EXPECT_DOUBLE_EQ(op.work.fwd_flops, 7.0 * 8192 * 4096 * 128 + 2.0 * 8192 * 6144 * 4);
        EXPECT_GT(op.times.fwd_compute_ms, 0);
      }
  EXPECT_TRUE(scan);
  // SimuMax has no Mamba layers: its compatibility mode says so instead of pricing something else.
  Strategy compat = c.strategy;
  compat.simumax_compat = true;
  EXPECT_THROW(cost::estimate(c.model, compat, sys), preflight::InputError);
}

// Muon leaves the mixer's in_proj to its scalar optimizer (mamba_mixer.py sets in_proj.weight.use_muon =
// False); out_proj, the attention and the experts' weights are its matrices.
TEST(Hybrid, MuonSkipsTheMixersInProj) {
  const MegatronConfig c = parse_megatron_args(nano({"--optimizer", "muon"}));
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  const StageMemory m = stage_memory(g).stages[0];
  std::int64_t matrices = 0;
  for (const auto& op : g.chunks[0].ops)
    if (op.role == OpRole::MambaOutProj || op.role == OpRole::Qkv || op.role == OpRole::AttnProj ||
        op.role == OpRole::Router || op.role == OpRole::SharedFc1 || op.role == OpRole::SharedFc2 ||
        op.role == OpRole::ExpertsFc1 || op.role == OpRole::ExpertsFc2)
      for (const auto& p : op.params)
        if (p.name == "weight") matrices += p.numel();
  EXPECT_EQ(m.muon_params + m.muon_expert_params, matrices);
}

// The pattern's | segments are Megatron's virtual pipeline stages: segment v · pp + r on rank r's v-th chunk.
TEST(Hybrid, PipeSegmentsAreThePipelineLayout) {
  const MegatronConfig c = parse_megatron_args(
      {"--hybrid-layer-pattern", "M-M-|M-M*-|M-|M-M*-M-", "--hidden-size", "1024", "--num-attention-heads",
       "8", "--seq-length", "2048", "--vocab-size", "32000", "--pipeline-model-parallel-size", "2",
       "--global-batch-size", "16", "--nproc_per_node", "2"});
  EXPECT_EQ(c.model.num_layers, 4 + 5 + 2 + 7);
  EXPECT_EQ(c.model.hybrid_pattern, "M-M-M-M*-M-M-M*-M-");
  EXPECT_EQ(c.strategy.vpp, 2);
  ASSERT_EQ(c.strategy.chunk_layout.size(), 2u);
  EXPECT_EQ(c.strategy.chunk_layout[0], (std::vector<int>{4, 5}));
  EXPECT_EQ(c.strategy.chunk_layout[1], (std::vector<int>{2, 7}));
  // MTP depths after '/' are not pipeline segments: they sit on the last stage.
  const MegatronConfig m = parse_megatron_args(
      {"--hybrid-layer-pattern", "M-M-|M-M*-|M-|M-M*-M-/*-/*-", "--hidden-size", "1024",
       "--num-attention-heads", "8", "--seq-length", "2048", "--vocab-size", "32000",
       "--pipeline-model-parallel-size", "2", "--global-batch-size", "16", "--nproc_per_node", "2"});
  EXPECT_EQ(m.strategy.chunk_layout, c.strategy.chunk_layout);
  EXPECT_EQ(m.model.mtp_num_layers, 2);
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  int stage0 = 0;
  for (const StageGraph* ch : g.stage(0)) stage0 += ch->num_layers;
  EXPECT_EQ(stage0, 4 + 2);
  // Megatron refuses the other split flags beside a pattern.
  EXPECT_THROW(parse_megatron_args({"--hybrid-layer-pattern", "M-M-", "--hidden-size", "1024",
                                    "--num-attention-heads", "8", "--seq-length", "2048", "--vocab-size",
                                    "32000", "--pipeline-model-parallel-size", "2",
                                    "--num-layers-per-virtual-pipeline-stage", "1", "--nproc_per_node", "2"}),
               preflight::InputError);
}

// A Nemotron-3-Nano config.json (model_type nemotron_h; the fields of Megatron-Bridge's NemotronH bridge test
// with the Nano recipe's experts) reads as the same model as its Megatron arguments.
TEST(Hybrid, NemotronHConfigJsonIsTheSameModel) {
  const std::string config = R"({
    "architectures": ["NemotronHForCausalLM"], "model_type": "nemotron_h", "attention_bias": false,
    "attention_dropout": 0.0, "attention_head_dim": 128, "chunk_size": 128, "conv_kernel": 4, "expand": 2,
    "hidden_dropout": 0.0, "hidden_size": 2688, "intermediate_size": 1856,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME", "mamba_head_dim": 64,
    "mamba_num_heads": 64, "max_position_embeddings": 8192, "mlp_bias": false, "mlp_hidden_act": "relu2",
    "n_groups": 8, "num_attention_heads": 32, "num_hidden_layers": 52, "num_key_value_heads": 2,
    "ssm_state_size": 128, "tie_word_embeddings": false, "use_bias": false, "vocab_size": 131072,
    "n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712, "n_group": 1, "topk_group": 1})";
  auto refused_at = [](const std::string& text, const std::string& where) {
    try {
      parse_hf_config(text, "config.json");
      ADD_FAILURE() << "accepted, expected an error at " << where;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  const ModelSpec hf = parse_hf_config(config, "config.json");
  const MegatronConfig args = parse_megatron_args(nano());
  EXPECT_EQ(hf.hybrid_pattern, args.model.hybrid_pattern);
  EXPECT_EQ(hf.mamba.heads(hf.hidden_size), 64);
  EXPECT_EQ(hf.kv_channels, 128);
  EXPECT_EQ(hf.activation, Activation::SquaredReLU);
  EXPECT_EQ(hf.position_embedding, PositionEmbedding::None);
  EXPECT_EQ(count_parameters(hf), count_parameters(args.model));
  EXPECT_EQ(count_parameters(hf), 31577937344);
  // The config as the base of a Megatron command line (`--model config.json -- …`): no pattern flag, so no
  // pipe segments to read (this threw an internal error).
  const MegatronConfig on_hf =
      parse_megatron_args({"--seq-length", "8192", "--micro-batch-size", "1",
                           "--pipeline-model-parallel-size", "2", "--nproc_per_node", "2"},
                          {}, &hf);
  EXPECT_EQ(on_hf.model.hybrid_pattern, hf.hybrid_pattern);
  EXPECT_EQ(on_hf.strategy.pp, 2);
  // Megatron's checks hold there too: no virtual stages but the pattern's.
  EXPECT_THROW(parse_megatron_args({"--seq-length", "8192", "--pipeline-model-parallel-size", "2",
                                    "--num-layers-per-virtual-pipeline-stage", "2", "--nproc_per_node", "2"},
                                   {}, &hf),
               preflight::InputError);
  // A LatentMoE config (Nemotron-3 Super's field) reads its latent width; without routed experts it is an
  // error.
  std::string latent = config;
  latent.replace(latent.find("\"topk_group\": 1"), 15, "\"topk_group\": 1, \"moe_latent_size\": 1024");
  EXPECT_EQ(parse_hf_config(latent, "config.json").moe.latent_size, 1024);
  EXPECT_LT(count_parameters(parse_hf_config(latent, "config.json")), count_parameters(hf));
  // Multi-token prediction as Megatron-Bridge maps it: num_nextn_predict_layers depths of
  // mtp_hybrid_override_pattern, the layer repeated by default.
  std::string mtp = latent;
  mtp.replace(
      mtp.find("\"moe_latent_size\": 1024"), 23,
      "\"moe_latent_size\": 1024, \"num_nextn_predict_layers\": 1, \"mtp_hybrid_override_pattern\": \"*E\"");
  const ModelSpec with_mtp = parse_hf_config(mtp, "config.json");
  EXPECT_EQ(with_mtp.mtp_num_layers, 1);
  EXPECT_EQ(with_mtp.mtp_hybrid_pattern, "*E");
  EXPECT_TRUE(with_mtp.mtp_repeated_layer);
  EXPECT_GT(count_parameters(with_mtp), count_parameters(parse_hf_config(latent, "config.json")));
  std::string no_depth = latent;
  no_depth.replace(no_depth.find("\"moe_latent_size\": 1024"), 23,
                   "\"moe_latent_size\": 1024, \"num_nextn_predict_layers\": 1");
  refused_at(no_depth, "config.json: mtp_hybrid_override_pattern");
  std::string no_experts = latent;
  no_experts.replace(no_experts.find("\"n_routed_experts\": 128, "), 25, "");
  refused_at(no_experts, "config.json: moe_latent_size");
  // A pattern that does not match the layer count is named by its field.
  std::string bad = config;
  bad.replace(bad.find("\"num_hidden_layers\": 52"), 23, "\"num_hidden_layers\": 50");
  refused_at(bad, "config.json: hybrid_override_pattern");
}

namespace {
// A small LatentMoE in the shape of Nemotron-3 Super (hidden 4096, 512 experts of ffn 2688 top-22 at latent
// 1024, a shared expert of 5376; megatron/core/transformer/moe/moe_layer.py), `layers` MoE layers.
Words latent_moe(const std::string& pattern, bool latent, const Words& more = {}) {
  Words a = {"--hybrid-layer-pattern",
             pattern,
             "--hidden-size",
             "4096",
             "--num-experts",
             "512",
             "--moe-ffn-hidden-size",
             "2688",
             "--moe-shared-expert-intermediate-size",
             "5376",
             "--moe-router-topk",
             "22",
             "--micro-batch-size",
             "1",
             "--expert-model-parallel-size",
             "8",
             "--moe-token-dispatcher-type",
             "alltoall",
             "--nproc_per_node",
             "8"};
  const Words common = nemotron3_common();
  a.insert(a.end(), common.begin(), common.end());
  if (latent) a.insert(a.end(), {"--moe-latent-size", "1024"});
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
}  // namespace

// LatentMoE: per MoE layer the routed experts hold 2 · latent · ffn each instead of 2 · hidden · ffn (squared
// ReLU, not gated) and the layer gains fc1 / fc2_latent_proj, 2 · hidden · latent — Megatron's own count
// (training/theoretical_memory_usage.py: routed_expert_hidden_size, latent_projection_params).  The router
// and the shared expert stay at the hidden width.
TEST(Hybrid, LatentMoeParametersAndExchanges) {
  const MegatronConfig plain = parse_megatron_args(latent_moe("EE", false));
  const MegatronConfig latent = parse_megatron_args(latent_moe("EE", true));
  EXPECT_EQ(latent.model.moe.latent_size, 1024);
  const std::int64_t h = 4096, w = 1024, ffn = 2688, experts = 512;
  EXPECT_EQ(count_parameters(plain.model) - count_parameters(latent.model),
            2 * (2 * experts * ffn * (h - w) - 2 * h * w));
  // The exchanges move the latent tokens: the dispatch's all-to-all carries top-k copies of each of the
  // rank's 8192 tokens at 1024 wide, bf16 (a quarter of the hidden width's volume).
  for (const auto* cfg : {&plain, &latent}) {
    const LayerGraph g = build_layer_graph(cfg->model, cfg->strategy);
    bool dispatch = false, down = false, up = false;
    for (const Op* op : layer_ops(g, 0)) {
      const std::int64_t width = cfg == &latent ? w : h;
      if (op->role == OpRole::Dispatch) {
        dispatch = true;
        ASSERT_FALSE(op->comms.empty());
        EXPECT_EQ(op->comms[0].bytes, 8192LL * 22 * width * 2);
      }
      if (op->role == OpRole::ExpertsFc1) {
        EXPECT_EQ(op->in_features, width);
      }
      if (op->role == OpRole::LatentDown) {
        down = true;
        EXPECT_EQ(op->param_numel(), h * w);  // whole on every tp rank (duplicated)
      }
      up = up || op->role == OpRole::LatentUp;
    }
    EXPECT_TRUE(dispatch);
    EXPECT_EQ(down, cfg == &latent);
    EXPECT_EQ(up, cfg == &latent);
  }
  // Duplicated over tp: tp 2 leaves the projections whole on every rank.
  const MegatronConfig tp2 = parse_megatron_args(latent_moe(
      "EE", true, {"--tensor-model-parallel-size", "2", "--sequence-parallel", "--nproc_per_node", "16"}));
  const LayerGraph g2 = build_layer_graph(tp2.model, tp2.strategy);
  for (const Op* op : layer_ops(g2, 0))
    if (op->role == OpRole::LatentDown || op->role == OpRole::LatentUp) {
      EXPECT_EQ(op->param_numel(), h * w);
    }
  // Megatron's MFU count (training.py moe_layer_flops with moe_latent_size): 4 · latent · ffn · top-k for the
  // experts plus 4 · hidden · latent for the projections, per token and MoE layer, × 3.
  const double d =
      cost::flops_per_token(plain.model, 131072, 8192) - cost::flops_per_token(latent.model, 131072, 8192);
  EXPECT_NEAR(d, 3 * 2 * (4.0 * ffn * 22 * (h - w) - 4.0 * h * w), 1.0);
  // Priced: both projections and the experts' GEMMs at the latent width.
  cost::EstimateOptions opt;
  opt.layer_ops = true;
  opt.strict = true;
  const MegatronConfig run = parse_megatron_args(latent_moe("EE", true, {"--global-batch-size", "8"}));
  const cost::Estimate est = cost::estimate(run.model, run.strategy, cost::load_simumax_system("b200"), opt);
  int projections = 0;
  for (const auto& lo : est.layer_ops)
    for (const auto& op : lo.ops) {
      if (op.name.find("latent_proj") != std::string::npos) {
        ++projections;
        EXPECT_DOUBLE_EQ(op.work.fwd_flops, 2.0 * 8192 * h * w) << op.name;
      }
      if (op.kind == "GroupLinearCol") {
        EXPECT_DOUBLE_EQ(op.work.fwd_flops, 2.0 * 8192 * 22 * w * ffn);
      }
    }
  EXPECT_EQ(projections, 2);
  // SimuMax v1.2 has no latent projections: its compatibility mode says so (a transformer LatentMoE here).
  MegatronConfig gpt = parse_megatron_args({"--num-layers",
                                            "2",
                                            "--hidden-size",
                                            "4096",
                                            "--num-attention-heads",
                                            "32",
                                            "--seq-length",
                                            "4096",
                                            "--vocab-size",
                                            "32000",
                                            "--num-experts",
                                            "64",
                                            "--moe-router-topk",
                                            "4",
                                            "--moe-ffn-hidden-size",
                                            "1024",
                                            "--moe-latent-size",
                                            "1024",
                                            "--moe-grouped-gemm",
                                            "--bf16",
                                            "--expert-model-parallel-size",
                                            "8",
                                            "--nproc_per_node",
                                            "8"});
  EXPECT_GT(cost::estimate(gpt.model, gpt.strategy, cost::load_simumax_system("b200")).iteration_ms, 0);
  gpt.strategy.simumax_compat = true;
  try {
    cost::estimate(gpt.model, gpt.strategy, cost::load_simumax_system("b200"));
    ADD_FAILURE() << "SimuMax compatibility priced a LatentMoE";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--moe-latent-size");
  }
}

// A hybrid model's MTP depths are given after '/' in its pattern (Megatron's parse_hybrid_pattern): Super's
// "/*E/*E" is two depths, each an attention layer and a MoE layer.
TEST(Hybrid, MtpDepthsOfThePattern) {
  const MegatronConfig c = parse_megatron_args(latent_moe("M*E/*E/*E", true, {"--mtp-num-layers", "3"}));
  EXPECT_EQ(c.model.num_layers, 3);
  EXPECT_EQ(c.model.mtp_num_layers, 2);
  EXPECT_EQ(c.model.mtp_hybrid_pattern, "*E");
  bool said = false;
  for (const auto& w : c.warnings)
    said = said || w.find("--mtp-num-layers 3 is replaced") != std::string::npos;
  EXPECT_TRUE(said);
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  int attention = 0, down = 0, eh = 0;
  for (const auto& ch : g.chunks)
    for (const auto& op : ch.ops) {
      if (op.mtp_layer < 0) continue;
      attention += op.role == OpRole::CoreAttention;
      down += op.role == OpRole::LatentDown;
      eh += op.role == OpRole::MtpEhProj;
    }
  EXPECT_EQ(attention, 2);
  EXPECT_EQ(down, 2);
  EXPECT_EQ(eh, 2);
  // Each depth adds an attention layer and a MoE layer of the decoder's, eh_proj (2h → h), enorm, hnorm,
  // final norm and the two layers' norms; the output layer is shared.
  const MegatronConfig none = parse_megatron_args(latent_moe("M*E", true));
  const MegatronConfig pair = parse_megatron_args(latent_moe("M*E*E", true));
  const std::int64_t h = 4096;
  const std::int64_t depth = count_parameters(pair.model) - count_parameters(none.model) + 2 * h * h + 3 * h;
  EXPECT_EQ(count_parameters(c.model) - count_parameters(none.model), 2 * depth);
  // --mtp-use-repeated-layer (Megatron-Bridge's Nemotron-3 recipes): one depth's weights, applied twice.
  const MegatronConfig repeated =
      parse_megatron_args(latent_moe("M*E/*E/*E", true, {"--mtp-use-repeated-layer"}));
  EXPECT_EQ(count_parameters(repeated.model) - count_parameters(none.model), depth);
  cost::EstimateOptions opt;
  opt.strict = true;
  const MegatronConfig run = parse_megatron_args(latent_moe("M*E/*E/*E", true, {"--global-batch-size", "8"}));
  EXPECT_GT(cost::estimate(run.model, run.strategy, cost::load_simumax_system("b200"), opt).iteration_ms, 0);

  auto refused = [](const Words& a, const std::string& where, const std::string& what) {
    try {
      const MegatronConfig r = parse_megatron_args(a);
      r.model.validate();
      ADD_FAILURE() << "accepted, expected an error at " << where;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  refused(latent_moe("M*E/*E/E*", true), "--hybrid-layer-pattern", "differ");
  refused(latent_moe("M*E/MM", true), "--hybrid-layer-pattern", "not modelled");
  // --mtp-num-layers without depths in the pattern: Megatron warns and builds no MTP block.
  const MegatronConfig no_depths = parse_megatron_args(latent_moe("M*E", true, {"--mtp-num-layers", "1"}));
  EXPECT_EQ(no_depths.model.mtp_num_layers, 0);
  bool warned = false;
  for (const auto& w : no_depths.warnings) warned = warned || w.find("builds none") != std::string::npos;
  EXPECT_TRUE(warned);
  refused(latent_moe("M*E", true, {"--moe-latent-size", "-4"}), "--moe-latent-size", "greater than zero");
}

// The mixers' context parallelism (megatron/core/ssm/mamba_context_parallel.py): z, x, B, C, dt go from
// sequence to head shards by an all-to-all over cp before the scan and its output back after, the gradients
// the other way; a tp rank with fewer groups than cp repeats each group's B and C over cp / groups ranks.
TEST(Hybrid, MambaContextParallelIsAnAllToAllOfHeads) {
  // Nano at cp 2: 8192 / 2 tokens a rank, z, x (4096 each), B, C (8 groups × 128 each) and dt (64).
  const MegatronConfig c = parse_megatron_args(nano({"--context-parallel-size", "2"}));
  c.strategy.validate(c.model);
  const LayerGraph g = build_layer_graph(c.model, c.strategy);
  const std::int64_t tok = 4096, in = 2 * 4096 + 2 * 8 * 128 + 64, out = 4096;
  std::vector<std::int64_t> bytes;
  for (const Op* op : layer_ops(g, 0))
    if (op->role == OpRole::MambaScan) {
      for (const auto& cm : op->comms) {
        EXPECT_EQ(cm.kind, Collective::AllToAll);
        EXPECT_EQ(cm.group, ParallelDim::CP);
        bytes.push_back(cm.bytes);
      }
      EXPECT_EQ(op->kept_bytes,
                tok * in * 2 + tok * out * 2);  // as at cp 1 a token: heads / cp of the whole sequence
    }
  EXPECT_EQ(bytes, (std::vector<std::int64_t>{tok * in * 2, tok * out * 2, tok * out * 2, tok * in * 2}));
  // 16 ranks for 8 groups: each group's B and C go to 2 ranks (16 groups' worth sent).
  EXPECT_EQ(c.model.mamba.cp_group_repeat(1, 16), 2);
  EXPECT_EQ(c.model.mamba.scan_input_width(2688, 1, 16), 2 * 4096 + 64 + 2 * 8 * 2 * 128);
  EXPECT_EQ(c.model.mamba.scan_input_width(2688, 1, 2), in);
  // Priced: the four all-to-alls cost time over cp; none at cp 1.
  cost::EstimateOptions opt;
  opt.layer_ops = true;
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  auto scan_comm_ms = [&](const MegatronConfig& cfg) {
    const cost::Estimate est = cost::estimate(cfg.model, cfg.strategy, sys, opt);
    for (const auto& lo : est.layer_ops)
      for (const auto& op : lo.ops)
        if (op.kind == "MambaScan") return op.times.fwd_net_ms + op.times.bwd_net_ms();
    return -1.0;
  };
  EXPECT_GT(
      scan_comm_ms(parse_megatron_args(nano({"--context-parallel-size", "2", "--global-batch-size", "8"}))),
      0);
  EXPECT_EQ(scan_comm_ms(parse_megatron_args(nano({"--global-batch-size", "8"}))), 0);
}
