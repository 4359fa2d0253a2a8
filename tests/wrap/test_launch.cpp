// Launch recognition at run time, world size per launcher, analyze arguments, short runs, trace environment.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "preflight/common/error.hpp"
#include "preflight/wrap/launch.hpp"
#include "preflight/wrap/rewrite.hpp"
#include "preflight/wrap/run.hpp"
#include "wrap_test_util.hpp"

using namespace preflight::wrap;
using Words = std::vector<std::string>;

namespace {
const EntryPatterns kDefault;
std::optional<LaunchCommand> parse(const Words& w, const EntryPatterns& e = kDefault) {
  return parse_launch(w, e);
}
int eight_gpus() {
  return 8;
}
int no_gpus() {
  return 0;
}
}  // namespace

TEST(Launch, RecognisesEachLauncher) {
  struct Case {
    Words argv;
    Launcher launcher;
    std::string entry;
  };
  std::vector<Case> cases = {
      {{"torchrun", "--nproc_per_node", "8", "pretrain_gpt.py", "--num-layers", "2"},
       Launcher::Torchrun,
       "pretrain_gpt.py"},
      {{"/opt/conda/bin/torchrun", "pretrain_llama.py"}, Launcher::Torchrun, "pretrain_llama.py"},
      {{"python3", "-m", "torch.distributed.run", "--nnodes=2", "pretrain_gpt.py"},
       Launcher::TorchDistributedRun,
       "pretrain_gpt.py"},
      {{"python", "-u", "-mtorch.distributed.launch", "--use_env", "x/pretrain_bert.py"},
       Launcher::TorchDistributedLaunch,
       "x/pretrain_bert.py"},
      {{"deepspeed", "--num_gpus", "4", "../../pretrain_gpt.py", "--deepspeed"},
       Launcher::Deepspeed,
       "../../pretrain_gpt.py"},
      {{"msrun", "--worker_num=8", "--local_worker_num=8", "run_mindformer.py", "--config", "a.yaml"},
       Launcher::Msrun,
       "run_mindformer.py"},
      {{"bash", "scripts/msrun_launcher.sh", "python run_mindformer.py --config a.yaml", "16"},
       Launcher::MsrunLauncher,
       "run_mindformer.py"},
      {{"/usr/bin/python3.11", "-W", "ignore", "pretrain_gpt.py", "--fp16"},
       Launcher::Python,
       "pretrain_gpt.py"},
      {{"env", "A=1", "-u", "B", "nohup", "exec", "torchrun", "pretrain_gpt.py"},
       Launcher::Torchrun,
       "pretrain_gpt.py"},
  };
  for (const auto& c : cases) {
    auto l = parse(c.argv);
    ASSERT_TRUE(l) << c.argv[0];
    EXPECT_EQ(l->launcher, c.launcher) << c.argv[0];
    EXPECT_EQ(l->entry, c.entry) << c.argv[0];
    EXPECT_EQ(l->argv(), c.argv) << c.argv[0];  // splitting and joining again changes nothing
  }
}

TEST(Launch, OtherCommandsAreNotLaunches) {
  EXPECT_FALSE(parse({"python3", "-c", "import pretrain_gpt"}));
  EXPECT_FALSE(parse({"python3", "tools/preprocess_data.py", "--input", "pretrain_gpt.py"}));
  EXPECT_FALSE(parse({"python3", "-m", "pip", "install", "pretrain_gpt.py"}));
  EXPECT_FALSE(parse({"torchrun", "--nproc_per_node", "2", "train.py"}));
  EXPECT_FALSE(parse({"bash", "run.sh", "pretrain_gpt.py"}));
  EXPECT_FALSE(parse({"echo", "torchrun", "pretrain_gpt.py"}));
  EXPECT_FALSE(parse({}));
  // MindSpeed-LLM's fine-tuning entry point is a training launch.
  ASSERT_TRUE(parse({"torchrun", "--nproc_per_node", "8", "posttrain_gpt.py", "--stage", "sft"}));
  EntryPatterns with_train;
  with_train.globs.push_back("train*.py");
  auto l = parse({"torchrun", "--nproc_per_node", "2", "train.py"}, with_train);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->entry, "train.py");
}

TEST(Launch, RecipeToolTakesAnalyzeArguments) {
  auto l = parse({"python", "../get_training_info.py", "--nproc_per_node", "8", "--num-layers", "24"});
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->recipe_tool);
  std::vector<std::string> notes;
  EXPECT_EQ(analyze_arguments(*l, {}, {}, notes), (Words{"--nproc_per_node", "8", "--num-layers", "24"}));
}

TEST(Launch, MsrunLauncherCommandStringIsSplitAndRequoted) {
  auto l = parse({"bash", "scripts/msrun_launcher.sh",
                  "run_mindformer.py \\\n --config x.yaml --predict_data \"I love Beijing, because\"", "8",
                  "8118", "output/msrun_log", "False", "300"});
  ASSERT_TRUE(l);
  EXPECT_EQ(l->entry_args, (Words{"--config", "x.yaml", "--predict_data", "I love Beijing, because"}));
  EXPECT_EQ(l->launcher_args, (Words{"8", "8118", "output/msrun_log", "False", "300"}));
  Words again = l->argv();
  EXPECT_EQ(again[2], "run_mindformer.py --config x.yaml --predict_data 'I love Beijing, because'");
}

