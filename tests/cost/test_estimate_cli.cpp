// `preflight estimate` end to end: exit statuses, errors naming file and field, files written, warnings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace preflight::test;

namespace {
fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("preflight_estimate_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}
void write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
}
}  // namespace

TEST(EstimateCli, WritesSimuMaxFilesAndSummary) {
  fs::path out = scratch("out");
  RunResult r = run_preflight(
      "estimate --model simumax:llama3-8b --strategy tp2_pp1_dp4_mbs1 --system a100_pcie --simumax-compat --out " +
      shell_quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("first_stage"), std::string::npos);
  EXPECT_NE(r.out.find("MFU"), std::string::npos);
  auto mem = nlohmann::json::parse(read_file(out / "mem_result.json"));
  EXPECT_EQ(mem["peak_mem"], "43.6702 GB");  // SimuMax examples/perf_llama3_8b_tp2.py (notes §8.1)
  auto cost = nlohmann::json::parse(read_file(out / "compute_result.json"));
  EXPECT_EQ(cost["duration_time_per_iter"], "8.6321 s");
}

TEST(EstimateCli, BadInputNamesFileAndField) {
  fs::path bad = scratch("bad_strategy.json");
  write(bad,
        R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, "tp_size": 3, "world_size": 8})");
  RunResult r = run_preflight("estimate --model simumax:llama3-8b --strategy " + shell_quote(bad.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: " + bad.string() + ": world_size"), std::string::npos) << r.err;

  write(bad, R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, "tp_size": 2, "world_size": 8,
                 "skip_ckpt_micro_batch_num": 0})");
  r = run_preflight("estimate --model simumax:llama3-8b --strategy " + shell_quote(bad.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(bad.string() + ": skip_ckpt_micro_batch_num: is not a field SimuMax knows"),
            std::string::npos)
      << r.err;

  // 32 heads do not split over tp 3 (checked against the model).
  write(bad,
        R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, "tp_size": 3, "world_size": 6})");
  r = run_preflight("estimate --model simumax:llama3-8b --strategy " + shell_quote(bad.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("attention heads are not divisible by tp = 3"), std::string::npos) << r.err;

  r = run_preflight("estimate --model simumax:llama3-8b --strategy tp1_pp2_dp4_mbs1 --system no_such_system");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--system: 'no_such_system' is neither a file nor a system preset"),
            std::string::npos);
}

