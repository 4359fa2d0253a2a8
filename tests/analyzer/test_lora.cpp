// LoRA fine-tuning (`--lora-rank`, `--lora-target-modules`; Megatron-Bridge's LoRA): the adapters' weights,
// what the frozen base keeps and no longer keeps, the gradients and optimizer states of the adapters alone,
// the step without weight-gradient GEMMs, Megatron-Bridge's FLOP count — each against numbers computed here
// by hand from the model's shapes — and the refusals.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "input_error.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {
// 2 layers, h 1024, 8 heads of 128 in 2 query groups (q 1024 + k, v 256 each = 1536 qkv outputs), SwiGLU ffn
// 2816, rope, untied, no biases, bf16, one micro batch of 512 tokens.
Words small(const Words& more) {
  Words a = {"--num-layers",
             "2",
             "--hidden-size",
             "1024",
             "--num-attention-heads",
             "8",
             "--group-query-attention",
             "--num-query-groups",
             "2",
             "--ffn-hidden-size",
             "2816",
             "--swiglu",
             "--seq-length",
             "512",
             "--max-position-embeddings",
             "512",
             "--position-embedding-type",
             "rope",
             "--disable-bias-linear",
             "--normalization",
             "RMSNorm",
             "--untie-embeddings-and-output-weights",
             "--vocab-size",
             "32000",
             "--micro-batch-size",
             "1",
             "--global-batch-size",
             "8",
             "--bf16",
             "--use-flash-attn",
             "--use-distributed-optimizer"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
constexpr std::int64_t h = 1024, qkv_out = 1536, ffn = 2816, tok = 512;

std::int64_t layer_kept(const LayerGraph& g, int layer) {
  std::int64_t n = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == layer) n += op.kept_bytes;
  return n;
}

using preflight::test::input_error;
}  // namespace

TEST(Lora, FlagsAndRefusals) {
  const MegatronConfig all = parse_megatron_args(small({"--lora-rank", "16"}));
  EXPECT_EQ(all.model.lora.rank, 16);
  EXPECT_TRUE(all.model.lora.linear_qkv && all.model.lora.linear_proj && all.model.lora.linear_fc1 &&
              all.model.lora.linear_fc2);  // Megatron-Bridge's default target_modules
  const MegatronConfig two =
      parse_megatron_args(small({"--lora-rank", "8", "--lora-target-modules", "linear_qkv", "linear_fc2"}));
  EXPECT_TRUE(two.model.lora.linear_qkv && two.model.lora.linear_fc2);
  EXPECT_FALSE(two.model.lora.linear_proj || two.model.lora.linear_fc1);

  // Target modules alone turn LoRA on at MindSpeed-LLM's --lora-r default (16), as that framework does; the
  // adapter's other flags alone are still refused.
  EXPECT_EQ(parse_megatron_args(small({"--lora-target-modules", "linear_qkv"})).model.lora.rank, 16);
  EXPECT_EQ(input_error([] { parse_megatron_args(small({"--lora-alpha", "32"})); }).where(), "--lora-alpha");
  const auto bad = input_error([] {
    parse_megatron_args(small({"--lora-rank", "8", "--lora-target-modules", "in_proj"}));
  });
  EXPECT_EQ(bad.where(), "--lora-target-modules");
  EXPECT_NE(bad.detail().find("'in_proj'"), std::string::npos) << bad.detail();
  EXPECT_EQ(input_error([] { parse_megatron_args(small({"--lora-rank", "0"})); }).where(), "--lora-rank");
  const auto latent = input_error([] {
    parse_megatron_args(small({"--lora-rank", "8", "--num-experts", "8", "--moe-ffn-hidden-size", "512",
                               "--moe-latent-size", "256"}))
        .model.validate();
  });
  EXPECT_EQ(latent.where(), "--lora-rank");
  EXPECT_NE(latent.detail().find("LatentMoE"), std::string::npos) << latent.detail();
  // SimuMax has no LoRA: its parity mode refuses it.
  MegatronConfig compat = parse_megatron_args(small({"--lora-rank", "8", "--world-size", "1"}));
  compat.strategy.simumax_compat = true;
  EXPECT_EQ(input_error([&] {
              cost::estimate(compat.model, compat.strategy, cost::load_simumax_system("h100-sxm"));
            }).where(),
            "--lora-rank");
}

