// `preflight balance` end to end: exit codes, messages, JSON, SVG, guide.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace {

namespace fs = std::filesystem;
using preflight::test::data_dir;
using preflight::test::run_preflight;
using preflight::test::shell_quote;

std::string data(const char* name) {
  return shell_quote((data_dir() / "balance" / name).string());
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("preflight_cli_" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(BalanceCli, SmallModelProvenOptimalWithYamlAndSvg) {
  const fs::path out = temp_dir("small");
  auto r = run_preflight("balance --layer-json " + data("small.json") + " -s 4 -mb 4 -mem 20000 -o " +
                         shell_quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("proven optimal (exact MILP)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("To put in yaml configuration:\n\toffset: [["), std::string::npos);
  EXPECT_NE(r.out.find("   real    =   ideal   +   imba    + recompute "), std::string::npos) << r.out;
  const fs::path svg = out / "small_20000_1_4_4_1_90_False.svg";
  ASSERT_TRUE(fs::exists(svg));
  EXPECT_NE(preflight::test::read_file(svg).find("Memory per stage"), std::string::npos);
}

TEST(BalanceCli, JsonAnswerFitsAndBeatsNaive) {
  auto r =
      run_preflight("balance --layer-json " + data("small.json") + " -s 4 -mb 4 -mem 20000 --no-svg --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["found"].get<bool>());
  EXPECT_TRUE(j["proven_optimal"].get<bool>());
  EXPECT_LE(j["answer"]["max_peak_mb"].get<double>(), 20000);
  for (const auto& n : j["naive"])
    if (n["fits"].get<bool>()) {
      EXPECT_LE(j["answer"]["end_time_ms"].get<double>(), n["end_time_ms"].get<double>());
    }
  EXPECT_EQ(j["answer"]["yaml"]["offset"].size(), 1u);
  EXPECT_EQ(j["problem"]["stages"], 4);
}

TEST(BalanceCli, NothingFitsExitsOne) {
  auto r = run_preflight("balance --layer-json " + data("small.json") + " -s 4 -mb 4 -mem 12000 --no-svg");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("no placement fits 12000 MB"), std::string::npos) << r.out;
}

TEST(BalanceCli, BadInputsExitTwoWithTheReason) {
  struct Case {
    std::string args, needle;
  };
  const std::vector<Case> cases = {
      {"--init " + data("init_demopp4.yaml") + " -s 4",
       "init_demopp4.yaml:5: round 1: offsets place 58 layers"},
      {"--layer-json " + data("small.json") + " -s 4 -mb 2", "-mb: 2 micro batches for 4 stages"},
      {"--layer-json " + data("small.json") + " -s 4 -i 3 -mb 4",
       "8 body layers cannot fill 4 stages × 3 chunks"},
      {"--layer-json " + data("small.json") + " --bogus", "--bogus: unknown option"},
      {"--layer-json /nonexistent.json", "/nonexistent.json: cannot open layer json"},
      {"-mb 4", "give --init (dryrun yaml), --layer-json (layer json) or --model/--strategy"},
      {"--layer-json " + data("small.json") + " --formulation fast", "--formulation: expected exact or sapp"},
      {"--init " + data("mem.yaml") + " -s 16 -mb 16", "no head/body/tail times"},
      {"--guide --stages 2 --layers 8",
       "--stages: the memory decomposition needs at least 4 pipeline stages"},
      {"--guide --stages 8 --layers 32 --recompute full,half", "--recompute: unknown recompute class 'half'"},
      {"--init " + data("init_llama175b.yaml") + " --times 3,18,9 -s 16 -i 2 -mb 17 -lm 1",
       "-lm: the less-memory interleaved schedule needs the micro batches (17) to be a multiple of the "
       "stages"},
      {"--layer-json " + data("small.json") + " -s 4 -mb 4 --relocate-share 1.5",
       "--relocate-share: must be between 0 and 1"},
      {"--layer-json " + data("small.json") + " -s 4 -mb 4 --threads -1", "--threads: must be 0"},
  };
  for (const auto& c : cases) {
    auto r = run_preflight("balance " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find("preflight: error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\n" << r.err;
  }
}

TEST(BalanceCli, InitYamlDecompositionAndExecFalse) {
  auto r =
      run_preflight("balance --init " + data("init_llama175b.yaml") + " -m llama175b -exec false --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["decomposition"]["const_mb"].get<double>(), 1206.80, 0.1);
  EXPECT_NEAR(j["decomposition"]["head_mb"].get<double>(), 4614.75, 0.1);
  EXPECT_EQ(j["model"]["stage_const_mem"], 1206);
  EXPECT_EQ(j["model"]["layers_description"][1]["memory_both_comm_select"], 423);
}

TEST(BalanceCli, GuideNonInteractiveAndInteractive) {
  auto r =
      run_preflight("balance --guide --stages 16 --layers 96 --recompute select,both,comm --seed 3 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rounds"].size(), 1u);
  EXPECT_EQ(j["classes"].size(), 4u);
  // SAPP's questions on stdin: 4 stages, 80 layers, full recompute only → 2 rounds.
  auto i = preflight::test::run_shell("printf '4\\n80\\ny\\nn\\nn\\nn\\n' | " +
                                      shell_quote(PREFLIGHT_BINARY) + " balance --guide --seed 5");
  ASSERT_EQ(i.exit_code, 0) << i.err;
  EXPECT_NE(i.err.find("Do you consider full recomputation?[y/n]?"), std::string::npos);
  EXPECT_NE(i.out.find("-> 2 rounds"), std::string::npos) << i.out;
}

TEST(BalanceCli, GuideThenMemoryBlocksThenBalance) {
  // The flow of the README: plan 2 rounds, one memory_usage block per round (as `preflight logs dryrun
  // --sapp` prints it), balance.  The memories are made from known terms, which must come back out.
  const fs::path dir = temp_dir("flow");
  auto g = run_preflight("balance --guide --stages 4 --layers 16 --recompute full --seed 2 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto plan = nlohmann::json::parse(g.out);
  ASSERT_EQ(plan["rounds"].size(), 2u);
  std::ofstream(dir / "plan.yaml") << plan["init_yaml"].get<std::string>();
  const double c = 1000, P = 1500, H = 8000, T = 6000, a_none = 900, a_full = 40;
  std::string memory_args;
  for (int r = 0; r < 2; ++r) {
    const auto& rd = plan["rounds"][r];
    std::vector<double> peak(4);
    for (int s = 0; s < 4; ++s) {
      const int n = 4 + rd["offset"][s].get<int>(), full = rd["recompute"][s].get<int>();
      const double act = (n - full) * a_none + full * a_full;
      peak[s] = s == 0 ? H + n * P + 4 * act : s == 3 ? T + n * P + act : c + n * P + (4 - s) * act;
    }
    const fs::path f = dir / ("round" + std::to_string(r + 1) + ".yaml");
    std::ofstream(f) << "# preflight logs dryrun --sapp\nmemory_usage:\n  head_memory: " << peak[0]
                     << "\n  tail_memory: " << peak[3]
                     << "\n  body_memories:\n    stage_id: [1, 2]\n    memories: [" << peak[1] << ", "
                     << peak[2] << "]\n";
    memory_args += " --memory " + shell_quote(f.string());
  }
  auto b = run_preflight("balance --init " + shell_quote((dir / "plan.yaml").string()) + memory_args +
                         " --times 3,18,9 -s 4 -mb 8 -mem 40000 --no-svg --json");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const auto j = nlohmann::json::parse(b.out);
  EXPECT_NEAR(j["decomposition"]["const_mb"].get<double>(), c, 1e-6);
  EXPECT_NEAR(j["decomposition"]["param_mb"].get<double>(), P, 1e-6);
  EXPECT_NEAR(j["decomposition"]["activation_mb"]["none"].get<double>(), a_none, 1e-6);
  EXPECT_NEAR(j["decomposition"]["activation_mb"]["full"].get<double>(), a_full, 1e-6);
  EXPECT_NEAR(j["decomposition"]["head_mb"].get<double>(), H, 1e-6);
  EXPECT_TRUE(j["found"].get<bool>());
  // One memory file for a two-round plan is an input error.
  auto bad = run_preflight("balance --init " + shell_quote((dir / "plan.yaml").string()) + " --memory " +
                           shell_quote((dir / "round1.yaml").string()) + " --times 3,18,9 -s 4 -mb 8");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--memory: 1 memory file(s) for 2 dryrun round(s)"), std::string::npos) << bad.err;
}

TEST(BalanceCli, ManualStrategiesAreSimulated) {
  const fs::path out = temp_dir("manual");
  auto r = run_preflight("balance --init " + data("init_llama175b.yaml") +
                         " -m demo -s 16 -i 3 -mb 16 -mem 62000 "
                         "--sapp-memory -t 20 -manual " +
                         data("manual_demo.yaml") + " -o " + shell_quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // notes §10 (SAPP's run): manual1 (V 3) 0.4956 = 0.3125 + 0.0801 + 0.1030; manual2 (V 1) 1.0638.
  EXPECT_NE(r.out.find("manual1 (manual):\n————————————— pp:16, vp: 3, micro: 16"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0.4956"), std::string::npos);
  EXPECT_NE(r.out.find("1.0638"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "manual1.svg"));
  EXPECT_TRUE(fs::exists(out / "manual2.svg"));
}

}  // namespace