TEST(Launch, TorchArgumentsPassThroughAsTheRecipeDoes) {
  auto l =
      parse({"torchrun", "--nproc_per_node", "8", "--nnodes", "2", "pretrain_gpt.py", "--num-layers", "4"});
  std::vector<std::string> notes;
  EXPECT_EQ(analyze_arguments(*l, {}, {}, notes),
            (Words{"--nproc_per_node", "8", "--nnodes", "2", "--num-layers", "4"}));
  EXPECT_FALSE(launch_world_size(*l, {}, {}));
}

TEST(Launch, MsrunWorldSize) {
  auto a = launch_world_size(
      *parse({"msrun", "--worker_num=16", "--local_worker_num", "8", "run_mindformer.py"}), {}, {});
  EXPECT_EQ(a->nnodes, 2);
  EXPECT_EQ(a->nproc_per_node, 8);
  auto b = launch_world_size(*parse({"msrun", "run_mindformer.py"}), {}, {});
  EXPECT_EQ(b->world(), 8);
  EXPECT_FALSE(b->notes.empty());
  EXPECT_THROW(launch_world_size(*parse({"msrun", "--worker_num=eight", "run_mindformer.py"}), {}, {}),
               preflight::InputError);
}

TEST(Launch, MsrunLauncherWorldSizeForEachArgumentCount) {
  auto ws = [](Words args) {
    Words argv{"bash", "msrun_launcher.sh", "run_mindformer.py --config c.yaml"};
    argv.insert(argv.end(), args.begin(), args.end());
    return *launch_world_size(*parse(argv), {}, {});
  };
  EXPECT_EQ(ws({}).world(), 8);                                                 // 1 argument: 8 devices
  EXPECT_EQ(ws({"4"}).world(), 4);                                              // 2 arguments
  EXPECT_EQ(ws({"8", "8118", "output/msrun_log", "False", "300"}).world(), 8);  // 6 arguments
  WorldSize nine = ws({"64", "8", "{ip}", "8118", "{node_num}", "log", "False", "300"});  // 9 arguments
  EXPECT_EQ(nine.nnodes, 8);
  EXPECT_EQ(nine.nproc_per_node, 8);
  EXPECT_THROW(ws({"8", "8118"}), preflight::InputError);  // 3 arguments: the launcher refuses too
}

TEST(Launch, DeepspeedWorldSize) {
  preflight::test::TempDir dir;
  preflight::test::write_file(dir / "hostfile",
                              "# two nodes\nworker-1 slots=8\nworker-2 slots=8  # second\n\n");
  std::string hf = (dir / "hostfile").string();
  auto ws = [](Words argv, WorldSizeHints h = {}) { return *launch_world_size(*parse(argv), h, {}); };
  WorldSize a = ws({"deepspeed", "--hostfile", hf, "pretrain_gpt.py"});
  EXPECT_EQ(a.world(), 16);
  WorldSize b = ws({"deepspeed", "--hostfile=" + hf, "--num_gpus", "4", "pretrain_gpt.py"});
  EXPECT_EQ(b.nnodes, 2);
  EXPECT_EQ(b.nproc_per_node, 4);
  WorldSize c = ws({"deepspeed", "-H", hf, "--include", "worker-2:0,1,2", "pretrain_gpt.py"});
  EXPECT_EQ(c.world(), 3);
  WorldSize d = ws({"deepspeed", "-H", hf, "--num_nodes", "1", "pretrain_gpt.py"});
  EXPECT_EQ(d.world(), 8);
  WorldSize e = ws({"deepspeed", "--num_gpus", "2", "pretrain_gpt.py"});
  EXPECT_EQ(e.world(), 2);
  WorldSizeHints probe;
  probe.count_local_gpus = &eight_gpus;
  WorldSize f = ws({"deepspeed", "pretrain_gpt.py"}, probe);
  EXPECT_EQ(f.world(), 8);
  EXPECT_EQ(f.source, "local GPU count");
  WorldSizeHints none;
  none.count_local_gpus = &no_gpus;
  WorldSize g = ws({"deepspeed", "pretrain_gpt.py"}, none);
  EXPECT_EQ(g.world(), 1);
  ASSERT_FALSE(g.notes.empty());
  EXPECT_NE(g.notes[0].find("--gpus-per-node"), std::string::npos);
  WorldSizeHints given;
  given.gpus_per_node = 4;
  given.nnodes = 2;
  EXPECT_EQ(ws({"deepspeed", "pretrain_gpt.py"}, given).world(), 8);

  preflight::test::write_file(dir / "bad", "worker-1 slots=x\n");
  try {
    ws({"deepspeed", "--hostfile", (dir / "bad").string(), "pretrain_gpt.py"});
    FAIL() << "a malformed hostfile was accepted";
  } catch (const preflight::InputError& err) {
    EXPECT_EQ(err.where(), (dir / "bad").string() + ":1");
  }
}

