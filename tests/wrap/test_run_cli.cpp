// `preflight run`: PATH shims for scripts that build their launch at run time, and trace mode with a real
// torchrun (Debian's python3-torch) starting a stand-in training script under a stand-in hook library.
#include <gtest/gtest.h>

#include <set>

#include "preflight/wrap/process.hpp"
#include "wrap_test_util.hpp"

using namespace preflight::test;

namespace {

/// Environment that points preflight at the stand-in hook and glue.
std::string fake_hook_env() {
  return "MASTER_PORT=" + std::to_string(free_port()) + " PREFLIGHT_HOOK_LIB=" + shell_quote(FAKE_HOOK_LIB) +
         " PREFLIGHT_HOOK_PYTHONPATH=" + shell_quote(wrap_data("standins/glue").string());
}

/// The single run folder under dir/traces.
fs::path only_run_dir(const fs::path& traces) {
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(traces)) runs.push_back(e.path());
  EXPECT_EQ(runs.size(), 1u);
  return runs.empty() ? fs::path() : runs[0];
}

/// Checks what each of the two ranks received: the hook preloaded (the stand-in library left a file for that
/// rank), the glue imported before the script, the trace folder, and the short-run arguments at the end.
void expect_traced_ranks(const fs::path& run_dir, const std::vector<std::string>& tail) {
  std::set<std::string> hook_ranks;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    std::string n = e.path().filename().string();
    if (n.rfind("fakehook-rank", 0) == 0) hook_ranks.insert(n.substr(13, n.find('-', 13) - 13));
  }
  EXPECT_TRUE(hook_ranks.count("0")) << run_dir;
  EXPECT_TRUE(hook_ranks.count("1")) << run_dir;
  for (const char* rank : {"0", "1"}) {
    fs::path report = run_dir / ("received-rank" + std::string(rank) + ".json");
    ASSERT_TRUE(fs::exists(report)) << report;
    nlohmann::json j = nlohmann::json::parse(read_file(report));
    EXPECT_EQ(j["world_size"], "2");
    EXPECT_EQ(j["ld_preload"].get<std::string>().rfind(FAKE_HOOK_LIB, 0), 0u) << j.dump();
    EXPECT_TRUE(j["glue_loaded_first"].get<bool>()) << j.dump();
    EXPECT_EQ(fs::path(j["trace_dir"].get<std::string>()), run_dir);
    auto argv = j["argv"].get<std::vector<std::string>>();
    ASSERT_GE(argv.size(), tail.size());
    EXPECT_EQ(std::vector<std::string>(argv.end() - static_cast<std::ptrdiff_t>(tail.size()), argv.end()),
              tail)
        << j.dump();
  }
}

}  // namespace

TEST(RunCli, ShimsCatchALaunchBuiltAtRunTime) {
  TempDir dir;
  copy_data("eval_style.sh", dir.path());
  RunResult r = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash eval_style.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("launching: torchrun --nproc_per_node 2 pretrain_gpt.py"), std::string::npos) << r.out;
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 2);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 2);
  EXPECT_EQ(j["model"]["num_layers"].get<int>(), 8);
  EXPECT_EQ(j["model"]["hidden_size"].get<int>(), 1024);
  EXPECT_NE(r.err.find("1 launch intercepted"), std::string::npos) << r.err;
}

TEST(RunCli, ShimsLeaveOtherCommandsAlone) {
  TempDir dir;
  write_file(dir / "s.sh",
             "python3 -c 'import sys; print(40 + 2, sys.argv[1:])' a b\n"
             "torchrun --nproc_per_node 2 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
             "--num-attention-heads 2 --seq-length 16 --vocab-size 100 --analyze-marker\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("42 ['a', 'b']\n", 0), 0u) << r.out;  // the real python3, same arguments
  EXPECT_NE(r.out.find("preflight analyze"), std::string::npos) << r.out;
  // A script in which nothing reaches a shim: the answer is "nothing analysed", not silence.
  RunResult none = run_in(dir.path(), preflight_bin() + " run -- bash -c 'echo no launch here'");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("no launch of a training entry point"), std::string::npos) << none.err;
  EXPECT_EQ(none.err.find("exited with status"), std::string::npos) << none.err;
  // A script that stops before its launch (Megatron-LM's examples check for pretrain_gpt.py in the working
  // directory): its status is passed on and said, not blamed on the launcher's path.
  RunResult stopped =
      run_in(dir.path(), preflight_bin() +
                             " run -- bash -c '[ -f pretrain_gpt.py ] || exit 3; torchrun pretrain_gpt.py'");
  EXPECT_EQ(stopped.exit_code, 3) << stopped.err;
  EXPECT_NE(stopped.err.find("the script exited with status 3 before any"), std::string::npos) << stopped.err;
  // (and a strict-mode script stopped by its cluster's environment is pointed to wrap, which goes on past it)
  EXPECT_NE(stopped.err.find("`preflight wrap SCRIPT -o W && bash W` goes on past those"), std::string::npos)
      << stopped.err;
  // Unknown commands behave as in the shell.
  RunResult missing =
      run_in(dir.path(), "PATH=/bin " + preflight_bin() + " run -- /bin/sh -c 'deepspeed --help'");
  EXPECT_EQ(missing.exit_code, 127) << missing.err;
}

