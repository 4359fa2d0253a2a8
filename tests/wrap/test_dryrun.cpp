// Per-stage MindSpore dryrun: the plan (command, rank size, stages from the YAML), the per-stage environment,
// and end to end with a stand-in run_mindformer.py that prints MindSpore's memory block with values derived
// from RANK_ID (stage s: used peak 20000 + 1000·s + 7 MiB, actual peak 512 MiB more).
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>

#include "preflight/common/error.hpp"
#include "preflight/wrap/dryrun.hpp"
#include "wrap_test_util.hpp"

using namespace preflight::test;
using namespace preflight::wrap;
using Words = std::vector<std::string>;

namespace {

/// A MindFormers-like working folder: run_mindformer.py, configs/test_llama.yaml (pp 4), scripts/.
void mindformers_folder(const TempDir& dir) {
  copy_data("standins/run_mindformer.py", dir.path());
  copy_data("standins/test_llama.yaml", dir.path() / "configs");
  fs::create_directories(dir / "scripts");
}

std::int64_t used_peak(int stage) {
  return 20000 + 1000 * stage + 7;
}

DryrunOptions options_in(const TempDir& dir) {
  DryrunOptions o;
  o.out = dir / "out";
  o.python = "/usr/bin/python3";
  return o;
}

}  // namespace

TEST(DryrunPlan, MsrunLauncherBecomesOnePythonProcessPerStage) {
  TempDir dir;
  mindformers_folder(dir);
  // plan_dryrun resolves relative paths against the working directory; it is restored before the folder goes
  // (a deleted working directory had left the later tests' shells printing "getcwd() failed")
  struct RestoreCwd {
    fs::path before = fs::current_path();
    ~RestoreCwd() {
      std::error_code ec;
      fs::current_path(before, ec);
    }
  } restore;
  fs::current_path(dir.path());
  Words argv{"bash",
             "scripts/msrun_launcher.sh",
             "run_mindformer.py --config configs/test_llama.yaml --run_mode train",
             "8",
             "8118",
             "output/msrun_log",
             "False",
             "300"};
  DryrunPlan p = plan_dryrun(argv, options_in(dir), {{"PATH", "/usr/bin"}, {"PYTHONPATH", "/x"}});
  EXPECT_EQ(p.command, (Words{"/usr/bin/python3", "run_mindformer.py", "--config", "configs/test_llama.yaml",
                              "--run_mode", "train"}));
  EXPECT_EQ(p.rank_size, 8);
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.stages_from, "configs/test_llama.yaml: parallel_config.pipeline_stage");
  EXPECT_EQ(p.env["PYTHONPATH"], fs::absolute(dir.path()).lexically_normal().string() + ":/x");  // scripts/..
  EXPECT_EQ(stage_rank(p, 0), 0);
  EXPECT_EQ(stage_rank(p, 3), 6);
  EXPECT_EQ(stage_dir(p, 1), fs::absolute(dir / "out").lexically_normal() / "stage_1_rank_2");
}