// The adapters' weights: A (rank × in) and B (out × rank) on each targeted linear of each layer — the same
// count at any tp (their full shapes); the base weights all frozen.
TEST(Lora, AdapterParametersByHand) {
  const MegatronConfig base = parse_megatron_args(small({}));
  const std::int64_t n = count_parameters(base.model);
  const std::int64_t r = 16;
  const std::int64_t per_layer = r * (h + qkv_out) + r * (h + h) + r * (h + 2 * ffn) + r * (ffn + h);
  EXPECT_EQ(count_parameters(parse_megatron_args(small({"--lora-rank", "16"})).model), n + 2 * per_layer);
  EXPECT_EQ(
      count_parameters(
          parse_megatron_args(small({"--lora-rank", "16", "--lora-target-modules", "linear_qkv"})).model),
      n + 2 * r * (h + qkv_out));
  // An MTP layer's transformer layer is adapted as a decoder layer is (its eh_proj frozen, no adapter).
  const std::int64_t with_mtp = count_parameters(parse_megatron_args(small({"--mtp-num-layers", "1"})).model);
  EXPECT_EQ(
      count_parameters(parse_megatron_args(small({"--mtp-num-layers", "1", "--lora-rank", "16"})).model),
      with_mtp + 3 * per_layer);
  const MegatronConfig tp2 = parse_megatron_args(small({"--lora-rank", "16", "--tensor-model-parallel-size",
                                                        "2", "--sequence-parallel", "--world-size", "2"}));
  EXPECT_EQ(count_parameters(tp2.model), n + 2 * per_layer);
  const LayerGraph g = build_layer_graph(tp2.model, tp2.strategy);
  std::int64_t frozen = 0, local = 0;
  for (const auto& c : g.chunks) {
    frozen += c.frozen_param_numel(false);
    local += c.param_numel();
  }
  EXPECT_EQ(local - frozen, per_layer);  // the adapters, split over the 2 tp ranks: half of 2 layers' each
}

// Memory: the frozen base keeps its 16-bit weights only; gradients (fp32 main grads, 4 bytes) and the
// distributed optimizer's states (fp32 master + two moments, 12 bytes, over dp) are the adapters'.
TEST(Lora, GradientsAndOptimizerStatesAreTheAdapters) {
  const std::int64_t r = 8, adapters = 2 * r * (h + qkv_out);
  const MegatronConfig c = parse_megatron_args(
      small({"--lora-rank", "8", "--lora-target-modules", "linear_qkv", "--world-size", "4"}));
  const MemoryReport m = stage_memory(build_layer_graph(c.model, c.strategy));
  ASSERT_EQ(m.stages.size(), 1u);
  const StageMemory& s = m.stages[0];
  EXPECT_EQ(s.params - s.frozen_params, adapters);
  EXPECT_DOUBLE_EQ(s.weight_bytes, static_cast<double>(s.params) * 2);
  EXPECT_DOUBLE_EQ(s.grad_bytes, static_cast<double>(adapters) * 4);
  EXPECT_DOUBLE_EQ(s.optimizer_bytes, static_cast<double>(adapters) * 12 / 4);
  const MemoryReport full =
      stage_memory(build_layer_graph(parse_megatron_args(small({"--world-size", "4"})).model,
                                     parse_megatron_args(small({"--world-size", "4"})).strategy));
  EXPECT_GT(full.stages[0].grad_bytes, 1000 * s.grad_bytes);
}

// Activations: a frozen Transformer Engine linear keeps no input (no weight gradient); an adapted one's
// adapter keeps its 16-bit input (the same bytes in bf16) and its rank-wide intermediate (tokens × rank × 2).
TEST(Lora, WhatTheLayersKeep) {
  const MegatronConfig base = parse_megatron_args(small({}));
  const std::int64_t kept = layer_kept(build_layer_graph(base.model, base.strategy), 0);
  const std::int64_t r = 8;
  const MegatronConfig all = parse_megatron_args(small({"--lora-rank", "8"}));
  EXPECT_EQ(layer_kept(build_layer_graph(all.model, all.strategy), 0), kept + 4 * tok * r * 2);
  // Only linear_qkv adapted: linear_proj's, linear_fc1's and linear_fc2's inputs go.
  const MegatronConfig qkv =
      parse_megatron_args(small({"--lora-rank", "8", "--lora-target-modules", "linear_qkv"}));
  EXPECT_EQ(layer_kept(build_layer_graph(qkv.model, qkv.strategy), 0),
            kept + tok * r * 2 - (tok * h * 2 + tok * h * 2 + tok * ffn * 2));
}

