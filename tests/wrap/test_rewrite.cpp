// Script rewriting: exact rewritten lines per mode and launcher, untouched bytes elsewhere, idempotence,
// placeholders, the refusal with the closest lines, the sed recipe.
#include <gtest/gtest.h>

#include <sstream>

#include "preflight/common/error.hpp"
#include "preflight/wrap/rewrite.hpp"
#include "wrap_test_util.hpp"

using namespace preflight::wrap;
using preflight::test::read_file;
using preflight::test::wrap_data;

namespace {

const std::string kInv = "\"${PREFLIGHT:-/opt/pf/preflight}\"";

WrapOptions opts(WrapMode mode = WrapMode::Analyze) {
  WrapOptions o;
  o.mode = mode;
  o.preflight = "/opt/pf/preflight";
  o.script_name = "test.sh";
  return o;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

/// Lines (1-based numbers) where a and b differ; both must have the same number of lines.
std::vector<std::size_t> changed_lines(const std::string& a, const std::string& b) {
  auto la = lines(a);
  auto lb = lines(b);
  EXPECT_EQ(la.size(), lb.size());
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < std::min(la.size(), lb.size()); ++i)
    if (la[i] != lb[i]) out.push_back(i + 1);
  return out;
}

}  // namespace

TEST(Rewrite, StringStyleLaunchLineAndPlaceholders) {
  std::string in = read_file(wrap_data("string_style.sh"));
  WrapResult r = wrap_script(in, opts());
  EXPECT_EQ(changed_lines(in, r.text), (std::vector<std::size_t>{14, 15, 39}));
  auto out = lines(r.text);
  EXPECT_EQ(out[13], "CHECKPOINT_PATH='<Specify path>'");
  EXPECT_EQ(out[14], "VOCAB_FILE='<Specify path to file>/gpt2-vocab.json'");
  EXPECT_EQ(out[38], kInv + " analyze --nnodes-variable=NNODES $DISTRIBUTED_ARGS \\");
  ASSERT_EQ(r.launches.size(), 1u);
  EXPECT_EQ(r.launches[0].line, 39u);
  EXPECT_EQ(r.launches[0].launcher, Launcher::Torchrun);
  EXPECT_EQ(r.launches[0].entry, "pretrain_gpt.py");
  EXPECT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("test.sh:14:"), std::string::npos);
}

TEST(Rewrite, ArrayStyleEntryInAVariableOnItsOwnLine) {
  std::string in = read_file(wrap_data("array_style.sh"));
  WrapOptions o = opts();
  o.analyze_args = {"--json"};
  WrapResult r = wrap_script(in, o);
  EXPECT_EQ(changed_lines(in, r.text), (std::vector<std::size_t>{54, 55}));
  auto out = lines(r.text);
  EXPECT_EQ(out[53], kInv + " analyze --json --nnodes-variable=NUM_NODES ${DISTRIBUTED_ARGS[@]} \\");
  EXPECT_EQ(out[54], "    \\");
  EXPECT_EQ(r.text.back(), 'x');  // still no final newline
  EXPECT_NE(r.text.find("torchrun --nproc_per_node 1 pretrain_gpt.py --num-layers 1\n"), std::string::npos);
  ASSERT_EQ(r.launches.size(), 1u);  // the here-document's torchrun line is text, not a launch
  EXPECT_EQ(r.launches[0].entry, "pretrain_gpt.py");
}

TEST(Rewrite, OtherLaunchersGoThroughRunAndEnvPrefixesStay) {
  std::string ds = read_file(wrap_data("deepspeed_style.sh"));
  WrapOptions o = opts();
  o.run_args = {"--gpus-per-node", "4"};
  WrapResult r = wrap_script(ds, o);
  auto out = lines(r.text);
  EXPECT_EQ(out.back(),
            kInv +
                " run --mode analyze --gpus-per-node 4 -- deepspeed --hostfile=$HOSTFILE --num_gpus "
                "$NUM_GPUS pretrain_gpt.py ${megatron_options} ${deepspeed_options} 2>&1 | tee train.log");
  EXPECT_EQ(changed_lines(ds, r.text).size(), 1u);

  std::string mod = read_file(wrap_data("module_style.sh"));
  WrapResult m = wrap_script(mod, opts());
  auto ml = lines(m.text);
  // (after the header: the analysis' status kept as the script's once `set -e` is switched off, its EXIT
  // trap composed with the script's own under bash)
  EXPECT_NE(ml[4].find("PREFLIGHT_STATUS_FILE"), std::string::npos) << ml[4];
  const std::size_t h = 17;  // the header's last line
  EXPECT_EQ(ml[h + 1],
            "set -e; set +eu  # preflight wrap: the analysis goes on past the cluster's environment");
  EXPECT_EQ(ml[h + 5], "CUDA_VISIBLE_DEVICES=0,1,2,3 " + kInv + " analyze --use_env --nproc_per_node=4 \\");
  EXPECT_EQ(ml[h + 6], "    --num-layers 12 --hidden-size 768 --num-attention-heads 12 \\");
  EXPECT_EQ(ml[h + 3], "python3 -c 'print(\"preparing\")'");  // not a training launch
}