// A distributed launcher starting a script that is not a known entry point (Megatron-LM's MIMO examples:
// `torchrun examples/mimo/train.py`) is not run in analyze mode — on a cluster it would start the job for
// real; before, it went to the real torchrun.  Plain python still runs; --entry analyses the script.
TEST(RunCli, UnknownDistributedLaunchIsNotRunInAnalyzeMode) {
  TempDir dir;
  write_file(dir / "train.py", "open('ran.txt', 'w').write('trained')\n");
  write_file(dir / "s.sh",
             "python3 -c 'print(7 * 6)'\n"
             "torchrun --nproc_per_node 2 train.py --num-layers 2 --hidden-size 64 --num-attention-heads 2 "
             "--seq-length 16 --vocab-size 100\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run -- bash s.sh");
  EXPECT_EQ(r.exit_code, 2) << r.err;  // nothing analysed
  EXPECT_EQ(r.out.rfind("42\n", 0), 0u) << r.out;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  EXPECT_NE(r.err.find("torchrun starting train.py"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not run in analyze mode"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("1 distributed launch of train.py not run"), std::string::npos) << r.err;
  RunResult entry = run_in(dir.path(), preflight_bin() + " run --entry train.py -- bash s.sh");
  EXPECT_EQ(entry.exit_code, 0) << entry.err;
  EXPECT_NE(entry.out.find("preflight analyze"), std::string::npos) << entry.out;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
}

// A Megatron-Bridge recipe launch (`torchrun … scripts/training/run_recipe.py --recipe NAME key=value`): the
// recipe by its name (analyzer/data/bridge/recipes.json), torchrun's world, the runner's options and the
// overrides over it; the script itself is not run.  It had been refused, pointing to the saved configuration.
TEST(RunCli, BridgeRecipeLaunchIsReadByItsRecipe) {
  TempDir dir;
  write_file(dir / "run_recipe.py", "open('ran.txt', 'w').write('trained')\n");
  write_file(dir / "s.sh",
             "torchrun --nproc_per_node 8 --nnodes 2 run_recipe.py --recipe qwen3_8b_pretrain_config -tp 2 "
             "--dataset mock train.global_batch_size=256\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash s.sh");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 16);
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 2);
  EXPECT_EQ(j["strategy"]["global_batch_size"].get<int>(), 256);
  EXPECT_EQ(j["model"]["num_layers"].get<int>(), 36);  // Qwen/Qwen3-8B: the qwen3-8b preset
  EXPECT_NE(
      r.err.find("left out (its data, step function, learning-rate and checkpoint options): --dataset mock"),
      std::string::npos)
      << r.err;
  // by --model and --mode; a launch naming no recipe is refused with why
  write_file(dir / "m.sh", "torchrun --nproc_per_node 8 run_recipe.py --model qwen3_8b --mode lora\n");
  RunResult m = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash m.sh");
  ASSERT_TRUE(m.exit_code == 0 || m.exit_code == 1) << m.err;
  EXPECT_FALSE(json_in(m.out)["model"]["lora"].is_null());
  write_file(dir / "n.sh", "torchrun --nproc_per_node 8 run_recipe.py --dataset mock\n");
  RunResult n = run_in(dir.path(), preflight_bin() + " run -- bash n.sh");
  EXPECT_EQ(n.exit_code, 2);
  EXPECT_NE(n.err.find("run_recipe.py: names no recipe"), std::string::npos) << n.err;
}