TEST(EstimateCli, OverwrittenNetworkBecomesAWarning) {
  fs::path s = scratch("nets.json");
  write(s, R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, "tp_size": 2, "world_size": 8,
               "tp_net": "high_intra_node"})");
  RunResult r = run_preflight("estimate --model simumax:llama3-8b --strategy " + shell_quote(s.string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("tp_net 'high_intra_node' is ignored"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("'intra_node_pcie_2x'"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("tp_net"), std::string::npos) << r.out;  // said once, on stderr
}

TEST(EstimateCli, DoesNotFitExitsOne) {
  // Llama-3 70B without any model parallelism on 80 GiB devices.
  fs::path s = scratch("dp8.json");
  write(s, R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, "world_size": 8})");
  RunResult r = run_preflight("estimate --model simumax:llama3-70b --strategy " + shell_quote(s.string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("does not fit"), std::string::npos);
  EXPECT_NE(r.out.find("a stage's allocated peak"), std::string::npos)
      << r.out;                                                               // says which peak is compared
  EXPECT_NE(r.out.find("GiB allocated / 0.94"), std::string::npos) << r.out;  // and the one with the reserve
  EXPECT_EQ(r.out.find("tight"), std::string::npos) << r.out;                 // 70B on 8 GPUs: far over
}

TEST(EstimateCli, TightWhenOnlyTheAllocatedPeakFits) {
  // The same run on a device sized between its allocated peak and its peak with the reserve (/ 0.94): the
  // caching allocator trims its cache under pressure, so it is "tight" (exit 0), not "does not fit".
  const std::string run = "estimate --model simumax:llama3-8b --strategy tp2_pp1_dp4_mbs1 --json --system ";
  RunResult r = run_preflight(run + "a100_pcie");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto summary = nlohmann::json::parse(r.out)["summary"];
  EXPECT_EQ(summary["memory_verdict"], "fits");
  double allocated = 0;
  for (const auto& s : summary["stages"]) allocated = std::max(allocated, s["peak_bytes"].get<double>());
  const double gib = 1024.0 * 1024.0 * 1024.0;
  auto system_with = [&](double mem_gib) {
    auto sys = nlohmann::json::parse(
        read_file(fs::path(PREFLIGHT_SOURCE_DIR) / "analyzer/data/simumax/system/a100_pcie.json"));
    sys["accelerator"]["mem_gbs"] = mem_gib;
    fs::path p = scratch("a100_" + std::to_string(mem_gib) + ".json");
    write(p, sys.dump());
    return p;
  };
  const double tight_gib = allocated / gib / 0.97;  // between allocated (ratio 1) and allocated / 0.94
  fs::path tight = system_with(tight_gib);
  r = run_preflight(run + shell_quote(tight.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["summary"]["memory_verdict"], "tight");
  r = run_preflight(run.substr(0, run.find(" --json")) + " --system " + shell_quote(tight.string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tight: the allocated peak fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("expandable_segments:True"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("does not fit"), std::string::npos) << r.out;

  fs::path small = system_with(allocated / gib * 0.99);  // the allocated peak itself is over
  r = run_preflight(run + shell_quote(small.string()));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["summary"]["memory_verdict"], "does_not_fit");
}

TEST(EstimateCli, MegatronArguments) {
  RunResult r = run_preflight(
      "estimate --system a100_pcie --json -- --nproc_per_node 8 --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
      "--global-batch-size 16 --tensor-model-parallel-size 2 --bf16 --vocab-size 32000 --swiglu "
      "--normalization RMSNorm --disable-bias-linear --position-embedding-type rope");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["summary"]["parallelism"],
            "seq2048.mbs1.mbc4.gbs16 tp2.cp1.ep1.pp1.dp4.etp2.edp4, world_size:8");
  EXPECT_GT(j["summary"]["mfu"].get<double>(), 0.0);
}

// `--ops`: the table of one layer's ops after the summary, and the same under "layer_ops" in the JSON; the
// ops' forward ms add up to the layer's (tp 2: the row-parallel linears carry the collectives).
TEST(EstimateCli, OpsOfOneLayer) {
  const std::string launch =
      " -- --nproc_per_node 8 --num-layers 4 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
      "--max-position-embeddings 2048 --micro-batch-size 1 --global-batch-size 16 "
      "--tensor-model-parallel-size 2 "
      "--bf16 --vocab-size 32000 --swiglu --normalization RMSNorm --disable-bias-linear "
      "--position-embedding-type "
      "rope --use-flash-attn --attention-dropout 0 --hidden-dropout 0";
  RunResult text = run_preflight("estimate --system h100-sxm --ops" + launch);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("dense layer 0 (first_stage_chunk): ms per micro batch on one rank"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("attention.linear_qkv"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\ntotal "), std::string::npos) << text.out;
  RunResult js = run_preflight("estimate --system h100-sxm --json --ops" + launch);
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  ASSERT_EQ(j["layer_ops"].size(), 3u);  // pp 1: the embedding, one layer, the head
  EXPECT_EQ(j["layer_ops"][0]["layer"], -1);
  EXPECT_EQ(j["layer_ops"][2]["layer"], -2);
  double fwd = 0, comm = 0, ends = 0;
  for (int k : {0, 2})
    for (const auto& op : j["layer_ops"][k]["ops"]) ends += op["fwd_ms"].get<double>();
  for (const auto& op : j["layer_ops"][1]["ops"]) {
    fwd += op["fwd_ms"].get<double>();
    comm += op["fwd_comm_ms"].get<double>() + op["bwd_comm_ms"].get<double>();
  }
  EXPECT_GT(fwd, 0);
  EXPECT_GT(comm, 0);  // tp 2 with sequence parallelism off: all-reduces
  // The chunk's forward per micro batch (SimuMax's "<x> ms") is its 4 layers, the embedding and the head.
  const std::string chunk =
      j["compute_result"]["compute_details"]["batch_compute_stat"]["cost_info"]["fwd_compute_time"];
  ASSERT_NE(chunk.find(" ms"), std::string::npos) << chunk;
  const double chunk_fwd = std::stod(chunk);
  EXPECT_NEAR(4 * fwd + ends, chunk_fwd, 1e-4);  // printed to 0.1 µs
  RunResult plain = run_preflight("estimate --system h100-sxm --json" + launch);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out).contains("layer_ops"));
}

// `--model NAME` takes the analyzer's presets (Hugging Face configs): Llama-3-70B's preset is SimuMax's
// llama3-70b config, so both give the same estimate; a GPT-3-style model says what SimuMax does not price.
TEST(EstimateCli, AnalyzerPresetsAndUnmodelledFeatures) {
  const std::string rest = " --strategy tp2_pp1_dp4_mbs1 --system a100_pcie --json";
  RunResult ours = run_preflight("estimate --model llama3-70b" + rest);
  RunResult simumax = run_preflight("estimate --model simumax:llama3-70b" + rest);
  ASSERT_EQ(ours.exit_code, 1) << ours.err;  // 80 layers on 8 GPUs with tp 2: does not fit
  ASSERT_EQ(simumax.exit_code, 1) << simumax.err;
  EXPECT_EQ(ours.err.find("warning"), std::string::npos) << ours.err;
  auto a = nlohmann::json::parse(ours.out), b = nlohmann::json::parse(simumax.out);
  EXPECT_EQ(a["mem_result"]["peak_mem"], b["mem_result"]["peak_mem"]);
  EXPECT_EQ(a["compute_result"]["duration_time_per_iter"], b["compute_result"]["duration_time_per_iter"]);
  EXPECT_DOUBLE_EQ(a["summary"]["mfu"].get<double>(), b["summary"]["mfu"].get<double>());

  fs::path s2048 = scratch("seq2048.json");  // GPT-3 has 2048 learned positions
  write(s2048, R"({"seq_len": 2048, "micro_batch_size": 1, "micro_batch_num": 8, "world_size": 8,
                   "tp_size": 8, "pp_size": 1})");
  RunResult gpt = run_preflight("estimate --model gpt3-175b --strategy " + shell_quote(s2048.string()));
  EXPECT_EQ(gpt.exit_code, 1) << gpt.err;  // 175B on 8 GPUs does not fit
  for (const char* what : {"linear biases", "LayerNorm"})
    EXPECT_NE(gpt.err.find(what), std::string::npos) << what << "\n" << gpt.err;
  // GPT-3's tied embeddings are modelled (one weight when one stage holds both ends); SimuMax prices them
  // as untied, and --simumax-compat says so.
  EXPECT_EQ(gpt.err.find("tied embeddings"), std::string::npos) << gpt.err;
  RunResult gpt_compat =
      run_preflight("estimate --simumax-compat --model gpt3-175b --strategy " + shell_quote(s2048.string()));
  EXPECT_NE(gpt_compat.err.find("tied embeddings are priced as untied"), std::string::npos) << gpt_compat.err;
  EXPECT_EQ(gpt.err.find("learned position table"), std::string::npos) << gpt.err;  // priced by default
  // --strict: the ops the cost model does not price (here SimuMax's, without the position table) are an
  // error naming them (estimate and search).
  RunResult strict = run_preflight("estimate --strict --simumax-compat --model gpt3-175b --strategy " +
                                   shell_quote(s2048.string()));
  EXPECT_EQ(strict.exit_code, 2) << strict.err;
  EXPECT_NE(strict.err.find("--strict: the cost model does not price "), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("(position_embedding)"), std::string::npos) << strict.err;
  RunResult search = run_preflight(
      "search --strict --simumax-compat --quiet --model gpt3-175b --world-size 8 --global-batch-size 8 --tp 8 "
      "--pp 1 --seq-length 2048");
  EXPECT_EQ(search.exit_code, 2) << search.err;
  EXPECT_NE(search.err.find("--strict"), std::string::npos) << search.err;

  RunResult unknown = run_preflight("estimate --model llama9-1t --strategy tp2_pp1_dp4_mbs1");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--model"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("llama3-8b"), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("simumax:llama3-8b"), std::string::npos) << unknown.err;
}

// MindSpore caps its memory pool at context.max_device_memory: a yaml's stages must fit in that ("55GB" on the
// 64 GB Ascend 910B here), as `analyze --config` already compares.
TEST(EstimateCli, MindFormersMaxDeviceMemoryIsTheDeviceMemory) {
  RunResult r = run_preflight("estimate --system ascend-910b --json --config " +
                              shell_quote((preflight::test::data_dir() / "mindformers" / "finetune_qwen2_7b.yaml").string()));
  ASSERT_LE(r.exit_code, 1) << r.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out)["summary"]["device_memory_bytes"].get<double>(), 55.0 * (1 << 30));
  EXPECT_NE(r.err.find("context.max_device_memory 55.0 GiB"), std::string::npos) << r.err;
  // `analyze --system` prices the same launch the same way, with the same cap.
  RunResult a = run_preflight(
      "analyze --system ascend-910b --json --config " +
      shell_quote((preflight::test::data_dir() / "mindformers" / "finetune_qwen2_7b.yaml").string()));
  ASSERT_LE(a.exit_code, 1) << a.err;
  const auto est = nlohmann::json::parse(a.out)["estimate"];
  EXPECT_DOUBLE_EQ(est["device_memory_bytes"].get<double>(), 55.0 * (1 << 30));
  EXPECT_DOUBLE_EQ(est["iteration_ms"].get<double>(),
                   nlohmann::json::parse(r.out)["summary"]["iteration_ms"].get<double>());
}