TEST(Rewrite, TraceModeKeepsTheLaunch) {
  std::string in = read_file(wrap_data("array_style.sh"));
  WrapOptions o = opts(WrapMode::Trace);
  o.run_args = {"--steps", "3"};
  WrapResult r = wrap_script(in, o);
  EXPECT_EQ(changed_lines(in, r.text), (std::vector<std::size_t>{54}));
  EXPECT_EQ(lines(r.text)[53], kInv + " run --mode trace --steps 3 -- torchrun ${DISTRIBUTED_ARGS[@]} \\");

  std::string s = read_file(wrap_data("string_style.sh"));
  WrapResult t = wrap_script(s, opts(WrapMode::Trace));
  EXPECT_EQ(lines(t.text)[13], "CHECKPOINT_PATH=<Specify path>");  // a real run needs the real path
  ASSERT_EQ(t.notes.size(), 2u);
  EXPECT_NE(t.notes[0].find("left as is"), std::string::npos);
}

TEST(Rewrite, DryrunModeForMindSporeLaunchesOnly) {
  std::string in = read_file(wrap_data("mindformers_style.sh"));
  WrapOptions o = opts(WrapMode::Dryrun);
  o.dryrun_args = {"--stages", "4"};
  WrapResult r = wrap_script(in, o);
  EXPECT_EQ(lines(r.text)[7],
            kInv +
                " dryrun --out output/preflight_dryrun --stages 4 -- bash scripts/msrun_launcher.sh "
                "\"run_mindformer.py \\");
  EXPECT_EQ(changed_lines(in, r.text).size(), 1u);
  try {
    wrap_script(read_file(wrap_data("array_style.sh")), opts(WrapMode::Dryrun));
    FAIL() << "a torchrun script was accepted for dryrun";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(e.detail().find("54: torchrun pretrain_gpt.py"), std::string::npos) << e.detail();
  }
}

TEST(Rewrite, WrappingTwiceChangesNothing) {
  for (const char* name : {"string_style.sh", "array_style.sh", "deepspeed_style.sh", "module_style.sh",
                           "mindformers_style.sh", "trace_style.sh"}) {
    std::string in = read_file(wrap_data(name));
    for (WrapMode mode : {WrapMode::Analyze, WrapMode::Trace, WrapMode::Dryrun}) {
      WrapResult once;
      try {
        once = wrap_script(in, opts(mode));
      } catch (const preflight::InputError&) {
        continue;  // dryrun of a non-MindSpore script
      }
      WrapResult twice = wrap_script(once.text, opts(mode));
      EXPECT_EQ(twice.text, once.text) << name << " " << mode_name(mode);
      EXPECT_FALSE(twice.changed) << name;
      for (const auto& l : twice.launches)
        if (l.action.rfind("skipped", 0) != 0) {
          EXPECT_EQ(l.action, "already wrapped") << name;
        }
    }
  }
}

