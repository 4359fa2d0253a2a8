// `preflight wrap` end to end: rewritten scripts run with bash reach `preflight analyze` with the script's
// own values; --sed-compatible against the real sed; --in-place; refusals.  The second half runs the real
// launch scripts from ../shared/data/launch_scripts (skipped when that folder is absent).
#include <gtest/gtest.h>

#include "preflight/wrap/process.hpp"
#include "wrap_test_util.hpp"

using namespace preflight::test;

namespace {

struct Expect {
  int tp, pp, layers, hidden, world;
};

void expect_layout(const nlohmann::json& j, const Expect& e, const std::string& what) {
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), e.tp) << what;
  EXPECT_EQ(j["strategy"]["pp"].get<int>(), e.pp) << what;
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), e.world) << what;
  EXPECT_EQ(j["model"]["num_layers"].get<int>(), e.layers) << what;
  EXPECT_EQ(j["model"]["hidden_size"].get<int>(), e.hidden) << what;
}

/// Wraps `script` (analyze mode, JSON report) into dir/wrapped.sh and runs it there with `env` in front.
RunResult wrap_and_run(const TempDir& dir, const fs::path& script, const std::string& env = "",
                       const std::string& args = "", const std::string& wrap_opts = "--analyze-arg=--json") {
  RunResult w = run_preflight("wrap " + shell_quote(script.string()) + " " + wrap_opts + " -o " +
                              shell_quote((dir / "wrapped.sh").string()));
  EXPECT_EQ(w.exit_code, 0) << w.err;
  return run_in(dir.path(), env + " bash wrapped.sh " + args);
}

const std::string kSed =
    "sed 's%torchrun $DISTRIBUTED_ARGS pretrain_gpt.py%python ../get_training_info.py $DISTRIBUTED_ARGS %g'";

}  // namespace