// Time: no weight-gradient GEMM on the frozen linears (their backward is the input gradient alone), each
// adapter priced, so the step is shorter than full fine-tuning; the gradient reduction moves the adapters
// only.
TEST(Lora, StepWithoutWeightGradients) {
  const Words more = {"--world-size", "8", "--global-batch-size", "32"};
  Words lora_words = more;
  lora_words.insert(lora_words.end(), {"--lora-rank", "16"});
  const MegatronConfig full = parse_megatron_args(small(more)), lora = parse_megatron_args(small(lora_words));
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  cost::EstimateOptions eo;
  eo.layer_ops = true;
  const cost::Estimate ef = cost::estimate(full.model, full.strategy, sys, eo);
  const cost::Estimate el = cost::estimate(lora.model, lora.strategy, sys, eo);
  EXPECT_LT(el.iteration_ms, ef.iteration_ms);
  int adapters = 0;
  for (const auto& layer : el.layer_ops) {
    if (layer.layer < 0) continue;
    for (const auto& op : layer.ops) {
      if (op.kind == "LinearCol" || op.kind == "LinearRow") {
        EXPECT_EQ(op.times.bwd_grad_w_ms, 0) << op.name;
      }
      if (op.kind == "LoraAdapter") {
        ++adapters;
        EXPECT_GT(op.times.bwd_grad_w_ms, 0) << op.name;
      }
    }
  }
  EXPECT_EQ(adapters, 4);  // one layer's four targets
  // fp32 gradients: the adapters' numel × 4 bytes on the one stage.
  const std::int64_t r = 16;
  const double adapters_numel = 2.0 * (r * (h + qkv_out) + r * (2 * h) + r * (h + 2 * ffn) + r * (ffn + h));
  EXPECT_DOUBLE_EQ(el.chunks[0].memory.dense_grad_bytes, adapters_numel * 4);
}

// Megatron-Bridge's FLOPs of a LoRA step (flop_utils.py): the frozen weights' GEMMs count two passes of
// three, the attention all three — against Megatron's full count with its attention term 6 · L · 2 · s · h
// per token.
TEST(Lora, FlopsAsMegatronBridgeCountsThem) {
  const MegatronConfig full = parse_megatron_args(small({"--world-size", "1"}));
  const MegatronConfig lora = parse_megatron_args(small({"--world-size", "1", "--lora-rank", "16"}));
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  const double f = cost::estimate(full.model, full.strategy, sys).flops_per_token;
  const double attention = 6.0 * 2 * (2.0 * 512 * h);
  EXPECT_DOUBLE_EQ(cost::estimate(lora.model, lora.strategy, sys).flops_per_token,
                   (f - attention) * 2 / 3 + attention);
}