// Megatron-Bridge's experiment launchers submit a recipe's run to Slurm; in analysis they are read, never
// run: scripts/performance/setup_experiment.py (the flat performance recipe its -mr / --task / -ng / -g / -c
// name, -gn or the GPU type's GPUs a node, its -tp … options and KEY=VALUE overrides) and
// scripts/training/train.sh (run_recipe.py's options on --nodes × --gpus-per-node).
// NeMo 2's performance scripts (NVIDIA/NeMo scripts/performance/llm, run from the checkout's root as modules
// or files) submit a Slurm job through NeMo-Run: under `preflight run` they are read, never run — the run
// their recommended configuration and command line give.  As a module, `python -m scripts.performance.llm.X`
// had reached the real python (the job submitted); as a file, pretrain_X.py had been read as Megatron's
// pretrain_gpt.py ("--num-layers: is required").
TEST(RunCli, NemoTwoPerformanceScriptsAreReadNotSubmitted) {
  TempDir dir;
  fs::create_directories(dir / "scripts" / "performance" / "llm");
  write_file(dir / "scripts" / "performance" / "llm" / "pretrain_llama3_70b.py",
             "open('ran.txt', 'w').write('submitted')\n");
  write_file(dir / "scripts" / "performance" / "__init__.py", "");
  write_file(dir / "scripts" / "performance" / "llm" / "__init__.py", "");
  write_file(dir / "bench.sh",
             "python3 -m scripts.performance.llm.pretrain_llama3_70b -a acct -p batch -g h100 -c fp8 -fr cs "
             "-ng 64 -tb\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash bench.sh");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 64);
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 4);
  EXPECT_EQ(j["strategy"]["pp"].get<int>(), 8);
  EXPECT_EQ(j["model"]["num_layers"].get<int>(), 80);
  EXPECT_NE(r.err.find("NeMo 2's performance script"), std::string::npos) << r.err;
  EXPECT_NE(
      j["warnings"].dump().find("left out (Slurm, container, logging and profiling options): -a -p -tb"),
      std::string::npos)
      << j["warnings"].dump();
  // the file, run from anywhere, with the command line's tensor parallelism
  write_file(
      dir / "file.sh",
      "python scripts/performance/llm/pretrain_llama3_70b.py -a acct -p batch -g b200 -c bf16 -tp 2\n");
  RunResult f = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash file.sh");
  ASSERT_TRUE(f.exit_code == 0 || f.exit_code == 1) << f.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  EXPECT_EQ(json_in(f.out)["strategy"]["tp"].get<int>(), 2);
  // the VLM family is refused by name, not run
  fs::create_directories(dir / "scripts" / "performance" / "vlm");
  write_file(dir / "scripts" / "performance" / "vlm" / "finetune_neva_8b.py",
             "open('ran.txt', 'w').write('submitted')\n");
  write_file(dir / "vlm.sh", "python3 -m scripts.performance.vlm.finetune_neva_8b -g h100 -c bf16\n");
  RunResult v = run_in(dir.path(), preflight_bin() + " run -- bash vlm.sh");
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  EXPECT_NE(v.err.find("NeMo 2's vlm performance scripts are not priced"), std::string::npos) << v.err;
  // wrap leaves it to `preflight run` (no inline rewrite that would lose the script's own options)
  RunResult w = run_in(dir.path(), preflight_bin() + " wrap bench.sh");
  ASSERT_EQ(w.exit_code, 0) << w.err;
  EXPECT_NE(
      w.out.find("run --mode analyze -- python3 -m scripts.performance.llm.pretrain_llama3_70b -a acct"),
      std::string::npos)
      << w.out;
}