TEST(Rewrite, NoLaunchListsWhatWasLookedForAndTheClosestLines) {
  std::string in = read_file(wrap_data("eval_style.sh"));
  try {
    wrap_script(in, opts());
    FAIL() << "eval_style.sh was accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "test.sh");
    const std::string& d = e.detail();
    EXPECT_NE(d.find("looked for: torchrun"), std::string::npos) << d;
    EXPECT_NE(d.find("pretrain_*.py, finetune*.py, run_mindformer.py"), std::string::npos) << d;
    EXPECT_NE(d.find("  6: LAUNCHER=\"torchrun --nproc_per_node 2\""), std::string::npos) << d;
    EXPECT_NE(d.find("  8: CMD=\"$LAUNCHER pretrain_gpt.py"), std::string::npos) << d;
    EXPECT_NE(d.find("  12: eval \"$@\""), std::string::npos) << d;
    EXPECT_NE(d.find("preflight run --mode analyze -- bash test.sh"), std::string::npos) << d;
  }
  EXPECT_THROW(wrap_script("#!/bin/sh\necho hello\n", opts()), preflight::InputError);
  EXPECT_THROW(wrap_script("", opts()), preflight::InputError);
  // A job whose launch is inside another script run under mpirun (LLM-jp's sbatch.sh → train.sh): the
  // continued mpirun line is shown whole, with a hint naming that script.
  try {
    wrap_script(
        "#!/bin/bash\nNUM_GPUS=16\nmpirun \\\n  -np $NUM_GPUS \\\n  -x MASTER_ADDR=$MASTER_ADDR \\\n"
        "  bash scripts/pretrain/train.sh\n",
        opts());
    ADD_FAILURE() << "a script without a launch was wrapped";
  } catch (const preflight::InputError& e) {
    const std::string& d = e.detail();
    EXPECT_NE(d.find("  3: mpirun -np $NUM_GPUS -x MASTER_ADDR=$MASTER_ADDR bash scripts/pretrain/train.sh"),
              std::string::npos)
        << d;
    EXPECT_NE(
        d.find("hint: line 3 runs scripts/pretrain/train.sh under mpirun: the launch is probably inside it"),
        std::string::npos)
        << d;
  }
  // A submission script (LLM-jp's run_train.sh: `qsub -l select=N -v TASK_DIR=… …/qsub_train.sh`): the job
  // script is named
  try {
    wrap_script(
        "script_root=/groups/x\nqsub -l select=${num_nodes} \\\n  -v TASK_DIR=${task_dir},RTYPE=rt_HF \\\n"
        "  ${script_root}/pretrain/qsub_train.sh\n",
        opts());
    ADD_FAILURE() << "a qsub submission was wrapped";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(
        e.detail().find("hint: line 2 submits ${script_root}/pretrain/qsub_train.sh with qsub: wrap that "
                        "job script (its #PBS / #$ lines"),
        std::string::npos)
        << e.detail();
  }
  // ms-swift lines preflight does not model are named: `megatron rlhf`, `swift sft` (not Megatron)
  try {
    wrap_script(
        "NPROC_PER_NODE=8 megatron rlhf --rlhf_type dpo --model Qwen/Qwen3-8B\n"
        "CUDA_VISIBLE_DEVICES=0 swift sft --model Qwen/Qwen3-8B\n",
        opts());
    ADD_FAILURE() << "ms-swift's rlhf / swift sft were wrapped";
  } catch (const preflight::InputError& e) {
    const std::string& d = e.detail();
    EXPECT_NE(d.find("hint: line 1: ms-swift's `megatron rlhf` is not modelled"), std::string::npos) << d;
    EXPECT_NE(
        d.find("hint: line 2: ms-swift's `swift sft` trains with transformers / DeepSpeed, not Megatron"),
        std::string::npos)
        << d;
  }
}

// The interpreter or launcher by a path under an expansion: `"${PY}" -m torch.distributed.run` with
// PY="${ENV}/venv/bin/python" (LLM-jp's B200 smoke test), `${VENV}/bin/torchrun`,
// `"$CONDA_PREFIX/bin/python"`. They had been refused as no launch.
TEST(Rewrite, LauncherByAPathUnderAnExpansion) {
  const std::string s =
      "PY=\"${ENV}/venv/bin/python\"\n"
      "\"${PY}\" -m torch.distributed.run --nnodes=1 --nproc-per-node=8 pretrain_gpt.py --num-layers 2\n"
      "${VENV}/bin/torchrun --nproc-per-node 4 pretrain_gpt.py --num-layers 2\n"
      "\"$CONDA_PREFIX/bin/python3.11\" pretrain_gpt.py --num-layers 3\n"
      "\"${PY}\" tools/preprocess_data.py --input x\n";
  WrapResult r = wrap_script(s, opts());
  auto l = lines(r.text);
  EXPECT_EQ(l[1], kInv + " analyze --nnodes=1 --nproc-per-node=8 --num-layers 2");
  EXPECT_EQ(l[2], kInv + " analyze --nproc-per-node 4 --num-layers 2");
  EXPECT_EQ(l[3], kInv + " analyze --num-layers 3");
  EXPECT_EQ(l[4], "\"${PY}\" tools/preprocess_data.py --input x");  // not a training entry point
  ASSERT_EQ(r.launches.size(), 3u);
  EXPECT_EQ(r.launches[0].launcher, Launcher::TorchDistributedRun);
}

