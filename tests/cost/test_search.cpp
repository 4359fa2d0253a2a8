// The strategy search against SimuMax's own searches.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "preflight/analyzer/cost/search.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using namespace preflight::analyzer::cost;
using namespace preflight::test;

namespace {

/// SimuMax's pricing, for comparisons with SimuMax's own search.
preflight::analyzer::Strategy compat(preflight::analyzer::Strategy s) {
  s.simumax_compat = true;
  return s;
}

struct Row {
  std::string parallelism, recompute;
  double mfu = 0;
  std::map<std::string, double> peaks;  // stage → GiB as SimuMax printed it
};

/// SimuMax's peak column: "69.8842 GB" (pp = 1) or "{'first_stage': '45.1816 GB', ...}".
std::map<std::string, double> parse_peaks(const std::string& text) {
  std::map<std::string, double> out;
  static const std::regex item(R"('(\w+)': '([0-9.]+) GB')");
  for (std::sregex_iterator it(text.begin(), text.end(), item), end; it != end; ++it)
    out[(*it)[1]] = std::stod((*it)[2]);
  if (out.empty()) out["first_stage"] = std::stod(text);
  return out;
}

std::vector<Row> reference_rows() {
  std::ifstream in(data_dir() / "cost" / "search" / "llama3-8b_w32_gbs256_feasible.tsv");
  std::string line;
  std::getline(in, line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    Row r;
    std::string mfu, peaks;
    std::getline(ss, r.parallelism, '\t');
    std::getline(ss, r.recompute, '\t');
    std::getline(ss, mfu, '\t');
    std::getline(ss, peaks, '\t');
    r.parallelism = r.parallelism.substr(r.parallelism.find("seq"));  // drop SimuMax's "bf16.dense0." prefix
    r.mfu = std::stod(mfu);
    r.peaks = parse_peaks(peaks);
    rows.push_back(r);
  }
  return rows;
}

std::string key(const std::string& parallelism, const std::string& recompute) {
  return parallelism + " | " + recompute;
}

SearchResult llama8b_search(int threads) {
  ModelSpec m = load_cost_model((data_dir() / "cost" / "search" / "llama3-8b.json").string());
  Strategy base = load_simumax_strategy("tp1_pp2_dp4_mbs1").strategy;
  base.simumax_compat = true;
  SearchSpace sp;
  sp.world_size = 32;
  sp.global_batch_size = 256;
  sp.tp = {1, 2, 4, 8};
  sp.recompute = {RecomputeSearch::None, RecomputeSearch::FullBlock};
  sp.threads = threads;
  return search(m, base, load_simumax_system("a100_pcie"), sp);
}

/// SimuMax's default strategy as `search` starts from it (BF16, sequence parallel, the distributed optimizer)
/// at `seq` tokens per sample.
Strategy megatron_bf16_base(int seq) {
  Strategy base;
  base.precision = Precision::BF16;
  base.sequence_parallel = true;
  base.distributed_optimizer = true;
  base.zero_stage = 1;
  base.seq_length = seq;
  return base;
}

/// A published launch of the time corpus (tests/data/time_corpus/`file`, run `index`) whose name holds
/// `model`: its Megatron arguments, shell-quoted after a space each, for `preflight … --` + them.
std::string corpus_launch(const std::string& file, int index, const std::string& model) {
  const auto row = nlohmann::json::parse(
      read_file(data_dir() / "time_corpus" / file))["runs"][static_cast<std::size_t>(index)];
  if (row["name"].get<std::string>().find(model) == std::string::npos)
    throw std::runtime_error(file + " run " + std::to_string(index) + " is not " + model);
  std::string args;
  for (const auto& a : row["args"]) args += " " + shell_quote(a.get<std::string>());
  return args;
}

}  // namespace

// search_bench_llama3-8b_w32_ppall: 77 evaluations, 75 feasible rows, best tp1 pp2 dp16 MFU 0.4640.
TEST(Search, SameFeasibleSetAndBestAsSimuMax) {
  SearchResult r = llama8b_search(2);
  EXPECT_EQ(r.evaluations.size(), 77u);
  std::vector<Row> ref = reference_rows();
  ASSERT_EQ(ref.size(), 75u);
  std::multimap<std::string, const SearchEvaluation*> ours;
  for (const auto& e : r.evaluations)
    if (e.feasible) ours.emplace(key(e.parallelism, e.recompute_status), &e);
  EXPECT_EQ(ours.size(), ref.size());
  for (const Row& row : ref) {
    auto it = ours.find(key(row.parallelism, row.recompute));
    if (it == ours.end()) {
      ADD_FAILURE() << "SimuMax found feasible but we did not: " << key(row.parallelism, row.recompute);
      continue;
    }
    const SearchEvaluation& e = *it->second;
    EXPECT_NEAR(e.mfu, row.mfu, 1e-12 * row.mfu) << key(row.parallelism, row.recompute);
    for (const auto& [stage, gib] : row.peaks) {
      auto s = std::find_if(e.stage_peaks_gib.begin(), e.stage_peaks_gib.end(),
                            [&](const auto& p) { return p.first == stage; });
      ASSERT_NE(s, e.stage_peaks_gib.end()) << stage;
      EXPECT_NEAR(s->second, gib, 1e-9) << key(row.parallelism, row.recompute) << " " << stage;
    }
    ours.erase(it);
  }
  ASSERT_TRUE(r.best.has_value());
  const SearchEvaluation& best = r.evaluations[*r.best];
  EXPECT_EQ(best.parallelism, "seq4096.mbs1.mbc16.gbs256 tp1.sp1.cp1.ep1.pp2.dp16.etp1.edp16, world_size:32");
  EXPECT_EQ(best.recompute_status, "No Recompute");
  EXPECT_NEAR(best.mfu, 0.46404944130665754, 1e-12);
}

TEST(Search, ResultsDoNotDependOnThreads) {
  SearchResult a = llama8b_search(1), b = llama8b_search(2);
  ASSERT_EQ(a.evaluations.size(), b.evaluations.size());
  for (std::size_t i = 0; i < a.evaluations.size(); ++i) {
    EXPECT_EQ(a.evaluations[i].parallelism, b.evaluations[i].parallelism);
    EXPECT_EQ(a.evaluations[i].recompute_status, b.evaluations[i].recompute_status);
    EXPECT_EQ(a.evaluations[i].mfu, b.evaluations[i].mfu);
  }
  EXPECT_EQ(a.best, b.best);
}

// The benchmark space of notes/simumax.md §8.2 (SimuMax: 147 evaluations, 48 feasible, best tp2 pp8
// dp4 with full_block 5 layers, MFU 0.35814850091099704 from a SimuMax run on this machine).
TEST(Search, Llama3_70BBenchmarkSpace) {
  SearchSpace sp;
  sp.world_size = 64;
  sp.global_batch_size = 512;
  sp.tp = {1, 2, 4, 8};
  sp.pp = {1, 2, 4, 8};
  SearchResult r =
      search(load_cost_model("simumax:llama3-70b"), compat(load_simumax_strategy("tp1_pp2_dp4_mbs1").strategy),
             load_simumax_system("a100_pcie"), sp);
  EXPECT_EQ(r.evaluations.size(), 147u);
  EXPECT_EQ(r.ranking().size(), 48u);
  ASSERT_TRUE(r.best.has_value());
  const SearchEvaluation& b = r.evaluations[*r.best];
  EXPECT_EQ(b.parallelism, "seq4096.mbs1.mbc128.gbs512 tp2.sp2.cp1.ep1.pp8.dp4.etp1.edp8, world_size:64");
  EXPECT_EQ(b.recompute_status, "full_block, recompute_layer_num=5");
  EXPECT_NEAR(b.mfu, 0.35814850091099704, 1e-12);
  EXPECT_NEAR(b.straggler_ratio, 1.0848528137423856, 1e-12);
}