// `preflight analyze` with LoRA: the parameters line says which train, the optimizer states and the
// data-parallel traffic are the adapters' (2 layers × 16 · (1024 + 1536) on linear_qkv = 81,920 trained).
TEST(Lora, AnalyzeReportsTheTrainedParameters) {
  std::string args;
  for (const auto& w :
       small({"--lora-rank", "16", "--lora-target-modules", "linear_qkv", "--nproc_per_node", "4"}))
    args += " " + w;
  const preflight::test::RunResult r = preflight::test::run_preflight("analyze" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(81,920 trained: the LoRA adapters; the rest frozen)"), std::string::npos) << r.out;
  // The data-parallel table: the adapters' 81,920 parameters, reduce-scattered at 4 bytes a gradient.
  EXPECT_NE(r.out.find("81,920  reduce_scatter (4 B/grad)"), std::string::npos) << r.out;
  const preflight::test::RunResult j = preflight::test::run_preflight("analyze --json" + args);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const nlohmann::json model = nlohmann::json::parse(j.out)["model"];
  EXPECT_EQ(model["lora"]["rank"], 16);
  EXPECT_EQ(model["lora"]["target_modules"], nlohmann::json::array({"linear_qkv"}));
  const preflight::test::RunResult e =
      preflight::test::run_preflight("estimate --json --system h100-sxm --" + args);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(nlohmann::json::parse(e.out)["summary"]["lora_rank"], 16);
  const preflight::test::RunResult text =
      preflight::test::run_preflight("estimate --system h100-sxm --" + args);
  EXPECT_NE(text.out.find("fine-tuning: LoRA of rank 16 on linear_qkv (every other weight frozen"),
            std::string::npos)
      << text.out;
}

// A MoE layer: linear_fc1 / linear_fc2 name the routed experts' grouped linears too, which share one adapter
// among a rank's local experts (Bridge's share_expert_adapters), applied to every routed row; the frozen
// experts keep no input and run no weight gradient.  8 experts of 512 (SwiGLU: fc1 1024 wide), top 2, ep 2.
TEST(Lora, MoeExpertsShareOneAdapterPerRank) {
  const Words moe = {"--num-experts",
                     "8",
                     "--moe-ffn-hidden-size",
                     "512",
                     "--moe-router-topk",
                     "2",
                     "--moe-grouped-gemm",
                     "--expert-model-parallel-size",
                     "2",
                     "--world-size",
                     "2"};
  Words with = moe;
  with.insert(with.end(), {"--lora-rank", "8", "--lora-target-modules", "linear_fc1", "linear_fc2"});
  const MegatronConfig base = parse_megatron_args(small(moe)), lora = parse_megatron_args(small(with));
  const std::int64_t r = 8, expert_adapters = r * (h + 1024) + r * (512 + h);
  EXPECT_EQ(count_parameters(lora.model), count_parameters(base.model) + 2 * expert_adapters);
  const LayerGraph g = build_layer_graph(lora.model, lora.strategy);
  const MemoryReport m = stage_memory(g);
  const StageMemory& s = m.stages[0];
  // Each rank holds its own adapter of its 4 local experts (full width at expert tp 1), the frozen rest.
  EXPECT_EQ(s.params - s.frozen_params, 2 * expert_adapters);
  EXPECT_EQ(s.expert_params - s.frozen_expert_params, 2 * expert_adapters);
  // Kept by the experts' fc1 per layer: the adapter's 16-bit routed input and its intermediate, not the
  // frozen grouped linear's input (here the same 16-bit bytes).  Routed rows: 512 tokens × top 2 = 1024.
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.role == OpRole::ExpertsFc1 && op.layer == 0) {
        EXPECT_EQ(op.tokens, 1024);
        std::int64_t lora_hidden = 0;
        for (const auto& t : op.kept)
          if (t.name == "lora_hidden") lora_hidden = t.bytes;
        EXPECT_EQ(lora_hidden, 1024 * r * 2);
        EXPECT_EQ(op.bwd_weight_flops, 2.0 * 1024 * r * (h + 1024));  // the adapter's alone
      }
  cost::EstimateOptions eo;
  eo.layer_ops = true;
  const cost::Estimate e =
      cost::estimate(lora.model, lora.strategy, cost::load_simumax_system("h100-sxm"), eo);
  int adapters = 0;
  for (const auto& layer : e.layer_ops)
    for (const auto& op : layer.ops) {
      if (op.kind == "GroupLinearCol" || op.kind == "GroupLinearRow") {
        EXPECT_EQ(op.times.bwd_grad_w_ms, 0) << op.name;
      }
      adapters += op.kind == "LoraAdapter";
    }
  EXPECT_EQ(adapters, 2);  // one MoE layer's experts' fc1 and fc2
  EXPECT_DOUBLE_EQ(e.chunks[0].memory.moe_grad_bytes, 2.0 * expert_adapters * 4);
}

// Under full recompute an adapter runs again with its layer (recomputed forward time), not without it.
TEST(Lora, AdaptersRecomputeWithTheirLayer) {
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  cost::EstimateOptions eo;
  eo.layer_ops = true;
  for (const bool full : {false, true}) {
    Words w = {"--world-size", "1", "--lora-rank", "16"};
    if (full)
      w.insert(w.end(), {"--recompute-granularity", "full", "--recompute-method", "uniform",
                         "--recompute-num-layers", "1"});
    const MegatronConfig c = parse_megatron_args(small(w));
    const cost::Estimate e = cost::estimate(c.model, c.strategy, sys, eo);
    int seen = 0;
    for (const auto& layer : e.layer_ops)
      for (const auto& op : layer.ops)
        if (op.kind == "LoraAdapter") {
          ++seen;
          if (full) {
            EXPECT_DOUBLE_EQ(op.times.recompute_compute_ms, op.times.fwd_compute_ms) << op.name;
          } else {
            EXPECT_EQ(op.times.recompute_compute_ms, 0) << op.name;
          }
        }
    EXPECT_EQ(seen, 4) << full;
  }
}

// Multi-latent attention (DeepSeek-V2-Lite's layers): the four default targets adapt linear_proj (heads ·
// v_head_dim → h) and the MLPs; MLA's down / up projections stay frozen, keep no input and get no adapter.
// linear_proj alone: 27 layers × 16 · (16 · 128 + 2048).
TEST(Lora, MultiLatentAttentionKeepsItsProjectionsFrozen) {
  ModelSpec m = preset_model("deepseek-v2-lite");
  const std::int64_t base = count_parameters(m);
  m.lora.rank = 16;
  m.lora.linear_qkv = m.lora.linear_fc1 = m.lora.linear_fc2 = false;
  m.validate();
  EXPECT_EQ(count_parameters(m), base + 27 * 16 * (16 * 128 + 2048));
  Strategy st;
  st.world_size = 1;
  st.seq_length = 1024;
  st.micro_batch_size = 1;
  const LayerGraph g = build_layer_graph(m, st);
  int mla = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.role == OpRole::QDownProj || op.role == OpRole::KvUpProj) {
        ++mla;
        for (const auto& p : op.params) EXPECT_TRUE(p.frozen) << op.path;
        for (const auto& t : op.saved) EXPECT_NE(t.name, "input") << op.path;
      }
  EXPECT_GT(mla, 0);
}