// The launcher in a variable and the entry point written in the command string that runs it (LLM-jp's v4
// job scripts): the launcher's words become the analysis where they are assigned, the entry point leaves
// the string, srun goes.
TEST(Rewrite, LauncherVariableWithTheEntryPointInTheCommandString) {
  const std::string s =
      "LAUNCH=\"${ENV_DIR}/venv/bin/python -m torch.distributed.run \\\n"
      "  --nnodes=${SLURM_JOB_NUM_NODES:-1} --nproc-per-node=${GPUS_PER_NODE}\"\n"
      "srun --ntasks=\"${SLURM_JOB_NUM_NODES:-1}\" --ntasks-per-node=1 bash -c \"\n"
      "  ${LAUNCH} --node-rank=\\${SLURM_NODEID:-0} \\\n"
      "    ${ENV_DIR}/src/Megatron-LM/pretrain_gpt.py \\\n"
      "    ${ALL_PARAMS[*]}\n"
      "\"\n";
  WrapResult r = wrap_script(s, opts());
  auto l = lines(r.text);
  EXPECT_EQ(l[0], "LAUNCH=\"${PREFLIGHT:-/opt/pf/preflight} analyze \\");
  EXPECT_EQ(l[2], "bash -c \"");
  EXPECT_EQ(l[3], "  ${LAUNCH} --node-rank=\\${SLURM_NODEID:-0} \\");
  EXPECT_EQ(l[4], "    ${ALL_PARAMS[*]}");
  ASSERT_EQ(r.launches.size(), 1u);
  EXPECT_EQ(r.launches[0].launcher, Launcher::TorchDistributedRun);
  EXPECT_EQ(r.launches[0].entry, "${ENV_DIR}/src/Megatron-LM/pretrain_gpt.py");
  EXPECT_EQ(wrap_script(r.text, opts()).text, r.text);  // wrapping twice changes nothing
}

// Environment assignments before a launch on one line, with a path later in it: a command, not a placeholder
// path with a blank (`CKPT=/path/to/my checkpoints`).  With two or more assignments, or a launcher not
// installed here, the whole rest of the line had been quoted as one value and the launch lost ("no launch
// found"; ms-swift's `NPROC_PER_NODE=2 CUDA_VISIBLE_DEVICES=0,1 megatron sft --model Qwen/…`).
TEST(Rewrite, EnvironmentAssignmentsBeforeALaunchAreNoPlaceholder) {
  WrapResult r = wrap_script(
      "CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_FLASH_ATTN=1 torchrun --nproc_per_node 8 pretrain_gpt.py "
      "--data-path /data/my_text_document --num-layers 2\n",
      opts());
  EXPECT_EQ(lines(r.text)[0],
            "CUDA_DEVICE_MAX_CONNECTIONS=1 NVTE_FLASH_ATTN=1 " + kInv +
                " analyze --nproc_per_node 8 --data-path /data/my_text_document --num-layers 2");
  EXPECT_TRUE(r.notes.empty());
  // a path-like first value before an uninstalled launcher: still a command
  r = wrap_script("PYTHONPATH=/opt/Megatron-LM deepspeed --num_gpus 8 pretrain_gpt.py --num-layers 2\n",
                  opts());
  ASSERT_EQ(r.launches.size(), 1u);
  EXPECT_EQ(r.launches[0].launcher, Launcher::Deepspeed);
  // the placeholder itself is still quoted
  r = wrap_script("CKPT=/path/to/my checkpoints\ntorchrun pretrain_gpt.py --load $CKPT\n", opts());
  EXPECT_EQ(lines(r.text)[0], "CKPT='/path/to/my checkpoints'");
}

// A launch inside a container runner (`docker exec -it CTR torchrun …`, `docker run … IMAGE torchrun …`, a
// `bash -c "…"` string run by docker): the analysis runs outside the container, without the runner (it had
// been "no launch wrap recognises: left as is", which would start the real run).
TEST(Rewrite, LaunchesInsideAContainerRunner) {
  const std::string s =
      "docker exec -it ctr torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 2\n"
      "docker run --rm --gpus all --ipc=host -v /data:/data -e A=1 nvcr.io/nvidia/pytorch:24.01-py3 "
      "torchrun --nproc-per-node 4 pretrain_gpt.py --num-layers 3\n"
      "podman run --rm img bash -c \"torchrun --nproc-per-node 2 pretrain_gpt.py --num-layers 4\"\n";
  WrapResult r = wrap_script(s, opts());
  auto l = lines(r.text);
  EXPECT_EQ(l[0], kInv + " analyze --nproc-per-node 8 --num-layers 2");
  EXPECT_EQ(l[1], kInv + " analyze --nproc-per-node 4 --num-layers 3");
  EXPECT_EQ(l[2], "bash -c \"${PREFLIGHT:-/opt/pf/preflight} analyze --nproc-per-node 2 --num-layers 4\"");
  EXPECT_EQ(r.launches.size(), 3u);
  // trace mode keeps the runner: the traced run is the real one
  WrapResult t = wrap_script(s, opts(WrapMode::Trace));
  EXPECT_EQ(lines(t.text)[0], kInv +
                                  " run --mode trace -- docker exec -it ctr torchrun --nproc-per-node 8 "
                                  "pretrain_gpt.py --num-layers 2");
}

