// The memory corpus (tests/data/memory_corpus): every real GPU run predicted from its argument dump or its
// command line, against the `max allocated` it measured.  Targets of issue 13: |error| <= 3 %, and never
// more than 1 % optimistic.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/calibrate/log_prediction.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/analyzer/model/memory_timeline.hpp"
#include "preflight/common/units.hpp"
#include "preflight/log_parse/megatron_log.hpp"
#include "test_support.hpp"

namespace preflight::analyzer {
namespace {

using preflight::test::data_dir;

struct Row {
  std::string run, where;
  double measured_mib = 0, predicted_mib = 0;
  double error() const { return (predicted_mib - measured_mib) / measured_mib; }
};

std::vector<Row> corpus_rows() {
  const auto dir = data_dir() / "memory_corpus";
  const nlohmann::json corpus = nlohmann::json::parse(preflight::test::read_file(dir / "corpus.json"));
  std::vector<Row> rows;
  for (const auto& r : corpus.at("runs")) {
    const std::string name = r.at("name");
    if (r.contains("log")) {
      const log_parse::MegatronLog log = log_parse::read_megatron_log(dir / r.at("log").get<std::string>());
      std::vector<log_parse::MegatronLog> one{log};
      const auto summary = log_parse::summarize_megatron(one);
      std::vector<LoggedRankPeak> measured;
      for (const auto& rk : summary.ranks) measured.push_back({rk.rank, rk.max_allocated_mib, rk.max_reserved_mib, ""});
      auto args = log.args;
      if (log.padded_vocab_size) args["padded_vocab_size"] = std::to_string(*log.padded_vocab_size);
      for (const auto& p : predict_logged_ranks(args, measured, name).ranks)
        rows.push_back({name, "rank " + std::to_string(p.rank), p.measured_mib, p.predicted_mib});
      continue;
    }
    const MegatronConfig cfg = parse_megatron_args(r.at("args").get<std::vector<std::string>>());
    const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
    std::vector<double> predicted;
    for (int s = 0; s < cfg.strategy.pp; ++s) predicted.push_back(to_mib(stage_peak(g, s).bytes));
    if (r.contains("measured_max_allocated_mib")) {
      const auto measured = r.at("measured_max_allocated_mib").get<std::vector<double>>();
      EXPECT_EQ(measured.size(), predicted.size()) << name;
      for (std::size_t s = 0; s < measured.size() && s < predicted.size(); ++s)
        rows.push_back({name, "stage " + std::to_string(s), measured[s], predicted[s]});
    } else {
      rows.push_back({name, "largest stage", r.at("measured_max_allocated_gib_of_largest_stage").get<double>() * 1024,
                      *std::max_element(predicted.begin(), predicted.end())});
    }
  }
  return rows;
}

TEST(MemoryCorpus, EveryRealRunWithinTheTargets) {
  const std::vector<Row> rows = corpus_rows();
  ASSERT_GE(rows.size(), 30u);
  for (const auto& r : rows) {
    EXPECT_LE(std::fabs(r.error()), 0.03) << r.run << " " << r.where << ": measured " << r.measured_mib
                                          << " MiB, predicted " << r.predicted_mib;
    EXPECT_GE(r.error(), -0.01) << r.run << " " << r.where << ": optimistic, measured " << r.measured_mib
                                << " MiB, predicted " << r.predicted_mib;
  }
}

// Megatron-LM's own CI (tests/data/memory_corpus/megatron_ci.json): 149 runs of its functional tests on
// DGX A100 / H100 (small GPT and MoE models, 8 GPUs: tp / pp / vpp / cp / ep, MLA, MTP, FP8, recompute,
// offloading, FSDP), each the last rank's peak `max allocated` against the last pipeline stage's predicted
// peak.  Not every run within 3 %: the CI's toy models leave a few hundred MiB of runtime memory that
// matters, and some runs use the attention backend their container picked (`auto`; the fused cross entropy
// case is the worst, −48 %).  Held to the distribution measured when the corpus was added (stop 35: median
// |error| 1.8 %, 120 of 149 within 5 %, 142 within 10 %), so that a change that worsens it fails.
TEST(MemoryCorpus, MegatronCiRunsHoldTheirDistribution) {
  const nlohmann::json corpus =
      nlohmann::json::parse(preflight::test::read_file(data_dir() / "memory_corpus" / "megatron_ci.json"));
  std::vector<double> errors;
  for (const auto& r : corpus.at("runs")) {
    const MegatronConfig cfg = parse_megatron_args(r.at("args").get<std::vector<std::string>>());
    const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
    const double predicted = stage_peak(g, cfg.strategy.pp - 1).bytes;
    const double measured = r.at("max_allocated_bytes").get<double>();
    errors.push_back((predicted - measured) / measured);
    EXPECT_LT(std::fabs(errors.back()), 0.50)
        << r.at("name").get<std::string>() << ": measured " << measured << " bytes, predicted " << predicted;
  }
  ASSERT_GE(errors.size(), 140u);
  std::vector<double> magnitude;
  for (double e : errors) magnitude.push_back(std::fabs(e));
  std::sort(magnitude.begin(), magnitude.end());
  const auto within = [&](double limit) {
    return std::count_if(magnitude.begin(), magnitude.end(), [&](double m) { return m <= limit; });
  };
  const double median = magnitude[magnitude.size() / 2];
  std::cout << "Megatron-LM CI corpus: " << errors.size() << " runs, median |error| " << 100 * median
            << " %, " << within(0.05) << " within 5 %, " << within(0.10) << " within 10 %\n";
  EXPECT_LE(median, 0.03);
  EXPECT_GE(static_cast<double>(within(0.05)) / errors.size(), 0.78);
  EXPECT_GE(static_cast<double>(within(0.10)) / errors.size(), 0.92);
}

// Megatron-LM's CI runs of Muon (tests/data/memory_corpus/megatron_ci_muon.json): a 12-layer MoE model (ep 8
// on 8 GPUs, ep 4 on 4) with plain muon, muon + --use-distributed-optimizer (the layer-wise optimizer, with
// and without its parameter layout), each beside the same model with Adam and the distributed optimizer on
// the same platform.  What stays allocated after a step (`mem-allocated-bytes`, the last rank) differs by the
// optimizer states alone; the predicted difference must match the measured one within 2 % of the run's
// memory (measured: +308 / +206 / −46 MB on H100).  The legacy deal is compared on the measured rank (the
// last: dp rank dp − 1), not the largest one stage_memory() counts.
TEST(MemoryCorpus, MuonStatesMatchMegatronCi) {
  const nlohmann::json corpus = nlohmann::json::parse(
      preflight::test::read_file(data_dir() / "memory_corpus" / "megatron_ci_muon.json"));
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& r : corpus.at("runs")) by_name[r.at("name").get<std::string>()] = r;
  auto static_bytes = [](const nlohmann::json& r) {
    const MegatronConfig cfg = parse_megatron_args(r.at("args").get<std::vector<std::string>>());
    const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
    const StageMemory m = stage_memory(g).stages.back();
    double bytes = m.static_bytes();
    const Strategy& st = cfg.strategy;
    if (st.optimizer == Optimizer::Muon && st.muon.layer_wise && !st.muon.param_layout)
      bytes += muon_ping_pong_optimizer_bytes(g, st.pp - 1, st.dense_shard_group() - 1,
                                              st.expert_shard_group() - 1) -
               m.optimizer_bytes;
    return bytes;
  };
  int compared = 0;
  for (const auto& [name, r] : by_name) {
    if (name.find("muon") == std::string::npos) continue;
    const nlohmann::json& base = by_name.at(r.at("baseline").get<std::string>());
    const double predicted = static_bytes(r) - static_bytes(base);
    const double measured = r.at("allocated_bytes").get<double>() - base.at("allocated_bytes").get<double>();
    EXPECT_NEAR(predicted, measured, 0.02 * r.at("allocated_bytes").get<double>())
        << name << ": predicted " << predicted / 1e6 << " MB beside Adam, measured " << measured / 1e6
        << " MB";
    ++compared;
  }
  EXPECT_EQ(compared, 7);
}

// Megatron-LM's CI runs of a hybrid Mamba model (tests/data/memory_corpus/megatron_ci_hybrid.json:
// hybrid_mr_mcore_te_*, h 1024, the pattern M-M-M-M*-… of 24 Mamba, 4 attention and 16 MLP layers, micro
// batch 4 of 1024 tokens, unfused attention; tp 1 / tp 2, pp 2 with two virtual stages from the pattern's |
// segments, pp 4; tp 2 with cp 4, the mixers' context parallelism; DGX A100 / H100): the last rank's
// `mem-max-allocated-bytes` against the last stage's predicted peak, held to issue 13's targets — within 3 %,
// never more than 1 % optimistic (measured at stop 37: +0.2 … +1.6 %) — but for the cp 4 runs, −1.4 %: their
// activations are right (0.83 GB above the step-end allocation predicted, 0.83 GB measured) and the static
// part is 35 MB short, as in the tp 2 cp 1 run (1.917 GB allocated at the step's end in both, on A100 and
// H100; the model's weights, grads, optimizer shard and 64 MiB of runtime buffers make 1.882 GB), where more
// activations hide it.  Bounded at −1.5 % there: a regression guard, the static gap a known miss.
TEST(MemoryCorpus, HybridMambaRunsOfMegatronCi) {
  const nlohmann::json corpus = nlohmann::json::parse(
      preflight::test::read_file(data_dir() / "memory_corpus" / "megatron_ci_hybrid.json"));
  int checked = 0;
  for (const auto& r : corpus.at("runs")) {
    const MegatronConfig cfg = parse_megatron_args(r.at("args").get<std::vector<std::string>>());
    ASSERT_TRUE(cfg.model.hybrid()) << r.at("name");
    const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
    const double predicted = stage_peak(g, cfg.strategy.pp - 1).bytes;
    const double measured = r.at("max_allocated_bytes").get<double>();
    const double error = (predicted - measured) / measured;
    EXPECT_LE(std::fabs(error), 0.03)
        << r.at("name") << ": predicted " << predicted << ", measured " << measured;
    EXPECT_GE(error, cfg.strategy.cp > 1 ? -0.015 : -0.01) << r.at("name");
    ++checked;
  }
  EXPECT_EQ(checked, 7);
}

// Megatron-LM's CI run of Nemotron-3.5 Lightning (tests/data/memory_corpus/megatron_ci_lightning.json: Nano's
// hybrid stack with two MTP depths of an attention and a MoE layer, the MTP layer repeated; BF16 on 8
// GB200s): its max allocated climbs over the 20 steps as its unforced routing drifts from balanced, which the
// model assumes.  Held within 3 % of the step-4 … 6 plateau and within 8 % below the largest value (measured
// at stop 37: +0.4 %, −6.6 %); the largest is what the busiest rank of a 1.2 … 1.3 imbalance holds.  Without
// the repeated layer (a second set of MTP weights, grads and states) the prediction rises by one depth's
// model state.
TEST(MemoryCorpus, HybridMtpRunOfMegatronCi) {
  const nlohmann::json corpus = nlohmann::json::parse(
      preflight::test::read_file(data_dir() / "memory_corpus" / "megatron_ci_lightning.json"));
  const auto& r = corpus.at("runs").at(0);
  const auto args = r.at("args").get<std::vector<std::string>>();
  const MegatronConfig cfg = parse_megatron_args(args);
  ASSERT_TRUE(cfg.model.hybrid());
  EXPECT_EQ(cfg.model.mtp_num_layers, 2);
  EXPECT_EQ(cfg.model.mtp_hybrid_pattern, "*E");
  EXPECT_TRUE(cfg.model.mtp_repeated_layer);
  const double predicted = stage_peak(build_layer_graph(cfg.model, cfg.strategy), 0).bytes;
  const auto steps = r.at("max_allocated_bytes_per_step").get<std::vector<double>>();
  ASSERT_EQ(steps.size(), 20u);
  const double plateau = steps[3];  // steps 4 … 6
  EXPECT_EQ(steps[4], plateau);
  EXPECT_NEAR(predicted / plateau, 1.0, 0.03) << predicted;
  const double largest = r.at("max_allocated_bytes").get<double>();
  EXPECT_LT(predicted, largest);
  EXPECT_GT(predicted / largest, 0.92) << predicted;
  // The climb is the busiest rank's share of the routed tokens growing: priced on a rank receiving 1.2 ×
  // the mean (--moe-load-imbalance) the peak is below the largest value, at 1.3 × above it (1.25: 172.8 GB).
  auto with_imbalance = [&](const char* f) {
    std::vector<std::string> words = args;
    words.insert(words.end(), {"--moe-load-imbalance", f});
    const MegatronConfig c = parse_megatron_args(words);
    return stage_peak(build_layer_graph(c.model, c.strategy), 0).bytes;
  };
  EXPECT_LT(with_imbalance("1.2"), largest);
  EXPECT_GT(with_imbalance("1.3"), largest);
  // The repeated layer's weights are held once.
  std::vector<std::string> distinct;
  for (const auto& a : args)
    if (a != "--mtp-use-repeated-layer") distinct.push_back(a);
  const MegatronConfig two = parse_megatron_args(distinct);
  EXPECT_GT(count_parameters(two.model), count_parameters(cfg.model));
  EXPECT_GT(stage_peak(build_layer_graph(two.model, two.strategy), 0).bytes, predicted);
}

// The terms the corpus rests on, one at a time: without each, some run falls out of the targets.
TEST(MemoryCorpus, EachModelledTermIsNeededSomewhere) {
  const auto dir = data_dir() / "memory_corpus";
  const nlohmann::json corpus = nlohmann::json::parse(preflight::test::read_file(dir / "corpus.json"));
  auto worst_without = [&](const std::string& extra_flag, const std::string& drop_flag) {
    double worst = 0;
    for (const auto& r : corpus.at("runs")) {
      if (!r.contains("args") || !r.contains("measured_max_allocated_mib")) continue;
      auto words = r.at("args").get<std::vector<std::string>>();
      if (!drop_flag.empty()) {
        auto it = std::find(words.begin(), words.end(), drop_flag);
        if (it == words.end()) continue;
        words.erase(it, it + 2);
      }
      if (!extra_flag.empty()) words.push_back(extra_flag);
      const MegatronConfig cfg = parse_megatron_args(words);
      const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
      const auto measured = r.at("measured_max_allocated_mib").get<std::vector<double>>();
      for (int s = 0; s < cfg.strategy.pp; ++s) {
        const double e = (to_mib(stage_peak(g, s).bytes) - measured[static_cast<std::size_t>(s)]) /
                         measured[static_cast<std::size_t>(s)];
        worst = std::min(worst, e);
      }
    }
    return worst;
  };
  EXPECT_GE(worst_without("", ""), -0.01);
  // TransformerEngine's dummy weight gradients (TE >= 2.3): without them the B200 runs are optimistic.
  EXPECT_GE(worst_without("", "--te-version"), -0.01);
  EXPECT_LT(worst_without("--te-version=2.2.0", ""), -0.01);
  // The attention output saved before the post all-to-all (context parallelism a2a, TE >= 2.8).
  EXPECT_LT(worst_without("--cp-comm-type=p2p", ""), -0.01);
}

TEST(MemoryCorpus, CalibrateAndLogsCommandsReadALog) {
  const auto log = (data_dir() / "memory_corpus" / "logs" / "llm_action_gpt2_345m_pp4_2023.log").string();
  auto r = preflight::test::run_preflight("calibrate --json --measured " + log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& ranks = j["logs"][0]["ranks"];
  ASSERT_EQ(ranks.size(), 4u);
  EXPECT_EQ(j["logs"][0]["layout"]["pp"], 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ranks[i]["pp_rank"], i);
    EXPECT_LE(std::fabs(ranks[i]["error"].get<double>()), 0.03);
  }
  EXPECT_EQ(ranks[0]["measured_max_allocated_mib"].get<double>(), 7643.34033203125);
  // The same table from `logs megatron --predict`, and --fit writes a calibration analyze applies.
  r = preflight::test::run_preflight("logs megatron --predict " + log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("measured MiB"), std::string::npos) << r.out;
  preflight::test::TempDir dir;
  const auto cal = (dir.path() / "cal.json").string();
  r = preflight::test::run_preflight("calibrate --fit -o " + cal + " --measured " + log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fitted on 1 log(s)"), std::string::npos) << r.out;
  r = preflight::test::run_preflight("calibrate --json --calibration " + cal + " --measured " + log);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  double mean = 0;
  const nlohmann::json report = nlohmann::json::parse(r.out);
  for (const auto& rk : report["logs"][0]["ranks"])
    mean += rk["predicted_peak_mib"].get<double>() - rk["measured_max_allocated_mib"].get<double>();
  EXPECT_NEAR(mean / 4, 0.0, 0.01);  // the fitted overhead removes the mean bias
  // A log without an argument dump cannot be predicted: exit 2 naming it.
  preflight::test::write_file(dir.path() / "bare.log",
                              "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1.0 | max allocated: 2.0 | "
                              "reserved: 3.0 | max reserved: 4.0\n");
  r = preflight::test::run_preflight("calibrate --measured " + (dir.path() / "bare.log").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bare.log: no argument dump"), std::string::npos) << r.err;
  // A log given with --predicted (which pairs predictions with traces): said as a log, with what to do; it
  // had been read as a trace ("too short for a trace header").
  r = preflight::test::run_preflight(
      "analyze --json --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 16 --vocab-size "
      "128");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  preflight::test::write_file(dir.path() / "pred.json", r.out);
  r = preflight::test::run_preflight("calibrate --predicted " + (dir.path() / "pred.json").string() +
                                     " --measured " + (dir.path() / "bare.log").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bare.log: a training log, not a trace"), std::string::npos) << r.err;
}

// `preflight estimate` prints the same memory model by default: every stage kind's peak is the layer graph's
// (the highest of the ranks it stands for), so the corpus targets hold for it too.  SimuMax's own memory
// (--simumax-compat) was up to 7.9 % optimistic on Megatron PR 482's Llama-2-7B runs.
TEST(MemoryCorpus, EstimatePrintsTheSameStagePeaks) {
  const auto dir = data_dir() / "memory_corpus";
  const nlohmann::json corpus = nlohmann::json::parse(preflight::test::read_file(dir / "corpus.json"));
  const SystemSpec b200 = cost::load_simumax_system("b200");
  int runs = 0;
  for (const auto& r : corpus.at("runs")) {
    if (!r.contains("args")) continue;
    const std::string name = r.at("name");
    const MegatronConfig cfg = parse_megatron_args(r.at("args").get<std::vector<std::string>>());
    const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
    const cost::Estimate e = cost::estimate(cfg.model, cfg.strategy, b200);
    EXPECT_EQ(e.memory_model, "megatron") << name;
    double largest = 0;
    for (const auto& s : e.stages) {
      double want = 0;
      const bool middle = s.key == "middle_stage";
      for (int rank = middle ? 1 : s.pp_rank; rank <= (middle ? cfg.strategy.pp - 2 : s.pp_rank); ++rank)
        want = std::max(want, stage_peak(g, rank).bytes);
      EXPECT_DOUBLE_EQ(s.peak_bytes, want) << name << " " << s.key;
      largest = std::max(largest, to_mib(s.peak_bytes));
    }
    const double measured = r.contains("measured_max_allocated_mib")
                                ? [&] {
                                    auto m = r.at("measured_max_allocated_mib").get<std::vector<double>>();
                                    return *std::max_element(m.begin(), m.end());
                                  }()
                                : r.at("measured_max_allocated_gib_of_largest_stage").get<double>() * 1024;
    EXPECT_LE(std::fabs(largest - measured) / measured, 0.03) << name;
    EXPECT_GE((largest - measured) / measured, -0.01) << name;
    Strategy compat = cfg.strategy;
    compat.simumax_compat = true;
    EXPECT_EQ(cost::estimate(cfg.model, compat, b200).memory_model, "simumax") << name;
    ++runs;
  }
  EXPECT_GE(runs, 20);
}

// Megatron-LM's CI run of gated delta net layers (tests/data/memory_corpus/megatron_ci_gdn.json: 4 GDN and 2
// softmax layers of h 512, tp 2, dp 4, plain Adam, on DGX H100): what stays allocated after a step — the
// weights, gradients and optimizer states of the GDN in_proj (h → q, k, v, z, beta, alpha), the depthwise
// convolution, the gates' parameters, the out_norm and out_proj, with the rest of the model and the
// runtime buffers — within 2 % (measured at stop 38: −1.0 %).  Its peak is not compared: the run's
// --deterministic-mode takes Megatron's torch reference of the delta rule, not the FLA kernels priced.
TEST(MemoryCorpus, GatedDeltaNetRunOfMegatronCi) {
  const nlohmann::json corpus = nlohmann::json::parse(
      preflight::test::read_file(data_dir() / "memory_corpus" / "megatron_ci_gdn.json"));
  const auto& r = corpus.at("runs").at(0);
  const MegatronConfig cfg = parse_megatron_args(r.at("args").get<std::vector<std::string>>());
  ASSERT_TRUE(cfg.model.has_gdn());
  int gdn = 0;
  for (int l = 0; l < cfg.model.num_layers; ++l) gdn += cfg.model.is_gdn_layer(l) ? 1 : 0;
  EXPECT_EQ(gdn, 4);
  const LayerGraph g = build_layer_graph(cfg.model, cfg.strategy);
  const double predicted = stage_memory(g).stages.back().static_bytes();
  const double measured = r.at("allocated_bytes").get<double>();
  EXPECT_NEAR(predicted / measured, 1.0, 0.02) << "predicted " << predicted << ", measured " << measured;
}

}  // namespace
}  // namespace preflight::analyzer