TEST(DryrunPlan, SizesFromFlagsEnvironmentOrYamlAndTheirErrors) {
  TempDir dir;
  write_file(dir / "pp2.yaml",
             "parallel_config:\n  data_parallel: 2\n  model_parallel: 2\n  pipeline_stage: 2\n");
  write_file(dir / "bad.yaml", "parallel_config:\n  pipeline_stage: [1, 2\n");
  write_file(dir / "word.yaml", "parallel_config:\n  pipeline_stage: four\n");
  std::string pp2 = (dir / "pp2.yaml").string();
  DryrunOptions o = options_in(dir);
  // msrun: --worker_num; the YAML's dp·mp·pp = 8 ≠ 16 is reported, not fatal.
  DryrunPlan a = plan_dryrun(
      {"msrun", "--worker_num=16", "--local_worker_num=8", "run_mindformer.py", "--config", pp2}, o, {});
  EXPECT_EQ(a.rank_size, 16);
  EXPECT_EQ(a.stages, 2);
  EXPECT_EQ(a.command[0], "/usr/bin/python3");
  ASSERT_FALSE(a.notes.empty());
  bool mismatch = false;
  for (const auto& n : a.notes)
    mismatch = mismatch || n.find("= 8, but the job has 16 ranks") != std::string::npos;
  EXPECT_TRUE(mismatch);
  // Any command: RANK_SIZE from the environment (MindFormers' tuning-guide recipe), stages from --stages.
  o.stages = 4;
  DryrunPlan b = plan_dryrun({"sh", "-c", "true"}, o, {{"RANK_SIZE", "16"}});
  EXPECT_EQ(b.command, (Words{"sh", "-c", "true"}));
  EXPECT_EQ(b.rank_size, 16);
  EXPECT_EQ(b.rank_size_from, "RANK_SIZE");
  EXPECT_THROW(plan_dryrun({"sh", "-c", "true"}, o, {}), preflight::InputError);  // no rank size anywhere
  o.rank_size = 6;
  try {
    plan_dryrun({"sh"}, o, {});
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--rank-size");
    EXPECT_EQ(e.detail(), "6 ranks cannot be split into 4 pipeline stages");
  }
  o.stages.reset();
  o.rank_size = 8;
  try {
    plan_dryrun({"python", "run_mindformer.py"}, o, {});
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--stages");
  }
  try {
    plan_dryrun({"python", "run_mindformer.py", "--config", (dir / "bad.yaml").string()}, o, {});
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), (dir / "bad.yaml").string() + ":3");
  }
  try {
    plan_dryrun({"python", "run_mindformer.py", "--config=" + (dir / "word.yaml").string()}, o, {});
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), (dir / "word.yaml").string() + ": parallel_config.pipeline_stage");
  }
  EXPECT_THROW(plan_dryrun({"python", "run_mindformer.py", "--config", (dir / "none.yaml").string()}, o, {}),
               preflight::InputError);
  EXPECT_THROW(plan_dryrun({}, o, {}), preflight::InputError);
}

TEST(DryrunPlan, StageEnvironment) {
  TempDir dir;
  DryrunOptions o = options_in(dir);
  o.stages = 4;
  o.rank_size = 16;
  o.env = {{"MS_SIMULATION_LEVEL", "2"}};
  DryrunPlan p = plan_dryrun({"sh"}, o, {{"RANK_TABLE_FILE", "/x.json"}, {"GLOG_v", "1"}, {"HOME", "/h"}});
  Environment e = stage_environment(p, 3);
  EXPECT_EQ(e["RANK_ID"], "12");
  EXPECT_EQ(e["RANK_SIZE"], "16");
  EXPECT_EQ(e["STAGE_ID"], "3");
  EXPECT_EQ(e["MS_KERNEL_LAUNCH_SKIP"], "all");
  EXPECT_EQ(e["MS_MEMORY_STATISTIC"], "1");
  EXPECT_EQ(e["MS_SIMULATION_LEVEL"], "2");  // --env comes last
  EXPECT_EQ(e["GLOG_v"], "1");               // the user's log level is kept
  EXPECT_EQ(e["MS_DEV_SIDE_EFFECT_LOAD_ELIM"], "3");
  EXPECT_EQ(e.count("RANK_TABLE_FILE"), 0u);
  EXPECT_EQ(e["HOME"], "/h");
  EXPECT_EQ(e["LOG_MF_PATH"], (stage_dir(p, 3) / "mindformers_log").string());
}

