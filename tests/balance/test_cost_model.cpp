// Balancing from the cost model (no dryrun): `preflight balance --model --strategy --system`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/balance/balancer.hpp"
#include "preflight/analyzer/balance/from_cost_model.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/mindformers_yaml.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/units.hpp"
#include "test_support.hpp"

namespace {

using namespace preflight::analyzer;
using namespace preflight::analyzer::balance;
using preflight::test::run_preflight;

struct Case {
  ModelSpec model;
  Strategy strategy;
  SystemSpec system;
};

Case llama_pp4() {
  Case c{cost::load_cost_model("simumax:llama2-7b"),
         cost::load_simumax_strategy("tp1_pp4_vp2_sync_mbs1_mbc8_no_ckpt").strategy,
         cost::load_simumax_system("a100_pcie")};
  c.strategy.vpp = 1;  // plain 1F1B: every stage's in-flight count is S - s
  return c;
}

// Our stage peaks for a uniform class on the strategy's layout.
std::vector<double> our_peaks(const CostModelBalanceInput& in, Recompute r) {
  BalanceProblem p;
  p.pipeline = in.pipeline;
  p.model = in.model;
  p.memory_limit_mb = 1e18;
  const ScheduleGraph g(p.pipeline);
  return simulate(g, chunk_costs(p, uniform_assignment(p, r))).peak_mb;
}

std::vector<double> cost_peaks(const Case& c, const LayerRecompute& rc) {
  Strategy s = c.strategy;
  s.layer_recompute = rc;
  const cost::Estimate e = cost::estimate(c.model, s, c.system);
  std::vector<double> out(static_cast<std::size_t>(s.pp));
  for (const auto& st : e.stages) out[st.pp_rank] = preflight::to_mib(st.peak_bytes);
  return out;
}

TEST(CostModelBalance, LayerTermsComeFromTheCostModelsLayers) {
  const Case c = llama_pp4();
  const CostModelBalanceInput in = balance_input_from_cost_model(c.model, c.strategy, c.system, "llama2-7b");
  EXPECT_EQ(in.pipeline.stages, 4);
  EXPECT_EQ(in.pipeline.chunks, 1);
  EXPECT_EQ(in.pipeline.micro_batches, 8);
  ASSERT_EQ(in.model.bodies.size(), 1u);
  const BodyKind& b = in.model.bodies[0];
  EXPECT_EQ(b.count, 32);
  // Llama 2 7B layer: 4·4096² + 3·4096·11008 + 2·4096 = 202 383 360 parameters; bf16 weights (2 B),
  // fp32 main grads (4 B), and fp32 master + 2 moments (12 B) sharded over dp = 2 by ZeRO-1.
  const double params = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096;
  EXPECT_NEAR(b.param_mb, params * (2 + 4 + 12.0 / 2) / (1 << 20), 1.0);
  // Full recompute keeps only the layer input: s·b·h bf16 (sequence parallel with tp 1: whole).
  ASSERT_TRUE(b.considered(Recompute::Full));
  EXPECT_NEAR(b.activation(Recompute::Full), 4096.0 * 4096 * 2 / (1 << 20), 1e-6);
  EXPECT_LT(b.activation(Recompute::Select), b.activation(Recompute::None));
  EXPECT_FALSE(b.considered(Recompute::Comm));
  EXPECT_FALSE(b.considered(Recompute::Both));
  // Backward with full recompute re-runs the forward.
  EXPECT_GT(b.backward(Recompute::Full), b.backward(Recompute::None) + 0.9 * b.forward_ms);
  EXPECT_GT(in.model.head_forward_ms, 0);
  EXPECT_GT(in.model.tail_forward_ms, in.model.head_forward_ms);  // the output layer and loss dominate
  EXPECT_GT(in.device_limit_mb, 0.9 * 40 * 1024 * 0.94);          // A100 40 GB · mem_factor
}

TEST(CostModelBalance, ReproducesTheCostModelsPeaksUnderFullRecompute) {
  // H, T and c are fitted to the no-recompute peaks; the full-recompute peaks are a prediction.
  const Case c = llama_pp4();
  const CostModelBalanceInput in = balance_input_from_cost_model(c.model, c.strategy, c.system, "m");
  const auto none_ours = our_peaks(in, Recompute::None);
  const auto none_cost = cost_peaks(c, {});
  for (int s : {0, 1, 3}) EXPECT_NEAR(none_ours[s], none_cost[s], 1e-6) << s;
  LayerRecompute full;
  full.scope = RecomputeScope::FullBlock;
  full.layers = 32;
  const auto full_ours = our_peaks(in, Recompute::Full);
  const auto full_cost = cost_peaks(c, full);
  for (int s : {0, 1, 3}) {
    EXPECT_LT(full_ours[s], none_ours[s] - 1000) << s;
    EXPECT_NEAR(full_ours[s], full_cost[s], 0.03 * full_cost[s]) << s;
  }
}

TEST(CostModelBalance, CliBalancesWithoutADryrun) {
  auto r = run_preflight(
      "balance --model simumax:llama2-7b --strategy tp1_pp4_vp2_sync_mbs1_mbc8_no_ckpt --system a100_pcie "
      "--mem 30000 -t 3 --json --no-svg");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["problem"]["stages"], 4);
  EXPECT_EQ(j["problem"]["micro_batches"], 8);
  EXPECT_TRUE(j["found"].get<bool>());
  EXPECT_LE(j["answer"]["max_peak_mb"].get<double>(), 30000);
  for (const auto& n : j["naive"])
    if (n["fits"].get<bool>()) {
      EXPECT_LE(j["answer"]["end_time_ms"].get<double>(), n["end_time_ms"].get<double>());
    }
  // The pipeline comes from the strategy; a conflicting flag is an input error.
  r = run_preflight("balance --model simumax:llama2-7b --strategy tp1_pp4_vp2_sync_mbs1_mbc8_no_ckpt -s 8");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-s: is 4 in --strategy"), std::string::npos) << r.err;
  r = run_preflight("balance --model simumax:llama2-7b");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--strategy"), std::string::npos) << r.err;
}