// Hugging Face Accelerate's `accelerate launch` (it had been refused as no launch): --num_processes counts
// every machine's processes; without it, its configuration file (--config_file, or the default one under
// $HF_HOME / ~/.cache/huggingface), then every local GPU.
TEST(Launch, AccelerateWorldSize) {
  preflight::test::TempDir dir;
  auto ws = [](Words argv, WorldSizeHints h = {}, std::map<std::string, std::string> env = {}) {
    auto l = parse(argv);
    EXPECT_TRUE(l.has_value());
    EXPECT_EQ(l->launcher, Launcher::Accelerate);
    return *launch_world_size(*l, h, env);
  };
  WorldSize a = ws({"accelerate", "launch", "--multi_gpu", "--num_processes", "16", "--num_machines", "2",
                    "pretrain_gpt.py", "--num-layers", "2"});
  EXPECT_EQ(a.nnodes, 2);
  EXPECT_EQ(a.nproc_per_node, 8);
  preflight::test::write_file(dir / "acc.yaml",
                              "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                              "num_machines: 4\nnum_processes: 32\n");
  WorldSize b = ws({"accelerate", "launch", "--config_file", (dir / "acc.yaml").string(), "pretrain_gpt.py"});
  EXPECT_EQ(b.nnodes, 4);
  EXPECT_EQ(b.nproc_per_node, 8);
  preflight::test::write_file(dir / "hf" / "accelerate" / "default_config.yaml", "num_processes: 4\n");
  EXPECT_EQ(ws({"accelerate", "launch", "pretrain_gpt.py"}, {}, {{"HF_HOME", (dir / "hf").string()}}).world(),
            4);
  WorldSizeHints probe;
  probe.count_local_gpus = &eight_gpus;
  EXPECT_EQ(ws({"accelerate", "launch", "--num_machines", "2", "pretrain_gpt.py"}, probe).world(), 16);
  for (const auto& [argv, where] : std::vector<std::pair<Words, std::string>>{
           {{"accelerate", "launch", "--num_processes", "12", "--num_machines", "5", "pretrain_gpt.py"},
            "accelerate launch --num_processes"},
           {{"accelerate", "launch", "--config_file", (dir / "none.yaml").string(), "pretrain_gpt.py"},
            "accelerate launch --config_file"}}) {
    try {
      ws(argv);
      ADD_FAILURE() << argv[3];
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  }
  EXPECT_FALSE(parse({"accelerate", "config"}).has_value());
}

TEST(Launch, SrunStartsTheRanksOrALauncherPerNode) {
  // srun in front of torchrun: one torchrun per node; the launch (and what analyze mode replaces) starts
  // at srun, and torchrun's own flags give the world size.
  auto t = parse({"srun", "-N", "2", "--gres=gpu:8", "--container-image", "nvcr.io/pytorch", "torchrun",
                  "--nnodes", "2", "--nproc_per_node", "8", "pretrain_gpt.py", "--num-layers", "4"});
  ASSERT_TRUE(t);
  EXPECT_EQ(t->launcher, Launcher::Torchrun);
  EXPECT_EQ(t->prefix,
            (Words{"srun", "-N", "2", "--gres=gpu:8", "--container-image", "nvcr.io/pytorch", "torchrun"}));
  std::vector<std::string> notes;
  EXPECT_EQ(analyze_arguments(*t, {}, {}, notes),
            (Words{"--nnodes", "2", "--nproc_per_node", "8", "--num-layers", "4"}));

  // srun in front of python: the SLURM tasks are the ranks.
  auto ws = [](Words srun_opts, std::map<std::string, std::string> env = {}, WorldSizeHints h = {}) {
    Words argv{"srun"};
    argv.insert(argv.end(), srun_opts.begin(), srun_opts.end());
    for (const char* w : {"python", "-u", "pretrain_gpt.py", "-n", "3"}) argv.push_back(w);
    auto l = parse(argv);
    EXPECT_TRUE(l && l->launcher == Launcher::Srun) << argv[1];
    EXPECT_EQ(l->argv(), argv);
    return *launch_world_size(*l, h, env);
  };
  WorldSize a = ws({"-N", "2", "--ntasks-per-node=8"});
  EXPECT_EQ(a.nnodes, 2);
  EXPECT_EQ(a.nproc_per_node, 8);
  WorldSize b = ws({"-n16", "--nodes=2-4"});  // 16 tasks on at least 2 nodes
  EXPECT_EQ(b.nnodes, 2);
  EXPECT_EQ(b.nproc_per_node, 8);
  EXPECT_EQ(ws({"--ntasks", "4"}).world(), 4);  // the entry's own `-n 3` is not srun's
  WorldSize c = ws({"--ntasks=12", "--ntasks-per-node", "8"});
  EXPECT_EQ(c.nnodes, 2);
  EXPECT_EQ(c.nproc_per_node, 8);
  EXPECT_FALSE(c.notes.empty());  // 12 is not 2 × 8
  // Inside an allocation srun inherits its sizes; the options win over them.
  std::map<std::string, std::string> job{
      {"SLURM_NNODES", "4"}, {"SLURM_NTASKS", "32"}, {"SLURM_NTASKS_PER_NODE", "8(x4)"}};
  WorldSize d = ws({}, job);
  EXPECT_EQ(d.nnodes, 4);
  EXPECT_EQ(d.nproc_per_node, 8);
  EXPECT_EQ(ws({"-N", "1", "-n", "2"}, job).world(), 2);
  // Nothing said anywhere: srun starts one task per node.
  WorldSizeHints two_nodes;
  two_nodes.nnodes = 2;
  WorldSize e = ws({}, {}, two_nodes);
  EXPECT_EQ(e.world(), 2);
  ASSERT_FALSE(e.notes.empty());
  EXPECT_NE(e.notes[0].find("one task per node"), std::string::npos);
  EXPECT_THROW(ws({"-n", "many"}), preflight::InputError);

  EXPECT_FALSE(parse({"srun", "-N", "2", "hostname"}));
  EXPECT_FALSE(parse({"srun", "python", "tools/preprocess_data.py"}));
}

TEST(Launch, AnalyzeArgumentsForOtherLaunchersCarryTheWorldSize) {
  std::vector<std::string> notes;
  auto l = parse({"deepspeed", "--num_gpus", "4", "pretrain_gpt.py", "--tensor-model-parallel-size", "2"});
  EXPECT_EQ(analyze_arguments(*l, {}, {}, notes),
            (Words{"--nproc_per_node", "4", "--nnodes", "1", "--tensor-model-parallel-size", "2"}));
  auto p = parse({"python", "pretrain_gpt.py", "--num-layers", "2"});
  EXPECT_EQ(analyze_arguments(*p, {}, {}, notes),
            (Words{"--nproc_per_node", "1", "--nnodes", "1", "--num-layers", "2"}));
}

TEST(Launch, FlagValues) {
  Words a{"--train_samples", "5", "--x=1", "--x", "2", "--flag"};
  EXPECT_EQ(flag_value(a, "--train-samples"), "5");
  EXPECT_EQ(flag_value(a, "--x"), "2");  // the last one, as argparse keeps
  EXPECT_TRUE(has_flag(a, "--flag"));
  EXPECT_FALSE(has_flag(a, "--fla"));
}

TEST(ShortRun, MegatronIterationsOrExitInterval) {
  TraceOptions o;
  std::vector<std::string> notes;
  auto iters = parse({"torchrun", "pretrain_gpt.py", "--train-iters", "500000"});
  EXPECT_EQ(short_run_args(*iters, o, notes), (Words{"--train-iters", "10"}));
  o.steps = 3;
  EXPECT_EQ(short_run_args(*iters, o, notes), (Words{"--train-iters", "3"}));
  auto samples = parse({"torchrun", "pretrain_gpt.py", "--train-samples", "1953125000"});
  EXPECT_EQ(short_run_args(*samples, o, notes), (Words{"--exit-interval", "3"}));
  EXPECT_FALSE(notes.empty());
  o.full_run = true;
  EXPECT_TRUE(short_run_args(*iters, o, notes).empty());
}

// MindSpeed-LLM's FSDP2 trainer: its step count is training.max_steps (the command line's dotted key wins
// over its YAML, as argparse keeps the last).
TEST(ShortRun, MindSpeedFsdp2MaxSteps) {
  TraceOptions o;
  std::vector<std::string> notes;
  auto l = parse({"torchrun", "train_fsdp2.py", "run.yaml", "--training.max_steps", "2000"});
  ASSERT_TRUE(l);
  EXPECT_EQ(short_run_args(*l, o, notes), (Words{"--training.max_steps", "10"}));
}

TEST(ShortRun, OtherEntryPointsGetStepsOnlyWhenAsked) {
  EntryPatterns e;
  e.globs.push_back("train_cpu_gpt.py");
  auto l = parse({"torchrun", "train_cpu_gpt.py"}, e);
  TraceOptions o;
  std::vector<std::string> notes;
  EXPECT_TRUE(short_run_args(*l, o, notes).empty());
  o.steps = 4;
  EXPECT_EQ(short_run_args(*l, o, notes), (Words{"--steps", "4"}));
  notes.clear();
  auto mf = parse({"msrun", "run_mindformer.py", "--config", "a.yaml"});
  EXPECT_TRUE(short_run_args(*mf, o, notes).empty());
  EXPECT_EQ(notes.size(), 1u);
}

TEST(TraceEnvironment, HookAndGlueGoFirstOnce) {
  HookFiles h{"/b/lib/libpreflight_hook.so", "/b/lib/python"};
  TraceOptions o;
  o.min_bytes = 4096;
  o.cuda = false;
  Environment base{{"LD_PRELOAD", "/x/libjemalloc.so"}, {"PYTHONPATH", "/b/lib/python:/src"}, {"HOME", "/h"}};
  Environment env = trace_environment(base, h, "/runs/run-1", o);
  EXPECT_EQ(env["LD_PRELOAD"], "/b/lib/libpreflight_hook.so:/x/libjemalloc.so");
  EXPECT_EQ(env["PYTHONPATH"], "/b/lib/python:/src");
  EXPECT_EQ(env["PREFLIGHT_TRACE_DIR"], "/runs/run-1");
  EXPECT_EQ(env["PREFLIGHT_TRACE_MIN_BYTES"], "4096");
  EXPECT_EQ(env["PREFLIGHT_TRACE_CUDA"], "0");
  EXPECT_EQ(env.count("PREFLIGHT_TRACE_HOST"), 0u);
  EXPECT_EQ(env["HOME"], "/h");
  Environment empty = trace_environment({}, h, "/r", {});
  EXPECT_EQ(empty["LD_PRELOAD"], "/b/lib/libpreflight_hook.so");
  EXPECT_EQ(empty["PYTHONPATH"], "/b/lib/python");
}

TEST(TraceEnvironment, LocateHookFollowsTheBuildLayoutOrTheVariables) {
  preflight::test::TempDir dir;
  preflight::test::write_file(dir / "lib" / "libpreflight_hook.so", "");
  std::filesystem::create_directories(dir / "lib" / "python");
  HookFiles h = locate_hook(dir / "cli" / "preflight", {});
  EXPECT_EQ(h.library, (dir / "lib" / "libpreflight_hook.so").lexically_normal());
  EXPECT_EQ(h.pythonpath, (dir / "lib" / "python").lexically_normal());
  try {
    locate_hook("/nonexistent/cli/preflight", {});
    FAIL() << "a missing hook was accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "/nonexistent/lib/libpreflight_hook.so");
    EXPECT_NE(e.detail().find("PREFLIGHT_HOOK_LIB"), std::string::npos);
  }
  HookFiles o = locate_hook("/nonexistent/cli/preflight",
                            {{"PREFLIGHT_HOOK_LIB", (dir / "lib" / "libpreflight_hook.so").string()},
                             {"PREFLIGHT_HOOK_PYTHONPATH", (dir / "lib" / "python").string()}});
  EXPECT_EQ(o.library, h.library);
}

TEST(TraceEnvironment, RunDirectoriesAreNewEachTime) {
  preflight::test::TempDir dir;
  auto a = make_run_dir(dir / "traces");
  auto b = make_run_dir(dir / "traces");
  EXPECT_NE(a, b);
  EXPECT_TRUE(std::filesystem::is_directory(a));
  EXPECT_EQ(a.parent_path(), std::filesystem::absolute(dir / "traces").lexically_normal());
  EXPECT_EQ(a.filename().string().rfind("run-", 0), 0u);
}

// mpirun / mpiexec (Open MPI, MPICH, Intel MPI spellings): the MPI processes are the ranks.
TEST(Launch, MpirunStartsTheRanks) {
  auto ws = [](const Words& argv, WorldSizeHints hints = {}) {
    auto l = parse(argv);
    EXPECT_TRUE(l.has_value());
    EXPECT_EQ(l->launcher, Launcher::Mpirun);
    return *launch_world_size(*l, hints, {});
  };
  // -np with processes per node (Open MPI -N, MPICH -ppn, --map-by ppr:N:node).
  WorldSize a = ws({"mpirun", "-np", "16", "-N", "8", "-x", "MASTER_ADDR", "python", "pretrain_gpt.py"});
  EXPECT_EQ(a.nnodes, 2);
  EXPECT_EQ(a.nproc_per_node, 8);
  EXPECT_EQ(ws({"mpiexec", "-n", "32", "-ppn", "4", "python3", "-u", "pretrain_gpt.py"}).nnodes, 8);
  EXPECT_EQ(ws({"mpirun", "--np", "8", "--map-by", "ppr:4:node", "python", "pretrain_gpt.py"}).nnodes, 2);
  // A host list with slots, or one process per listed host.
  WorldSize h = ws({"mpirun", "-np", "8", "--host", "n1:4,n2:4", "python", "pretrain_gpt.py"});
  EXPECT_EQ(h.nnodes, 2);
  EXPECT_EQ(h.nproc_per_node, 4);
  EXPECT_EQ(ws({"mpirun", "-H", "a,b,c", "python", "pretrain_gpt.py"}).world(), 3);
  // An Open MPI hostfile without -np: one process per slot.
  preflight::test::TempDir dir("mpi");
  std::string hostfile = (dir.path() / "hosts").string();
  preflight::test::write_file(hostfile, "# nodes\nnode1 slots=8\nnode2 slots=8 max_slots=8\n");
  WorldSize f = ws({"mpirun", "--hostfile", hostfile, "python", "pretrain_gpt.py"});
  EXPECT_EQ(f.world(), 16);
  EXPECT_EQ(f.nproc_per_node, 8);
  // -np alone: one node unless --nnodes says otherwise.
  EXPECT_EQ(ws({"mpirun", "-np", "8", "python", "pretrain_gpt.py"}).nnodes, 1);
  WorldSizeHints two;
  two.nnodes = 2;
  EXPECT_EQ(ws({"mpirun", "-np", "8", "python", "pretrain_gpt.py"}, two).nproc_per_node, 4);
  // Nothing said: a note, and the hints.
  WorldSize none = ws({"mpirun", "python", "pretrain_gpt.py"});
  EXPECT_EQ(none.world(), 1);
  ASSERT_FALSE(none.notes.empty());
  EXPECT_NE(none.notes[0].find("--gpus-per-node"), std::string::npos);
  EXPECT_THROW(ws({"mpirun", "-np", "eight", "python", "pretrain_gpt.py"}), preflight::InputError);
  // A size whose variable is empty where the analysis runs (`-np $NUM_GPUS --npernode $PER_NODE -hostfile F`
  // outside the job): the option is left out with a note, not read as "--npernode"; with both counts the
  // hostfile (on the cluster, absent here) is not read.
  WorldSize empty_np = ws({"mpirun", "-np", "--npernode", "8", "-H", "a,b", "python", "pretrain_gpt.py"});
  EXPECT_EQ(empty_np.world(), 16);
  ASSERT_FALSE(empty_np.notes.empty());
  EXPECT_NE(empty_np.notes[0].find("-np has no value"), std::string::npos) << empty_np.notes[0];
  WorldSize remote = ws({"mpirun", "-np", "32", "--npernode", "8", "-hostfile",
                         (dir.path() / "absent").string(), "python", "pretrain_gpt.py"});
  EXPECT_EQ(remote.nnodes, 4);
  EXPECT_THROW(
      ws({"mpirun", "-np", "32", "-hostfile", (dir.path() / "absent").string(), "python", "pretrain_gpt.py"}),
      preflight::InputError);  // the hostfile decides the layout: it must be read
  // Cray PALS's mpiexec spells processes per node --ppn.
  EXPECT_EQ(ws({"mpiexec", "-n", "8", "--ppn", "4", "--depth=16", "python", "pretrain_gpt.py"}).nnodes, 2);
  // mpirun in front of torchrun: one torchrun per node, torchrun's flags give the size.
  auto t = parse(
      {"mpirun", "-np", "2", "--npernode", "1", "torchrun", "--nproc_per_node", "8", "pretrain_gpt.py"});
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->launcher, Launcher::Torchrun);
}

// ms-swift's `megatron sft|pt`: the subcommand is the entry; `megatron export` is no training run.  Its
// options become Megatron's with ms-swift's defaults where they differ.
TEST(Launch, MegatronSwiftOptionsAsMegatronFlags) {
  auto l = parse({"megatron", "sft", "--model", "Qwen/Qwen3-8B", "--max_length", "8192"});
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->launcher, Launcher::MegatronSwift);
  EXPECT_EQ(l->entry, "sft");
  EXPECT_FALSE(parse({"megatron", "export", "--model", "Qwen/Qwen3-8B"}).has_value());
  // world: torchrun's when NPROC_PER_NODE or NNODES is set, else one process
  EXPECT_EQ(launch_world_size(*l, {}, {{"NPROC_PER_NODE", "8"}, {"NNODES", "2"}})->world(), 16);
  EXPECT_EQ(launch_world_size(*l, {}, {})->world(), 1);
  std::vector<std::string> notes;
  auto words = [&](const std::vector<std::string>& args) {
    notes.clear();
    return megatron_words_from_swift(args, notes);
  };
  auto has = [](const std::vector<std::string>& w, const std::vector<std::string>& seq) {
    return std::search(w.begin(), w.end(), seq.begin(), seq.end()) != w.end();
  };
  std::vector<std::string> w =
      words({"--model", "Qwen/Qwen3-8B", "--max_length", "8192", "--sequence_parallel", "true",
             "--masked_softmax_fusion", "false", "--tensor_model_parallel_size", "2", "--dataset", "a", "b",
             "--overlap_grad_reduce", "false"});
  EXPECT_TRUE(has(w, {"--model", "Qwen/Qwen3-8B"}));
  EXPECT_TRUE(has(w, {"--seq-length", "8192"}));
  EXPECT_TRUE(has(w, {"--sequence-parallel"}));
  EXPECT_TRUE(has(w, {"--no-masked-softmax-fusion"}));
  EXPECT_TRUE(has(w, {"--tensor-model-parallel-size", "2"}));
  EXPECT_FALSE(has(w, {"--overlap-grad-reduce"}));
  EXPECT_FALSE(has(w, {"--dataset"}));
  // ms-swift's defaults: bf16, the distributed optimizer, flash attention, fused cross entropy, expert tp 1,
  // selective recompute of core_attn
  for (const std::vector<std::string>& d :
       std::vector<std::vector<std::string>>{{"--bf16"},
                                             {"--use-distributed-optimizer"},
                                             {"--attention-backend", "flash"},
                                             {"--cross-entropy-loss-fusion"},
                                             {"--expert-tensor-parallel-size", "1"},
                                             {"--recompute-granularity", "selective"},
                                             {"--recompute-modules", "core_attn"}})
    EXPECT_TRUE(has(w, d)) << d[0];
  w = words({"--use_distributed_optimizer", "false", "--torch_dtype", "float16", "--recompute_granularity",
             "none", "--tuner_type", "lora", "--lora_rank", "32", "--target_modules", "linear_qkv",
             "linear_proj"});
  EXPECT_FALSE(has(w, {"--use-distributed-optimizer"}));
  EXPECT_TRUE(has(w, {"--fp16"}));
  EXPECT_FALSE(has(w, {"--bf16"}));
  EXPECT_FALSE(has(w, {"--recompute-granularity"}));
  EXPECT_TRUE(has(w, {"--lora-rank", "32"}));
  EXPECT_TRUE(has(w, {"--lora-target-modules", "linear_qkv", "linear_proj"}));
}