// A csh / tcsh / fish script would not run with the POSIX shell wrap writes: refused with the way that works.
TEST(Rewrite, CshScriptsAreRunNotRewritten) {
  for (const char* shebang : {"#!/bin/csh\n", "#!/usr/bin/env tcsh\n"}) {
    try {
      wrap_script(
          std::string(shebang) + "#PBS -l select=2\nmpiexec -n 8 python pretrain_gpt.py --num-layers 2\n",
          opts());
      ADD_FAILURE() << shebang << " was rewritten";
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("wrap rewrites sh / bash scripts"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("preflight run --mode analyze -- "), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(wrap_script("#!/usr/bin/env bash\ntorchrun pretrain_gpt.py --num-layers 2\n", opts()));
}

TEST(Rewrite, EntryOptionAddsAnEntryPoint) {
  std::string s = "msrun --worker_num=8 --local_worker_num=8 ${BASE}/parallel_mixtral.py --test_train True\n";
  EXPECT_THROW(wrap_script(s, opts()), preflight::InputError);
  WrapOptions o = opts(WrapMode::Dryrun);
  o.entries.globs.push_back("parallel_*.py");
  WrapResult r = wrap_script(s, o);
  EXPECT_EQ(r.text, kInv + " dryrun --out output/preflight_dryrun -- " + s);
}

// Megatron's older GPT-3 175B example (also in Megatron-DeepSpeed's examples/) writes its paths as
// `--vocab-file <PATH TO gpt-vocab.json>` inside an options string run by `sh -c`, and its datasets as
// DATASET_1="<PATH TO THE FIRST DATASET>": bash would read `<PATH` as a redirection.  Such values become
// one word; redirections, here-documents, usage lines and comments stay.
TEST(Rewrite, FlagValuePlaceholdersBecomeOneWord) {
  const std::string s =
      "DATASET_1=\"<PATH TO THE FIRST DATASET>\"\n"
      "options=\" --tensor-model-parallel-size 8 \\\n"
      "\t--vocab-file <PATH TO gpt-vocab.json> \\\n"
      "\t--save=<PATH TO CHECKPOINTS> --data-path ${DATASET_1}\"\n"
      "# --load <PATH TO CHECKPOINTS>\n"
      "echo \"usage: --config <path>\"\n"
      "sort --key <in.txt >out.txt\n"
      "sort --key <in.txt 2>err.txt\n"
      "cat <<EOF\n--x <PATH TO X>\nEOF\n"
      "torchrun pretrain_gpt.py $options\n";
  WrapResult r = wrap_script(s, opts());
  auto l = lines(r.text);
  EXPECT_EQ(l[0], "DATASET_1=\"PLACEHOLDER_PATH_TO_THE_FIRST_DATASET\"");
  EXPECT_EQ(l[2], "\t--vocab-file PLACEHOLDER_PATH_TO_gpt-vocab.json \\");
  EXPECT_EQ(l[3], "\t--save=PLACEHOLDER_PATH_TO_CHECKPOINTS --data-path ${DATASET_1}\"");
  EXPECT_EQ(l[4], "# --load <PATH TO CHECKPOINTS>");
  EXPECT_EQ(l[5], "echo \"usage: --config <path>\"");
  EXPECT_EQ(l[6], "sort --key <in.txt >out.txt");
  EXPECT_EQ(l[7], "sort --key <in.txt 2>err.txt");
  EXPECT_EQ(l[9], "--x <PATH TO X>");
  int noted = 0;
  for (const auto& n : r.notes) noted += n.find("replaced the placeholder <PATH TO") != std::string::npos;
  EXPECT_EQ(noted, 3);
  // --keep-placeholders (and trace mode) leave them, with a note.
  WrapOptions keep = opts();
  keep.fix_placeholders = false;
  EXPECT_EQ(lines(wrap_script(s, keep).text)[2], "\t--vocab-file <PATH TO gpt-vocab.json> \\");
}

TEST(Rewrite, KeepPlaceholders) {
  WrapOptions o = opts();
  o.fix_placeholders = false;
  WrapResult r = wrap_script(read_file(wrap_data("string_style.sh")), o);
  EXPECT_EQ(lines(r.text)[13], "CHECKPOINT_PATH=<Specify path>");
}

TEST(Rewrite, SeveralLaunchesEachGetTheirOwnDryrunFolder) {
  std::string s =
      "python run_mindformer.py --config a.yaml\n"
      "msrun --worker_num=4 run_mindformer.py --config b.yaml\n"
      "torchrun pretrain_gpt.py\n";
  WrapResult r = wrap_script(s, opts(WrapMode::Dryrun));
  auto l = lines(r.text);
  EXPECT_EQ(l[0],
            kInv + " dryrun --out output/preflight_dryrun/line1 -- python run_mindformer.py --config a.yaml");
  EXPECT_EQ(l[1], kInv +
                      " dryrun --out output/preflight_dryrun/line2 -- msrun --worker_num=4 run_mindformer.py "
                      "--config b.yaml");
  EXPECT_EQ(l[2], "torchrun pretrain_gpt.py");
  ASSERT_EQ(r.launches.size(), 3u);
  EXPECT_EQ(r.launches[2].action, "skipped: not a MindSpore launch");
}

TEST(Rewrite, PreflightPathIsEscapedForTheDefault) {
  EXPECT_EQ(preflight_invocation("/a b/$x/\"q\"/}"), "\"${PREFLIGHT:-/a b/\\$x/\\\"q\\\"/\\}}\"");
}

TEST(SedRecipe, ReplacesEveryOccurrenceAndNothingElse) {
  std::size_t n = 0;
  std::string in =
      "a\ntorchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\\nx torchrun $DISTRIBUTED_ARGS pretrain_gpt.pyz"
      "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py";
  std::string out = sed_compatible(in, n);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(out,
            "a\npython ../get_training_info.py $DISTRIBUTED_ARGS  \\\nx python ../get_training_info.py "
            "$DISTRIBUTED_ARGS zpython ../get_training_info.py $DISTRIBUTED_ARGS ");
  EXPECT_EQ(sed_compatible("torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py\n", n),
            "torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py\n");
  EXPECT_EQ(n, 0u);
}

TEST(Rewrite, MindFormersLaunchesRunUnderAnalyze) {
  WrapResult r = wrap_script("python run_mindformer.py --config a.yaml --run_mode train\n", opts());
  EXPECT_EQ(r.text,
            kInv + " run --mode analyze -- python run_mindformer.py --config a.yaml --run_mode train\n");
  EXPECT_TRUE(r.notes.empty()) << r.notes[0];
}

// A Megatron-Bridge recipe script (run_recipe.py --recipe NAME with Hydra overrides, run by srun in a job
// script): its launch goes through `preflight run`, which reads the recipe by its name (it had been refused,
// pointing to the run's saved configuration).
TEST(Rewrite, BridgeRecipeScriptRunsThroughRun) {
  const std::string in =
      "#!/bin/bash\n"
      "CMD=\"uv run --no-sync python scripts/training/run_recipe.py\"\n"
      "CMD=\"$CMD --recipe nemotron_3_nano_pretrain_config model.tensor_model_parallel_size=2\"\n"
      "srun --mpi=pmix bash -c \"$CMD\"\n";
  WrapResult r = wrap_script(in, opts());
  // (inside the double-quoted string the invocation goes unquoted)
  EXPECT_NE(
      r.text.find("preflight} run --mode analyze -- uv run --no-sync python scripts/training/run_recipe.py"),
      std::string::npos)
      << r.text;
  EXPECT_EQ(r.text.find("preflight} analyze"), std::string::npos) << r.text;  // never inline
}

// Megatron-Bridge's experiment launchers (they submit the run to Slurm): their lines go through `preflight
// run`, which reads them (a bare train.sh is not one: a job script of anyone's).
TEST(Rewrite, BridgeExperimentLaunchersRunThroughRun) {
  const std::string in =
      "#!/bin/bash\n"
      "uv run python scripts/performance/setup_experiment.py -m llama -mr llama3_70b -ng 64 -g gb200 -c "
      "fp8_mx\n"
      "./scripts/training/train.sh --nodes 2 --gpus-per-node 8 --recipe llama3_8b_pretrain_config\n"
      "bash ./train.sh\n";
  WrapResult r = wrap_script(in, opts());
  EXPECT_NE(
      r.text.find("preflight}\" run --mode analyze -- uv run python scripts/performance/setup_experiment.py"),
      std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("preflight}\" run --mode analyze -- ./scripts/training/train.sh --nodes 2"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("\nbash ./train.sh\n"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("preflight} analyze"), std::string::npos) << r.text;  // never inline
  EXPECT_EQ(r.launches.size(), 2u);
}

// Megatron-LM's sc21 SRUN.sh: the launch is a string (CMD="python -u …/pretrain_gpt.py …") that srun runs
// through `sh -c "${CMD}"` on every node.  The string is rewritten, and analysis runs the shell once.
TEST(Rewrite, CommandStringRunBySrunShell) {
  const std::string in =
      "#!/bin/bash\n"
      "CMD=\"python -u ${MEGATRON_CODE_DIR}/pretrain_gpt.py ${MEGATRON_PARAMS}\"\n"
      "srun -l --container-image \"img\" sh -c \"${CMD}\"\n";
  WrapResult r = wrap_script(in, opts());
  auto out = lines(r.text);
  // unquoted inside the string (the path needs no quoting: a bare ${CMD} would keep quote characters)
  EXPECT_EQ(out[1], "CMD=\"${PREFLIGHT:-/opt/pf/preflight} analyze ${MEGATRON_PARAMS}\"") << r.text;
  EXPECT_EQ(out[2], "sh -c \"${CMD}\"") << r.text;
  ASSERT_EQ(r.launches.size(), 1u);
  // A path that needs quoting keeps its quotes.
  WrapOptions spaced = opts();
  spaced.preflight = "/opt/my tools/preflight";
  EXPECT_EQ(lines(wrap_script(in, spaced).text)[1],
            "CMD=\"\\\"${PREFLIGHT:-/opt/my tools/preflight}\\\" analyze ${MEGATRON_PARAMS}\"");
  EXPECT_EQ(wrap_script(r.text, opts()).text, r.text);
  // A string nobody runs is no launch (the script is refused as having none).
  EXPECT_ANY_THROW(wrap_script("CMD=\"python pretrain_gpt.py --num-layers 2\"\necho \"${CMD}\"\n", opts()));
}

// Megatron-LM's examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh: the launch string is assigned in the
// script and run by `srun … bash -x -c "${TRAINING_CMD}"` inside a here-document fed to sbatch.  The string
// is rewritten, the job's script runs here (sbatch → bash with the #SBATCH size) and its shell once, not
// under srun.
TEST(Rewrite, CommandStringRunFromAnSbatchHereDocument) {
  const std::string in =
      "#!/bin/bash\n"
      "TRAINING_CMD=\"\ncd ${MEGATRON_PATH};\npython ${MEGATRON_PATH}/pretrain_gpt.py ${ARGS[@]}\"\n"
      "sbatch <<EOF\n"
      "#!/bin/bash\n"
      "#SBATCH --nodes=4\n"
      "#SBATCH --ntasks-per-node=8\n"
      "srun --mpi=pmix -l \\\n"
      "    bash -x -c \"${TRAINING_CMD}\" 2>&1 | tee log\n"
      "EOF\n";
  WrapResult r = wrap_script(in, opts());
  EXPECT_NE(r.text.find(" analyze ${ARGS[@]}"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("python ${MEGATRON_PATH}/pretrain_gpt.py"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("srun"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find("sbatch <<EOF"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find(
                "SLURM_NNODES=4 SLURM_JOB_NUM_NODES=4 SLURM_NTASKS_PER_NODE=8 SLURM_TASKS_PER_NODE=\"8(x4)\" "
                "SLURM_JOB_NODELIST=\"preflight-node[1-4]\" SLURM_NODELIST=\"preflight-node[1-4]\" "
                "SLURM_JOB_ID=1 SLURM_JOBID=1 bash <<EOF"),
            std::string::npos)
      << r.text;
  EXPECT_NE(r.text.find("bash -x -c \"${TRAINING_CMD}\" 2>&1 | tee log"), std::string::npos) << r.text;
  EXPECT_EQ(wrap_script(r.text, opts()).text, r.text);
}

// A job script that sends its own output to a log (`exec > $LOGFILE 2> $ERRFILE`, LLM-jp's PBS scripts): the
// analysis is printed there, and wrap says so; stderr alone, or exec running a command, is no such note.
TEST(Rewrite, ExecRedirectingTheScriptsOutputIsNoted) {
  const std::string in =
      "#!/bin/bash\nLOGFILE=logs/train.out\nexec > $LOGFILE 2> logs/train.err\n"
      "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2\n";
  WrapResult r = wrap_script(in, opts());
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find(":3: `exec > $LOGFILE` sends the script's output there"), std::string::npos)
      << r.notes[0];
  for (const char* quiet : {"exec 2> logs/train.err\n", "exec python -c 1 > out\n"}) {
    std::string other = in;
    other.replace(other.find("exec >"), other.find("\ntorchrun") - other.find("exec >") + 1, quiet);
    EXPECT_TRUE(wrap_script(other, opts()).notes.empty()) << other;
  }
}

TEST(Rewrite, SrunLaunchesAndANoteForLaunchesNotRecognised) {
  std::string in = read_file(wrap_data("slurm_style.sh"));
  WrapResult r = wrap_script(in, opts());
  // Analyze mode runs the job script outside its allocation: the #SBATCH size as defaults, one line after
  // the leading comments (taken out below to compare the rest line by line).
  const std::string defaults =
      "export SLURM_NNODES=\"${SLURM_NNODES:-2}\" SLURM_JOB_NUM_NODES=\"${SLURM_JOB_NUM_NODES:-2}\" "
      "SLURM_NTASKS_PER_NODE=\"${SLURM_NTASKS_PER_NODE:-4}\" "
      "SLURM_TASKS_PER_NODE=\"${SLURM_TASKS_PER_NODE:-4(x2)}\" "
      "SLURM_JOB_NODELIST=\"${SLURM_JOB_NODELIST:-preflight-node[1-2]}\" "
      "SLURM_NODELIST=\"${SLURM_NODELIST:-preflight-node[1-2]}\" SLURM_JOB_ID=\"${SLURM_JOB_ID:-1}\" "
      "SLURM_JOBID=\"${SLURM_JOBID:-1}\"  # preflight wrap: the job's #SBATCH size "
      "outside an "
      "allocation\n";
  ASSERT_EQ(lines(r.text)[7] + "\n", defaults);
  r.text.erase(r.text.find(defaults), defaults.size());
  EXPECT_EQ(changed_lines(in, r.text), (std::vector<std::size_t>{18, 20, 22, 24}));
  auto out = lines(r.text);
  // srun starting torchrun on each node: analyze replaces both (it must run once, not once per node).
  EXPECT_EQ(out[17], "    " + kInv + " analyze --nnodes 2 --nproc_per_node 4 \\");
  EXPECT_EQ(out[19], "        \"${MODEL_ARGS[@]}\"");
  // srun starting the ranks: its sizes are read when the script runs (inside the allocation).
  EXPECT_EQ(out[23], "    " + kInv +
                         " run --mode analyze -- srun --mpi=pmix --cpu-bind=none python -u pretrain_gpt.py "
                         "\"${MODEL_ARGS[@]}\"");
  // mpirun starting the ranks: likewise, its -np is read when the script runs.
  EXPECT_EQ(out[21], "    " + kInv +
                         " run --mode analyze -- mpirun -np 8 python pretrain_gpt.py \"${MODEL_ARGS[@]}\"");
  ASSERT_EQ(r.launches.size(), 3u);
  EXPECT_EQ(r.launches[0].launcher, Launcher::Torchrun);
  EXPECT_EQ(r.launches[1].launcher, Launcher::Mpirun);
  EXPECT_EQ(r.launches[1].line, 22u);
  EXPECT_EQ(r.launches[2].launcher, Launcher::Srun);
  EXPECT_EQ(r.launches[2].line, 24u);
  ASSERT_EQ(r.notes.size(), 1u);  // the #SBATCH defaults
  EXPECT_NE(r.notes[0].find("#SBATCH lines (2 nodes, 4 tasks per node)"), std::string::npos) << r.notes[0];
  // A launcher wrap does not know: the line stays, and the report says it will start the real run.
  std::string two =
      "torchrun pretrain_gpt.py --num-layers 2\nhorovodrun -np 8 python pretrain_gpt.py --num-layers 2\n";
  WrapResult unknown = wrap_script(two, opts());
  EXPECT_EQ(lines(unknown.text)[1], "horovodrun -np 8 python pretrain_gpt.py --num-layers 2");
  ASSERT_EQ(unknown.notes.size(), 1u);
  EXPECT_NE(unknown.notes[0].find("test.sh:2: `horovodrun -np 8 python pretrain_gpt.py --num-layers 2` names "
                                  "pretrain_gpt.py"),
            std::string::npos)
      << unknown.notes[0];
  EXPECT_NE(unknown.notes[0].find("it will start the real run"), std::string::npos);

  WrapResult t = wrap_script(in, opts(WrapMode::Trace));
  EXPECT_EQ(changed_lines(in, t.text), (std::vector<std::size_t>{18, 22, 24}));
  EXPECT_EQ(lines(t.text)[17], "    " + kInv +
                                   " run --mode trace -- srun --nodes=2 --ntasks-per-node=1 --gres=gpu:4 "
                                   "torchrun --nnodes 2 --nproc_per_node 4 \\");
  for (WrapMode mode : {WrapMode::Analyze, WrapMode::Trace}) {
    WrapOptions o = opts(mode);
    WrapResult once = wrap_script(in, o);
    EXPECT_EQ(wrap_script(once.text, o).text, once.text) << mode_name(mode);
  }
  // Printing or copying the entry point is not a launch and needs no note.
  WrapResult quiet = wrap_script(
      "cp pretrain_gpt.py /tmp/\necho pretrain_gpt.py\ntorchrun pretrain_gpt.py --num-layers 2\n", opts());
  EXPECT_TRUE(quiet.notes.empty());
}