TEST(WrapCli, StringStyleRunsAndReachesAnalyze) {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data("string_style.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = json_in(r.out);
  expect_layout(j, {2, 2, 16, 2048, 8}, "string_style");
  EXPECT_EQ(j["strategy"]["dp"].get<int>(), 2);
  EXPECT_EQ(run_in(dir.path(), "bash -n wrapped.sh").exit_code, 0);  // the input fails bash -n, this does not
  EXPECT_NE(run_in(dir.path(), "bash -n " + shell_quote(wrap_data("string_style.sh").string())).exit_code, 0);
}

TEST(WrapCli, ArrayStyleWithConditionalArgumentsAndEnvironment) {
  TempDir dir;
  write_file(dir / "pretrain_gpt.py", "");  // the script checks that it runs from the Megatron-LM folder
  RunResult r = wrap_and_run(dir, wrap_data("array_style.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = json_in(r.out);
  expect_layout(j, {4, 2, 40, 5120, 16}, "array_style");
  EXPECT_EQ(j["model"]["num_query_groups"].get<int>(), 8);
  EXPECT_EQ(j["model"]["normalization"], "RMSNorm");
  RunResult mha = run_in(dir.path(), "USE_GQA=0 NUM_NODES=4 bash wrapped.sh");
  ASSERT_EQ(mha.exit_code, 0) << mha.err;
  nlohmann::json k = json_in(mha.out);
  EXPECT_EQ(k["model"]["num_query_groups"].get<int>(), 40);
  EXPECT_EQ(k["strategy"]["world_size"].get<int>(), 32);
  EXPECT_EQ(run_in(dir.path(), "bash -n wrapped.sh").exit_code, 0);
}

TEST(WrapCli, DeepspeedLauncherSizesComeFromHostfileAndNumGpus) {
  TempDir dir;
  write_file(dir / "hostfile", "node-a slots=8\nnode-b slots=8\n");
  RunResult r = wrap_and_run(dir, wrap_data("deepspeed_style.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = json_in(r.out);
  expect_layout(j, {2, 2, 24, 2048, 8}, "deepspeed_style");  // 2 hosts × --num_gpus 4
  EXPECT_EQ(j["model"]["num_query_groups"].get<int>(), 4);   // Megatron-DeepSpeed's --num-key-value-heads
  EXPECT_EQ(j["model"]["normalization"], "RMSNorm");         // its lower-case spelling
  EXPECT_EQ(json_in(read_file(dir / "train.log"))["strategy"]["world_size"].get<int>(),
            8);  // | tee still works
  EXPECT_NE(r.out.find("world size 8 = 2 nodes x 4, from deepspeed hostfile hostfile"), std::string::npos)
      << r.out;
}

TEST(WrapCli, SrunSizesComeFromTheAllocationOrTorchrun) {
  TempDir dir;
  // srun python …: the ranks are SLURM tasks; inside a 2-node, 4-tasks-per-node allocation.
  RunResult r = wrap_and_run(dir, wrap_data("slurm_style.sh"),
                             "SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=8 SLURM_NTASKS_PER_NODE='4(x2)'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = json_in(r.out);
  expect_layout(j, {2, 2, 12, 1024, 8}, "slurm_style srun python");
  EXPECT_EQ(j["strategy"]["dp"].get<int>(), 2);
  EXPECT_NE(r.err.find("world size 8 = 2 nodes x 4"), std::string::npos) << r.err;
  // srun torchrun …: torchrun's flags, one analyze (not one per node).
  RunResult t = run_in(dir.path(), "USE_TORCHRUN=1 bash wrapped.sh");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  expect_layout(json_in(t.out), {2, 2, 12, 1024, 8}, "slurm_style srun torchrun");
  // Outside an allocation: the job size of the script's #SBATCH lines (2 nodes × 4 tasks).
  RunResult bare = run_in(dir.path(), "bash wrapped.sh");
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(json_in(bare.out)["strategy"]["world_size"].get<int>(), 8);
  EXPECT_NE(bare.err.find("world size 8 = 2 nodes x 4"), std::string::npos) << bare.err;
  // srun's own default, with no #SBATCH size and no allocation: one task on one node, fewer than tp 2 ×
  // pp 2 needs: analysed on 4 ranks, with the assumption and the size the run needs said.
  std::string text = read_file(wrap_data("slurm_style.sh"));
  text.replace(text.find("#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"), 44, "");
  write_file(dir / "no_sbatch.sh", text);
  RunResult none = wrap_and_run(dir, dir / "no_sbatch.sh");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(json_in(none.out)["strategy"]["world_size"].get<int>(), 4);
  EXPECT_NE(none.err.find("one task per node"), std::string::npos) << none.err;
  EXPECT_NE(json_in(none.out)["warnings"].dump().find(
                "world size 1 is smaller than the layout's tp·pp·cp = 2·2·1 = 4"),
            std::string::npos)
      << none.out;
}

TEST(WrapCli, TorchModuleLauncherBehindAnEnvironmentPrefix) {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data("module_style.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("preparing\n", 0), 0u);  // the other python call still runs
  expect_layout(json_in(r.out), {1, 1, 12, 768, 4}, "module_style");
}

TEST(WrapCli, HumanTablesByDefault) {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data("string_style.sh"), "", "", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("preflight analyze"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tp 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"strategy\""), std::string::npos);
}

TEST(WrapCli, SedCompatibleIsByteExactWithSed) {
  TempDir dir;
  for (const char* name : {"string_style.sh", "array_style.sh"}) {
    fs::path in = wrap_data(name);
    RunResult ours = run_preflight("wrap --sed-compatible " + shell_quote(in.string()));
    RunResult sed = run_shell(kSed + " " + shell_quote(in.string()));
    ASSERT_EQ(ours.exit_code, 0) << ours.err;
    ASSERT_EQ(sed.exit_code, 0);
    EXPECT_EQ(ours.out, sed.out) << name;
  }
  RunResult none =
      run_preflight("wrap --sed-compatible " + shell_quote(wrap_data("array_style.sh").string()));
  EXPECT_NE(none.err.find("matches no line"), std::string::npos) << none.err;
  EXPECT_EQ(run_preflight("wrap --sed-compatible --mode trace " +
                          shell_quote(wrap_data("string_style.sh").string()))
                .exit_code,
            2);
}

TEST(WrapCli, InPlaceKeepsABackupAndItsMode) {
  TempDir dir;
  fs::path s = copy_data("string_style.sh", dir.path(), "launch.sh");
  fs::permissions(s, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  std::string original = read_file(s);
  RunResult a = run_preflight("wrap --in-place " + shell_quote(s.string()));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(read_file(dir / "launch.sh.orig"), original);
  std::string wrapped = read_file(s);
  EXPECT_NE(wrapped, original);
  EXPECT_EQ(fs::status(s).permissions(),
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  RunResult b =
      run_preflight("wrap --in-place " + shell_quote(s.string()));  // already wrapped: nothing to do
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(read_file(s), wrapped);
  EXPECT_EQ(read_file(dir / "launch.sh.orig"), original);
  EXPECT_NE(b.err.find("already wrapped"), std::string::npos) << b.err;
  // A different script under the same name with an old backup next to it: refuse rather than lose the backup.
  copy_data("array_style.sh", dir.path(), "launch.sh");
  RunResult c = run_preflight("wrap --in-place " + shell_quote(s.string()));
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("launch.sh.orig: a different backup already exists"), std::string::npos) << c.err;
  EXPECT_EQ(run_preflight("wrap --in-place -o x.sh " + shell_quote(s.string())).exit_code, 2);
}

TEST(WrapCli, JsonReport) {
  RunResult r = run_preflight("wrap --json " + shell_quote(wrap_data("string_style.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["launches"].size(), 1u);
  EXPECT_EQ(j["launches"][0]["line"], 39);
  EXPECT_EQ(j["launches"][0]["launcher"], "torchrun");
  EXPECT_EQ(j["launches"][0]["action"], "preflight analyze");
  EXPECT_EQ(j["notes"].size(), 2u);
  EXPECT_TRUE(j["changed"].get<bool>());
  EXPECT_NE(j["text"].get<std::string>().find(" analyze --nnodes-variable=NNODES $DISTRIBUTED_ARGS \\\n"),
            std::string::npos);
}

TEST(WrapCli, RefusalsExitTwoWithAReason) {
  RunResult none = run_preflight("wrap " + shell_quote(wrap_data("eval_style.sh").string()));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(none.err.rfind("preflight: error: " + wrap_data("eval_style.sh").string() +
                               ": no launch of a training entry point found\n",
                           0),
            0u)
      << none.err;
  EXPECT_NE(none.err.find("closest lines:"), std::string::npos);
  EXPECT_TRUE(none.out.empty());
  RunResult missing = run_preflight("wrap /nonexistent/launch.sh");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("preflight: error: /nonexistent/launch.sh: cannot read the script"),
            std::string::npos);
  EXPECT_EQ(
      run_preflight("wrap --mode bogus " + shell_quote(wrap_data("string_style.sh").string())).exit_code, 2);
}

// ---- the real launch scripts (../shared/data/launch_scripts) ----

namespace {

fs::path shared_script(const std::string& rel) {
  return shared_data_dir() / "launch_scripts" / rel;
}

/// Stand-ins for the commands Megatron-DeepSpeed's long script calls around its launch (wget downloads,
/// ssh to workers, DeepSpeed's ds_ssh, nvidia-smi on an 8-GPU node).
std::string stub_path(const TempDir& dir) {
  write_file(dir / "stubs" / "wget", "#!/bin/sh\nexit 1\n");
  write_file(dir / "stubs" / "ssh", "#!/bin/sh\nexit 255\n");
  write_file(dir / "stubs" / "nvidia-smi",
             "#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do echo 'NVIDIA H100 80GB HBM3'; done\n");
  write_file(dir / "stubs" / "ds_ssh",
             "#!/bin/sh\nfor i in $(seq 10); do echo 'NVIDIA H100 80GB HBM3'; done\n");
  for (const char* n : {"wget", "ssh", "nvidia-smi", "ds_ssh"})
    fs::permissions(dir / "stubs" / n, fs::perms::owner_all);
  return "PATH=" + shell_quote((dir / "stubs").string()) + ":$PATH";
}

}  // namespace

TEST(WrapSharedScripts, EveryMegatronScriptReachesAnalyzeWithItsOwnValues) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  struct Case {
    std::string script, env, args;
    Expect e;
    int query_groups;
    std::string analyze_args = "";  // extra options for preflight analyze
  };
  std::vector<Case> cases = {
      {"megatron/pretrain_gpt_distributed_with_mp.sh", "", "", {2, 2, 24, 1024, 8}, 16},
      {"megatron/get_pretrain_gpt_distributed_with_mp_info.sh", "", "", {2, 2, 24, 4096, 8}, 32},
      {"megatron/train_llama3_8b_h100_fp8.sh", "", "", {1, 1, 32, 4096, 8}, 8},
      // NNODES=${SLURM_NNODES:-"1"}: run as a 4-node SLURM job, as the script is written for.
      {"megatron/train_mixtral_8x7b_distributed.sh",
       "SLURM_NNODES=4",
       "ckpt tokenizer.model data",
       {1, 4, 32, 4096, 32},
       8},
      // Its vocabulary comes from ./tmp/tokenizer.model ("offical llama tokenizer.model"), absent here: give
      // Llama 2's 32000 the way analyze's message asks.
      {"other/mds_pretrain_llama2_distributed.sh",
       "",
       "",
       {2, 2, 24, 2048, 8},
       4,
       " --analyze-arg=--vocab-size=32000"},
      {"other/mds_pretrain_gpt_1.3B_seq_parallel.sh", "STUBS", "", {8, 1, 24, 2048, 8}, 16},
  };
  for (const Case& c : cases) {
    TempDir dir;
    write_file(dir / "pretrain_gpt.py", "");  // llama3: must run from the Megatron-LM folder
    fs::create_directories(dir / "tmp");      // mds llama2: BASE_PATH=./tmp holds its DeepSpeed config
    std::string env = c.env == "STUBS" ? stub_path(dir) : c.env;
    for (bool json : {true, false}) {
      RunResult r = wrap_and_run(dir, shared_script(c.script), env, c.args,
                                 (json ? "--analyze-arg=--json" : "") + c.analyze_args);
      ASSERT_EQ(r.exit_code, 0) << c.script << "\n" << r.err;
      if (json) {
        nlohmann::json j = json_in(r.out);
        expect_layout(j, c.e, c.script);
        EXPECT_EQ(j["model"]["num_query_groups"].get<int>(), c.query_groups) << c.script;
      } else {
        EXPECT_NE(r.out.find("preflight analyze"), std::string::npos) << c.script << "\n" << r.out;
        EXPECT_NE(r.out.find("tp " + std::to_string(c.e.tp)), std::string::npos) << c.script << "\n" << r.out;
      }
    }
  }
}

// Megatron-LM's own Llama-3-8B FP8 script, with the layout of the table its README publishes for it
// (examples/llama/README.md, "FP8 Performance": 8 H100s, cp 2, 13812 tokens/s/GPU, i.e. an iteration of
// 128 · 8192 / (13812 · 8) = 9.49 s), run through the analysis mode with --system: within 5 % of it.
TEST(WrapSharedScripts, Llama3ScriptIsPricedWithinFivePercentOfItsPublishedThroughput) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  std::string text = read_file(shared_script("megatron/train_llama3_8b_h100_fp8.sh"));
  auto at = text.find("\nCP_SIZE=1");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 10, "\nCP_SIZE=2");
  TempDir dir;
  write_file(dir / "pretrain_gpt.py", "");
  write_file(dir / "train_cp2.sh", text);
  RunResult r = wrap_and_run(dir, dir / "train_cp2.sh", "", "",
                             "--analyze-arg=--json --analyze-arg=--system=h100-sxm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["cp"], 2);
  const double measured_ms = 128.0 * 8192 / (13812.0 * 8) * 1000;
  const double predicted_ms = j["estimate"]["iteration_ms"].get<double>();
  EXPECT_NEAR(predicted_ms / measured_ms, 1.0, 0.05) << predicted_ms << " vs " << measured_ms;
}

TEST(WrapSharedScripts, Gpt3ScriptIsForSixteenNodes) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  const std::string args = "ckpt tb gpt2-vocab.json gpt2-merges.txt data";
  TempDir dir;
  // As shipped (NUM_NODES=1, "Change for multinode config"): 8 GPUs for tp 8 × pp 16.  analyze analyses the
  // 128 GPUs the layout needs and says what to set, by flag and by the script's variable.
  RunResult as_is = wrap_and_run(dir, shared_script("megatron/train_gpt3_175b_distributed.sh"), "", args);
  ASSERT_EQ(as_is.exit_code, 0) << as_is.err;
  expect_layout(json_in(as_is.out), {8, 16, 96, 12288, 128}, "gpt3 175B as shipped");
  EXPECT_NE(json_in(as_is.out)["warnings"].dump().find(
                "world size 8 is smaller than the layout's tp·pp·cp = 8·16·1 = 128: analysing 128 "
                "GPUs (dp = 1); the run needs --nnodes 16 (8 GPUs per node): set NUM_NODES=16 in the "
                "launch script"),
            std::string::npos)
      << as_is.out;
  // With the one edit the script asks for: 16 nodes × 8 GPUs.
  std::string text = read_file(shared_script("megatron/train_gpt3_175b_distributed.sh"));
  auto at = text.find("\nNUM_NODES=1\n");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 13, "\nNUM_NODES=16\n");
  write_file(dir / "gpt3_16_nodes.sh", text);
  RunResult r = wrap_and_run(dir, dir / "gpt3_16_nodes.sh", "", args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {8, 16, 96, 12288, 128}, "gpt3 175B on 16 nodes");
}

TEST(WrapSharedScripts, SedCompatibleMatchesThePublicRecipe) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  fs::path in = shared_script("megatron/pretrain_gpt_distributed_with_mp.sh");
  RunResult ours = run_preflight("wrap --sed-compatible " + shell_quote(in.string()));
  RunResult sed = run_shell(kSed + " " + shell_quote(in.string()));
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  EXPECT_EQ(ours.out, sed.out);
  EXPECT_NE(ours.out, read_file(in));
  EXPECT_NE(ours.out.find("\npython ../get_training_info.py $DISTRIBUTED_ARGS  \\\n"), std::string::npos);
}

TEST(WrapSharedScripts, RewrittenScriptsPassBashNWheneverTheInputDid) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  TempDir dir;
  int wrapped = 0;
  for (const auto& folder : {"megatron", "mindformers", "other"}) {
    for (const auto& f : fs::directory_iterator(shared_data_dir() / "launch_scripts" / folder)) {
      if (f.path().extension() != ".sh") continue;
      bool input_ok = run_shell("bash -n " + shell_quote(f.path().string())).exit_code == 0;
      for (const char* mode : {"analyze", "trace", "dryrun"}) {
        fs::path out = dir / "out.sh";
        RunResult w = run_preflight("wrap --mode " + std::string(mode) + " --entry parallel_mixtral.py " +
                                    shell_quote(f.path().string()) + " -o " + shell_quote(out.string()));
        if (w.exit_code != 0) {
          EXPECT_EQ(w.exit_code, 2) << f.path() << " " << mode << "\n" << w.err;
          continue;
        }
        ++wrapped;
        if (input_ok) {
          EXPECT_EQ(run_shell("bash -n " + shell_quote(out.string())).exit_code, 0)
              << f.path() << " " << mode;
        }
      }
    }
  }
  EXPECT_GE(wrapped, 20);
}

TEST(WrapSharedScripts, MindFormersScripts) {
  if (!shared_data_available()) GTEST_SKIP() << shared_data_missing();
  RunResult ex = run_preflight("wrap --mode dryrun --json " +
                               shell_quote(shared_script("mindformers/msrun_usage_examples.sh").string()));
  ASSERT_EQ(ex.exit_code, 0) << ex.err;
  nlohmann::json j = nlohmann::json::parse(ex.out);
  ASSERT_EQ(j["launches"].size(), 5u);
  for (const auto& l : j["launches"]) {
    EXPECT_EQ(l["launcher"], "msrun_launcher.sh");
    EXPECT_EQ(l["entry"], "run_mindformer.py");
  }
  EXPECT_EQ(j["launches"][0]["action"], "preflight dryrun --out output/preflight_dryrun/line7");

  RunResult mixtral =
      run_preflight("wrap --mode dryrun --json --entry parallel_mixtral.py " +
                    shell_quote(shared_script("mindformers/msrun_launch_mixtral.sh").string()));
  ASSERT_EQ(mixtral.exit_code, 0) << mixtral.err;
  EXPECT_EQ(nlohmann::json::parse(mixtral.out)["launches"].size(), 2u);

  // The launcher itself builds `msrun …` in a string and evals it: only `preflight run` can catch that.
  RunResult launcher =
      run_preflight("wrap " + shell_quote(shared_script("mindformers/msrun_launcher.sh").string()));
  EXPECT_EQ(launcher.exit_code, 2);
  EXPECT_NE(launcher.err.find("eval $EXECUTE_ORDER"), std::string::npos) << launcher.err;
  EXPECT_NE(launcher.err.find("preflight run --mode analyze"), std::string::npos) << launcher.err;
  RunResult sapp = run_preflight(
      "wrap --mode dryrun " + shell_quote(shared_script("mindformers/pipeline_balance_dryrun.sh").string()));
  EXPECT_EQ(sapp.exit_code, 2);
  EXPECT_NE(sapp.err.find("$EXECUTE_ORDER &>"), std::string::npos) << sapp.err;
}

namespace {

/// Wraps tests/data/wrap/<script> in analyze mode (JSON) and runs it with `env` and `args`: the layout
/// `preflight analyze` saw.
nlohmann::json analyzed(const std::string& script, const std::string& env = "",
                        const std::string& args = "") {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data(script), env, args);
  EXPECT_EQ(r.exit_code, 0) << script << "\n" << r.err;
  return json_in(r.out);
}

}  // namespace

// Launch styles seen in public recipes, each in a script of our own in the same style: every one reaches
// `preflight analyze` with the script's own values.
TEST(WrapStyles, SbatchHereDocumentRunsHereWithTheJobsSize) {
  // The job's script is the here-document; the analysis runs it here with the size sbatch was given.
  expect_layout(analyzed("sbatch_heredoc.sh"), {2, 2, 12, 1024, 8}, "sbatch <<EOF, 2 nodes × 4");
  expect_layout(analyzed("sbatch_heredoc.sh", "NODES=4"), {2, 2, 12, 1024, 16}, "sbatch <<EOF, 4 nodes");
  RunResult w = run_preflight("wrap " + shell_quote(wrap_data("sbatch_heredoc.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  // with the allocation's GPUs a node (its --gpus-per-node), which scripts size tp or torchrun by
  // (and SLURM's 1(x$NODES) tasks a node, a node list, a job id: quoted where the shell needs it)
  EXPECT_NE(w.out.find(
                "SLURM_NNODES=$NODES SLURM_JOB_NUM_NODES=$NODES SLURM_NTASKS_PER_NODE=1 "
                "SLURM_GPUS_PER_NODE=4 SLURM_GPUS_ON_NODE=4 SLURM_TASKS_PER_NODE=\"1(x$NODES)\" "
                "SLURM_JOB_NODELIST=\"preflight-node[1-$NODES]\" SLURM_NODELIST=\"preflight-node[1-$NODES]\" "
                "SLURM_JOB_ID=1 SLURM_JOBID=1 bash <<EOF"),
            std::string::npos)
      << w.out;
  // Trace mode keeps the submission (the job is traced where it runs) and rewrites the launch inside it.
  RunResult t = run_preflight("wrap --mode trace " + shell_quote(wrap_data("sbatch_heredoc.sh").string()));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("sbatch --job-name=gpt"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("run --mode trace -- srun torchrun"), std::string::npos) << t.out;
}

TEST(WrapStyles, SrunBashCommandString) {
  // One shell per node under srun: analysis runs the shell once, with the job size of the #SBATCH lines.
  expect_layout(analyzed("srun_bash_c.sh"), {4, 1, 16, 2048, 8}, "srun bash -c, #SBATCH --nodes=2");
  expect_layout(analyzed("srun_bash_c.sh", "SLURM_NNODES=4"), {4, 1, 16, 2048, 16}, "inside a 4-node job");
}

// A job script that binds its command through a prefix variable (`bash -c "$CMD_PREFIX $TRAINING_CMD"` with
// numactl or taskset): the analysis runs the command without the binding, whether or not this machine has
// numactl (the wrapped script's functions, `preflight run`'s shims).  Before, on a machine without numactl
// the wrapped script ended with "numactl: command not found" and exit status 0, no analysis.  `preflight
// run` also takes the job size of the #SBATCH lines (4 nodes × 4 tasks), as wrap does.
TEST(WrapStyles, BindingPrefixInAVariable) {
  expect_layout(analyzed("numactl_prefix.sh"), {2, 2, 12, 1024, 16}, "numactl --membind=0-3 in $CMD_PREFIX");
  expect_layout(analyzed("numactl_prefix.sh", "BIND=taskset"), {2, 2, 12, 1024, 16}, "taskset -c 0-71");
  const std::string script = shell_quote(wrap_data("numactl_prefix.sh").string());
  for (const std::string env : {"", "BIND=taskset "}) {
    TempDir dir;
    const RunResult r = run_in(
        dir.path(), env + shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " + script);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_layout(json_in(r.out), {2, 2, 12, 1024, 16}, "preflight run, " + env);
    EXPECT_NE(r.err.find("#SBATCH lines"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("command not found"), std::string::npos) << r.err;
  }
}

// A launch string run as a bare ${APP}: the shell splits it into words without removing quotes, so the
// invocation inside must carry none (it had been `"${PREFLIGHT:-…}"`, looked up with its quote characters:
// "No such file or directory", exit 127, on HYGON-AI's Megatron-LM-das examples).
TEST(WrapStyles, LaunchStringRunAsABareVariable) {
  expect_layout(analyzed("app_variable.sh"), {2, 2, 8, 1024, 4}, "APP=\"torchrun …\"; ${APP}");
  // one python process: the analysis takes the layout's 4 GPUs (with a warning)
  expect_layout(analyzed("app_variable.sh", "LAUNCH_BACKEND=python"), {2, 2, 8, 1024, 4},
                "APP=\"python -u pretrain_gpt.py …\"; ${APP}");
}

// mpirun starting a shell per rank (`mpirun -np ${NP} -N 8 … bash -c "numactl … python pretrain_gpt.py …"`):
// the analysis runs the shell once as rank 0 with the size mpirun gives (Open MPI's variables, WORLD_SIZE),
// known only when it runs.  wrap puts `preflight run` in front of mpirun; `preflight run` on the script
// catches mpirun by its shim.  Without MPI on this machine both had ended in "mpirun: command not found"
// (run) or a one-process analysis missing --world-size (wrap).
TEST(WrapStyles, MpirunOfAShellPerRank) {
  expect_layout(analyzed("mpirun_shell.sh"), {2, 2, 8, 1024, 16}, "mpirun -np 16 -N 8 bash -c");
  expect_layout(analyzed("mpirun_shell.sh", "NP=32"), {2, 2, 8, 1024, 32}, "mpirun -np 32");
  TempDir dir;
  const RunResult r =
      run_in(dir.path(), "NP=32 " + shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " +
                             shell_quote(wrap_data("mpirun_shell.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 2, 8, 1024, 32}, "preflight run, mpirun -np 32");
  EXPECT_NE(r.err.find("as rank 0 of 32 (4 nodes × 8"), std::string::npos) << r.err;
}

// Job scripts of schedulers other than SLURM, run outside their allocation for the analysis: the sizes they
// compute from the scheduler's variables (PBS: `wc -l < $PBS_NODEFILE`; Grid Engine on ABCI: $NHOSTS,
// $SGE_RESOURCE_TYPE, $SGE_JOB_HOSTLIST, $JOB_ID; PJM: $PJM_MPI_PROC, $PJM_O_NODEINF) are the job's header's.
// Before, each variable was empty: rioyokotalab/Megatron-Llama2's ABCI scripts stopped at "mpirun -np:
// expected a positive whole number, got '--npernode'".  Inside an allocation its variables win.
TEST(WrapStyles, PbsGridEngineAndPjmJobHeaders) {
  expect_layout(analyzed("pbs_style.sh"), {2, 2, 12, 1024, 8}, "#PBS -l select=2, 4 ranks a node");
  expect_layout(analyzed("sge_style.sh"), {2, 4, 16, 2048, 16}, "#$ -l rt_AF=2: 2 hosts of 8");
  expect_layout(analyzed("sge_style.sh", "NHOSTS=4"), {2, 4, 16, 2048, 32}, "an allocation of 4 hosts");
  expect_layout(analyzed("pjm_style.sh"), {4, 2, 8, 4096, 16}, "#PJM --mpi proc=16");
  TempDir dir;
  write_file(dir.path() / "nodes", "x1\nx2\nx3\nx4\n");
  expect_layout(analyzed("pbs_style.sh", "PBS_NODEFILE=" + shell_quote((dir.path() / "nodes").string())),
                {2, 2, 12, 1024, 16}, "an allocation's PBS_NODEFILE of 4 nodes");
  const RunResult r =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " +
                             shell_quote(wrap_data("pbs_style.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 2, 12, 1024, 8}, "preflight run -- bash pbs_style.sh");
  EXPECT_NE(r.err.find("#PBS lines (2 nodes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 nodes x 4"), std::string::npos) << r.err;
}

// A submission script under `preflight run` (analysis): each sbatch / qsub runs its job here, not submitted,
// with the size its options and header give (sbatch -N 2 over #SBATCH --nodes=1, --export=…; qsub -l select=4
// over #PBS select=2); the job's output goes to standard error and the submission prints the scheduler's
// message.  sbatch and qsub had not been shadowed: the analysis would have submitted the real jobs.
TEST(WrapStyles, SubmissionsRunTheirJobsHere) {
  TempDir dir;
  const RunResult r = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --mode analyze -- bash " +
                                             shell_quote(wrap_data("submit_jobs.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted slurm job 1\nsubmitted slurm job 1\n1.preflight"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("sbatch's job runs here for the analysis, not submitted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(4 layers, hidden 512"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(8 layers, hidden 512"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run: 8 GPUs (2 nodes × 4) = tp 2"), std::string::npos) << r.err;   // sbatch -N 2
  EXPECT_NE(r.err.find("run: 16 GPUs (4 nodes × 4) = tp 2"), std::string::npos) << r.err;  // qsub select=4
  EXPECT_NE(r.err.find("3 launches intercepted"), std::string::npos) << r.err;
}

// A published job template whose #SBATCH sizes are placeholders (`--nodes=your_own_num_nodes`, as
// Megatron-LM's examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh): the placeholders had been passed on as
// SLURM_NNODES / SLURM_NTASKS_PER_NODE and the analysis ended with "SLURM_NTASKS_PER_NODE: expected a
// positive whole number, got 'your_own_tasks_per_node'", even with --nnodes / --gpus-per-node given.  They
// are left out, named, and the sizes given to `preflight run` take their place (one python a GPU under srun).
TEST(WrapStyles, SbatchTemplateWithPlaceholderSizes) {
  TempDir dir;
  const std::string script = shell_quote(wrap_data("sbatch_template.sh").string());
  const std::string env = "MEGATRON_PATH=" + shell_quote(dir.path().string()) + " ";
  { std::ofstream(dir.path() / "pretrain_gpt.py") << "# stand-in: the analysis does not run it\n"; }
  const RunResult r = run_in(dir.path(), env + shell_quote(PREFLIGHT_BINARY) +
                                             " run --nnodes 4 --gpus-per-node 4 -- bash " + script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("#SBATCH --nodes=your_own_num_nodes is not a number"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("#SBATCH --ntasks-per-node=your_own_tasks_per_node is not a number"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("srun's command runs once for the analysis, with 16 tasks (4 nodes × 4"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("run: 16 GPUs (4 nodes × 4) = tp 2 × cp 1 × pp 2 × dp 4"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("expected a positive whole number"), std::string::npos) << r.err;
  // Without the sizes: said, and no placeholder reaches a launcher.
  const RunResult bare = run_in(dir.path(), env + shell_quote(PREFLIGHT_BINARY) + " run -- bash " + script);
  EXPECT_NE(bare.err.find("the job's node count is not known: pass --nnodes N"), std::string::npos)
      << bare.err;
  EXPECT_EQ(bare.err.find("your_own_tasks_per_node'"), std::string::npos) << bare.err;
  // wrap names them too, and writes no placeholder as a default size.
  const RunResult w = run_preflight("wrap " + script);
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("#SBATCH --nodes=your_own_num_nodes is not a number"), std::string::npos) << w.err;
  EXPECT_EQ(w.out.find("SLURM_NNODES:-your_own"), std::string::npos) << w.out;
}

// The node's GPUs asked of PyTorch in a wrapped script run where there is no GPU (Pai-Megatron-Patch's
// GPUS_PER_NODE): answered for $PREFLIGHT_GPUS_PER_NODE, else 8, as `preflight run`'s python shim answers it;
// the script's other python commands run as written.  The count had been an error (no torch) or 0.
TEST(WrapStyles, TorchDeviceCountWithoutGpus) {
  const char* path = std::getenv("PATH");
  if (preflight::wrap::find_program("nvidia-smi", path ? path : "").has_value())
    GTEST_SKIP() << "this machine has GPUs: PyTorch's count is used";
  expect_layout(analyzed("torch_device_count.sh"), {2, 1, 4, 512, 8}, "torch.cuda.device_count()");
  expect_layout(analyzed("torch_device_count.sh", "PREFLIGHT_GPUS_PER_NODE=4"), {2, 1, 4, 512, 4},
                "4 GPUs said");
  TempDir dir;
  const RunResult r = wrap_and_run(dir, wrap_data("torch_device_count.sh"));
  EXPECT_NE((r.out + r.err).find("found 8 GPUs, python 3.x"), std::string::npos) << r.out << r.err;
}

// Megatron-LM's ModelOpt style (our scripts in that style): a sourced file installs requirements under
// set -e (after a line of its cluster that fails here) and sets the launcher, `${LAUNCH_SCRIPT}
// ${SCRIPT_DIR}/finetune.py …` runs it.  The analysis runs no install — it needs no package and changes
// nothing on the machine it runs on — and reads the launch when the script runs.  Before, wrap found no
// launch (a launcher variable in command position), and `preflight run` ran the install, which ended the
// script (ModelOpt's finetune.sh without its package index).
TEST(WrapStyles, PackageInstallsAreNotRunAndALauncherVariableIsReadWhenTheScriptRuns) {
  const std::string conf = "CONF_DIR=" + shell_quote(wrap_data("").string()) + " TP=2 PP=2";
  expect_layout(analyzed("pip_install_style.sh", conf), {2, 1, 4, 512, 4}, "ModelOpt style, wrap");
  RunResult w = run_preflight("wrap " + shell_quote(wrap_data("pip_install_style.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find(": python3 -m pip install"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("run --mode analyze -- ${LAUNCH_SCRIPT} ${SCRIPT_DIR}/finetune.py"), std::string::npos)
      << w.out;
  EXPECT_NE(w.err.find("pip_install_style.sh:8: `python3 -m pip install` is left out"), std::string::npos)
      << w.err;
  EXPECT_NE(w.err.find("the launcher is $LAUNCH_SCRIPT, known when the script runs"), std::string::npos)
      << w.err;
  // trace mode: the launch traced as it runs, the installs run
  RunResult t = run_preflight("wrap --mode trace " + shell_quote(wrap_data("pip_install_style.sh").string()));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("run --mode trace -- ${LAUNCH_SCRIPT}"), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find(": python3 -m pip"), std::string::npos) << t.out;
  TempDir dir;
  const RunResult r =
      run_in(dir.path(), "TP=4 PP=2 " + shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " +
                             shell_quote(wrap_data("pip_install_style.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 1, 4, 512, 8}, "preflight run, 8 processes");
  EXPECT_NE(r.err.find("(a pip install: the analysis needs no package"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(a python3 -m pip install: the analysis"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("requirements installed"), std::string::npos) << r.err;
}

// MindSpeed-LLM's FSDP2 trainer (our script and YAML in its examples/fsdp2 style): `train_fsdp2.py
// CONFIG.yaml
// --parallel.fsdp_size 16 …` analysed as Megatron's torch-FSDP2 run of the model its folder names
// (Qwen3-0.6B, absent here: the preset), 16 processes of tp 1 × cp 2; the command line's micro batch 1 over
// the YAML's 2. Before, the launch was left unrun as an unknown script.
TEST(WrapStyles, MindSpeedFsdp2Launch) {
  TempDir dir;
  const std::string script = shell_quote(wrap_data("mindspeed_fsdp2_style.sh").string());
  const RunResult r =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " + script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = json_in(r.out);
  expect_layout(j, {1, 1, 28, 1024, 16}, "train_fsdp2.py");
  EXPECT_EQ(j["strategy"]["cp"].get<int>(), 2);
  EXPECT_EQ(j["strategy"]["micro_batch_size"].get<int>(), 1);
  EXPECT_EQ(j["strategy"]["global_batch_size"].get<int>(), 1 * 4 * 8);  // mbs × accumulation × dp
  EXPECT_EQ(j["strategy"]["zero_stage"].get<int>(), 3);
  EXPECT_NE(j["warnings"].dump().find("the qwen3-0.6b preset, by the folder's name"), std::string::npos)
      << j["warnings"].dump();
  // fsdp_size 4 of the 16 data- and context-parallel ranks: HSDP, four replicas
  const RunResult h = run_in(dir.path(), "FSDP_SIZE=4 " + shell_quote(PREFLIGHT_BINARY) +
                                             " run --analyze-arg=--json -- bash " + script);
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const std::string hsdp = json_in(h.out)["warnings"].dump();
  EXPECT_NE(hsdp.find("sharded over 4 and replicated 4 times (HSDP)"), std::string::npos) << hsdp;
  // a size that does not divide the launch: refused, naming the flag
  const RunResult bad =
      run_in(dir.path(), "FSDP_SIZE=3 " + shell_quote(PREFLIGHT_BINARY) + " run -- bash " + script);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--parallel.fsdp_size: fsdp 3 does not divide the launch's 16"), std::string::npos)
      << bad.err;
}

// The launcher in an array run as the command word (`"${LAUNCHER[@]}" pretrain_gpt.py …`): read when the
// script runs, as a launcher variable is.  wrap had found no launch.
TEST(WrapStyles, LauncherArrayInCommandPosition) {
  TempDir dir;
  write_file(
      dir / "s.sh",
      "LAUNCHER=(torchrun --nproc_per_node 4 --nnodes 2)\n"
      "\"${LAUNCHER[@]}\" pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4 --hidden-size 512 "
      "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 "
      "--global-batch-size 16 --vocab-size 32000 --bf16\n");
  RunResult w = run_preflight("wrap " + shell_quote((dir / "s.sh").string()) + " --analyze-arg=--json -o " +
                              shell_quote((dir / "w.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("the launcher is $LAUNCHER, known when the script runs"), std::string::npos) << w.err;
  const RunResult r = run_in(dir.path(), "bash w.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 1, 4, 512, 8}, "\"${LAUNCHER[@]}\"");
}

// A launcher inside a function that takes its entry point with the call's arguments (`run_train() { torchrun
// --nproc_per_node 4 "$@"; }; run_train pretrain_gpt.py …`): read when the function runs; the call is no
// longer said to start the real run.  wrap had found no launch.
TEST(WrapStyles, LauncherInAFunctionOfTheCallsArguments) {
  TempDir dir;
  write_file(dir / "s.sh",
             "run_train() {\n  torchrun --nproc_per_node 4 --nnodes 2 \"$@\"\n}\n"
             "run_train pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 4 --hidden-size 512 "
             "--num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1 "
             "--global-batch-size 16 --vocab-size 32000 --bf16\n");
  RunResult w = run_preflight("wrap " + shell_quote((dir / "s.sh").string()) + " --analyze-arg=--json -o " +
                              shell_quote((dir / "w.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("comes with the function's arguments"), std::string::npos) << w.err;
  EXPECT_EQ(w.err.find("it will start the real run"), std::string::npos) << w.err;
  const RunResult r = run_in(dir.path(), "bash w.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 1, 4, 512, 8}, "run_train() { torchrun … \"$@\"; }");
}

// A launch in MindSpeed-LLM's style (Ascend; our script in that style): its fine-tuning entry point is
// analysed (it had been left unrun as an unknown script) and its own flags are read as Megatron's spellings:
// 2 of 24 layers no-ops, the first 2 dense, a shared expert of 2 × 704.
TEST(WrapStyles, MindSpeedLlmLaunch) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "logs");
  const RunResult r = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run -- bash " +
                                             shell_quote(wrap_data("mindspeed_llm_style.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string all = r.err + r.out;
  EXPECT_NE(all.find("torchrun posttrain_gpt.py -> preflight analyze"), std::string::npos) << all;
  EXPECT_NE(all.find("(22 layers, hidden 2048"), std::string::npos) << all;
  EXPECT_NE(all.find("run: 32 GPUs (4 nodes × 8) = tp 2 × cp 2 × pp 4 × dp 2; experts: ep 4"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("split as Et*6|(t*6|)*2,t*4L"), std::string::npos) << all;
  EXPECT_NE(all.find("--swap-optimizer: the optimizer states are priced on the host"), std::string::npos)
      << all;
  EXPECT_EQ(all.find("read past"), std::string::npos) << all;
  // The dense layers and the shared expert: the MoE layers' share of the parameters, by the table's rows.
  EXPECT_NE(all.find("decoder.layers × 2 (dense)"), std::string::npos) << all;
  EXPECT_NE(all.find("mlp.shared_experts.linear_fc1       w[1408,2048]"), std::string::npos)
      << all;  // 2·2·704 / tp
}

// A launch in ROCm/Megatron-LM's style (AMD GPUs; our script in that style): KEY=VALUE arguments exported by
// a loop, the GPUs asked of PyTorch, `rdma link` piped into an inline python3, the launch eval'ed behind `|&
// tee` under pipefail, the log post-processed, the training's status returned — analysed end to end, its
// tokenizer a mirror of Meta's gated repository (NousResearch/Meta-Llama-3-8B) read as the llama3-8b preset's
// vocabulary.
TEST(WrapStyles, RocmMegatronLaunch) {
  TempDir dir;
  const RunResult r = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run -- bash " +
                                             shell_quote(wrap_data("rocm_megatron_style.sh").string()) +
                                             " MBS=2 BS=128 TP=1 TE_FP8=1 SEQ_LENGTH=8192");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const std::string all = r.err + r.out;
  EXPECT_NE(all.find("torchrun pretrain_gpt.py -> preflight analyze"), std::string::npos) << all;
  EXPECT_NE(
      all.find("8.03 B parameters (32 layers, hidden 4096, 32 heads / 8 kv, ffn 14336 swiglu, vocab 128256"),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("run: 8 GPUs (1 node × 8) = tp 1 × cp 1 × pp 1 × dp 8"), std::string::npos) << all;
  EXPECT_NE(
      all.find("micro batch 2 × 8192 tokens, global batch 128 → 8 micro batches per iteration; bf16+fp8"),
      std::string::npos)
      << all;
  EXPECT_NE(all.find("NousResearch/Meta-Llama-3-8B taken as a re-upload"), std::string::npos) << all;
  // the analysis went through the script's tee into its log
  const std::string log = read_file(dir.path() / "experiment" / "tp1_mbs2_bs128" / "output.log");
  EXPECT_NE(log.find("preflight analyze — megatron-args: 8.03 B parameters"), std::string::npos) << log;
}

// A script counting the node's GPUs with nvidia-smi, wrapped and run where there is none (a login node): the
// wrapped script's nvidia-smi answers its listings for $PREFLIGHT_GPUS_PER_NODE GPUs (8), as `preflight
// run`'s shim does.  The count had been 0 (then 1 GPU a node).
TEST(WrapStyles, NvidiaSmiCountWithoutNvidiaSmi) {
  const char* path = std::getenv("PATH");
  if (preflight::wrap::find_program("nvidia-smi", path ? path : "").has_value())
    GTEST_SKIP() << "this machine has nvidia-smi: the real count is used";
  expect_layout(analyzed("nvidia_smi_count.sh"), {2, 1, 4, 512, 8}, "nvidia-smi --list-gpus | wc -l");
  expect_layout(analyzed("nvidia_smi_count.sh", "PREFLIGHT_GPUS_PER_NODE=4"), {2, 1, 4, 512, 4},
                "4 GPUs said");
}

// A SLURM job taking its node count and rendezvous host from scontrol and srun under `set -euo pipefail`
// (`NNODES=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | wc -l)`, `srun -w "$HEAD_NODE" hostname -I`):
// where Slurm is not installed the first scontrol had ended the script before its launch.  scontrol now
// answers the host list of the job's (made-up, or the environment's) nodes and `show job` from the SLURM_*
// variables; srun runs its command once, here — in the wrapped script and under `preflight run` alike.
TEST(WrapStyles, ScontrolAndSrunWithoutSlurm) {
  const char* path = std::getenv("PATH");
  if (preflight::wrap::find_program("scontrol", path ? path : "").has_value())
    GTEST_SKIP() << "this machine has Slurm: the real scontrol answers";
  expect_layout(analyzed("scontrol_style.sh"), {4, 2, 16, 2048, 32}, "#SBATCH --nodes=4, hosts by scontrol");
  expect_layout(analyzed("scontrol_style.sh", "SLURM_JOB_NODELIST='gpu[01,07]' SLURM_JOB_NUM_NODES=2"),
                {4, 2, 16, 2048, 16}, "the environment's host list, 2 nodes");
  TempDir dir;
  const std::string script = shell_quote(wrap_data("scontrol_style.sh").string());
  const RunResult w =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap " + script + " -o w.sh && bash w.sh");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("nodes: preflight-node1 preflight-node2 preflight-node3 preflight-node4 (4, job 4), "
                       "head preflight-node1 at "),
            std::string::npos)
      << w.out;
  EXPECT_NE(w.out.find("master preflight-node1"), std::string::npos) << w.out;
  const RunResult r =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " + script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("srun's command runs once for the analysis, with 1 task (1 node × 1"),
            std::string::npos)
      << r.err;
  expect_layout(json_in(r.out.substr(r.out.find('{'))), {4, 2, 16, 2048, 32}, "preflight run");
  // a host list scontrol cannot read is said, with the list
  const RunResult shim = run_in(dir.path(), "SLURM_JOB_NODELIST='gpu[1-' " + shell_quote(PREFLIGHT_BINARY) +
                                                " run --shim scontrol -- show hostnames");
  EXPECT_EQ(shim.exit_code, 2);
  EXPECT_NE(shim.err.find("'gpu[1-': a '[' without its ']'"), std::string::npos) << shim.err;
  // the job script named without a path and not executable: how to run it is said
  const RunResult bare =
      run_in(dir.path(), "cp " + script + " job.sh && " + shell_quote(PREFLIGHT_BINARY) + " run job.sh");
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("job.sh: command not found (a file of that name is here: run it as ./job.sh, after "
                          "chmod +x, or as bash job.sh)"),
            std::string::npos)
      << bare.err;
}

// One launcher per node over ssh, in a loop over the hosts (`ssh $HOST "cd … && torchrun … pretrain_gpt.py …"
// &`).  `preflight run` had sent them to the hosts — in analyze mode that starts the real run there.  Now one
// node's launch runs here, once, and is analysed; the others are left out, said; `ssh HOST pkill …` is not
// run, and `ssh HOST nvidia-smi --list-gpus` is answered here.  wrap refuses the script with that way out,
// and in a script with a launch of its own leaves the remote ones out (`: qrsh …`).
TEST(WrapStyles, LaunchesOverSshRunOnceHere) {
  TempDir dir;
  const std::string script = shell_quote(wrap_data("remote_style.sh").string());
  const RunResult r =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " + script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 2, 24, 2048, 16}, "ssh to 2 hosts of 8 GPUs");
  EXPECT_NE(r.err.find("'s command runs here, once, for the analysis (not on gpu-"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("` left out: the command another node was given already runs here"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("`ssh gpu-a pkill -f pretrain_gpt.py || true` is a command for another node: not run"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("1 launch intercepted"), std::string::npos) << r.err;
  const RunResult three = run_in(dir.path(), "HOSTS='a b c d' " + shell_quote(PREFLIGHT_BINARY) +
                                                 " run --analyze-arg=--json -- bash " + script);
  ASSERT_EQ(three.exit_code, 0) << three.err;
  expect_layout(json_in(three.out), {2, 2, 24, 2048, 32}, "4 hosts");
  const RunResult w = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap " + script);
  EXPECT_EQ(w.exit_code, 2);
  EXPECT_NE(
      w.err.find("hint: line 20 starts the run on other nodes (ssh): `preflight run --mode analyze -- bash "),
      std::string::npos)
      << w.err;
  // qrsh -inherit on the other hosts, the script's own launch on this one
  write_file(
      dir.path() / "qrsh.sh",
      "#!/bin/bash\nfor node in $(tail -n +2 $SGE_JOB_HOSTLIST); do\n"
      "  qrsh -inherit -V $node eval \"torchrun --nproc_per_node 8 --nnodes 2 --node_rank 1 pretrain_gpt.py "
      "$ARGS\" &\ndone\ntorchrun --nproc_per_node 8 --nnodes 2 --node_rank 0 pretrain_gpt.py $ARGS\n");
  const RunResult q = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap qrsh.sh");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  EXPECT_NE(q.out.find("  : qrsh -inherit -V $node eval"), std::string::npos) << q.out;
  EXPECT_NE(q.err.find("qrsh.sh:3: the launch qrsh starts on other nodes is left out of the analysis"),
            std::string::npos)
      << q.err;
  // the node's command in a variable, its launcher by the nodes' absolute path (not on this machine)
  write_file(dir.path() / "cmd.sh",
             "#!/bin/bash\nrank=0\nfor host in n1 n2 n3 n4; do\n"
             "  CMD=\"/opt/conda/bin/python -m torch.distributed.launch --nproc_per_node=8 --nnodes=4 "
             "--node_rank=${rank} /w/Megatron-LM/pretrain_gpt.py --num-layers 24 --hidden-size 2048 "
             "--num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1 "
             "--global-batch-size 64 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
             "--vocab-size 32000 --bf16\"\n  ssh $host $CMD &\n  rank=$((rank+1))\ndone\nwait\n");
  const RunResult c = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap cmd.sh");
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_NE(c.err.find("hint: line 5 starts the run on other nodes (ssh)"), std::string::npos) << c.err;
  const RunResult cr =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash cmd.sh");
  ASSERT_EQ(cr.exit_code, 0) << cr.err;
  expect_layout(json_in(cr.out), {2, 2, 24, 2048, 32}, "ssh $host $CMD, 4 nodes");
}

// NeMo 1's Hydra training script (`python ${NEMO}/…/megatron_gpt_pretraining.py trainer.num_nodes=2
// model.tensor_model_parallel_size=2 …`): a launch, analysed on its configuration (the script's conf/ or
// --config-path / --config-name) with the overrides; plain python starts trainer.devices processes itself.
// It had been no launch.
// NeMo 2's CLI (`nemo llm pretrain --factory RECIPE overrides -y`): the recipe's task (its trainer's world,
// its model) with NeMo-Run's overrides; `nemo llm import|generate` are not training runs and stay as they
// are.
TEST(WrapStyles, NemoTwoCliLaunch) {
  nlohmann::json j = analyzed("nemo2_style.sh");
  expect_layout(j, {4, 4, 80, 8192, 16}, "llama3_70b(num_nodes=2), tp 4");
  EXPECT_EQ(j["strategy"]["global_batch_size"], 256);
  EXPECT_EQ(j["strategy"]["cp"], 1);
  expect_layout(analyzed("nemo2_style.sh", "NODES=4 TP=8 RECIPE=llama3_8b"), {8, 1, 32, 4096, 32},
                "llama3_8b on 4 nodes, tp 8");
  const RunResult w = run_preflight("wrap " + shell_quote(wrap_data("nemo2_style.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("nemo llm import model=llama3_70b"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("run --mode analyze -- nemo llm pretrain --factory"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("\n: nemo llm generate --help"), std::string::npos) << w.out;  // left out, said
  EXPECT_NE(w.err.find("`nemo llm import` is left out of the analysis"), std::string::npos) << w.err;
  // `preflight run` catches `nemo` by its shim; a pretrain without a recipe is refused naming what is read
  TempDir dir;
  const RunResult r =
      run_in(dir.path(), "TP=2 " + shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " +
                             shell_quote(wrap_data("nemo2_style.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 4, 80, 8192, 16}, "preflight run, tp 2");
  EXPECT_NE(r.err.find("is not run for the analysis (NeMo's import needs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(
                "left out (NeMo-Run's own options or executor settings): log.log_dir=/results/llama3_70b -y"),
            std::string::npos)
      << r.err;
  const RunResult none =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run -- nemo llm finetune model=llama3_8b");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no --factory RECIPE"), std::string::npos) << none.err;
}

TEST(WrapStyles, NemoOneHydraLaunch) {
  TempDir tree;
  const fs::path scripts = tree.path() / "NeMo" / "examples" / "nlp" / "language_modeling";
  fs::create_directories(scripts / "conf");
  fs::create_directories(tree.path() / "mine");
  write_file(scripts / "megatron_gpt_pretraining.py", "");
  const fs::path gpt3 =
      fs::path(PREFLIGHT_SOURCE_DIR) / "tests" / "data" / "frontends" / "nemo" / "gpt3_175b_h100_fp8.yaml";
  fs::copy_file(gpt3, scripts / "conf" / "megatron_gpt_config.yaml");
  fs::copy_file(gpt3, tree.path() / "mine" / "gpt3.yaml");
  const std::string nemo = "NEMO=" + shell_quote((tree.path() / "NeMo").string());
  expect_layout(analyzed("nemo1_style.sh", nemo), {2, 8, 96, 12288, 16}, "the script's conf/, 2 nodes of 8");
  expect_layout(analyzed("nemo1_style.sh", nemo + " NODES=4 CONFIG_DIR=" +
                                               shell_quote((tree.path() / "mine").string()) + " CONFIG=gpt3"),
                {2, 8, 96, 12288, 32}, "--config-path / --config-name, 4 nodes");
  const std::string script = shell_quote(wrap_data("nemo1_style.sh").string());
  const RunResult r = run_in(tree.path(), nemo + " " + shell_quote(PREFLIGHT_BINARY) +
                                              " run --analyze-arg=--json -- bash " + script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 8, 96, 12288, 16}, "preflight run");
  EXPECT_NE(r.err.find("(NeMo's configuration: trainer.devices x trainer.num_nodes processes)"),
            std::string::npos)
      << r.err;
  // the configuration not on this machine: said, with where it was looked for
  const RunResult none =
      run_in(tree.path(), "NEMO=/nowhere " + shell_quote(PREFLIGHT_BINARY) + " run -- bash " + script);
  EXPECT_EQ(none.exit_code, 2) << none.err;
  EXPECT_NE(none.err.find(
                "NeMo's training configuration megatron_gpt_config.yaml for megatron_gpt_pretraining.py is "
                "not on this machine (looked for /nowhere/examples/nlp/language_modeling/conf/"),
            std::string::npos)
      << none.err;
}

// A job script bound to its cluster (`set -x -e`, `source ~/.bashrc`, `conda activate`, `pushd /fsx/…`, `set
// -u` with `NODE_RANK=$SLURM_PROCID`): away from it the script had stopped at its first line of environment
// setup. The analysis switches errexit and nounset off after each such `set`, says so, and reaches the
// launch.
TEST(WrapStyles, StrictModeOffForTheAnalysis) {
  expect_layout(analyzed("cluster_env_style.sh"), {2, 1, 24, 2048, 32},
                "4 nodes of 8 past the cluster's setup");
  const RunResult w = run_preflight("wrap " + shell_quote(wrap_data("cluster_env_style.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.out.find("set -x -e; set +eu  # preflight wrap"), std::string::npos) << w.out;
  EXPECT_NE(w.out.find("set -u; set +eu  # preflight wrap"), std::string::npos) << w.out;
  EXPECT_NE(w.err.find("cluster_env_style.sh:9: `set -e` / `-u` is switched off for the analysis"),
            std::string::npos)
      << w.err;
  // the analysis' status is the script's: a failed analysis is not lost behind the commands after it, a
  // command of the cluster's environment failing after a good analysis does not fail the script
  TempDir dir;
  std::string text = read_file(wrap_data("cluster_env_style.sh"));
  text.replace(text.find("--vocab-size 49152"), 18, "--vocab-size $NO_SUCH_VOCAB");
  // (the script's own EXIT trap, set after ours, runs and does not replace it)
  text.insert(text.find("set -u\n"), "cleanup() { echo \"cleanup ran\"; }\ntrap cleanup EXIT\ntrap '' HUP\n");
  write_file(dir.path() / "bad.sh", text);
  const RunResult bad =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap bad.sh -o bad_w.sh && bash bad_w.sh");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--vocab-size"), std::string::npos) << bad.err;
  EXPECT_NE(bad.out.find("cleanup ran"), std::string::npos) << bad.out;
  write_file(
      dir.path() / "late.sh",
      "set -e\ntorchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
      "--num-attention-heads 2 --seq-length 16 --micro-batch-size 1 --global-batch-size 8 --vocab-size 100\n"
      "popd\n");
  EXPECT_EQ(run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap late.sh -o late_w.sh && bash late_w.sh")
                .exit_code,
            0);
  // `set -- ARGS`, `set +e`, `set -x` are not strict modes: left alone
  write_file(dir.path() / "s.sh",
             "set -- --num-layers 2\nset -x\nset +e\ntorchrun --nproc_per_node 8 pretrain_gpt.py \"$@\"\n");
  const RunResult plain = run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " wrap s.sh");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out.find("set +eu"), std::string::npos) << plain.out;
}

// ms-swift's Megatron-SWIFT (`NPROC_PER_NODE=4 … megatron sft --model Qwen/… --tensor_model_parallel_size 2
// --sequence_parallel true …`): a launch, its world from NPROC_PER_NODE / NNODES, its options as Megatron's
// (underscores, true / false), ms-swift's defaults (the distributed optimizer, expert tp 1) and LoRA.  It had
// been refused as no launch.
TEST(WrapStyles, MegatronSwiftLaunch) {
  nlohmann::json j = analyzed("swift_style.sh");
  expect_layout(j, {2, 1, 28, 3584, 4}, "megatron sft, NPROC_PER_NODE=4");
  EXPECT_TRUE(j["strategy"]["sequence_parallel"].get<bool>());
  EXPECT_TRUE(j["strategy"]["distributed_optimizer"].get<bool>());  // ms-swift's default
  EXPECT_EQ(j["strategy"]["recompute_granularity"], "full");
  EXPECT_EQ(j["strategy"]["seq_length"], 4096);
  EXPECT_TRUE(j["model"]["lora"].is_null());
  expect_layout(analyzed("swift_style.sh", "NPROC_PER_NODE=8 NNODES=2"), {2, 1, 28, 3584, 16},
                "2 nodes of 8");
  j = analyzed("swift_style.sh", "EXTRA='--tuner_type lora --lora_rank 16 --target_modules all-linear'");
  EXPECT_EQ(j["model"]["lora"]["rank"], 16);
  EXPECT_EQ(j["model"]["lora"]["target_modules"].size(), 4u);
  // `preflight run` on the script catches `megatron` by its shim
  TempDir dir;
  const RunResult r =
      run_in(dir.path(), shell_quote(PREFLIGHT_BINARY) + " run --analyze-arg=--json -- bash " +
                             shell_quote(wrap_data("swift_style.sh").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 1, 28, 3584, 4}, "preflight run, megatron sft");
  EXPECT_NE(r.err.find("NPROC_PER_NODE, NNODES (ms-swift)"), std::string::npos) << r.err;
  // search mode: the launch's --model is search's own
  const RunResult s =
      run_in(dir.path(), "NPROC_PER_NODE=8 " + shell_quote(PREFLIGHT_BINARY) +
                             " run --mode search --search-arg=--system=h100-sxm -- megatron sft "
                             "--model Qwen/Qwen2.5-7B-Instruct --tensor_model_parallel_size 2 "
                             "--micro_batch_size 1 --global_batch_size 64 --max_length 4096");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_NE(s.out.find("the launch's own layout (tp 2 pp 1"), std::string::npos) << s.out;
}

// The launcher and the training command in two variables, joined in the shell srun starts
// (`bash -c "$LAUNCHER --node_rank \$SLURM_PROCID $CMD"`, BigScience's BLOOM scripts): the launcher's words
// become the analysis where they are written and the entry point leaves the command.  It had been refused
// ("no launch of a training entry point found").  Trace mode puts `preflight run --mode trace` before the
// launcher instead.
TEST(WrapStyles, LauncherAndCommandInTwoVariables) {
  expect_layout(analyzed("launcher_cmd_vars.sh"), {2, 4, 24, 2048, 32}, "$LAUNCHER … $CMD, 4 nodes of 8");
  expect_layout(analyzed("launcher_cmd_vars.sh", "SLURM_NNODES=8"), {2, 4, 24, 2048, 64}, "8 nodes");
  // the launcher set on two branches: each assignment rewritten
  expect_layout(analyzed("launcher_cmd_vars.sh", "LAUNCH=torchrun"), {2, 4, 24, 2048, 32}, "torchrun branch");
  // the launcher behind a container runner in the variable: the analysis runs without it (no singularity
  // here)
  expect_layout(analyzed("launcher_cmd_vars.sh", "LAUNCH=container"), {2, 4, 24, 2048, 32},
                "singularity exec … python -m torch.distributed.run branch");
  const std::string script = shell_quote(wrap_data("launcher_cmd_vars.sh").string());
  const RunResult w = run_preflight("wrap " + script);
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(w.err.find("the launcher in $LAUNCHER and the command in $CMD"), std::string::npos) << w.err;
  EXPECT_EQ(w.out.find("`pwd`/pretrain_gpt.py"), std::string::npos) << w.out;
  const RunResult t = run_preflight("wrap --mode trace " + script);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("run --mode trace -- python -u -m torch.distributed.run"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("`pwd`/pretrain_gpt.py"), std::string::npos) << t.out;
}

TEST(WrapStyles, PrefixesBeforeTheLauncher) {
  expect_layout(analyzed("prefix_style.sh"), {2, 1, 8, 1024, 4},
                "$VENV_PREFIX \"${PROFILE_CMD[@]}\" torchrun");
  expect_layout(analyzed("prefix_style.sh", "PROFILE=1 VENV_PREFIX=env"), {2, 1, 8, 1024, 4},
                "with the prefix set");
  expect_layout(analyzed("prefix_style.sh", "STYLE=branches"), {1, 4, 8, 1024, 4},
                "$UV_PREFIX set to \"uv run\" or \"\" on two branches");
  expect_layout(analyzed("prefix_style.sh", "STYLE=branches USE_UV=0"), {1, 4, 8, 1024, 4},
                "$UV_PREFIX empty");
  expect_layout(analyzed("prefix_style.sh", "STYLE=uv"), {4, 1, 8, 1024, 4}, "uv run torchrun");
  expect_layout(analyzed("prefix_style.sh", "STYLE=nsys"), {1, 2, 8, 1024, 2}, "nsys profile torchrun");
}

TEST(WrapStyles, MpirunOfAShellScriptRunningPython) {
  expect_layout(analyzed("mpirun_entry_sh.sh"), {2, 1, 8, 1024, 8},
                "mpirun -np 8 -N 4 ./entry.sh pretrain_gpt.py");
}

TEST(WrapStyles, PlaceholderPathsWithSpaces) {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data("placeholder_spaces.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {1, 1, 4, 512, 2}, "placeholder paths");
  EXPECT_EQ(r.err.find("command not found"), std::string::npos) << r.err;  // `checkpoints` is not run
  EXPECT_NE(read_file(dir / "wrapped.sh").find("CHECKPOINT_PATH='/path/to/my checkpoints'"),
            std::string::npos);
}

TEST(WrapStyles, PlaceholderFlagValuesRunUnderShC) {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data("placeholder_flags.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 2, 8, 1024, 8}, "placeholders in an options string, srun sh -c");
  EXPECT_EQ(r.err.find("No such file"), std::string::npos) << r.err;  // no `<PATH` redirection
  EXPECT_NE(read_file(dir / "wrapped.sh").find("--vocab-file PLACEHOLDER_PATH_TO_gpt-vocab.json"),
            std::string::npos);
}

TEST(WrapStyles, TorchDistributedLaunchFinetuneEntryAndOwnOptionParser) {
  expect_layout(analyzed("distributed_launch.sh"), {1, 4, 24, 2048, 8}, "python -m torch.distributed.launch");
  expect_layout(analyzed("finetune_style.sh"), {8, 1, 32, 4096, 8}, "torchrun finetune.py");
  expect_layout(analyzed("getopt_style.sh", "", "--tp 2 --pp 4 --layers=16"), {2, 4, 16, 1024, 8},
                "while/case option parser");
  expect_layout(analyzed("getopt_style.sh"), {1, 1, 8, 1024, 8}, "its defaults");
}

TEST(WrapStyles, RunCmdThenEval) {
  TempDir dir;
  RunResult r = wrap_and_run(dir, wrap_data("run_cmd_eval.sh"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_layout(json_in(r.out), {2, 1, 12, 768, 4}, "run_cmd=\"deepspeed …\"; eval ${run_cmd}");
  // The invocation unquoted inside the string (its path needs no quoting): eval and a bare ${run_cmd} alike.
  EXPECT_NE(read_file(dir / "wrapped.sh").find("run_cmd=\"${PREFLIGHT:-"), std::string::npos);
  // A launch assembled from pieces that are only known when it runs still gets the fallback.
  RunResult e = run_preflight("wrap " + shell_quote(wrap_data("eval_style.sh").string()));
  EXPECT_EQ(e.exit_code, 2);
  EXPECT_NE(e.err.find("preflight run --mode analyze -- bash"), std::string::npos) << e.err;
}