// Where a submission's job script starts, by each scheduler's switches (sbatch -v is verbose, qsub -v takes
// the variables; Grid Engine's -pe takes two words).
TEST(Launch, SubmissionScriptIndex) {
  EXPECT_EQ(
      submission_script_index({"sbatch", "--parsable", "-N", "2", "--export=ALL,A=1", "-v", "job.sh", "x"}),
      std::optional<std::size_t>(6));
  EXPECT_EQ(submission_script_index({"qsub", "-l", "select=4", "-v", "A=1,B=2", "-V", "job.sh"}),
            std::optional<std::size_t>(6));
  EXPECT_EQ(submission_script_index({"qsub", "-pe", "mpi", "16", "-cwd", "job.sh"}),
            std::optional<std::size_t>(5));
  EXPECT_EQ(submission_script_index({"bsub", "-n", "8", "-R", "span[ptile=4]", "-K", "python", "train.py"}),
            std::optional<std::size_t>(6));
  EXPECT_EQ(submission_script_index({"sbatch", "-N2", "--wait", "job.sh"}), std::optional<std::size_t>(3));
  EXPECT_FALSE(submission_script_index({"sbatch", "-N", "2"}).has_value());  // the script on stdin
}

// srun's command after its options: switches take no value, `--opt=v` and `-N2` carry theirs, others the next
// word.
TEST(Launch, SrunCommandStartsAfterItsOptions) {
  EXPECT_EQ(srun_command_index(
                {"srun", "-l", "--container-image", "img", "-N", "2", "--mpi=pmix", "sh", "-c", "x"}),
            std::optional<std::size_t>(7));
  EXPECT_EQ(srun_command_index({"srun", "-N2", "--exclusive", "bash", "run.sh"}),
            std::optional<std::size_t>(3));
  EXPECT_EQ(srun_command_index({"srun", "--", "python", "a.py"}), std::optional<std::size_t>(2));
  EXPECT_EQ(srun_command_index({"srun", "-N", "2"}), std::nullopt);
}