// DeepSeek-V2-Lite (MoE, MLA), 32 GPUs: SimuMax found 109 evaluations, 94 feasible, best ep1 pp4 dp8 (§8.2).
TEST(Search, DeepSeekV2LiteMoESpace) {
  SearchSpace sp;
  sp.world_size = 32;
  sp.global_batch_size = 256;
  sp.ep = {1, 2, 4, 8, 16};
  sp.pp = {1, 2, 4};
  SearchResult r =
      search(load_cost_model("simumax:deepseekv2-lite"), compat(load_simumax_strategy("ep8_pp1_dp8_mbs1").strategy),
             load_simumax_system("a100_pcie"), sp);
  EXPECT_EQ(r.evaluations.size(), 109u);
  EXPECT_EQ(r.ranking().size(), 94u);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.evaluations[*r.best].ep, 1);
  EXPECT_EQ(r.evaluations[*r.best].pp, 4);
  EXPECT_NEAR(r.evaluations[*r.best].mfu, 0.2240, 5e-5);
}

// tp sizes the user names are searched for MoE models too (MLA is priced with tp > 1); SimuMax searches MoE
// models at tp 1 only, kept under --simumax-compat.
TEST(Search, MoEModelsSearchTheTensorParallelSizesGiven) {
  SearchSpace sp;
  sp.world_size = 32;
  sp.global_batch_size = 256;
  sp.tp = {1, 2};
  sp.ep = {4};
  sp.pp = {1};
  auto tps = [&](const Strategy& base) {
    std::set<int> seen;
    for (const auto& e : search(load_cost_model("simumax:deepseekv2-lite"), base, load_simumax_system("a100_pcie"), sp)
                             .evaluations)
      if (e.error.empty()) seen.insert(e.tp);
    return seen;
  };
  Strategy base = load_simumax_strategy("ep8_pp1_dp8_mbs1").strategy;
  EXPECT_EQ(tps(base), (std::set<int>{1, 2}));
  EXPECT_EQ(tps(compat(base)), (std::set<int>{1}));
}

TEST(Search, SharedReferenceCsv) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  // The original CSV has the same rows as the in-repo extract.
  std::ifstream in(shared_data_dir() /
                   "reference_outputs/simumax/search_bench_llama3-8b_w32_ppall/search_dump/"
                   "llama3_8b_a100_pcie_bf16_seqlen4096_worldsize32_gbs256_all_search_strategies.csv");
  ASSERT_TRUE(in);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const Row& row : reference_rows()) EXPECT_NE(text.find(row.parallelism), std::string::npos);
}

// Interleaved stages and context parallelism are searched when asked (SimuMax searches neither).  Llama-3 70B
// on 64 H100s with 16 micro batches per rank at pp 4: the interleaved schedule's smaller bubble wins — the
// best layout has vpp > 1 and beats every vpp-1 layout; the layouts Megatron refuses are skipped with the
// reason (vpp on pp 1, micro batches not a multiple of pp); 80 layers over pp · 3 chunks (not even, nor
// with the embedding and loss as slots) get a --pipeline-model-parallel-layout, SimuMax refuses them.
TEST(Search, InterleavedStagesAndContextParallelWhenAsked) {
  const ModelSpec m = load_cost_model("llama3-70b");
  Strategy base = megatron_bf16_base(8192);
  SearchSpace sp;
  sp.world_size = 64;
  sp.global_batch_size = 64;
  sp.tp = {4, 8};
  sp.pp = {1, 4, 8};
  sp.vpp = {1, 3, 5};
  sp.recompute = {RecomputeSearch::None, RecomputeSearch::FullBlock};
  const SearchResult r = search(m, base, load_simumax_system("h100-sxm"), sp);
  ASSERT_TRUE(r.best.has_value());
  const SearchEvaluation& b = r.evaluations[*r.best];
  EXPECT_GT(b.vpp, 1);
  double best_plain = 0;
  std::set<int> vpps;
  for (const auto& e : r.evaluations) {
    vpps.insert(e.vpp);
    if (e.feasible && e.vpp == 1) best_plain = std::max(best_plain, e.mfu);
    if (e.vpp > 1) {
      EXPECT_GT(e.pp, 1);
      EXPECT_EQ(m.num_layers % (e.pp * e.vpp) != 0, !e.pipeline_layout.empty()) << e.pp << " " << e.vpp;
      if (!e.pipeline_layout.empty()) {
        EXPECT_EQ(parse_pipeline_layout(e.pipeline_layout, e.pp, 80, 0),
                  balanced_pipeline_layout(80, e.pp, e.vpp, 0));
      }
      EXPECT_EQ(e.micro_batches % e.pp, 0);
    }
  }
  EXPECT_EQ(vpps, (std::set<int>{1, 3, 5}));
  EXPECT_GT(b.mfu, best_plain);
  auto skipped = [&](const std::string& why) {
    return std::any_of(r.skipped.begin(), r.skipped.end(),
                       [&](const std::string& s) { return s.find(why) != std::string::npos; });
  };
  EXPECT_TRUE(skipped("an interleaved schedule needs pp > 1"));
  Strategy compat_base = base;
  compat_base.simumax_compat = true;
  SearchSpace three = sp;
  three.vpp = {3};
  three.pp = {4};
  const SearchResult refused = search(m, compat_base, load_simumax_system("h100-sxm"), three);
  EXPECT_TRUE(refused.evaluations.empty());
  EXPECT_TRUE(std::any_of(refused.skipped.begin(), refused.skipped.end(), [](const std::string& s) {
    return s.find("layers not divisible by pp·vpp") != std::string::npos;
  }));

  // 32K tokens per sample on 8 GPUs: cp splits the sequence; dp = world / (tp·cp·pp).
  SearchSpace cs;
  cs.world_size = 8;
  cs.global_batch_size = 16;
  cs.tp = {1, 2};
  cs.pp = {1};
  cs.cp = {1, 2, 4};
  cs.recompute = {RecomputeSearch::None};
  Strategy long_base = base;
  long_base.seq_length = 32768;
  const SearchResult c = search(load_cost_model("llama3-8b"), long_base, load_simumax_system("h100-sxm"), cs);
  std::set<int> cps;
  for (const auto& e : c.evaluations) {
    cps.insert(e.cp);
    EXPECT_EQ(e.dp * e.tp * e.cp * e.pp, 8) << e.parallelism;
    EXPECT_NE(e.parallelism.find("cp" + std::to_string(e.cp) + "."), std::string::npos) << e.parallelism;
  }
  EXPECT_EQ(cps, (std::set<int>{1, 2, 4}));
  ASSERT_TRUE(c.best.has_value());
  // Without cp the same sizes (tp 1 / 2) need more memory per GPU for the 32K activations.
  double peak_cp1 = 1e9, peak_cp4 = 1e9;
  for (const auto& e : c.evaluations) {
    if (e.tp != 2) continue;
    if (e.cp == 1) peak_cp1 = std::min(peak_cp1, e.peak_gib);
    if (e.cp == 4) peak_cp4 = std::min(peak_cp4, e.peak_gib);
  }
  EXPECT_LT(peak_cp4, peak_cp1);
}