TEST(MindFormersBalance, YamlLayoutIsSimulatedAndTheAnswerWrittenBack) {
  // Qwen2-72B (8 stages, 64 micro batches, 58GB): the yaml's own offset and full-recompute list are the
  // manual strategy; the answer goes into a copy of the yaml.
  const auto yaml = preflight::test::data_dir() / "mindformers" / "finetune_qwen2_72b_32k.yaml";
  preflight::test::TempDir dir;
  const auto out = dir.path() / "balanced.yaml";
  auto r = run_preflight("balance --config " + yaml.string() + " -t 3 --json --no-svg --write-yaml " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["problem"]["stages"], 8);
  EXPECT_EQ(j["problem"]["micro_batches"], 64);
  EXPECT_DOUBLE_EQ(j["problem"]["memory_limit_mb"].get<double>(), 58 * 1024.0);  // context.max_device_memory
  ASSERT_EQ(j["manual"].size(), 1u) << j.dump();
  const auto& manual = j["manual"][0];
  EXPECT_EQ(manual["name"], "yaml finetune_qwen2_72b_32k.yaml");
  EXPECT_EQ(manual["yaml"]["offset"], nlohmann::json::parse("[[-1, 0, 0, 0, 0, 0, 1, 0]]"));
  EXPECT_EQ(manual["yaml"]["recompute"], nlohmann::json::parse("[[8, 8, 8, 7, 7, 5, 4, 2]]"));
  // The yaml's layout is a start of the search: the answer is no slower, and within the limit.
  EXPECT_LE(j["answer"]["end_time_ms"].get<double>(), manual["end_time_ms"].get<double>() + 1e-6);
  EXPECT_LE(j["answer"]["max_peak_mb"].get<double>(), 58 * 1024.0);
  // The written yaml reads back as the answer.
  const MindFormersConfig back = load_mindformers_yaml(out);
  const auto& offset = j["answer"]["yaml"]["offset"][0];
  const auto& full = j["answer"]["yaml"]["recompute"][0];
  for (int s = 0; s < 8; ++s) {
    EXPECT_EQ(back.layers_per_stage()[s], 10 + offset[s].get<int>()) << s;
    EXPECT_EQ(back.full_recompute_per_stage()[s], full[s].get<int>()) << s;
  }
  // The written yaml needs --config.
  r = run_preflight("balance --model simumax:llama2-7b --strategy tp1_pp2_dp4_mbs1 --write-yaml x.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--write-yaml: needs --config"), std::string::npos) << r.err;
}

}  // namespace