// mpirun's command after its options: switches take no value, --mca two words, other options the next word.
TEST(Launch, MpirunCommandStartsAfterItsOptions) {
  using I = std::optional<std::size_t>;
  EXPECT_EQ(
      mpirun_command_index({"mpirun", "-np", "16", "--hostfile", "h", "--allow-run-as-root", "--bind-to",
                            "none", "--mca", "plm_rsh_no_tree_spawn", "1", "-x", "PATH", "bash", "-c", "x"}),
      I(13));
  EXPECT_EQ(mpirun_command_index({"mpiexec", "-n", "8", "-ppn", "4", "-genv", "A", "1", "./train.sh"}), I(8));
  EXPECT_EQ(mpirun_command_index({"mpirun", "--np=4", "--oversubscribe", "--", "sh", "run.sh"}), I(4));
  EXPECT_EQ(mpirun_command_index({"mpirun", "-np", "4"}), std::nullopt);
}

// Package installs a launch script runs before the launch: pip's, python -m pip's and uv pip's; other pip
// commands, other programs and `python -m` of something else are not.
TEST(Launch, PackageInstallCommand) {
  using S = std::optional<std::string>;
  EXPECT_EQ(package_install_command({"pip", "install", "-r", "requirements.txt"}), S("pip install"));
  EXPECT_EQ(package_install_command({"/usr/bin/pip3", "-q", "uninstall", "-y", "x"}), S("pip3 uninstall"));
  EXPECT_EQ(package_install_command({"pip3.11", "--index-url", "http://h/simple", "install", "x"}),
            S("pip3.11 install"));
  EXPECT_EQ(package_install_command({"pip", "--log=install", "install", "x"}), S("pip install"));
  EXPECT_EQ(package_install_command({"python3", "-u", "-m", "pip", "install", "x"}),
            S("python3 -m pip install"));
  EXPECT_EQ(package_install_command({"python", "-W", "ignore", "-m", "pip", "install", "x"}),
            S("python -m pip install"));
  EXPECT_EQ(package_install_command({"uv", "pip", "install", "-e", "."}), S("uv pip install"));
  EXPECT_EQ(package_install_command({"pip", "show", "torch"}), std::nullopt);
  EXPECT_EQ(package_install_command({"pip", "--version"}), std::nullopt);
  EXPECT_EQ(package_install_command({"pip", "--log", "f", "list"}), std::nullopt);
  EXPECT_EQ(package_install_command({"python3", "-m", "torch.distributed.run", "install"}), std::nullopt);
  EXPECT_EQ(package_install_command({"python3", "-c", "import pip", "-m", "pip", "install"}), std::nullopt);
  EXPECT_EQ(package_install_command({"pipx", "install", "x"}), std::nullopt);
}

