// `preflight analyze --model NAME|config.json|URL` end to end through the binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "frontends_test_data.hpp"
#include "local_http_server.hpp"
#include "test_support.hpp"

using namespace preflight::test;

namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

nlohmann::json analyze_json(const std::string& args) {
  RunResult r = run_preflight("analyze " + args + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

}  // namespace

TEST(AnalyzeModel, PresetWithTheLaunchScriptsParallelism) {
  nlohmann::json j = analyze_json(
      "--model llama3-70b --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 --seq-length 8192 "
      "--micro-batch-size 1 --global-batch-size 64 --bf16 --use-distributed-optimizer --sequence-parallel "
      "--nproc_per_node 8 --nnodes 4");
  EXPECT_EQ(j["model"]["name"], "llama3-70b");
  EXPECT_EQ(j["model"]["parameters"], 70'553'706'496);
  EXPECT_EQ(j["model"]["num_query_groups"], 8);
  EXPECT_EQ(j["strategy"]["world_size"], 32);
  EXPECT_EQ(j["strategy"]["tp"], 8);
  EXPECT_EQ(j["strategy"]["dp"], 2);
  ASSERT_EQ(j["memory"]["stages"].size(), 2u);
  // 80 layers over 2 stages; stage 0 holds the embedding (128256 padded to 129024 rows, / tp 8).
  EXPECT_EQ(j["memory"]["stages"][0]["layers"], 40);
}

TEST(AnalyzeModel, ArchitectureFlagsOverrideThePreset) {
  nlohmann::json j = analyze_json(
      "--model=mixtral-8x7b --num-layers 4 --seq-length 4096 --nproc_per_node 8 "
      "--expert-model-parallel-size 8 --bf16");
  EXPECT_EQ(j["model"]["num_layers"], 4);
  // 4 of the 32 Mixtral layers: 4 · 1,451,270,144 + 2·32000·4096 + 4096.
  EXPECT_EQ(j["model"]["parameters"], 4LL * 1'451'270'144 + 2LL * 32000 * 4096 + 4096);
  EXPECT_EQ(j["strategy"]["ep"], 8);
}

TEST(AnalyzeModel, ConfigJsonFileAndWarnings) {
  nlohmann::json j = analyze_json(
      "--model " + shell_quote(hf_config_path("deepseek-v3")) +
      " --seq-length 4096 --tensor-model-parallel-size 2 --sequence-parallel --expert-tensor-parallel-size 1 "
      "--expert-model-parallel-size 8 --pipeline-model-parallel-size 8 "
      "--decoder-first-pipeline-num-layers 5 --decoder-last-pipeline-num-layers 8 "
      "--nproc_per_node 8 --nnodes 8 --bf16");
  EXPECT_EQ(j["model"]["name"], "deepseek-v3");
  EXPECT_EQ(j["model"]["parameters"], 671'026'404'352);
  ASSERT_EQ(j["memory"]["stages"].size(), 8u);
  EXPECT_EQ(j["memory"]["stages"][0]["layers"], 5);
  EXPECT_EQ(j["memory"]["stages"][7]["layers"], 8);
  bool mtp_warning = false;
  for (const auto& w : j["warnings"])
    mtp_warning |= contains(w.get<std::string>(), "num_nextn_predict_layers");
  EXPECT_TRUE(mtp_warning) << j["warnings"].dump();
}

TEST(AnalyzeModel, ConfigJsonByUrl) {
  LocalHttpServer server({{"/config.json", {200, read_file(hf_config_path("qwen3-32b"))}}});
  nlohmann::json j = analyze_json("--model " + server.url("/config.json") +
                                  " --seq-length 4096 --tensor-model-parallel-size 4 --nproc_per_node 8");
  EXPECT_EQ(j["model"]["parameters"], 32'762'123'264);
  EXPECT_EQ(j["model"]["qk_layernorm"], true);
  EXPECT_EQ(j["strategy"]["dp"], 2);
}

TEST(AnalyzeModel, TextReportNamesTheModel) {
  RunResult r = run_preflight(
      "analyze --model gpt3-175b --seq-length 2048 --tensor-model-parallel-size 8 "
      "--pipeline-model-parallel-size 16 --nproc_per_node 8 --nnodes 16 --fp16");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "gpt3-175b")) << r.out.substr(0, 400);
}

// Megatron's partial distributed optimizer through the CLI: the states sharded over dp / instances.  The
// report's table of the model without parallelism had kept the instances on its one rank and failed
// validation ("2 instances do not divide dp·cp = 1"): every `analyze --num-distributed-optimizer-instances`
// exited 2.
TEST(AnalyzeModel, DistributedOptimizerInstances) {
  const std::string base =
      "--nproc_per_node 8 --model qwen3-0.6b --seq-length 1024 --use-distributed-optimizer";
  const nlohmann::json whole = analyze_json(base);
  const nlohmann::json two = analyze_json(base + " --num-distributed-optimizer-instances 2");
  const double w = whole["memory"]["stages"][0]["optimizer_bytes"].get<double>(),
               t = two["memory"]["stages"][0]["optimizer_bytes"].get<double>();
  EXPECT_NEAR(t / w, 2.0, 1e-9);
}

// A Megatron-LM functional test case (tests/functional_tests/test_cases/…/model_config.yaml; ours in its
// format) given as --config: MODEL_ARGS are the command line as _run_training.sh builds it — `true` the flag
// alone, "[core_attn mlp]" two words, "" left out, ${SEQ_LEN} from the environment; a `false` left out and
// said; the world the launch's, else one node of 8 (said).  estimate reads it alike.
TEST(AnalyzeModel, MegatronFunctionalTestCase) {
  const std::string yaml = (frontends_data() / "megatron_test_case" / "model_config.yaml").string();
  auto with_env = [](const std::string& env, const std::string& args) {
    return run_shell(env + " " + shell_quote(PREFLIGHT_BINARY) + " " + args);
  };
  RunResult r = with_env("SEQ_LEN=2048", "analyze --config " + yaml + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"]["num_layers"].get<int>(), 12);
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 2);
  EXPECT_EQ(j["strategy"]["pp"].get<int>(), 2);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 8);
  EXPECT_EQ(j["strategy"]["seq_length"].get<int>(), 2048);
  const std::string warnings = j["warnings"].dump();
  EXPECT_TRUE(contains(warnings, "priced on one node of 8 GPUs")) << warnings;
  EXPECT_TRUE(contains(warnings, "MODEL_ARGS set to false, left out: --overlap-grad-reduce")) << warnings;
  RunResult two =
      with_env("SEQ_LEN=4096", "analyze --config " + yaml + " --nproc_per_node 4 --nnodes 4 --json");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  j = nlohmann::json::parse(two.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 16);
  EXPECT_EQ(j["strategy"]["seq_length"].get<int>(), 4096);
  RunResult est = with_env("SEQ_LEN=2048", "estimate --system h100-sxm --config " + yaml);
  EXPECT_EQ(est.exit_code, 0) << est.err;
  EXPECT_TRUE(contains(est.out, "iteration")) << est.out;
  // search: the test case is the launch (its layout ranked); with --config alone it had asked for --model,
  // as it did for an AMD Primus experiment
  RunResult search = with_env("SEQ_LEN=2048", "search --system h100-sxm --config " + yaml);
  EXPECT_EQ(search.exit_code, 0) << search.err;
  EXPECT_TRUE(contains(search.out, "the launch's own layout (tp 2 pp 2")) << search.out;
  // unset ${SEQ_LEN}: refused naming the file and the flag
  RunResult unset = with_env("env -u SEQ_LEN", "analyze --config " + yaml);
  EXPECT_EQ(unset.exit_code, 2);
  EXPECT_TRUE(contains(unset.err, yaml + ": MODEL_ARGS --seq-length")) << unset.err;
  EXPECT_TRUE(contains(unset.err, "MODEL_ARGS use variables the environment does not set (SEQ_LEN)"))
      << unset.err;
}

TEST(AnalyzeModel, HelpListsThePresets) {
  RunResult r = run_preflight("analyze --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "--model NAME|FILE|URL")) << r.out;
  EXPECT_TRUE(contains(r.out, "presets for --model: llama2-7b")) << r.out;
  EXPECT_TRUE(contains(r.out, "deepseek-v3")) << r.out;
}

TEST(AnalyzeModel, BadModelsExitTwoWithWhereAndWhat) {
  RunResult unknown = run_preflight("analyze --model llama4-8b --seq-length 4096");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "preflight: error: --model: unknown model 'llama4-8b'")) << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "llama3-405b")) << unknown.err;

  namespace fs = std::filesystem;
  fs::path bad = fs::temp_directory_path() / ("preflight_bad_config_" + std::to_string(::getpid()) + ".json");
  std::ofstream(bad) << R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
  "intermediate_size": 11008, "vocab_size": 32000})";
  RunResult missing = run_preflight("analyze --model " + shell_quote(bad.string()) + " --seq-length 4096");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_TRUE(
      contains(missing.err, "preflight: error: " + bad.string() + ": num_attention_heads: is missing"))
      << missing.err;
  fs::remove(bad);

  RunResult no_value = run_preflight("analyze --seq-length 4096 --model");
  EXPECT_EQ(no_value.exit_code, 2);
  EXPECT_TRUE(contains(no_value.err, "--model")) << no_value.err;

  RunResult no_file = run_preflight("analyze --model ./nowhere/config.json --seq-length 4096");
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_TRUE(contains(no_file.err, "preflight: error: ./nowhere/config.json: no such file")) << no_file.err;
}