TEST(RunCli, BridgeExperimentLaunchersAreReadNotSubmitted) {
  TempDir dir;
  fs::create_directories(dir / "scripts" / "performance");
  fs::create_directories(dir / "scripts" / "training");
  write_file(dir / "scripts" / "performance" / "setup_experiment.py",
             "open('ran.txt', 'w').write('submitted')\n");
  // (our train.sh in the form of Bridge's: its setup_experiment.py through `uv run`)
  write_file(
      dir / "scripts" / "training" / "train.sh",
      "#!/usr/bin/env bash\nset -euo pipefail\nSCRIPT_DIR=\"$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && "
      "pwd)\"\n"
      "exec uv run --no-project --with nemo-run python \"${SCRIPT_DIR}/setup_experiment.py\" \"$@\"\n");
  write_file(dir / "scripts" / "training" / "setup_experiment.py",
             "open('ran.txt', 'w').write('submitted')\n");
  fs::permissions(dir / "scripts" / "training" / "train.sh", fs::perms::owner_all);
  write_file(dir / "perf.sh",
             "python3 scripts/performance/setup_experiment.py -a acct -p batch -m llama -mr llama3_70b "
             "-ng 128 -g gb200 -c fp8_mx -gb 256 --detach false model.tensor_model_parallel_size=4\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash perf.sh");
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 128);
  EXPECT_EQ(j["strategy"]["gpus_per_node"].get<int>(), 4);  // GB200's, as scripts/performance launches it
  EXPECT_EQ(j["strategy"]["global_batch_size"].get<int>(), 256);  // -gb, over the recipe's weak-scaled batch
  EXPECT_EQ(j["model"]["num_layers"].get<int>(), 80);
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 4);
  EXPECT_NE(r.err.find("performance recipe llama3_70b_pretrain_128gpu_gb200_fp8mx_config on 128 gb200 GPUs"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("left out (its Slurm, container and experiment options): -a acct -p batch"),
            std::string::npos)
      << r.err;
  // no recipe has 128 GB200s: scripts/performance runs the default one (64) on them
  EXPECT_NE(j["warnings"].dump().find("performance recipe llama3_70b_pretrain_64gpu_gb200_fp8mx_config "
                                      "(perf:llama3_70b_pretrain_128gpu_gb200_fp8mx_config): no performance "
                                      "recipe is"),
            std::string::npos)
      << j["warnings"].dump();
  // the same through `uv run` (as Bridge's README runs it), whose own python would bypass the python shim: uv
  // is shadowed too, and a launch after it is read (anything else goes to the real uv)
  write_file(
      dir / "uv.sh",
      "uv run --no-project --with nemo-run==0.10.0 python scripts/performance/setup_experiment.py -m llama "
      "-mr llama3_8b -ng 8 -g gb200 -c fp8_cs\n");
  RunResult u = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash uv.sh");
  ASSERT_TRUE(u.exit_code == 0 || u.exit_code == 1) << u.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  EXPECT_EQ(json_in(u.out)["strategy"]["world_size"].get<int>(), 8);
  // a model without performance recipes is refused naming the recipe it would be
  write_file(dir / "bad.sh",
             "python scripts/performance/setup_experiment.py -m llama -mr llama9_70b -ng 48 -g "
             "gb200 -c fp8_mx\n");
  RunResult b = run_in(dir.path(), preflight_bin() + " run -- bash bad.sh");
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("llama9_70b_pretrain_48gpu_gb200_fp8mx_config: not one of Megatron-Bridge's recipes"),
            std::string::npos)
      << b.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  // train.sh (called by its path, which no shim sees: `preflight wrap` sends its line through run, as here):
  // the recipe on --nodes × --gpus-per-node (a benchmark recipe weak-scaled to that world)
  RunResult t =
      run_in(dir.path(), preflight_bin() +
                             " run --analyze-arg=--json -- ./scripts/training/train.sh --nodes 4 "
                             "--gpus-per-node 8 --account A --partition P --container-image img --recipe "
                             "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config --mode pretrain -tp 1");
  ASSERT_TRUE(t.exit_code == 0 || t.exit_code == 1) << t.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  nlohmann::json k = json_in(t.out);
  EXPECT_EQ(k["strategy"]["world_size"].get<int>(), 32);
  EXPECT_EQ(k["strategy"]["global_batch_size"].get<int>(), 2048);  // 1024 on 16 GPUs, weak-scaled to 32
  // a job script calling it by its path: train.sh runs, and its `uv run … setup_experiment.py` is read
  write_file(dir / "job.sh",
             "./scripts/training/train.sh --nodes 2 --gpus-per-node 8 --recipe "
             "qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config --mode pretrain\n");
  RunResult jb = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash job.sh");
  ASSERT_TRUE(jb.exit_code == 0 || jb.exit_code == 1) << jb.err;
  EXPECT_FALSE(fs::exists(dir / "ran.txt"));
  EXPECT_EQ(json_in(jb.out)["strategy"]["world_size"].get<int>(), 16);
}