// numactl / taskset: the command after the binding options (numactl's policy options take a value, attached
// or not; taskset's mask or CPU list comes before the command); none for queries and for taskset -p.
TEST(Launch, BindingCommandStartsAfterItsOptions) {
  using I = std::optional<std::size_t>;
  EXPECT_EQ(binding_command_index({"numactl", "--membind=0-3", "python3", "a.py"}), I(2));
  EXPECT_EQ(binding_command_index({"numactl", "--cpunodebind", "0", "--membind", "0", "bash", "-c", "x"}),
            I(5));
  EXPECT_EQ(binding_command_index({"/usr/bin/numactl", "-m", "0", "-l", "python"}), I(4));
  EXPECT_EQ(binding_command_index({"numactl", "-m0", "-C", "0-7", "python"}), I(4));
  EXPECT_EQ(binding_command_index({"numactl", "--", "-weird-name"}), I(2));
  EXPECT_EQ(binding_command_index({"numactl", "--hardware"}), std::nullopt);
  EXPECT_EQ(binding_command_index({"taskset", "-c", "0-71", "python3", "a.py"}), I(3));
  EXPECT_EQ(binding_command_index({"taskset", "0xff", "python3"}), I(2));
  EXPECT_EQ(binding_command_index({"taskset", "--cpu-list", "0-3", "python3"}), I(3));
  EXPECT_EQ(binding_command_index({"taskset", "-p", "0xff", "1234"}), std::nullopt);
  EXPECT_EQ(binding_command_index({"taskset", "-c", "0-3"}), std::nullopt);
  EXPECT_EQ(binding_command_index({"srun", "python"}), std::nullopt);
}