// Interleaved layouts whose layers do not split evenly over pp·vpp chunks count the loss, or the embedding
// and the loss, as layer slots (Megatron's --account-for-loss/embedding-in-pipeline-split) as NeMo splits
// Llama-3.1-405B's 126 layers into 8 · 8 chunks of two slots, and into 16 · 8 chunks of one (the first chunk
// the embedding alone, the last the loss alone: NeMo's GB200 layout); every such layout under
// --simumax-compat (SimuMax refuses it) is skipped.
TEST(Search, UnevenInterleavedSplitsCountTheEmbeddingAndLoss) {
  const ModelSpec m = load_cost_model("llama3.1-405b");
  ASSERT_EQ(m.num_layers, 126);
  Strategy base = megatron_bf16_base(8192);
  SearchSpace sp;
  sp.world_size = 1024;
  sp.global_batch_size = 512;
  sp.tp = {8};
  sp.pp = {8, 16};
  sp.cp = {2};
  sp.vpp = {1, 8};
  sp.recompute = {RecomputeSearch::None};
  const SystemSpec sys = load_simumax_system("h100-sxm");
  const SearchResult r = search(m, base, sys, sp);
  bool interleaved = false;
  std::set<int> pps;
  for (const auto& e : r.evaluations) {
    if (e.vpp == 1) {
      EXPECT_FALSE(e.embedding_in_split || e.loss_in_split);
      // SimuMax's uneven split, as Megatron's --decoder-last-pipeline-num-layers: ⌈126 / pp⌉ on the others.
      EXPECT_EQ(e.last_stage_layers, e.pp == 16 ? 6 : 14) << e.pp;
      continue;
    }
    EXPECT_EQ(e.last_stage_layers, -1);
    interleaved = true;
    pps.insert(e.pp);
    EXPECT_TRUE(e.embedding_in_split && e.loss_in_split);
    EXPECT_TRUE(e.pipeline_layout.empty());
    EXPECT_TRUE(e.error.empty()) << e.error;
    // The same layout priced directly with Megatron's flags.
    Strategy st = base;
    st.world_size = 1024;
    st.tp = 8;
    st.pp = e.pp;
    st.cp = 2;
    st.vpp = 8;
    st.micro_batch_size = 1;
    st.global_batch_size = 512;
    st.account_for_embedding_in_pipeline_split = st.account_for_loss_in_pipeline_split = true;
    st.layer_recompute = e.recompute;
    EXPECT_NEAR(estimate(m, st, sys).iteration_ms, e.iteration_ms, 1e-6 * e.iteration_ms);
  }
  EXPECT_TRUE(interleaved);
  EXPECT_EQ(pps, (std::set<int>{8, 16}));
  // 127 layers: the loss alone makes 128 slots.
  ModelSpec odd = m;
  odd.num_layers = 127;
  sp.pp = {8};
  sp.vpp = {8};
  const SearchResult o = search(odd, base, sys, sp);
  ASSERT_FALSE(o.evaluations.empty());
  EXPECT_TRUE(o.evaluations.front().loss_in_split);
  EXPECT_FALSE(o.evaluations.front().embedding_in_split);
  // SimuMax refuses them.
  Strategy compat = base;
  compat.simumax_compat = true;
  const SearchResult c = search(m, compat, sys, sp);
  EXPECT_TRUE(c.evaluations.empty());
  EXPECT_TRUE(std::any_of(c.skipped.begin(), c.skipped.end(), [](const std::string& s) {
    return s.find("layers not divisible by pp·vpp") != std::string::npos;
  }));
}

TEST(SearchCli, TableCsvJsonAndExitStatus) {
  std::string csv =
      (std::filesystem::temp_directory_path() / ("preflight_search_" + std::to_string(::getpid()) + ".csv"))
          .string();
  RunResult r = run_preflight(
      "search --model simumax:llama3-8b --world-size 8 --global-batch-size 32 --tp 1,2 --pp 1,2 "
      "--recompute none --csv " +
      shell_quote(csv) + " --top 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("best:"), std::string::npos);
  std::string table = read_file(csv);
  EXPECT_EQ(table.rfind("rank,feasible,tp,pp,ep,etp,dp,cp,vpp,", 0), 0u);
  EXPECT_GE(std::count(table.begin(), table.end(), '\n'), 4);
  std::filesystem::remove(csv);

  r = run_preflight(
      "search --model simumax:llama3-8b --world-size 8 --global-batch-size 32 --tp 1,2 --pp 1,2 "
      "--recompute none --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evaluations"], 4);
  EXPECT_FALSE(j["best"].is_null());

  // Llama-3 70B on 8 GPUs without model parallelism fits nowhere.
  r = run_preflight(
      "search --model simumax:llama3-70b --world-size 8 --global-batch-size 8 --tp 1 --pp 1 --recompute "
      "none");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("no layout fits"), std::string::npos);

  // --cp / --vpp: their columns appear when searched.
  r = run_preflight(
      "search --model simumax:llama3-8b --world-size 8 --global-batch-size 32 --tp 1,2 --pp 2 --vpp 1,2 --cp "
      "1,2 "
      "--recompute none --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" cp  vpp "), std::string::npos) << r.out;
  r = run_preflight("search --model simumax:llama3-8b --world-size 8 --global-batch-size 32 --vpp 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--vpp"), std::string::npos) << r.err;

  r = run_preflight(
      "search --model simumax:llama3-8b --world-size 8 --global-batch-size 32 --recompute sometimes");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--recompute"), std::string::npos);
}