// srun starting a shell (Megatron-LM's sc21 SRUN.sh: `srun … sh -c "${CMD}"`, CMD a plain python launch): in
// analysis the shell runs once, here (no Slurm on this machine), and the python inside is analysed as one of
// srun's -N × --ntasks-per-node tasks.
TEST(RunCli, SrunShellRunsOnceWithItsTasks) {
  TempDir dir;
  write_file(dir / "job.sh",
             "CMD=\"python -u pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 2 "
             "--seq-length 16 --vocab-size 100 --tensor-model-parallel-size 2\"\n"
             "srun -l --container-image img -N 2 --ntasks-per-node=4 --mpi=pmix sh -c \"${CMD}\"\n");
  RunResult r =
      run_in(dir.path(), "env -u SLURM_NNODES -u SLURM_NTASKS -u SLURM_NTASKS_PER_NODE -u WORLD_SIZE " +
                             preflight_bin() + " run --analyze-arg=--json -- bash job.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("srun's command runs once for the analysis, with 8 tasks (2 nodes × 4"),
            std::string::npos)
      << r.err;
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 8);
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 2);
}

// A script that asks PyTorch for the node's GPU count (Pai-Megatron-Patch's GPUS_PER_NODE) is analysed for the
// node size given (--gpus-per-node), not for this machine's 0 GPUs or its missing torch module.
TEST(RunCli, TorchDeviceCountIsTheNodeSizeAnalysed) {
  TempDir dir;
  write_file(dir / "s.sh",
             "GPUS_PER_NODE=`python -c \"import torch; print(torch.cuda.device_count())\"`\n"
             "torchrun --nproc_per_node $GPUS_PER_NODE pretrain_gpt.py --num-layers 2 --hidden-size 64 "
             "--num-attention-heads 2 --seq-length 16 --vocab-size 100 --tensor-model-parallel-size 2\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run --gpus-per-node 4 --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("with 4 (analysis mode"), std::string::npos) << r.err;
  EXPECT_EQ(json_in(r.out)["strategy"]["world_size"].get<int>(), 4);
}

// A script under `set -euo pipefail` whose environment lines fail here (Pai-Megatron-Patch's scripts copy the
// checkpoint's config.json with `find $CKPT … | xargs cp`; an unset variable of its cluster) still reaches
// its launch in analyze mode: set -e / -u are switched off, as wrap does, and said.  It had ended before the
// launch.
TEST(RunCli, SetErrexitIsSwitchedOffForTheAnalysis) {
  TempDir dir;
  write_file(dir / "s.sh",
             "#!/bin/bash\nset -euo pipefail\n"
             "find /nonexistent/ckpt -maxdepth 1 -name '*.json' -print0 | xargs -0 cp -t /nonexistent/out\n"
             "echo \"cluster: ${CLUSTER_NAME_UNSET}\"\n"
             "set -- 2 16\n"
             "torchrun --nproc_per_node $2 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
             "--num-attention-heads 2 --seq-length $2 --vocab-size 100 --tensor-model-parallel-size $1\n");
  RunResult r = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("`set -e` / `-u` is switched off for the analysis"), std::string::npos) << r.err;
  const nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 16);  // the script's own `set -- …` still sets $1 $2
  EXPECT_EQ(j["strategy"]["tp"].get<int>(), 2);
  // … in a file the script sources too (bash unsets the DEBUG trap inside `source` unless set -T): a sourced
  // file's own `set -e` before a failing line had ended the analysis (Megatron-LM's ModelOpt
  // conf/arguments.sh)
  write_file(dir / "conf.sh", "set -e\nfalse\nLAUNCH=torchrun\n");
  write_file(
      dir / "t.sh",
      "source ./conf.sh\n"
      "$LAUNCH --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 2 "
      "--seq-length 16 --vocab-size 100\n");
  RunResult t = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash t.sh");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(json_in(t.out)["strategy"]["world_size"].get<int>(), 8);
}