// With --tp-comm-overlap the reduce-scatter of a column linear's input gradient runs under its
// weight-gradient GEMM; a frozen linear has none, so under LoRA that exchange is exposed (more exposed
// backward communication than full fine-tuning's, none of it hidden under a GEMM that no longer runs).
TEST(Lora, NothingHidesUnderAMissingWeightGradient) {
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  cost::EstimateOptions eo;
  eo.layer_ops = true;
  auto qkv_bwd_net = [&](bool lora) {
    Words w = {"--world-size",     "2", "--tensor-model-parallel-size", "2", "--sequence-parallel",
               "--tp-comm-overlap"};
    if (lora) w.insert(w.end(), {"--lora-rank", "16"});
    const MegatronConfig c = parse_megatron_args(small(w));
    for (const auto& layer : cost::estimate(c.model, c.strategy, sys, eo).layer_ops)
      for (const auto& op : layer.ops)
        if (op.name == "attention.linear_qkv" || op.name == "self_attention.linear_qkv") return op.times;
    ADD_FAILURE() << "no linear_qkv";
    return cost::PassTimes{};
  };
  const cost::PassTimes full = qkv_bwd_net(false), lora = qkv_bwd_net(true);
  EXPECT_GT(full.bwd_grad_w_ms, 0);
  EXPECT_EQ(lora.bwd_grad_w_ms, 0);
  EXPECT_EQ(lora.bwd_grad_w_net_ms, 0);  // no re-gather of the input for a weight gradient
  EXPECT_GT(lora.bwd_grad_act_net_ms, full.bwd_grad_act_net_ms);
}

// Multi-latent attention's projections named as Megatron-Bridge's Moonlight recipe names them (linear_q_proj,
// linear_kv_down_proj, linear_kv_up_proj, linear_proj) on DeepSeek-V2-Lite's 27 layers (16 heads, q 128 +
// rope 64, v 128, kv latent 512 + rope 64, h 2048).  The kv down projection is replicated over tp, so is its
// adapter.
TEST(Lora, MultiLatentAttentionTargets) {
  ModelSpec m = preset_model("deepseek-v2-lite");
  const std::int64_t base = count_parameters(m);
  m.lora.rank = 8;
  m.lora.linear_qkv = m.lora.linear_fc1 = m.lora.linear_fc2 = false;
  m.lora.linear_q_proj = m.lora.linear_kv_down_proj = m.lora.linear_kv_up_proj = true;
  m.validate();
  const std::int64_t q = 8 * (2048 + 16 * 192), kv_down = 8 * (2048 + 576), kv_up = 8 * (512 + 16 * 256),
                     proj = 8 * (16 * 128 + 2048);
  EXPECT_EQ(count_parameters(m), base + 27 * (q + kv_down + kv_up + proj));
  EXPECT_EQ(m.lora.targets(), (std::vector<std::string>{"linear_q_proj", "linear_kv_down_proj",
                                                        "linear_kv_up_proj", "linear_proj"}));
  Strategy st;
  st.world_size = 2;
  st.tp = 2;
  st.sequence_parallel = true;
  st.seq_length = 1024;
  st.micro_batch_size = 1;
  std::int64_t trained = 0;
  for (const auto& c : build_layer_graph(m, st).chunks)
    trained += c.param_numel() - c.frozen_param_numel(false) - c.frozen_param_numel(true);
  // On each of the 2 tp ranks: the replicated kv-down adapter whole, the others halved.
  EXPECT_EQ(trained, 27 * (kv_down + (q + kv_up + proj) / 2));
  // The Megatron flag reads the names.
  const MegatronConfig c = parse_megatron_args(
      small({"--lora-rank", "8", "--lora-target-modules", "linear_kv_down_proj", "linear_kv_up_proj"}));
  EXPECT_TRUE(c.model.lora.linear_kv_down_proj && c.model.lora.linear_kv_up_proj && !c.model.lora.linear_qkv);
  // … and on a model without MLA they would adapt nothing: refused.
  EXPECT_EQ(input_error([&] { c.model.validate(); }).where(), "--lora-target-modules");
}