// A MindFormers run has no PyTorch caching allocator: its verdicts speak of MindSpore's memory pool.  The
// same yaml with max_device_memory between the allocated peak and allocated / 0.94 is tight, below it does
// not fit.
TEST(EstimateCli, MindSporeVerdictsNameTheMemoryPool) {
  const std::string text = read_file(preflight::test::data_dir() / "mindformers" / "finetune_qwen2_7b.yaml");
  auto with_pool = [&](double gib) {
    std::string t = text;
    const std::string key = "max_device_memory: \"55GB\"";
    t.replace(t.find(key), key.size(), "max_device_memory: \"" + std::to_string(gib) + "GB\"");
    fs::path p = scratch("qwen2_7b_" + std::to_string(gib) + ".yaml");
    write(p, t);
    return "estimate --system ascend-910b --config " + shell_quote(p.string());
  };
  RunResult r = run_preflight(with_pool(64) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary = nlohmann::json::parse(r.out)["summary"];
  double allocated = 0;
  for (const auto& st : summary["stages"]) allocated = std::max(allocated, st["peak_bytes"].get<double>());
  allocated /= 1024.0 * 1024.0 * 1024.0;
  r = run_preflight(with_pool(allocated / 0.97));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tight: the peak fits"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("memory pool's fragmentation"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("cudaMalloc"), std::string::npos) << r.out;
  r = run_preflight(with_pool(allocated * 0.99));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("GiB of MindSpore's memory pool"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("caching allocator"), std::string::npos) << r.out;
}

// The sequence pipeline shortens the 1F1B bubble: Llama-3-70B on 64 Ascend 910B (pp 8) with 8 micro batches
// runs (8 + 7) micro-batch times whole, about (32 + 7) / 4 in units of a quarter sequence; the schedule
// counts 32 passes and stage 0 holds 11 units instead of 8 micro batches.
TEST(EstimateCli, SequencePipelineShortensTheBubble) {
  const std::string run =
      "estimate --system ascend-910b --json --config " +
      shell_quote((preflight::test::data_dir() / "mindformers" / "pretrain_llama3_70b.yaml").string()) +
      " -- --options parallel_config.micro_batch_num=8 parallel_config.seq_split_num=";
  RunResult whole = run_preflight(run + "1");
  RunResult units = run_preflight(run + "4");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(units.exit_code, 0) << units.err;
  const auto w = nlohmann::json::parse(whole.out)["summary"], u = nlohmann::json::parse(units.out)["summary"];
  EXPECT_LT(u["iteration_ms"].get<double>(), 0.8 * w["iteration_ms"].get<double>());
  EXPECT_GT(u["iteration_ms"].get<double>(), 0.5 * w["iteration_ms"].get<double>());
  EXPECT_EQ(u["stages"][0]["cached_micro_batches"], 10);
  EXPECT_EQ(w["stages"][0]["cached_micro_batches"], 7);
  EXPECT_LT(u["stages"][0]["peak_bytes"].get<double>(), w["stages"][0]["peak_bytes"].get<double>());
}

// Every estimate says how far the model was off on published runs of its class on that preset (the embedded
// analyzer/data/fidelity/time_errors.json): the range printed for a published B300 row holds that row's own
// error, another precision on the same preset lists the classes that were checked, a preset without a
// published run says so, and a system file gets no borrowed range.
TEST(EstimateCli, PrintsThePublishedRunsOfItsClass) {
  const auto corpus = data_dir() / "time_corpus" / "b300_nemo_moe.json";
  const auto row = nlohmann::json::parse(read_file(corpus))["runs"][0];
  std::string args;
  for (const auto& a : row["args"]) args += " " + shell_quote(a.get<std::string>());
  const std::string env = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True ";

  RunResult r = run_shell(env + shell_quote(PREFLIGHT_BINARY) + " estimate --json --system b300 --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto check = nlohmann::json::parse(r.out)["summary"]["published_runs"];
  EXPECT_EQ(check["preset"], "b300");
  EXPECT_EQ(check["run_class"], "moe mxfp8");
  ASSERT_TRUE(check["same_class"].is_object()) << check.dump();
  EXPECT_GE(check["same_class"]["runs"].get<int>(), 2);
  const fs::path fit_out = scratch("fitted_b300.json");
  RunResult fit = run_preflight("calibrate --fit-time --json --system b300 --runs " +
                                shell_quote(corpus.string()) + " -o " + shell_quote(fit_out.string()));
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  const auto fitted = nlohmann::json::parse(fit.out)["runs"][0];
  EXPECT_EQ(fitted["run_class"], "moe mxfp8");
  const double e = fitted["error_before"].get<double>();
  EXPECT_GE(e, check["same_class"]["min_error"].get<double>() - 1e-4);
  EXPECT_LE(e, check["same_class"]["max_error"].get<double>() + 1e-4);
  // The median lies in the range, and the count within 5 % is at most the runs.
  const double median = check["same_class"]["median_error"].get<double>();
  EXPECT_GE(median, check["same_class"]["min_error"].get<double>());
  EXPECT_LE(median, check["same_class"]["max_error"].get<double>());
  EXPECT_GE(check["same_class"]["within_5pct"].get<int>(), 0);
  EXPECT_LE(check["same_class"]["within_5pct"].get<int>(), check["same_class"]["runs"].get<int>());

  r = run_shell(env + shell_quote(PREFLIGHT_BINARY) + " estimate --system b300 --" + args);
  EXPECT_NE(r.out.find("published runs: " + std::to_string(check["same_class"]["runs"].get<int>()) +
                       " moe mxfp8 runs on b300 priced "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(" within 5 %) against their measured iteration times"), std::string::npos) << r.out;
  r = run_shell(env + shell_quote(PREFLIGHT_BINARY) + " estimate --system b300 --" + args +
                " --fp8-recipe delayed");
  EXPECT_NE(r.out.find("none of this class (moe fp8) on b300"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("moe mxfp8 "), std::string::npos) << r.out;
  r = run_shell(env + shell_quote(PREFLIGHT_BINARY) + " estimate --system h200 --" + args);
  EXPECT_NE(r.out.find("published runs: none on h200"), std::string::npos) << r.out;
  const fs::path file = fs::path(PREFLIGHT_SOURCE_DIR) / "analyzer" / "data" / "systems" / "b300.json";
  r = run_shell(env + shell_quote(PREFLIGHT_BINARY) + " estimate --json --system " +
                shell_quote(file.string()) + " --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(nlohmann::json::parse(r.out)["summary"]["published_runs"]["preset"].is_null());
}

// A Megatron-LM hybrid launch as examples/mamba/train.sh writes it (pretrain_hybrid.py, the 800M pattern of
// Mamba, MLP and attention layers; our own command line in that style): `analyze` tables the three layer
// kinds and `estimate` prices them, its published-run line naming the hybrid class.
TEST(EstimateCli, HybridMambaLaunch) {
  const std::string args =
      " --tensor-model-parallel-size 1 --pipeline-model-parallel-size 1 --use-distributed-optimizer"
      " --untie-embeddings-and-output-weights --position-embedding-type none"
      " --hybrid-layer-pattern 'M-M-M--M-*M-M-M-M--*M-M-M-M-*M--M-M-M-*M-M--M-M-' --hidden-size 1024"
      " --num-attention-heads 16 --group-query-attention --num-query-groups 8 --seq-length 4096"
      " --max-position-embeddings 4096 --micro-batch-size 4 --global-batch-size 32 --attention-dropout 0.0"
      " --hidden-dropout 0.0 --disable-bias-linear --normalization RMSNorm --bf16 --vocab-size 256000"
      " --use-flash-attn --nproc_per_node 8";
  auto r = run_shell(shell_quote(PREFLIGHT_BINARY) + " analyze" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* kind :
       {"decoder.layers × 20 (Mamba)", "decoder.layers × 24 (MLP)", "decoder.layers × 4 (attention)"})
    EXPECT_NE(r.out.find(kind), std::string::npos) << kind << "\n" << r.out;
  r = run_shell(shell_quote(PREFLIGHT_BINARY) + " estimate --system h100-sxm --ops --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("mixer.ssm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hybrid dense bf16"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("not priced"), std::string::npos) << r.err;
}

// A Qwen3-Next config.json given to `estimate --model FILE` with Megatron's size flags: named after the file
// (the header said " on b200" without a name), its gated delta net layers priced op by op, the GDN layers and
// the softmax ones as two kinds in analyze's table.
TEST(EstimateCli, Qwen3NextConfigJsonWithGatedDeltaNets) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "preflight_qwen3_next_cli";
  std::filesystem::create_directories(dir);
  const std::filesystem::path config = dir / "qwen3-next-tiny.json";
  {
    std::ofstream out(config);
    out << R"({"architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 1024,
      "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
      "intermediate_size": 2048, "vocab_size": 32000, "full_attention_interval": 4, "linear_key_head_dim": 64,
      "linear_value_head_dim": 64, "linear_num_key_heads": 4, "linear_num_value_heads": 8,
      "num_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 256,
      "shared_expert_intermediate_size": 256, "tie_word_embeddings": false})";
  }
  const std::string sizes =
      " --seq-length 2048 --micro-batch-size 1 --global-batch-size 16 --bf16"
      " --expert-model-parallel-size 4 --nproc_per_node 8";
  auto r = run_shell(shell_quote(PREFLIGHT_BINARY) + " estimate --system b200 --ops --model " +
                     shell_quote(config.string()) + " --" + sizes);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("qwen3-next-tiny on b200:", 0), 0u) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("self_attention.gated_delta_rule"), std::string::npos) << r.out;
  // No published run has gated delta nets: the estimate says its class is unchecked.
  EXPECT_NE(r.out.find("published runs: none of this class (gdn moe bf16) on b200"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.err.find("not priced"), std::string::npos) << r.err;
  r = run_shell(shell_quote(PREFLIGHT_BINARY) + " analyze --model " + shell_quote(config.string()) + " --" +
                sizes);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decoder.layers × 6 (MoE gated-delta-net)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decoder.layers × 2 (MoE)"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// A Megatron flag's Python list after `--` reaches the command whole: CLI11 splits a word "[a,b]" given to a
// list option into "a", "b", which made `estimate -- … --moe-layer-freq '[0,1,1,1]'` read --moe-layer-freq 0
// ("must be positive") and `--linear-attention-freq '[1,0,1,1]'` read 1 (no GDN layer at all).
TEST(EstimateCli, PythonListFlagsAfterDashesStayWhole) {
  const std::string args =
      " --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 --bf16"
      " --num-experts 4 --moe-layer-freq '[0,1,1,1]' --nproc_per_node 1";
  auto r = run_shell(shell_quote(PREFLIGHT_BINARY) + " estimate --system h100-sxm --ops --" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("dense layer 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("MoE layer 1"), std::string::npos) << r.out;
  r = run_shell(shell_quote(PREFLIGHT_BINARY) +
                " run --mode analyze -- torchrun --nproc_per_node 1 pretrain_gpt.py" + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decoder.layers × 3 (MoE)"), std::string::npos) << r.out;
}

// BigScience's BLOOM-176B on Jean Zay: 384 A100 80 GB, eight a node with four 100 Gb/s Omni-Path links
// (6.25 GB/s a GPU, where the a100-sxm-80gb preset has DGX A100's 25), measured 104.70 s per iteration in
// steady state (bigscience-workshop/bigscience train/tr11-176B-ml/README.md, the line of iteration 85376).
// The command line is its job script's (train/tr11-176B-ml/tr11-176B-ml.slurm, 48 nodes; paths, data and
// logging left out): Megatron-DeepSpeed, tp 4, pp 12 with the embedding counted as a layer at each end, micro
// batch 2, bf16 with DeepSpeed's BF16_Optimizer, full recompute, ALiBi, the vocabulary padded to 250880. With
// the cluster's network (--nic-gbps) it is priced within 5 %; on the preset's faster one, faster.
TEST(EstimateCli, Bloom176BOnJeanZayWithItsNetwork) {
  const std::string args =
      "--nproc_per_node 8 --nnodes 48 --tensor-model-parallel-size 4 --pipeline-model-parallel-size 12 "
      "--pp-partition-method 'type:transformer|embedding' --num-layers 70 --hidden-size 14336 "
      "--num-attention-heads 112 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 2 "
      "--global-batch-size 2048 --tokenizer-type PretrainedFromHF --tokenizer-name-or-path "
      "org/bloom-tokenizer "
      "--init-method-std 0.0048 --embed-layernorm --bf16 --position-embedding-type alibi "
      "--checkpoint-activations "
      "--pad-vocab-size-to 250880 --optimizer adam --adam-beta1 0.9 --adam-beta2 0.95 --clip-grad 1.0 "
      "--weight-decay 1e-1 --distributed-backend nccl --deepspeed --zero-stage 0 "
      "--deepspeed-activation-checkpointing";
  auto iteration_ms = [&](const std::string& extra) {
    const RunResult r = run_preflight("estimate --json --system a100-sxm-80gb " + extra + " -- " + args);
    EXPECT_LE(r.exit_code, 1) << r.err;
    return nlohmann::json::parse(r.out)["summary"]["iteration_ms"].get<double>();
  };
  const double measured = 104700.0;
  const double jean_zay = iteration_ms("--nic-gbps 6.25"), preset = iteration_ms("");
  EXPECT_LT(std::abs(jean_zay / measured - 1), 0.05) << jean_zay;
  EXPECT_LT(preset, 0.97 * jean_zay);
  EXPECT_EQ(run_preflight("estimate --system a100-sxm-80gb --nic-gbps=-1 -- " + args).exit_code, 2);
}

// A MindSpeed-LLM launch (its own flags: Ascend NPUs only) is priced on the Ascend preset when --system is
// not given, and said so; --system still chooses.  It had been priced on SimuMax's A100 default.
TEST(EstimateCli, MindSpeedLaunchIsPricedOnTheAscendPreset) {
  const std::string launch =
      " -- --nproc_per_node 8 --num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 2048 "
      "--max-position-embeddings 2048 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 16 --bf16 "
      "--swiglu --use-fused-rmsnorm --use-fused-swiglu";
  RunResult r = run_preflight("estimate" + launch);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("megatron-args on ascend-910b"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("MindSpeed-LLM's flags: an Ascend NPU run"), std::string::npos) << r.err;
  RunResult h100 = run_preflight("estimate --system h100-sxm" + launch);
  ASSERT_EQ(h100.exit_code, 0) << h100.err;
  EXPECT_NE(h100.out.find("megatron-args on h100-sxm"), std::string::npos) << h100.out;
  // Megatron-LM's own flags alone keep the documented default.
  RunResult plain = run_preflight(
      "estimate -- --nproc_per_node 8 --num-layers 4 --hidden-size 1024 "
      "--num-attention-heads 8 --seq-length 2048 --vocab-size 32000 --bf16");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("megatron-args on a100_pcie"), std::string::npos) << plain.out;
}