// The same for nvidia-smi's GPU listings (Megatron-DeepSpeed's examples count `--query-gpu=name` lines): the
// node size given; other nvidia-smi queries are not answered (the real program, absent here: 127).
TEST(RunCli, NvidiaSmiGpuListingIsTheNodeSizeAnalysed) {
  TempDir dir;
  write_file(dir / "s.sh",
             "GPUS=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)\n"
             "L=$(nvidia-smi -L | wc -l)\n"
             "[ \"$GPUS\" = \"$L\" ] || exit 9\n"
             "torchrun --nproc_per_node $GPUS pretrain_gpt.py --num-layers 2 --hidden-size 64 "
             "--num-attention-heads 2 --seq-length 16 --vocab-size 100 --tensor-model-parallel-size 2\n");
  RunResult r =
      run_in(dir.path(), preflight_bin() + " run --gpus-per-node 4 --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("for 4 GPUs (analysis mode"), std::string::npos) << r.err;
  EXPECT_EQ(json_in(r.out)["strategy"]["world_size"].get<int>(), 4);
  if (!preflight::wrap::find_program("nvidia-smi", std::getenv("PATH") ? std::getenv("PATH") : "")) {
    RunResult other =
        run_in(dir.path(), preflight_bin() +
                               " run --gpus-per-node 4 -- sh -c 'nvidia-smi --query-gpu=memory.total "
                               "--format=csv'");
    EXPECT_EQ(other.exit_code, 127) << other.err;
  }
}

// DeepSpeed's cluster-wide count, `ds_ssh nvidia-smi --query-gpu=name … | wc -l` − 2 (Megatron-DeepSpeed's
// MoE examples): --nnodes nodes of --gpus-per-node GPUs, after ds_ssh's two lines of its own.
TEST(RunCli, DsSshGpuListingIsTheClusterAnalysed) {
  TempDir dir;
  write_file(dir / "s.sh",
             "NUM_GPUS=$(($(ds_ssh nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)-2))\n"
             "[ \"$NUM_GPUS\" = 16 ] || exit 9\n"
             "torchrun --nproc_per_node 8 --nnodes $((NUM_GPUS / 8)) pretrain_gpt.py --num-layers 2 "
             "--hidden-size 64 --num-attention-heads 2 --seq-length 16 --vocab-size 100\n");
  RunResult r = run_in(
      dir.path(), preflight_bin() + " run --gpus-per-node 8 --nnodes 2 --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("for 2 nodes of 8 GPUs"), std::string::npos) << r.err;
  EXPECT_EQ(json_in(r.out)["strategy"]["world_size"].get<int>(), 16);
}

// A torchrun size flag left without its value by an unset cluster variable (Pai-Megatron-Patch's dlc mode:
// GPUS_PER_NODE=${KUBERNETES_CONTAINER_RESOURCE_GPU}) takes --gpus-per-node, with a note; without it the
// error names the flag and the way out.
TEST(RunCli, EmptyNprocPerNodeTakesGpusPerNode) {
  TempDir dir;
  write_file(
      dir / "s.sh",
      "GPUS_PER_NODE=${NO_SUCH_VARIABLE}\n"
      "torchrun --nproc_per_node $GPUS_PER_NODE --nnodes 2 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
      "--num-attention-heads 2 --seq-length 16 --vocab-size 100 --tensor-model-parallel-size 2\n");
  RunResult r =
      run_in(dir.path(), preflight_bin() + " run --gpus-per-node 4 --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--nproc_per_node has no value in the launch"), std::string::npos) << r.err;
  EXPECT_EQ(json_in(r.out)["strategy"]["world_size"].get<int>(), 8);
  RunResult bare = run_in(dir.path(), preflight_bin() + " run -- bash s.sh");
  EXPECT_EQ(bare.exit_code, 2) << bare.err;
  EXPECT_NE(bare.err.find("--nproc-per-node: expects a value (an empty variable"), std::string::npos)
      << bare.err;
}

// torchrun's `--nproc_per_node gpu` (the launching node's GPUs): run's --gpus-per-node says how many, with a
// note; without it the analysis assumes 8 and says so.
TEST(RunCli, NprocPerNodeGpuTakesGpusPerNode) {
  TempDir dir;
  write_file(dir / "s.sh",
             "torchrun --nproc_per_node=gpu --nnodes 2 pretrain_gpt.py --num-layers 2 --hidden-size 64 "
             "--num-attention-heads 2 --seq-length 16 --vocab-size 100 --tensor-model-parallel-size 2\n");
  RunResult r =
      run_in(dir.path(), preflight_bin() + " run --gpus-per-node 4 --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(
      r.err.find("--nproc_per_node is 'gpu' (the launching node's GPUs): 4 from preflight's --gpus-per-node"),
      std::string::npos)
      << r.err;
  EXPECT_EQ(json_in(r.out)["strategy"]["world_size"].get<int>(), 8);
  RunResult bare = run_in(dir.path(), preflight_bin() + " run --analyze-arg=--json -- bash s.sh");
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_EQ(json_in(bare.out)["strategy"]["world_size"].get<int>(), 16);
}

TEST(RunCli, ALaunchGivenDirectlyIsAnalysed) {
  TempDir dir;
  write_file(dir / "hostfile", "a slots=4\nb slots=4\nc slots=4\nd slots=4\n");
  RunResult r = run_in(
      dir.path(), preflight_bin() +
                      " run --analyze-arg=--json -- deepspeed --hostfile hostfile pretrain_gpt.py "
                      "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
                      "--vocab-size 1000 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = json_in(r.out);
  EXPECT_EQ(j["strategy"]["world_size"].get<int>(), 16);
  EXPECT_EQ(j["strategy"]["gpus_per_node"].get<int>(), 4);
  EXPECT_EQ(j["strategy"]["dp"].get<int>(), 4);
  EXPECT_NE(r.err.find("world size 16 = 4 nodes x 4, from deepspeed hostfile hostfile"), std::string::npos)
      << r.err;
}

// Search mode: a script's launch, read as analyze mode reads it (here a torchrun line built from shell
// variables, GPUS_PER_NODE asked of PyTorch), is `preflight search`'s base — its model, batch, sequence and
// the world of 2 nodes × 8 — with --search-arg options; an option search does not take is refused by name; a
// MindFormers launch is searched from its yaml and run_mindformer.py's arguments over msrun's workers.
TEST(RunCli, SearchModeSearchesTheLaunch) {
  TempDir dir;
  write_file(dir / "train.sh",
             "GPUS_PER_NODE=$(python -c 'import torch; print(torch.cuda.device_count())')\n"
             "MODEL=\"--num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 "
             "--vocab-size 32000 --swiglu --normalization RMSNorm --bf16 --use-distributed-optimizer\"\n"
             "torchrun --nproc_per_node $GPUS_PER_NODE --nnodes 2 pretrain_gpt.py $MODEL "
             "--tensor-model-parallel-size 2 --micro-batch-size 1 --global-batch-size 64\n");
  const std::string search =
      " run --mode search --gpus-per-node 8 --search-arg=--system=h100-sxm --search-arg=--tp=1,2,4 "
      "--search-arg=--pp=1,2 --search-arg=--recompute=none --search-arg=--quiet --search-arg=--json -- bash "
      "train.sh";
  RunResult r = run_in(dir.path(), preflight_bin() + search);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("torchrun pretrain_gpt.py -> preflight search"), std::string::npos) << r.err;
  nlohmann::json j = json_in(r.out);
  std::set<int> tps;
  for (const auto& row : j["top"]) {
    tps.insert(row["tp"].get<int>());
    EXPECT_EQ(row["tp"].get<int>() * row["pp"].get<int>() * row["dp"].get<int>(), 16);
    EXPECT_EQ(row["micro_batches"].get<int>() * row["dp"].get<int>(), 64);
  }
  EXPECT_EQ(tps, (std::set<int>{1, 2, 4}));
  RunResult bad =
      run_in(dir.path(), preflight_bin() +
                             " run --mode search --gpus-per-node 8 --search-arg=--no-such-option -- "
                             "bash train.sh");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--search-arg"), std::string::npos) << bad.err;
  // A MindFormers launch: its yaml and run_mindformer.py's arguments, msrun's 16 workers the world searched.
  const std::string yaml = (preflight::test::data_dir() / "mindformers" / "finetune_qwen2_7b.yaml").string();
  RunResult mf = run_in(dir.path(), preflight_bin() +
                                        " run --mode search --search-arg=--system=ascend-910b "
                                        "--search-arg=--json --search-arg=--quiet -- msrun --worker_num 16 "
                                        "--local_worker_num 8 run_mindformer.py --config " +
                                        yaml + " --use_parallel True");
  ASSERT_LE(mf.exit_code, 1) << mf.err;
  EXPECT_NE(mf.err.find("msrun run_mindformer.py -> preflight search"), std::string::npos) << mf.err;
  const nlohmann::json best = json_in(mf.out)["best"];
  EXPECT_EQ(best["tp"].get<int>() * best["pp"].get<int>() * best["dp"].get<int>() * best["cp"].get<int>(),
            16);
}

TEST(RunCli, TraceModeFromAWrappedScript) {
  TempDir dir;
  copy_data("standins/pretrain_gpt.py", dir.path());
  copy_data("trace_style.sh", dir.path());
  RunResult w = run_preflight("wrap --mode trace --steps 3 --trace-dir traces " +
                              shell_quote((dir / "trace_style.sh").string()) + " -o " +
                              shell_quote((dir / "wrapped.sh").string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  RunResult r = run_in(dir.path(), fake_hook_env() + " bash wrapped.sh");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  fs::path run = only_run_dir(dir / "traces");
  expect_traced_ranks(run, {"--train-iters", "3"});
  EXPECT_NE(r.err.find("trace files in " + run.string()), std::string::npos) << r.err;
}

TEST(RunCli, TraceModeOnTheCpuGptWithTheRealHook) {
  // examples/torch_cpu_gpt: a real torchrun + gloo run (2 ranks, pp 2) under libpreflight_hook.so, reached
  // through the PATH shims; the hook must be in every rank and each rank must write its own trace.
  TempDir dir;
  fs::path lib = fs::path(PREFLIGHT_BINARY).parent_path().parent_path() / "lib" / "libpreflight_hook.so";
  ASSERT_TRUE(fs::exists(lib)) << lib << " (built by allocator_hook)";
  fs::copy(fs::path(PREFLIGHT_SOURCE_DIR) / "examples" / "torch_cpu_gpt", dir / "gpt",
           fs::copy_options::recursive);
  RunResult r = run_in(
      dir.path(), "MASTER_PORT=" + std::to_string(free_port()) + " NPROC=2 TP=1 PP=2 " + preflight_bin() +
                      " run --mode trace --steps 1 --trace-min-bytes 65536 --trace-dir traces -- "
                      "bash gpt/pretrain_gpt_cpu.sh");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("iteration        1/       1 |"), std::string::npos) << r.out;  // stopped after one
  EXPECT_NE(r.err.find("1 launch intercepted"), std::string::npos) << r.err;
  fs::path run = only_run_dir(dir / "traces");
  RunResult s = run_in(dir.path(), preflight_bin() + " trace summarize --json " + shell_quote(run.string()));
  ASSERT_EQ(s.exit_code, 0) << s.err;
  nlohmann::json j = nlohmann::json::parse(s.out);
  std::set<int> ranks;
  for (const auto& p : j["processes"]) {
    if (p["rank"].is_null()) continue;  // the torchrun launcher itself
    ranks.insert(p["rank"].get<int>());
    EXPECT_EQ(p["world_size"], 2);
    EXPECT_EQ(p["min_bytes"], 65536);
    EXPECT_GT(p["markers"].get<int>(), 0) << "the glue's module markers are missing";
    std::string cmd = p["cmdline"].get<std::string>();
    EXPECT_EQ(cmd.substr(cmd.size() - std::string("--train-iters 1").size()), "--train-iters 1") << cmd;
  }
  EXPECT_EQ(ranks, (std::set<int>{0, 1}));
}

TEST(RunCli, TraceExplainAndMissingHook) {
  TempDir dir;
  RunResult e =
      run_in(dir.path(), fake_hook_env() + " " + preflight_bin() +
                             " run --mode trace --explain -- torchrun --nproc_per_node 2 pretrain_gpt.py "
                             "--train-samples 100");
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_EQ(e.out.rfind("LD_PRELOAD=" + std::string(FAKE_HOOK_LIB) + " \\\n", 0), 0u) << e.out;
  EXPECT_NE(
      e.out.find("\ntorchrun --nproc_per_node 2 pretrain_gpt.py --train-samples 100 --exit-interval 10\n"),
      std::string::npos)
      << e.out;
  RunResult m = run_in(dir.path(), "PREFLIGHT_HOOK_LIB=/nonexistent/libpreflight_hook.so " + preflight_bin() +
                                       " run --mode trace -- torchrun pretrain_gpt.py");
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find(
                "preflight: error: /nonexistent/libpreflight_hook.so: the allocator hook library is missing"),
            std::string::npos)
      << m.err;
}

TEST(RunCli, MindFormersAnalyzeReadsTheYaml) {
  RunResult r = run_preflight("run -- msrun --worker_num=8 run_mindformer.py --config a.yaml");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("msrun run_mindformer.py -> preflight analyze --config (8 workers"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("preflight: error: a.yaml: cannot open the MindFormers yaml"), std::string::npos) << r.err;
  RunResult mixed = run_preflight("run --mode analyze torchrun --nproc_per_node 2 pretrain_gpt.py");
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("put the command to run after --"), std::string::npos) << mixed.err;
}