TEST(AnalyzeCli, WrappedMindFormersScriptAnalysesItsYaml) {
  // msrun_launcher.sh "run_mindformer.py --config configs/test_llama.yaml …" 8 …: analyze mode reads the
  // yaml (dp 1 × tp 2 × pp 4 = the 8 workers) without MindSpore or the launcher being present.
  TempDir dir;
  mindformers_folder(dir);
  RunResult w = run_preflight("wrap --mode analyze " + shell_quote(wrap_data("mindformers_style.sh").string()) +
                              " -o " + shell_quote((dir / "analyze.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  RunResult r = run_in(dir.path(), "bash analyze.sh");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("16 layers, hidden 2048, 32 heads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run: 8 GPUs (1 node × 8) = tp 2 × cp 1 × pp 4 × dp 1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("*** Memory on each GPU, by pipeline stage ***"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("8 workers, from msrun_launcher.sh WORKER_NUM"), std::string::npos) << r.err;
  // A launch whose worker count disagrees with the yaml: MindFormers would refuse it, so does analyze.
  write_file(dir / "bad.sh",
             "bash scripts/msrun_launcher.sh \"run_mindformer.py --config configs/test_llama.yaml\" 16\n");
  RunResult w2 = run_preflight("wrap --mode analyze " + shell_quote((dir / "bad.sh").string()) + " -o " +
                               shell_quote((dir / "bad_analyze.sh").string()));
  ASSERT_EQ(w2.exit_code, 0) << w2.err;
  RunResult b = run_in(dir.path(), "bash bad_analyze.sh");
  EXPECT_EQ(b.exit_code, 2) << b.out << b.err;
  EXPECT_NE(b.err.find("--worker_num: the launch starts 16 workers but configs/test_llama.yaml lays out "
                       "dp·tp·cp·pp = 1·2·1·4 = 8 ranks"),
            std::string::npos)
      << b.err;
}

TEST(AnalyzeCli, MindFormersUsageExamplesFromTheSharedData) {
  // The real usage examples of msrun_launcher.sh (../shared/data/launch_scripts/mindformers), with the two
  // configurations they name that are in tests/data/mindformers.
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  const fs::path script = shared_data_dir() / "launch_scripts" / "mindformers" / "msrun_usage_examples.sh";
  TempDir dir;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"finetune_llama3_1_8b.yaml", "research/llama3_1/llama3_1_8b"},
           {"pretrain_mixtral-8x7b.yaml", "research/mixtral/mixtral_8x7b"}}) {
    fs::create_directories(dir / to);
    fs::copy_file(data_dir() / "mindformers" / from, dir / to / from);
  }
  RunResult w = run_preflight("wrap --mode analyze " + shell_quote(script.string()) + " -o " +
                              shell_quote((dir / "a.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  RunResult r = run_in(dir.path(), "bash a.sh");
  EXPECT_NE(r.out.find("finetune_llama3_1_8b (LlamaConfig): 8.03 B parameters"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run: 8 GPUs (1 node × 8) = tp 1 × cp 1 × pp 1 × dp 8"), std::string::npos) << r.out;
  // The Mixtral launch twice (two nodes), 16 workers = dp 8 × pp 2.
  std::size_t first = r.out.find("run: 16 GPUs (2 nodes × 8) = tp 1 × cp 1 × pp 2 × dp 8");
  ASSERT_NE(first, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run: 16 GPUs (2 nodes × 8) = tp 1 × cp 1 × pp 2 × dp 8", first + 1), std::string::npos);
  // Configurations not in the folder, and the prediction launch, are named.
  EXPECT_NE(r.err.find("finetune_llama3_1_70b.yaml: cannot open the MindFormers yaml"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("predict_mixtral-8x7b.yaml: cannot open"), std::string::npos) << r.err;
}

TEST(DryrunCli, WrappedMindFormersScriptThenLogsDryrun) {
  TempDir dir;
  mindformers_folder(dir);
  RunResult w = run_preflight("wrap --mode dryrun --python /usr/bin/python3 " +
                              shell_quote(wrap_data("mindformers_style.sh").string()) + " -o " +
                              shell_quote((dir / "dryrun.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  RunResult r = run_in(dir.path(), "bash dryrun.sh");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // Table rows: stage, rank, status, seconds, device MiB, used peak MiB, actual peak MiB, log.
  std::vector<std::vector<std::string>> rows;
  std::istringstream table(r.out);
  for (std::string line; std::getline(table, line);) {
    std::istringstream cells(line);
    std::vector<std::string> row;
    for (std::string c; cells >> c;) row.push_back(c);
    if (row.size() == 8 && row[2] == "ok") rows.push_back(row);
  }
  ASSERT_EQ(rows.size(), 4u) << r.out;
  for (int s = 0; s < 4; ++s) {
    const auto& row = rows[static_cast<std::size_t>(s)];
    EXPECT_EQ(row[0], std::to_string(s));
    EXPECT_EQ(row[1], std::to_string(2 * s));  // RANK_ID = s·8/4
    EXPECT_EQ(row[4], "65536");
    EXPECT_EQ(row[5], std::to_string(used_peak(s)));
    EXPECT_EQ(row[6], std::to_string(used_peak(s) + 512));
    EXPECT_EQ(row[7], "output/preflight_dryrun/stage_" + std::to_string(s) + "_rank_" +
                          std::to_string(2 * s) + "/mindformer.log");
  }
  // log_parse reads the same folder: every stage mapped, nothing to complain about, SAPP's block.
  RunResult logs =
      run_in(dir.path(), preflight_bin() + " logs dryrun output/preflight_dryrun --pp 4 --world 8 --json");
  ASSERT_EQ(logs.exit_code, 0) << logs.out << logs.err;
  nlohmann::json j = nlohmann::json::parse(logs.out);
  EXPECT_TRUE(j["ok"].get<bool>()) << logs.out;
  RunResult sapp = run_in(dir.path(), preflight_bin() + " logs dryrun output/preflight_dryrun --sapp");
  ASSERT_EQ(sapp.exit_code, 0) << sapp.err;
  EXPECT_NE(sapp.out.find("head_memory: " + std::to_string(used_peak(0) + 512)), std::string::npos)
      << sapp.out;
  EXPECT_NE(sapp.out.find("tail_memory: " + std::to_string(used_peak(3) + 512)), std::string::npos)
      << sapp.out;
}

TEST(DryrunCli, JsonReportForAnyCommand) {
  TempDir dir;
  mindformers_folder(dir);
  RunResult r = run_in(dir.path(), preflight_bin() +
                                       " dryrun --json --stages 2 --rank-size 16 --out o -- /usr/bin/python3 "
                                       "run_mindformer.py --config configs/test_llama.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stages"], 2);
  EXPECT_EQ(j["rank_size"], 16);
  ASSERT_EQ(j["results"].size(), 2u);
  // The stand-in reads pp 4 from the YAML: ranks 0 and 8 of 16 are its stages 0 and 2.
  EXPECT_EQ(j["results"][1]["rank"], 8);
  EXPECT_EQ(j["results"][1]["memory"]["used_peak_mib"]["mib"], used_peak(2));
  EXPECT_EQ(j["results"][1]["memory"]["actual_peak_mib"]["mib"], used_peak(2) + 512);
  EXPECT_EQ(j["results"][1]["memory"]["used_peak_mib"]["line"], 6);
  EXPECT_EQ(fs::path(j["results"][1]["log"].get<std::string>()),
            dir / "o" / "stage_1_rank_8" / "mindformer.log");
  EXPECT_TRUE(j["ok"].get<bool>());
}

TEST(DryrunCli, FailuresAndTimeoutsAreReportedPerStage) {
  TempDir dir;
  mindformers_folder(dir);
  const std::string cmd =
      " dryrun --json --out o --rank-size 8 -- /usr/bin/python3 run_mindformer.py --config "
      "configs/test_llama.yaml";
  RunResult f = run_in(dir.path(), "PREFLIGHT_TEST_FAIL_STAGE=2 " + preflight_bin() + cmd);
  EXPECT_EQ(f.exit_code, 1) << f.err;
  nlohmann::json j = nlohmann::json::parse(f.out);
  EXPECT_FALSE(j["ok"].get<bool>());
  EXPECT_EQ(j["results"][2]["status"], "exit 4");
  EXPECT_TRUE(j["results"][2]["memory"].is_null());
  EXPECT_EQ(j["results"][2]["last_error"]["text"], "RuntimeError: simulated failure");
  EXPECT_EQ(j["results"][1]["status"], "ok");

  auto t0 = std::chrono::steady_clock::now();
  RunResult t = run_in(dir.path(), "PREFLIGHT_TEST_SLEEP=60 " + preflight_bin() + " dryrun --timeout 1 -j 2" +
                                       cmd.substr(std::string(" dryrun").size()));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(t.exit_code, 1) << t.err;
  EXPECT_LT(seconds, 30.0);
  nlohmann::json k = nlohmann::json::parse(t.out);
  for (const auto& s : k["results"]) {
    EXPECT_EQ(s["status"], "timeout");
    EXPECT_TRUE(s["timed_out"].get<bool>());
  }
  // A command that prints no memory block is not a success.
  RunResult none =
      run_in(dir.path(), preflight_bin() + " dryrun --stages 2 --rank-size 2 -- sh -c 'echo hi'");
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("no memory block"), std::string::npos) << none.out;
  // A stage that fails without an error line MindSpore's way: its log's last line says why.
  RunResult missing = run_in(
      dir.path(), preflight_bin() + " dryrun --stages 2 --rank-size 2 -- /usr/bin/python3 nowhere_run.py");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("stage 0: exit 2; its log ends: "), std::string::npos) << missing.out;
  EXPECT_NE(missing.out.find("nowhere_run.py"), std::string::npos) << missing.out;
}

TEST(DryrunCli, JobsLimitHowManyStagesRunAtOnce) {
  TempDir dir;
  mindformers_folder(dir);
  fs::create_directories(dir / "spans");
  RunResult r =
      run_in(dir.path(), "PREFLIGHT_TEST_SPANS=spans PREFLIGHT_TEST_SLEEP=0.2 " + preflight_bin() +
                             " dryrun -j 1 --out o --rank-size 8 -- /usr/bin/python3 run_mindformer.py "
                             "--config configs/test_llama.yaml");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::pair<double, double>> spans;
  for (int s = 0; s < 4; ++s) {
    std::istringstream in(read_file(dir / "spans" / ("span-" + std::to_string(s) + ".txt")));
    double a = 0, b = 0;
    in >> a >> b;
    spans.emplace_back(a, b);
  }
  for (int s = 1; s < 4; ++s)
    EXPECT_GE(spans[s].first, spans[s - 1].second) << "stage " << s << " overlapped";
}

TEST(DryrunCli, BadInput) {
  TempDir dir;
  EXPECT_EQ(run_in(dir.path(), preflight_bin() + " dryrun --stages 2 --rank-size 4").exit_code, 2);
  RunResult r = run_in(dir.path(), preflight_bin() + " dryrun --stages 4 --rank-size 6 -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --rank-size: 6 ranks cannot be split into 4 pipeline stages"),
            std::string::npos)
      << r.err;
  RunResult m = run_in(dir.path(), preflight_bin() + " dryrun --rank-size 4 -- python3 run_mindformer.py");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("--stages: needed"), std::string::npos) << m.err;
  RunResult e =
      run_in(dir.path(), preflight_bin() + " dryrun --env NOEQUALS --stages 1 --rank-size 1 -- true");
  EXPECT_EQ(e.exit_code, 2);
}

TEST(DryrunSharedScripts, MindFormersReadmeInvocations) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  TempDir dir;
  copy_data("standins/run_mindformer.py", dir.path());
  const std::string yaml = "parallel_config:\n  data_parallel: 1\n  model_parallel: 4\n  pipeline_stage: 2\n";
  for (const char* y : {"research/llama3_1/llama3_1_8b/finetune_llama3_1_8b.yaml",
                        "research/llama3_1/llama3_1_70b/finetune_llama3_1_70b.yaml",
                        "research/mixtral/mixtral_8x7b/pretrain_mixtral-8x7b.yaml",
                        "research/mixtral/mixtral_8x7b/predict_mixtral-8x7b.yaml"})
    write_file(dir / y, yaml);
  fs::path script = shared_data_dir() / "launch_scripts" / "mindformers" / "msrun_usage_examples.sh";
  RunResult w = run_preflight("wrap --mode dryrun --python /usr/bin/python3 " + shell_quote(script.string()) +
                              " -o " + shell_quote((dir / "dryrun.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  RunResult r = run_in(dir.path(), "bash dryrun.sh");
  // The five README launches: 8, 64, 16, 16 and 8 workers; each dryrun has 2 stages (the YAMLs above).
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  struct Launch {
    int line, second_rank;
  };
  for (Launch l : std::vector<Launch>{{7, 4}, {19, 32}, {31, 8}, {39, 8}, {47, 4}}) {
    fs::path out = dir / "output" / "preflight_dryrun" / ("line" + std::to_string(l.line));
    EXPECT_TRUE(fs::exists(out / "stage_0_rank_0" / "mindformer.log")) << out;
    fs::path second = out / ("stage_1_rank_" + std::to_string(l.second_rank)) / "mindformer.log";
    ASSERT_TRUE(fs::exists(second)) << second;
    // The stand-in sees pp 2 and RANK_ID = RANK_SIZE/2: its stage 1.
    EXPECT_NE(read_file(second).find(
                  "Used peak memory usage (without fragments): " + std::to_string(used_peak(1)) + "M"),
              std::string::npos);
  }
  // The predict launch's escaped quote reached the entry point as one argument.
  EXPECT_NE(read_file(dir / "output" / "preflight_dryrun" / "line47" / "stage_0_rank_0" / "mindformer.log")
                .find("--predict_data I love Beijing, because"),
            std::string::npos);
}