// Remote shells starting a node's launcher (ssh HOST CMD, pdsh -w HOSTS CMD, clush, qrsh -inherit HOST CMD):
// where the command starts, the hosts, and what the command line does.
TEST(Launch, RemoteCommandsAndWhatTheyStart) {
  auto r = remote_command({"ssh", "-tt", "-p", "22", "-o", "StrictHostKeyChecking=no", "-i~/.ssh/k", "gpu-a",
                           "cd /w && torchrun pretrain_gpt.py"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tool, "ssh");
  EXPECT_EQ(r->hosts, "gpu-a");
  EXPECT_EQ(r->command, 8u);
  r = remote_command({"/usr/bin/ssh", "-qnT", "-l", "me", "node7", "bash", "train.sh"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hosts, "node7");
  EXPECT_EQ(r->command, 5u);
  EXPECT_FALSE(remote_command({"ssh", "-p", "22", "gpu-a"}));  // a login
  r = remote_command({"pdsh", "-R", "ssh", "-w", "gpu[1-4]", "-f", "64", "bash", "/w/run.sh"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hosts, "gpu[1-4]");
  EXPECT_EQ(r->command, 7u);
  r = remote_command({"clush", "-b", "--nodes", "n[1-2]", "--", "nvidia-smi", "-L"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->hosts, "n[1-2]");
  EXPECT_EQ(r->command, 5u);
  r = remote_command({"qrsh", "-inherit", "-V", "-cwd", "-now", "n", "node2", "eval", "torchrun x.py"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->tool, "qrsh");
  EXPECT_EQ(r->hosts, "node2");
  EXPECT_EQ(r->command, 7u);
  EXPECT_FALSE(remote_command({"scp", "a", "b:c"}));

  EXPECT_EQ(remote_command_kind("cd /w && CUDA_DEVICE_MAX_CONNECTIONS=1 torchrun --nnodes 2 pretrain_gpt.py"),
            RemoteKind::Starts);
  EXPECT_EQ(remote_command_kind("source ~/env.sh; nohup /opt/venv/bin/python3 -u pretrain_gpt.py > log 2>&1"),
            RemoteKind::Starts);
  EXPECT_EQ(remote_command_kind("bash /w/scripts/node_launch.sh 3"), RemoteKind::Starts);
  EXPECT_EQ(remote_command_kind("eval \"torchrun x\""), RemoteKind::Starts);
  EXPECT_EQ(remote_command_kind("nvidia-smi --list-gpus"), RemoteKind::Query);
  EXPECT_EQ(remote_command_kind("hostname -I | awk '{print $1}'"), RemoteKind::Query);
  EXPECT_EQ(remote_command_kind("pkill -f pretrain_gpt.py || true"), RemoteKind::Other);
  EXPECT_EQ(remote_command_kind("mkdir -p /w/ckpt && rm -rf /tmp/x"), RemoteKind::Other);
}

// Megatron's training scripts whose model is not pretrain_gpt.py's are named to analyze (--entry-point), by
// run (analyze_arguments) and wrap alike.
TEST(Launch, OtherMegatronEntryPointsAreNamedToAnalyze) {
  EXPECT_EQ(megatron_entry_point_word("/w/Megatron-LM/pretrain_mamba.py"), "--entry-point=pretrain_mamba.py");
  EXPECT_EQ(megatron_entry_point_word("pretrain_vision_dino.py"), "--entry-point=pretrain_vision_dino.py");
  EXPECT_EQ(megatron_entry_point_word("pretrain_gpt.py"), "");
  EXPECT_EQ(megatron_entry_point_word("finetune_llama.py"), "");
  auto l = parse({"torchrun", "--nproc_per_node", "8", "pretrain_mamba.py", "--num-layers", "4"});
  ASSERT_TRUE(l);
  std::vector<std::string> notes;
  EXPECT_EQ(analyze_arguments(*l, {}, {}, notes),
            (Words{"--nproc_per_node", "8", "--entry-point=pretrain_mamba.py", "--num-layers", "4"}));
  WrapOptions o;
  o.preflight = "/opt/pf/preflight";
  o.script_name = "m.sh";
  const WrapResult w = wrap_script("torchrun --nproc_per_node 8 pretrain_mamba.py --num-layers 4\n", o);
  EXPECT_EQ(w.text,
            "\"${PREFLIGHT:-/opt/pf/preflight}\" analyze --entry-point=pretrain_mamba.py --nproc_per_node 8 "
            "--num-layers 4\n");
}