// `--model` takes the analyzer's presets; a layout that needs no recompute comes back from every recompute
// kind (SimuMax's CSV keeps each), and the top-K table shows it once.
TEST(SearchCli, PresetModelAndDistinctTopRows) {
  RunResult r = run_preflight(
      "search --model llama3-8b --world-size 32 --global-batch-size 256 --tp 1,2 --pp 1,2,4 "
      "--recompute none,full_block --top 6 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "llama3-8b");
  ASSERT_EQ(j["top"].size(), 6u);
  std::set<std::string> rows;
  for (const auto& e : j["top"]) {
    std::string key = e["parallelism"].get<std::string>() + " " + e["recompute_status"].get<std::string>() +
                      " " + std::to_string(e["recompute_layers"].get<int>());
    EXPECT_TRUE(rows.insert(key).second) << "duplicate row " << key;
  }
  // Same best as SimuMax's own search over this space (reference run search_bench_llama3-8b_w32_ppall,
  // whose best is tp1 pp2 without recompute; its model file differs only by one vocabulary entry).
  EXPECT_EQ(j["best"]["tp"], 1);
  EXPECT_EQ(j["best"]["pp"], 2);
  EXPECT_EQ(j["best"]["recompute_layers"], 0);
  // The table ends with what published runs of the model's class say about the preset searched on (every
  // layout has the same model and precision); SimuMax's A100-PCIe file has none.
  r = run_preflight(
      "search --model llama3-8b --system h100 --world-size 32 --global-batch-size 256 --tp 1,2 --pp 1,2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(" dense bf16 runs on h100-sxm priced "), std::string::npos) << r.out;
  r = run_preflight("search --model llama3-8b --world-size 32 --global-batch-size 256 --tp 1,2 --pp 1,2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("published runs: none on a100_pcie"), std::string::npos) << r.out;
}

// search --config searches under the yaml's context.max_device_memory (MindSpore's pool), as estimate compares:
// 55 GiB less the 10 GiB margin.
TEST(SearchCli, MindFormersMaxDeviceMemoryIsTheLimit) {
  RunResult r = run_preflight("search --system ascend-910b --json --quiet --config " +
                              shell_quote((preflight::test::data_dir() / "mindformers" / "finetune_qwen2_7b.yaml").string()));
  ASSERT_LE(r.exit_code, 1) << r.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out)["memory_limit_gib"].get<double>(), 45.0);
  EXPECT_NE(r.err.find("context.max_device_memory 55.0 GiB"), std::string::npos) << r.err;
}

// Llama-3 8B on 8 H100 without model parallelism or recompute: 81.5 GiB with SimuMax's reserve (allocated
// / 0.94), 76.6 GiB allocated, on an 80 GiB device.  The search (with the reserve, as SimuMax) finds no
// layout, and says that one fits by the allocated peak — what `estimate` calls tight; --no-reserved ranks it.
TEST(SearchCli, NamesLayoutsThatFitOnlyByTheAllocatedPeak) {
  const std::string cmd =
      "search --model llama3-8b --system h100 --world-size 8 --global-batch-size 32 --tp 1 --pp 1 "
      "--recompute "
      "none --mem-margin-gib 0 --quiet";
  RunResult r = run_preflight(cmd);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("no layout fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 more layout fits by the allocated peak only"), std::string::npos) << r.out;
  r = run_preflight(cmd + " --json");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["allocated_only_layouts"], 1);
  r = run_preflight(cmd + " --no-reserved --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["allocated_only_layouts"], 0);
  const double allocated = j["best"]["allocated_peak_gib"].get<double>();
  EXPECT_DOUBLE_EQ(j["best"]["peak_gib"].get<double>(), allocated);
  EXPECT_GT(allocated, 80 * 0.94);  // over the device with the reserve …
  EXPECT_LT(allocated, 80.0);       // … but not allocated
  // With room for the reserve the layout fits and nothing is named.
  r = run_preflight(
      "search --model llama3-8b --system h100 --world-size 8 --global-batch-size 32 --tp 2 --pp 1 "
      "--recompute "
      "none --mem-margin-gib 0 --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("by the allocated peak only"), std::string::npos) << r.out;
}

// --lora-rank: Llama-3-70B on 8 H100s does not fit fully fine-tuned in any layout (its gradients and
// optimizer states alone are 16 bytes a parameter); under LoRA the frozen weights are all it holds and
// layouts fit.
TEST(SearchCli, LoraFitsWhereFullFineTuningCannot) {
  const std::string args =
      "search --model llama3-70b --system h100-sxm --world-size 8 --global-batch-size 32 --seq-length 4096 "
      "--quiet --top 3";
  const auto full = preflight::test::run_preflight(args);
  EXPECT_EQ(full.exit_code, 1) << full.err;
  EXPECT_NE(full.out.find("no layout fits"), std::string::npos) << full.out;
  const auto lora = preflight::test::run_preflight(args + " --lora-rank 16");
  ASSERT_EQ(lora.exit_code, 0) << lora.err;
  EXPECT_NE(lora.out.find("best: "), std::string::npos) << lora.out;
  EXPECT_NE(lora.out.find("lora dense bf16"), std::string::npos) << lora.out;  // its own run class
  EXPECT_EQ(preflight::test::run_preflight(args + " --lora-rank -1").exit_code, 2);
}

// Routing imbalance in the search (--moe-load-imbalance): every expert-parallel candidate is priced on its
// busiest rank, so the best balanced layout (Mixtral-8x7B on 32 H100s: ep 8) runs slower at 2.5 and the
// search moves to a layout with less expert parallelism; ep 1 is unaffected.  (1.5 moved it while Mixtral's
// expert GEMMs, widths SimuMax's file did not measure, took the flat grouped default: half the dense rate.)
TEST(SearchCli, LoadImbalanceMovesAwayFromExpertParallelism) {
  const std::string args =
      "search --model mixtral-8x7b --system h100-sxm --world-size 32 --global-batch-size 256 --seq-length "
      "4096 "
      "--quiet --top 3 --json";
  const auto bal = preflight::test::run_preflight(args);
  ASSERT_EQ(bal.exit_code, 0) << bal.err;
  const auto imb = preflight::test::run_preflight(args + " --moe-load-imbalance 2.5");
  ASSERT_EQ(imb.exit_code, 0) << imb.err;
  const nlohmann::json b = nlohmann::json::parse(bal.out)["best"], i = nlohmann::json::parse(imb.out)["best"];
  ASSERT_GT(b["ep"].get<int>(), 1);
  EXPECT_LT(i["mfu"].get<double>(), b["mfu"].get<double>());
  EXPECT_LT(i["ep"].get<int>(), b["ep"].get<int>());
  EXPECT_EQ(preflight::test::run_preflight(args + " --moe-load-imbalance 0.8").exit_code, 2);
  EXPECT_EQ(preflight::test::run_preflight(
                "search --model llama3-8b --system h100-sxm --world-size 8 --moe-load-imbalance 1.2")
                .exit_code,
            2);
}

// Packed samples (`--packed-seq-mean-length`, as estimate's): every candidate's attention priced within the
// samples — the best layout's step shorter (MFU, over the row's FLOPs, higher); refused above the sequence
// length and below 1.
TEST(SearchCli, PackedSequencesPriceAttentionWithinTheSamples) {
  const std::string args =
      "search --model llama3-8b --system h100-sxm --world-size 8 --global-batch-size 64 --seq-length 8192 "
      "--quiet --top 1 --json";
  const auto rows = preflight::test::run_preflight(args);
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  const auto packed = preflight::test::run_preflight(args + " --packed-seq-mean-length 512");
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  const nlohmann::json r = nlohmann::json::parse(rows.out)["best"],
                       p = nlohmann::json::parse(packed.out)["best"];
  EXPECT_GT(p["mfu"].get<double>(), r["mfu"].get<double>());
  EXPECT_EQ(preflight::test::run_preflight(args + " --packed-seq-mean-length 9000").exit_code, 2);
  EXPECT_EQ(preflight::test::run_preflight(args + " --packed-seq-mean-length 0.5").exit_code, 2);
}

// A launch's own Megatron arguments as the base (after --): the model, FP8, TP communication overlap, the
// distributed optimizer, batch, sequence and the world size come from the launch; tp, pp, cp, vpp and
// recompute are searched.  NeMo 24.07's Llama-3-70B FP8 launch on 64 H100s (tests/data/time_corpus): among
// tp 2 / 4 / 8, pp 2 / 4 / 8, cp 1 / 2 and vpp 1 / 5 the best is the layout NVIDIA published (tp 4 pp 4 cp 2
// vpp 5), priced as `estimate` prices the launch itself.
TEST(SearchCli, MegatronLaunchIsTheBase) {
  const std::string args = corpus_launch("h100_nemo_2407.json", 11, "llama3-70b");
  const RunResult r = run_preflight(
      "search --system h100-sxm --tp 2,4,8 --pp 2,4,8 --cp 1,2 --vpp 1,5 --recompute none,full_block --quiet "
      "--json --top 3 --" +
      args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json result = nlohmann::json::parse(r.out);
  const nlohmann::json best = result["best"];
  // The launch's own layout is the best here, and said so.
  EXPECT_EQ(result["launch_layout"]["rank"], 1);
  EXPECT_GT(result["launch_layout"]["layouts_that_fit"].get<int>(), 1);
  EXPECT_EQ(result["launch_layout"]["iteration_ms"], best["iteration_ms"]);
  EXPECT_EQ(best["tp"], 4);
  EXPECT_EQ(best["pp"], 4);
  EXPECT_EQ(best["cp"], 2);
  EXPECT_EQ(best["vpp"], 5);
  EXPECT_EQ(best["dp"], 2);  // 64 GPUs from the launch's --nproc_per_node / --nnodes
  const RunResult e = run_preflight("estimate --json --system h100-sxm --" + args);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NEAR(best["iteration_ms"].get<double>(),
              nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>(), 1e-3);
  // Sizes not listed: the search's defaults with the launch's own in them (its tp 4, cp 2 and vpp 5), and its
  // rank on a line of the table.
  const RunResult d =
      run_preflight("search --system h100-sxm --pp 4 --recompute none --quiet --top 3 --" + args);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("the launch's own layout (tp 4 pp 4 ep 1 cp 2 vpp 5, micro batch 1): ranked "),
            std::string::npos)
      << d.out;
  // Megatron arguments and a SimuMax strategy are two bases: refused.
  EXPECT_EQ(run_preflight("search --system h100-sxm --strategy tp1_pp2_dp4_mbs1 --quiet --" + args).exit_code,
            2);
}

// A launch that recomputes: its own --recompute-* flags are one more choice of every layout (`launch`), so
// its own layout is ranked as launched — NeMo's GPT-OSS-120B launch on 64 H100s (tests/data/time_corpus;
// selective recompute of layernorm and moe_act, which none of the search's other choices is) is priced
// exactly as `estimate` prices it, the table names the modules, and the line says when its sizes are faster
// with another choice.  An explicit --recompute without `launch` leaves it out; `launch` without a launch is
// refused.
TEST(SearchCli, TheLaunchIsRankedAsLaunched) {
  const std::string args = corpus_launch("h100_nemo_moe.json", 7, "gpt-oss-120b");
  ASSERT_NE(args.find("'--recompute-modules' 'layernorm' 'moe_act'"), std::string::npos) << args;
  const std::string space = "search --system h100-sxm --tp 1 --pp 2,4 --ep 8,16 --vpp 1 --mem-margin-gib 0 ";
  const RunResult r = run_preflight(space + "--quiet --json --top 100 --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json result = nlohmann::json::parse(r.out);
  const nlohmann::json own = result["launch_layout"];
  EXPECT_EQ(own["recompute"], "launch");
  EXPECT_NE(own["recompute_status"].get<std::string>().find("modules=[layernorm,moe_act]"), std::string::npos)
      << own;
  const RunResult e = run_preflight("estimate --json --system h100-sxm --" + args);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const double launched = nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>();
  EXPECT_NEAR(own["iteration_ms"].get<double>(), launched, 1e-3);
  // Its sizes without recompute are faster (the selective modules' recompute costs time, the memory fits):
  // said, and the rank counts the other layouts ahead of the launch only.
  ASSERT_TRUE(own.contains("fastest_iteration_ms")) << own;
  EXPECT_EQ(own["fastest_recompute"], "none");
  EXPECT_LT(own["fastest_iteration_ms"].get<double>(), launched);
  std::set<std::string> ahead;
  for (const auto& t : result["top"])
    if (t["iteration_ms"].get<double>() < launched && !(t["pp"] == 4 && t["ep"] == 8))
      ahead.insert(t["pp"].dump() + "/" + t["ep"].dump());
  EXPECT_EQ(own["rank"].get<std::size_t>(), ahead.size() + 1) << own;
  bool named = false;
  for (const auto& t : result["top"]) named = named || t["recompute"] == "launch";
  EXPECT_TRUE(named);
  const RunResult text = run_preflight(space + "--quiet --top 100 --" + args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("sel layernorm+moe_act"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("as launched: selective_recompute"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("; its sizes with none: "), std::string::npos) << text.out;
  // An explicit list without `launch`: the launch's flags are not a choice (its sizes' fastest is ranked).
  const RunResult n = run_preflight(space + "--recompute none --quiet --json --" + args);
  ASSERT_EQ(n.exit_code, 0) << n.err;
  EXPECT_EQ(nlohmann::json::parse(n.out)["launch_layout"]["recompute"], "none");
  // A launch over the limit only by the allocator's reserve (NeMo 24.07's Nemotron-340B on H100, which
  // `estimate` calls tight): not ranked, and the line says it fits by its allocated peak.
  const std::string nemotron_args = corpus_launch("h100_nemo_2407.json", 9, "nemotron-340b");
  const RunResult tight = run_preflight(
      "search --system h100-sxm --tp 8 --pp 8 --vpp 12 --cp 1,2 --mem-margin-gib 0 --quiet --top 3 --" +
      nemotron_args);
  ASSERT_EQ(tight.exit_code, 0) << tight.err;
  EXPECT_NE(tight.out.find("GiB as launched, "), std::string::npos) << tight.out;
  EXPECT_NE(tight.out.find("; tight: its allocated peak "), std::string::npos) << tight.out;
  const RunResult tight_estimate = run_preflight("estimate --system h100-sxm --" + nemotron_args);
  EXPECT_EQ(tight_estimate.exit_code, 0) << tight_estimate.err;  // fits, tight
  EXPECT_NE(tight_estimate.out.find("tight:"), std::string::npos) << tight_estimate.out;
  // `launch` needs a launch.
  const RunResult bad = run_preflight(
      "search --model llama3-8b --system h100-sxm --world-size 8 --global-batch-size 64 --recompute "
      "none,launch "
      "--quiet");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--recompute"), std::string::npos) << bad.err;
}

// Context-parallel layouts need a flash / fused attention kernel: a launch of the legacy model (Narayanan et
// al.'s 2021 GPT-1.7B, math attention) is not offered cp 8 — it had been, priced as if CP's attention ran the
// math kernel over each rank's chunk alone (37 % faster than the launch's own layout, a layout Megatron
// refuses); with --use-mcore-models and flash attention it is.
TEST(SearchCli, ContextParallelNeedsFlashAttention) {
  const std::string args = corpus_launch("a100_megatron_gpt_sc21.json", 0, "gpt-1.7B");
  const std::string space =
      "search --system a100-sxm-80gb --tp 1 --pp 1 --cp 1,8 --recompute none,full_block --quiet --json --top "
      "100 ";
  const RunResult legacy = run_preflight(space + "--" + args);
  ASSERT_EQ(legacy.exit_code, 0) << legacy.err;
  const nlohmann::json l = nlohmann::json::parse(legacy.out);
  ASSERT_FALSE(l["top"].empty());
  for (const auto& t : l["top"]) EXPECT_EQ(t["cp"], 1) << t;
  const RunResult core = run_preflight(space + "-- " + args + " --use-mcore-models --use-flash-attn");
  ASSERT_EQ(core.exit_code, 0) << core.err;
  const nlohmann::json c = nlohmann::json::parse(core.out);
  bool cp8 = false;
  for (const auto& t : c["top"]) cp8 = cp8 || t["cp"] == 8;
  EXPECT_TRUE(cp8) << core.out;
}

// A launch with the expert-parallel all-to-all overlap (--overlap-moe-expert-parallel-comm; the Qwen3-30B-A3B
// verification card on 16 H100s) searched over ep 1 and pp 2 without virtual stages: Megatron asserts the
// overlap needs ep > 1, the interleaved schedule at pp > 1, and no full recompute, so those evaluations run
// without it (as TP overlap is off at tp 1) — 36 of 61 had been errors, never ranked — each priced as
// `estimate` prices the launch with the flag dropped.
TEST(SearchCli, ExpertParallelOverlapOffWhereMegatronRefusesIt) {
  const std::string args = corpus_launch("h100_nemo_verification_cards.json", 0, "qwen3-30b-a3b");
  ASSERT_NE(args.find("'--overlap-moe-expert-parallel-comm'"), std::string::npos);
  const auto csv = preflight::test::scratch_dir() / "ep_overlap.csv";
  const RunResult r = run_preflight(
      "search --system h100-sxm --tp 1 --pp 1,2 --vpp 1,2 --ep 1,8,16 --mem-margin-gib 0 --quiet --json "
      "--top 100 "
      "--csv " +
      shell_quote(csv.string()) + " --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(csv);
  std::string header, line;
  std::getline(in, header);
  ASSERT_EQ(header.substr(header.rfind(',') + 1), "error");
  int rows = 0;
  while (std::getline(in, line)) {
    ++rows;
    EXPECT_EQ(line.back(), ',') << line;  // an empty error column
  }
  EXPECT_GT(rows, 40);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::string without = args;
  without.erase(without.find(" '--overlap-moe-expert-parallel-comm'"),
                std::string(" '--overlap-moe-expert-parallel-comm'").size());
  bool checked = false;
  for (const auto& t : j["top"]) {
    if (!(t["pp"] == 2 && t["vpp"] == 1 && t["ep"] == 8 && t["recompute"] == "none")) continue;
    const RunResult e = run_preflight("estimate --json --system h100-sxm --" + without +
                                      " --pipeline-model-parallel-size 2 --expert-model-parallel-size 8");
    ASSERT_LE(e.exit_code, 1) << e.err;
    EXPECT_NEAR(t["iteration_ms"].get<double>(),
                nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>(), 1e-3);
    checked = true;
  }
  EXPECT_TRUE(checked) << r.out;
}

// A launch at tp 1 has no --sequence-parallel to carry (Megatron ignores it there): the search's tp > 1
// layouts run sequence parallelism, as Megatron's and NeMo's recipes run tensor parallelism — NeMo's
// GPT-OSS-120B launch on 64 H100s at tp 2 is priced as `estimate` prices it with --tensor-model-parallel-size
// 2
// --sequence-parallel.  Without it a MoE model at tp > 1 is refused (Megatron refuses it): every tp > 1
// evaluation of a tp-1 MoE launch had been an error, never ranked.
TEST(SearchCli, TensorParallelLayoutsOfATp1LaunchRunSequenceParallelism) {
  const std::string args = corpus_launch("h100_nemo_moe.json", 7, "gpt-oss-120b");
  ASSERT_EQ(args.find("'--sequence-parallel'"), std::string::npos);
  ASSERT_EQ(args.find("'--expert-tensor-parallel-size'"), std::string::npos);
  // Both expert tp choices at tp 2: Megatron's default for this launch (etp = tp) and 1.
  const RunResult r = run_preflight(
      "search --system h100-sxm --tp 2 --pp 4 --ep 8 --vpp 1 --etp 1,tp --recompute none --mem-margin-gib 0 "
      "--quiet --json --top 4 --" +
      args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json top = nlohmann::json::parse(r.out)["top"];
  ASSERT_EQ(top.size(), 2u) << r.out;
  // the launch at tp 2 without its recompute flags
  auto estimate = [&](const std::string& extra) {
    std::string a = args;
    for (const char* flag :
         {" '--recompute-granularity' 'selective'", " '--recompute-modules' 'layernorm' 'moe_act'"})
      if (const auto at = a.find(flag); at != std::string::npos) a.erase(at, std::string(flag).size());
    return run_preflight("estimate --json --system h100-sxm --" + a + " --tensor-model-parallel-size 2" +
                         extra);
  };
  for (const auto& e : top) {
    ASSERT_EQ(e["tp"], 2);
    const int etp = e["etp"].get<int>();
    ASSERT_TRUE(etp == 1 || etp == 2) << etp;
    const RunResult with_sp =
        estimate(" --sequence-parallel" + std::string(etp == 1 ? " --expert-tensor-parallel-size 1" : ""));
    ASSERT_LE(with_sp.exit_code, 1) << with_sp.err;
    EXPECT_NEAR(e["iteration_ms"].get<double>(),
                nlohmann::json::parse(with_sp.out)["summary"]["iteration_ms"].get<double>(), 1e-3)
        << "etp " << etp;
  }
  EXPECT_NE(top[0]["etp"], top[1]["etp"]);
  const RunResult without = estimate("");
  EXPECT_EQ(without.exit_code, 2);
  EXPECT_NE(without.err.find("--sequence-parallel"), std::string::npos) << without.err;
}

// Expert tensor parallelism as Megatron runs it: a launch without --expert-tensor-parallel-size runs every
// layout's experts over its tp (Megatron's default), and the launch's own evaluation is the launch as
// `estimate` prices it.  The search had taken SimuMax's etp 1 for every layout and ranked that as the launch:
// for Qwen3-235B's tp 2 launch without the flag, 78.5 s at 256 GPUs where the launch needs 512 (ep 32 · etp 2
// · pp 8) and runs in 64.0 s.  A size the launch names is kept; --etp searches others; the table shows an
// etp column only where a row's expert tp is not its tp.
TEST(SearchCli, ExpertTensorParallelismAsTheLaunchRunsIt) {
  std::string args = corpus_launch("h100_nemo_moe.json", 6, "qwen3-235b-a22b fp8 tp2");
  const std::string etp1 = " '--expert-tensor-parallel-size' '1'";
  ASSERT_NE(args.find(etp1), std::string::npos);
  const std::string space =
      "search --system h100-sxm --tp 2 --pp 8 --ep 32 --vpp 4 --recompute none --quiet ";
  auto launch_of = [&](const std::string& a, const std::string& extra) {
    const RunResult r = run_preflight(space + extra + "--json --" + a);
    EXPECT_LE(r.exit_code, 1) << r.err;
    return nlohmann::json::parse(r.out)["launch_layout"];
  };
  auto estimate_ms = [&](const std::string& a) {
    const RunResult e = run_preflight("estimate --json --system h100-sxm --" + a);
    EXPECT_LE(e.exit_code, 1) << e.err;
    return nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>();
  };
  // As published: etp 1, named.
  const nlohmann::json named = launch_of(args, "");
  EXPECT_EQ(named["etp"], 1);
  EXPECT_NEAR(named["iteration_ms"].get<double>(), estimate_ms(args), 1e-3);
  // Without the flag: etp 2, as Megatron runs it.
  const std::string dflt = args.erase(args.find(etp1), etp1.size());
  const nlohmann::json own = launch_of(dflt, "");
  EXPECT_EQ(own["etp"], 2);
  EXPECT_NEAR(own["iteration_ms"].get<double>(), estimate_ms(dflt), 1e-3);
  EXPECT_GT(std::abs(own["iteration_ms"].get<double>() / named["iteration_ms"].get<double>() - 1), 0.05);
  // --etp 1 searches the other size: the launch's own (etp 2) is then not among the layouts searched.
  const RunResult other = run_preflight(space + "--etp 1 --top 3 --" + dflt);
  EXPECT_LE(other.exit_code, 1) << other.err;
  EXPECT_NE(
      other.out.find("(tp 2 pp 8 ep 32 etp 2 cp 1 vpp 4, micro batch 1): not among the layouts searched"),
      std::string::npos)
      << other.out;
  EXPECT_NE(other.out.find("etp"), std::string::npos);
  EXPECT_EQ(run_preflight(space + "--etp 1,x --" + dflt).exit_code, 2);
  EXPECT_EQ(run_preflight(space + "--etp tp --use-etp --" + dflt).exit_code, 2);
}

// A launch without recompute is ranked as launched too: its own sizes' "none" evaluation, not the fastest
// recompute that fits.  NeMo 26.06's Qwen3-30B-A3B MXFP8 launch on 8 B300s fits only by its allocated peak
// (tight): the line says so with the launch's own price (as `estimate`'s), where it had shown a SimuMax
// selective variant 11 % slower as the launch's.
TEST(SearchCli, ALaunchWithoutRecomputeIsRankedAsLaunched) {
  const std::string args = corpus_launch("b300_nemo_moe.json", 11, "qwen3-30b-a3b mxfp8 ep8");
  ASSERT_EQ(args.find("'--recompute-granularity'"), std::string::npos);
  const std::string space =
      "search --system b300 --tp 1 --pp 1 --ep 2,8 --cp 1,2 --vpp 1 --mem-margin-gib 0 --quiet ";
  const RunResult r = run_preflight(space + "--json --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json own = nlohmann::json::parse(r.out)["launch_layout"];
  EXPECT_EQ(own["recompute"], "none");
  EXPECT_FALSE(own["fits"].get<bool>());
  const RunResult e = run_preflight("estimate --json --system b300 --" + args);
  ASSERT_EQ(e.exit_code, 0) << e.err;  // tight: fits by the allocated peak
  EXPECT_NEAR(own["iteration_ms"].get<double>(),
              nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>(), 1e-3);
  const RunResult text = run_preflight(space + "--" + args);
  EXPECT_NE(text.out.find("GiB as launched, "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("; tight: its allocated peak"), std::string::npos) << text.out;
}

// Interleaved layouts whose layers do not split over pp · vpp chunks even with the embedding and loss as
// slots get a --pipeline-model-parallel-layout as even as possible (balanced_pipeline_layout): NeMo's
// DeepSeek-V3 launch on 256 GB300s (pp 2 vp 8, 61 layers and an MTP depth; tests/data/time_corpus) is
// searched at its own sizes with the layout NeMo published, priced as `estimate` prices the launch (its
// recompute of the MLA up-projections dropped: the search's "none").  Refused before (SimuMax's rule).
TEST(SearchCli, UnevenInterleavedLayoutsGetAPipelineLayout) {
  const auto row =
      nlohmann::json::parse(read_file(data_dir() / "time_corpus" / "gb300_nemo_deepseek.json"))["runs"][0];
  std::vector<std::string> argv = row["args"].get<std::vector<std::string>>();
  const auto layout = std::find(argv.begin(), argv.end(), "--pipeline-model-parallel-layout");
  ASSERT_NE(layout, argv.end());
  ASSERT_EQ(*(layout + 1), "Et*4|(t*4|)*14tmL");
  std::string args, no_recompute;
  for (const std::string& a : argv) args += " " + shell_quote(a);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--recompute-granularity" || argv[i] == "--recompute-modules")
      ++i;  // the flag and its one value
    else
      no_recompute += " " + shell_quote(argv[i]);
  }
  const RunResult r = run_preflight(
      "search --system gb300 --tp 1 --pp 2 --vpp 8 --cp 1 --ep 32 --recompute none --quiet --json --top 3 "
      "--" +
      args);
  // Without the recipe's recompute the layout does not fit a GB300 (exit 1: no layout fits); it is priced.
  ASSERT_EQ(r.exit_code, 1) << r.err;
  const nlohmann::json own = nlohmann::json::parse(r.out)["launch_layout"];
  ASSERT_TRUE(own.contains("pipeline_layout")) << own;
  EXPECT_EQ(parse_pipeline_layout(own["pipeline_layout"].get<std::string>(), 2, 61, 1),
            parse_pipeline_layout("Et*4|(t*4|)*14tmL", 2, 61, 1));
  const RunResult e = run_preflight("estimate --json --system gb300 --" + no_recompute);
  ASSERT_EQ(e.exit_code, 1) << e.err;  // the same verdict: does not fit
  EXPECT_NEAR(own["iteration_ms"].get<double>(),
              nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>(), 1e-3);
  // SimuMax's rule (--simumax-compat) still refuses the layout.
  const RunResult c = run_preflight(
      "search --system gb300 --tp 1 --pp 2 --vpp 8 --cp 1 --ep 32 --recompute none --simumax-compat --quiet "
      "--json --" +
      args);
  ASSERT_EQ(c.exit_code, 1) << c.out << c.err;  // no layout fits: none was priced
  EXPECT_EQ(nlohmann::json::parse(c.out)["evaluations"].get<int>(), 0) << c.out;
}

// A hybrid model's interleaved or uneven pipeline split is Megatron's only through its pattern's '|'
// segments (the account-for-embedding/loss flags are refused with a pattern): NeMo's Nemotron-3-Nano launch
// (tests/data/time_corpus, here on 16 GPUs) searched at pp 2 vpp 3 gets its 52 layers as the pattern with
// six segments (not E / L slots), which `estimate` prices as the search did.
TEST(SearchCli, HybridSplitsAreThePatternsSegments) {
  const auto row = nlohmann::json::parse(
      read_file(data_dir() / "time_corpus" / "b300_nemo_nemotron3_nano.json"))["runs"][0];
  std::vector<std::string> argv = row["args"].get<std::vector<std::string>>();
  const auto nnodes = std::find(argv.begin(), argv.end(), "--nnodes");
  ASSERT_NE(nnodes, argv.end());
  *(nnodes + 1) = "2";
  auto joined = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& a : v) out += " " + shell_quote(a);
    return out;
  };
  const RunResult r = run_preflight(
      "search --system b300 --tp 1 --pp 2 --vpp 3 --ep 8 --recompute none --quiet --json --top 1 --" +
      joined(argv));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json best = nlohmann::json::parse(r.out)["best"];
  EXPECT_FALSE(best["account_for_embedding_in_pipeline_split"].get<bool>());
  EXPECT_FALSE(best["account_for_loss_in_pipeline_split"].get<bool>());
  EXPECT_EQ(best["pipeline_layout_flag"].get<std::string>(), "--hybrid-layer-pattern");
  const std::string pattern = best["pipeline_layout"].get<std::string>();
  EXPECT_EQ(std::count(pattern.begin(), pattern.end(), '|'), 5) << pattern;
  std::string letters = pattern;
  letters.erase(std::remove(letters.begin(), letters.end(), '|'), letters.end());
  const auto given = std::find(argv.begin(), argv.end(), "--hybrid-layer-pattern");
  ASSERT_NE(given, argv.end());
  EXPECT_EQ(letters, *(given + 1));
  *(given + 1) = pattern;
  argv.insert(argv.end(), {"--pipeline-model-parallel-size", "2"});
  const RunResult e = run_preflight("estimate --json --system b300 --" + joined(argv));
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NEAR(best["iteration_ms"].get<double>(),
              nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>(), 1e-3);
}

// run_mindformer.py's arguments after -- (its --config and overrides), as estimate reads them: the same
// search as --config, the yaml's own layout ranked on a line; a second, different --config is refused.
TEST(SearchCli, RunMindformerArgumentsAreTheBase) {
  const std::string yaml =
      shell_quote((preflight::test::data_dir() / "mindformers" / "finetune_qwen2_7b.yaml").string());
  const RunResult a = run_preflight("search --system ascend-910b --json --quiet --config " + yaml);
  const RunResult b = run_preflight("search --system ascend-910b --json --quiet -- --config " + yaml +
                                    " --use_parallel True");
  ASSERT_LE(a.exit_code, 1) << a.err;
  ASSERT_EQ(a.exit_code, b.exit_code) << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(ja["evaluations"], jb["evaluations"]);
  EXPECT_EQ(ja["best"], jb["best"]);
  // The yaml's own sizes (model_parallel 4, pipeline_stage 1) are ranked, as a launch's are, and named so.
  EXPECT_EQ(ja["launch_layout"]["tp"], 4);
  EXPECT_EQ(ja["launch_layout"]["pp"], 1);
  EXPECT_TRUE(ja["launch_layout"]["rank"].is_number()) << ja["launch_layout"];
  const RunResult line = run_preflight("search --system ascend-910b --quiet --config " + yaml);
  EXPECT_NE(line.out.find("the yaml's own layout (tp 4 pp 1 "), std::string::npos) << line.out;
  // run_mindformer.py's own overrides apply: a global batch of 8 sequences instead of the yaml's.
  const RunResult c =
      run_preflight("search --system ascend-910b --json --quiet -- --config " + yaml + " --batch_size 4");
  ASSERT_LE(c.exit_code, 1) << c.err;
  EXPECT_NE(nlohmann::json::parse(c.out)["best"], ja["best"]);
  const RunResult twice =
      run_preflight("search --system ascend-910b --quiet --config " + yaml + " -- --config other.yaml");
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("given twice"), std::string::npos) << twice.err;
}

// A MindFormers MoE yaml's own sizes are searched as a launch's are: the default lists with its own added.
// MindFormers' DeepSeek-V3 yaml runs model_parallel 4; the search had kept SimuMax's tp 1 for MoE models,
// so the yaml's own layout was "not among the layouts searched".
TEST(SearchCli, MoeYamlsOwnTensorParallelIsSearched) {
  const RunResult r =
      run_preflight("search --config " +
                    shell_quote((data_dir() / "mindformers" / "pretrain_deepseek3_671b.yaml").string()) +
                    " --system ascend-910b --pp 16 --quiet --json --top 50");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json own = j["launch_layout"];
  EXPECT_EQ(own["tp"], 4);
  EXPECT_EQ(own["ep"], 8);
  ASSERT_FALSE(own["rank"].is_null()) << own.dump();
  std::set<int> tps;
  for (const auto& e : j["top"]) tps.insert(e["tp"].get<int>());
  EXPECT_TRUE(tps.count(4)) << j["top"].dump();
}

// A one-stage layout whose tp · cp is the whole world (dp 1) with the output layer's weight gradients
// deferred: the head's ops are built as a pipeline's last stage would hold them (pp 2), which left dp 0 and
// divided by it (SIGFPE in a search from NeMo's Llama-3-70B launch).  The search turns the deferral off at pp
// 1 (and TP communication overlap at tp 1), as NeMo's recipes do and Megatron requires.
TEST(Search, OneStageLayoutOfTheWholeWorld) {
  const ModelSpec m = load_cost_model("llama3-70b");
  Strategy base = megatron_bf16_base(8192);
  Strategy st = base;
  st.world_size = 64;
  st.tp = 8;
  st.cp = 8;
  st.global_batch_size = 16;
  st.defer_embedding_wgrad = true;
  const SystemSpec sys = load_simumax_system("b200");
  EXPECT_GT(estimate(m, st, sys).iteration_ms, 0);
  SearchSpace sp;
  sp.world_size = 64;
  sp.global_batch_size = 16;
  sp.tp = {1, 8};
  sp.pp = {1};
  sp.cp = {8};
  sp.recompute = {RecomputeSearch::None};
  Strategy launch = base;
  launch.defer_embedding_wgrad = true;
  launch.tp_comm_overlap = true;
  const SearchResult with = search(m, launch, sys, sp), without = search(m, base, sys, sp);
  ASSERT_EQ(with.evaluations.size(), 2u);
  ASSERT_EQ(without.evaluations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    const SearchEvaluation &a = with.evaluations[i], &b = without.evaluations[i];
    EXPECT_TRUE(a.error.empty()) << a.error;
    if (a.tp == 1)
      EXPECT_EQ(a.iteration_ms, b.iteration_ms);  // neither feature applies
    else
      EXPECT_LT(a.iteration_ms, b.iteration_ms);  // tp 8: the TP overlap still hides collectives
  }
}

// A layout whose pricing throws, in a worker thread, is that layout's error: the search goes on (the
// exception left the thread and ended the process: "terminate called recursively").  Here the base still
// holds a launch's 16 pipeline stages and its selective recompute, whose per-chunk layer count DeepSeek-V3's
// 61 layers do not give without the launch's layout.
TEST(Search, AnErrorInAWorkerIsTheLayoutsOwn) {
  const ModelSpec m = load_cost_model("deepseek-v3");
  Strategy base = megatron_bf16_base(4096);
  base.pp = 16;
  base.recompute_granularity = RecomputeGranularity::Selective;
  SearchSpace sp;
  sp.world_size = 256;
  sp.global_batch_size = 1024;
  sp.tp = {1};
  sp.pp = {8, 16};
  sp.ep = {8, 16};
  sp.recompute = {RecomputeSearch::None};
  sp.threads = 2;
  const SearchResult r = search(m, base, load_simumax_system("b300"), sp);
  ASSERT_EQ(r.evaluations.size(), 4u);
  for (const auto& e : r.evaluations) EXPECT_NE(e.error.find("61 layers"), std::string::npos) << e.error;
  EXPECT_FALSE(r.best.has_value());
}

// --micro-batch-size takes a list to search (SimuMax fixes it): every size that divides the global batch with
// dp is priced, the table shows an mbs column, the JSON each row's size; a size that is not a positive
// integer is refused.  Llama-3-8B on 8 H100s, global batch 128: micro batches of 1, 2 and 4.
TEST(SearchCli, MicroBatchSizesAreSearchedWhenListed) {
  const std::string base =
      "search --model llama3-8b --system h100-sxm --world-size 8 --global-batch-size 128 --seq-length 4096 "
      "--tp 1,2 --pp 1,2 --recompute none --quiet --top 100";
  const RunResult r = run_preflight(base + " --micro-batch-size 1,2,4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  std::set<int> sizes;
  for (const auto& row : j["top"]) {
    sizes.insert(row["micro_batch_size"].get<int>());
    // micro batches = global batch / (dp · mbs)
    EXPECT_EQ(row["micro_batches"].get<int>() * row["dp"].get<int>() * row["micro_batch_size"].get<int>(),
              128);
  }
  EXPECT_EQ(sizes, (std::set<int>{1, 2, 4}));
  const RunResult table = run_preflight(base + " --micro-batch-size 1,2,4");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(" mbs "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("micro batch 1,2,4"), std::string::npos) << table.out;
  // One size: no column, as before.
  const RunResult one = run_preflight(base + " --micro-batch-size 2");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out.find(" mbs "), std::string::npos) << one.out;
  EXPECT_EQ(run_preflight(base + " --micro-batch-size 1,0").exit_code, 2);
  EXPECT_EQ(run_preflight(base + " --micro-batch-size x").exit_code, 2);
}
