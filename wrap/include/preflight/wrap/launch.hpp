#pragma once
/// @file launch.hpp
/// Recognising a launch of a training entry point, both in script text (words that may hold unexpanded
/// variables) and at run time (a concrete argv), and turning it into what each mode needs.
///
/// Launchers (ecosystem.md §2.3, megatron_info.md §8):
///  - `torchrun ARGS ENTRY …`, `python -m torch.distributed.run …`, `python -m torch.distributed.launch …`
///  - `deepspeed ARGS ENTRY …` (world size from --num_gpus/--num_nodes, --include, or the hostfile)
///  - `msrun ARGS ENTRY …` (--worker_num total, --local_worker_num per node; `--key=value` or `--key value`)
///  - `[bash] …/msrun_launcher.sh "ENTRY ARGS…" [WORKER_NUM [LOCAL_WORKER MASTER_ADDR …]]` — MindFormers'
///    launcher taking the whole command as its first argument (1, 2, 6 or 9 positional arguments)
///  - `python [options] ENTRY …`
///  - `srun [options] python [options] ENTRY …` (SLURM starts one task per rank: world size from
///    -n/--ntasks, -N/--nodes, --ntasks-per-node, else SLURM_NTASKS/SLURM_NNODES/SLURM_NTASKS_PER_NODE of
///    the allocation, else srun's default of one task per node)
///  - `mpirun|mpiexec [options] python [options] ENTRY …` (one MPI process per rank: -np/-n, per node
///    -N/--npernode/-ppn/--map-by ppr:N:node, nodes from --host/-H or --hostfile/-f)
/// and `exec`, `nohup`, `env [NAME=value…]`, `command`, `time` in front of any of them; also a prefix that
/// runs the launcher (a profiler, an environment runner: `nsys profile …`, `uv run …`, `numactl …`,
/// `taskset …`, `stdbuf …`, `nice …`, `timeout …`, or words whose value is only known at run time, such as
/// `$VENV_PREFIX "${PROFILE_CMD[@]}"`) when a launcher follows it (LaunchMatch::prefix).  Under srun or mpirun
/// a shell script taking the entry point as its first argument (`mpirun … ./entry.sh pretrain_gpt.py …`,
/// the script running `python $*`) stands for `python`.  `srun [options]` in
/// front of another launcher (`srun -N 2 torchrun … pretrain_gpt.py`, one launcher per node) belongs to the
/// launch: LaunchMatch::command points at `srun`, and analyze mode drops it with the launcher word.
/// A training entry point is a script whose file name matches one of EntryPatterns (`pretrain_*.py`,
/// `run_mindformer.py`, plus any given with `--entry`).

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight::wrap {

enum class Launcher {
  Torchrun,                ///< torchrun
  TorchDistributedRun,     ///< python -m torch.distributed.run
  TorchDistributedLaunch,  ///< python -m torch.distributed.launch
  Deepspeed,               ///< deepspeed
  Msrun,                   ///< msrun
  MsrunLauncher,           ///< MindFormers scripts/msrun_launcher.sh "CMD" …
  Python,                  ///< python ENTRY
  Srun,                    ///< srun [options] python ENTRY (SLURM tasks are the ranks)
  Mpirun,                  ///< mpirun / mpiexec [options] python ENTRY (MPI ranks are the processes)
  MegatronSwift,  ///< ms-swift's `megatron sft|pt ARGS` (Megatron-SWIFT: torchrun from NPROC_PER_NODE /
                  ///< NNODES)
  NemoCli,        ///< NeMo 2's CLI: `nemo llm pretrain|finetune --factory RECIPE [overrides]` (the recipe's
                  ///< trainer gives the world)
  Accelerate,     ///< Hugging Face Accelerate's `accelerate launch [options] SCRIPT ARGS`
};

/// How a launcher says how many processes it starts (launch_world_size()).
enum class WorldSizeSource {
  TorchFlags,     ///< --nproc_per_node / --nnodes, which `preflight analyze` reads itself
  OneProcess,     ///< plain python: one process
  Msrun,          ///< --worker_num / --local_worker_num
  MsrunLauncher,  ///< the positional WORKER_NUM [LOCAL_WORKER …]
  Deepspeed,      ///< hostfile, --num_gpus / --num_nodes, --include / --exclude
  Slurm,          ///< srun -n / -N / --ntasks-per-node, else the allocation's SLURM_* variables
  Mpi,            ///< mpirun -np, -N/--npernode/-ppn, --host / --hostfile
  SwiftEnv,       ///< ms-swift: torchrun with NPROC_PER_NODE / NNODES when either is set, else one process
  Configuration,  ///< the configuration the launch names (NeMo 2's recipe: trainer.devices × num_nodes)
  Accelerate,  ///< accelerate launch: --num_processes (all machines') / --num_machines, else its config file
};

/// Where the training entry point is among a launcher's words.
enum class EntryPosition {
  AnyArgument,    ///< the first argument matching the entry patterns (torchrun, deepspeed, msrun)
  AfterOptions,   ///< the first word after the interpreter's options (python [-u] ENTRY)
  CommandString,  ///< inside its first argument, a command string (msrun_launcher.sh "python ENTRY …")
  InnerLaunch,    ///< a launch after its options (srun / mpirun [options] python|torchrun …): with plain
                  ///< python the outer launcher's processes are the ranks
  Subcommand,     ///< the launcher's first argument names the training (ms-swift's `megatron sft|pt`, NeMo
                  ///< 2's `nemo llm pretrain|finetune`)
};

/// One launcher, as every part of wrap (the rewriter, `preflight run`'s shims, dryrun) sees it.
struct LauncherInfo {
  Launcher id;
  const char* name;                   ///< human name: "torchrun", "python -m torch.distributed.run", …
  std::vector<const char*> commands;  ///< command names (basename) that start it ("mpirun", "mpiexec")
  const char* python_module;          ///< started as `python -m MODULE`; nullptr otherwise
  std::vector<const char*> shims;     ///< programs `preflight run` shadows on PATH to catch it
  EntryPosition entry;
  WorldSizeSource world;
  /// `wrap --mode analyze` writes `preflight analyze <launcher flags> <entry arguments>` in its place (the
  /// analysis reads the launcher's flags itself); otherwise `preflight run --mode analyze -- <launch>`,
  /// which reads the size when the script runs.
  bool analyze_inline;
  bool mindspore;  ///< a MindSpore launcher: `--mode dryrun` applies
};

/// Every launcher, in the order they are tried.
const std::vector<LauncherInfo>& launchers();
const LauncherInfo& launcher_info(Launcher l);

/// Human name: "torchrun", "python -m torch.distributed.run", "msrun_launcher.sh", …
std::string launcher_name(Launcher l);
/// True for the launchers whose flags `preflight analyze` reads directly (torchrun and the two torch
/// modules).
bool is_torch_launcher(Launcher l);
/// True for MindSpore launchers (msrun, msrun_launcher.sh).
bool is_mindspore_launcher(Launcher l);

/// File-name patterns (fnmatch globs on the last path component) of training entry points.
struct EntryPatterns {
  std::vector<std::string> globs{"pretrain_*.py",
                                 "finetune*.py",
                                 "run_mindformer.py",
                                 "megatron_*_pretraining.py",
                                 "megatron_*_finetuning.py",  // (these two: NeMo 1's)
                                 "run_recipe.py",             // (Megatron-Bridge's recipe runner)
                                 "setup_experiment.py",       // (Megatron-Bridge's experiment launchers)
                                 "posttrain_gpt.py",          // (MindSpeed-LLM's fine-tuning: --stage sft)
                                 "train_fsdp2.py"};           // (MindSpeed-LLM's FSDP2 trainer: a YAML)
  /// Entry points matched by their last folders too, the file name alone being anyone's: AMD Primus's train
  /// CLI (`primus/cli/main.py train pretrain --config EXP.yaml`; `primus/train.py` before it).
  std::vector<std::string> tails{"primus/cli/main.py", "primus/train.py"};
  /// True when the last path component of `path` matches one of the globs, or `path` ends with one of the
  /// tails (…/primus/cli/main.py: its `--config EXP.yaml` is read by analyze).
  bool matches(std::string_view path) const;
  /// "pretrain_*.py, finetune*.py, run_mindformer.py, …" for messages.
  std::string describe() const;
};

/// Megatron-Bridge's recipe runner (scripts/training/run_recipe.py): its launches are analysed through
/// `preflight run` (analyze_arguments() turns `--recipe NAME` / `--model STEM --mode M` and its options into
/// `--bridge-config NAME` with overrides), not inline.
bool is_bridge_recipe_runner(std::string_view entry);

/// Megatron-Bridge's experiment launchers, which submit a recipe's run to Slurm: scripts/performance/
/// setup_experiment.py (`-mr MODEL -ng N -g GPU -c PRECISION [--task T] [--config_variant V]`: a flat
/// performance recipe), scripts/training/setup_experiment.py and its scripts/training/train.sh (`--recipe
/// NAME | --model STEM --mode M`, `--nodes N --gpus-per-node G`, run_recipe.py's options).
/// analyze_arguments() turns them into `--bridge-config NAME` with overrides and the launch's world; they are
/// never run in analyze mode (they would submit the job).
bool is_bridge_experiment_launcher(std::string_view entry);

/// NeMo 2's performance scripts, which submit a recipe's run to Slurm through NeMo-Run: `…/performance/llm/
/// pretrain_X.py` or `finetune_X.py` (NVIDIA/NeMo scripts/performance/llm), run as a file or as the module
/// `scripts.performance.llm.pretrain_X` (python -m).  analyze_arguments() turns them into `--nemo-config
/// nemo2-perf:SCRIPT` with the script's command line (the recommended configuration it reads, the GPU it
/// names); they are never run in analyze mode (they would submit the job).
bool is_nemo2_perf_script(std::string_view entry);

/// The script's name (`pretrain_llama3_70b`) of a path or module is_nemo2_perf_script() accepts; `vlm/NAME`
/// or `diffusion/NAME` for the multimodal and diffusion families (read to be refused, never run).
std::string nemo2_perf_script_name(std::string_view entry);

/// The public recipe's analysis tool (Megatron-LM PR #482, tools/get_training_info/get_training_info.py): a
/// `python …/get_training_info.py ARGS` line already passes `preflight analyze`'s arguments, so analyze mode
/// turns it into `preflight analyze ARGS`; the other modes leave it alone.
bool is_recipe_tool(std::string_view path);

/// What is known about one word before running the script.
struct WordView {
  std::optional<std::string> value;  ///< its value when known (literal, or a variable set literally)
  std::optional<std::string>
      tail;  ///< last path component when that part is literal (`${dir}/x/pretrain_gpt.py`)
  std::optional<std::string> head;  ///< value up to the first expansion (`"run_mindformer.py --config $C"`)
};

/// Where the launch sits among a command's words.
struct LaunchMatch {
  Launcher launcher = Launcher::Torchrun;
  std::size_t command = 0;  ///< index of the launcher's first word (after exec/nohup/env/…; `srun` when
                            ///< srun starts the launcher)
  std::size_t args_begin =
      0;                   ///< index of the first launcher argument (after `python -m torch.distributed.run`)
  std::size_t entry = 0;   ///< index of the entry word (msrun_launcher.sh: of the quoted command string)
  std::string entry_name;  ///< the entry point as far as known (file name at least)
  std::size_t prefix = 0;  ///< first word of a prefix that runs the launch (nsys profile, uv run, $VAR …);
                           ///< == command when there is none
  std::string wrapper_script;  ///< under srun/mpirun: the shell script standing for python ("./entry.sh")
  bool recipe_tool = false;  ///< `python get_training_info.py …` (see is_recipe_tool)
};

/// Finds a launch among the words of one simple command; nullopt when there is none.
std::optional<LaunchMatch> match_launch(const std::vector<WordView>& words, const EntryPatterns& entries);

/// Convenience for a concrete argv (every value known).
std::optional<LaunchMatch> match_launch(const std::vector<std::string>& argv, const EntryPatterns& entries);

/// A launch at run time, split into its parts.
struct LaunchCommand {
  Launcher launcher = Launcher::Torchrun;
  std::vector<std::string> wrappers;  ///< exec/nohup/env … words in front (kept as given)
  std::vector<std::string>
      prefix;  ///< words naming the launcher: {"torchrun"}, {"python3","-m","torch.distributed.run"}
  std::vector<std::string> launcher_args;  ///< between the prefix and the entry (msrun_launcher.sh: the
                                           ///< positional args after the command string)
  std::vector<std::string> python;  ///< msrun_launcher.sh only: interpreter words inside the command string
                                    ///< ("python"), may be empty
  std::string entry;                ///< the entry script as given
  std::vector<std::string> entry_args;  ///< everything after the entry
  bool recipe_tool = false;             ///< `python get_training_info.py …`
  /// The argv that runs it again (for msrun_launcher.sh the command string is re-quoted).
  std::vector<std::string> argv() const;
};

/// Splits a concrete argv; nullopt when it is not a launch of a training entry point.
/// @throws InputError (where = "msrun_launcher.sh") when the launcher's command string has an unterminated
/// quote
std::optional<LaunchCommand> parse_launch(const std::vector<std::string>& argv, const EntryPatterns& entries);

/// Local GPUs as `nvidia-smi --query-gpu=name --format=csv,noheader` lists them; 0 when it cannot run.
int count_local_gpus_nvidia_smi();

/// Number of processes a launch starts: nodes × processes per node.
struct WorldSize {
  int nnodes = 1;
  int nproc_per_node = 1;
  std::string source;              ///< which flags/files gave it, for the report
  std::vector<std::string> notes;  ///< assumptions taken
  int world() const { return nnodes * nproc_per_node; }
};

/// A process or node count as a launcher, hostfile or the environment gives it: a whole number >= 1.
/// @throws InputError (where = `where`) "expected a positive whole number, got '…'" otherwise
int parse_count(const std::string& text, const std::string& where);

/// Options that matter when a launcher does not state its size.
struct WorldSizeHints {
  std::optional<int> gpus_per_node;  ///< --gpus-per-node given to preflight (deepspeed without --num_gpus …)
  std::optional<int> nnodes;         ///< --nnodes given to preflight
  /// Counts local accelerators the way deepspeed does when nothing else says (torch.cuda.device_count());
  /// here `nvidia-smi --query-gpu=name --format=csv,noheader`.  Tests replace it.
  int (*count_local_gpus)() = nullptr;
};

/// World size of a deepspeed, msrun, msrun_launcher.sh, srun, mpirun or plain python launch (torch launchers:
/// nullopt — `preflight analyze` reads their --nproc_per_node/--nnodes itself).
/// @throws InputError naming the flag for a malformed number, or the hostfile for an unreadable one
std::optional<WorldSize> launch_world_size(const LaunchCommand& launch, const WorldSizeHints& hints,
                                           const std::map<std::string, std::string>& env);

/// The words `preflight analyze` receives for a launch: torch launchers → their own flags + the entry's
/// arguments (exactly what the public recipe passes); the recipe tool → its arguments; other launchers →
/// `--nproc_per_node P --nnodes N` from launch_world_size() followed by the entry's arguments.  Notes on
/// assumptions go to `notes`.
std::vector<std::string> analyze_arguments(const LaunchCommand& launch, const WorldSizeHints& hints,
                                           const std::map<std::string, std::string>& env,
                                           std::vector<std::string>& notes);

/// `--entry-point=NAME` for `preflight analyze` when `entry` is one of Megatron-LM's training scripts whose
/// model is not pretrain_gpt.py's (pretrain_mamba.py: a hybrid Mamba stack; pretrain_bert.py, pretrain_t5.py,
/// pretrain_vlm.py, pretrain_vision_*.py, pretrain_retro.py, pretrain_ict.py), else "".  analyze reads from
/// it what the script builds (megatron_args.cpp).
std::string megatron_entry_point_word(std::string_view entry);

/// True for NeMo 1's Hydra training scripts (megatron_*_pretraining.py, megatron_*_finetuning.py): their
/// configuration is a YAML beside the script (or --config-path / --config-name), Hydra overrides follow, and
/// run by plain python they start trainer.devices processes themselves.  megatron_entry_point_word() gives
/// such an entry's path as written, for analyze to find the configuration.
bool is_nemo1_script(std::string_view entry);

/// Index in `argv` (argv[0] = srun) of the command srun starts: the first word after srun's options and their
/// values (a switch such as -l / --exclusive takes none, `--opt=value` and `-N2` carry theirs, any other
/// option takes the next word); after `--`, the next word.  nullopt when no command follows.
std::optional<std::size_t> srun_command_index(const std::vector<std::string>& argv);

/// Index in `argv` (argv[0] = mpirun / mpiexec) of the command it starts: the first word after its options
/// (Open MPI, MPICH and Intel MPI switches take no value, `--opt=value` carries its own, --mca / -genv take
/// two words, any other option the next word); after `--` or `:`, the next word.  nullopt when none.
std::optional<std::size_t> mpirun_command_index(const std::vector<std::string>& argv);

/// Where the job script (or the command) starts in `sbatch|qsub|bsub|pjsub [options] SCRIPT [args]`: the
/// first word after the options (switches as each scheduler names them; other options take the next word
/// unless given as --opt=value, -N2, Grid Engine's -pe two); nullopt when there is none (the script on
/// stdin).
std::optional<std::size_t> submission_script_index(const std::vector<std::string>& argv);

/// Processes an mpirun with these options starts (nodes × per node): -np / -N / --map-by ppr:N:node, host
/// lists and hostfiles, as for `mpirun … python ENTRY` (launch_world_size).
/// @throws InputError naming the option or the hostfile for a malformed count or an unreadable hostfile
WorldSize mpirun_tasks(const std::vector<std::string>& mpirun_options, const WorldSizeHints& hints);

/// Megatron-LM flags for ms-swift's `megatron sft|pt ARGS` (Megatron-SWIFT, swift/megatron/arguments): its
/// defaults where they differ from Megatron-LM's (distributed optimizer, flash attention, fused cross
/// entropy, expert tp 1, selective recompute of core_attn, bf16; for MoE the all-to-all dispatcher and
/// grouped GEMMs), `--model ORG/REPO` kept, `--max_length` as
/// the sequence, `--tuner_type lora` with `--lora_rank` / `--lora_alpha` / `--target_modules` as preflight's
/// LoRA flags, `--name true|false` as switches, underscores as dashes; ms-swift's own options (dataset,
/// output_dir, …) left out and named in `notes`.
/// MindSpeed-LLM's FSDP2 trainer: `train_fsdp2.py` (mindspeed_llm/fsdp2); analyze reads its launch
/// (analyzer::megatron_words_from_mindspeed_fsdp2).
bool is_mindspeed_fsdp2_entry(std::string_view entry);

std::vector<std::string> megatron_words_from_swift(const std::vector<std::string>& args,
                                                   std::vector<std::string>& notes);

/// Index in `argv` (argv[0] = numactl or taskset) of the command a CPU / memory binding runs: numactl's
/// first word after its options (-m 0-3, --membind=0-3, -l …, `--`), taskset's after its options and the
/// mask or CPU list.  nullopt when no command follows (numactl --hardware / --show, taskset -p PID) or for
/// another program.  Binding does not change what the analysis computes, and a login node may lack the
/// NUMA nodes a job script binds to (or numactl itself).
std::optional<std::size_t> binding_command_index(const std::vector<std::string>& argv);

/// A package install or removal: `pip|pip3|pip3.N [general options] install|uninstall …`, `python* -m pip …
/// install|uninstall …`, `uv pip install|uninstall|sync …`.  Returns the words that say it ("pip install",
/// "python3 -m pip install", "uv pip install"), nullopt for anything else (`pip show`, `pip list`, `pip
/// --version`, other programs).  Launch scripts install their requirements before the launch (Megatron-LM's
/// ModelOpt scripts, `pip install -r requirements.txt` under set -e): an analysis needs none of them and must
/// not change the machine it runs on.  pip's general options that take a value (--index-url X, --log F, …)
/// are stepped over.
std::optional<std::string> package_install_command(const std::vector<std::string>& argv);

/// A command run on other nodes by a remote shell: `ssh [options] HOST CMD…`, `pdsh [options] CMD…`,
/// `clush [options] CMD…`, Grid Engine's `qrsh -inherit [options] HOST CMD…` (ABCI's way of starting a
/// node's launcher).  Launch scripts start one launcher per node so, in a loop over the hosts.
struct RemoteCommand {
  std::string tool;         ///< ssh, pdsh, clush or qrsh
  std::string hosts;        ///< the host (ssh, qrsh -inherit) or the -w list (pdsh, clush); "" when not given
  std::size_t command = 0;  ///< index in argv of the remote command's first word
};

/// The remote command of `argv` (argv[0] = ssh, pdsh, clush or qrsh; a path to them too): the first word
/// after the tool's options and their values (ssh's -p/-i/-o/-l/… and combined switches -tt; pdsh's and
/// clush's -w/-x/-g/-l/-f/-t/-u/…; qrsh's -inherit, -V, -cwd, -now y, -l …) and, for ssh and `qrsh -inherit`,
/// the host.  The remote shell runs the words joined by blanks.  nullopt when no command follows (an
/// interactive login) or for another program.
std::optional<RemoteCommand> remote_command(const std::vector<std::string>& argv);

/// What a remote command line (as the remote shell would run it) does, by the command word of each of its
/// simple commands (split at ; & | ( ) and newlines, leading NAME=value, env, nohup, exec and time skipped):
/// Starts when one is a launcher (torchrun, deepspeed, msrun, megatron, srun, mpirun, mpiexec), python, a
/// shell (bash, sh, eval, source, .) or a script (*.sh); else Query when one is nvidia-smi or hostname; else
/// Other (cd, mkdir, pkill …).
enum class RemoteKind { Starts, Query, Other };
RemoteKind remote_command_kind(std::string_view text);

/// Tasks an srun with these options starts (nodes × tasks per node): its -N / -n / --ntasks-per-node, else
/// the allocation's SLURM_* variables, else one task per node.
/// @throws InputError naming the option or variable for a malformed count
WorldSize srun_tasks(const std::vector<std::string>& srun_options, const WorldSizeHints& hints,
                     const std::map<std::string, std::string>& env);

/// True when the entry is a Megatron-LM training script (pretrain_*.py): it takes --train-iters.
bool is_megatron_entry(const LaunchCommand& launch);

/// Value of `--flag V` / `--flag=V` in `args` (the last one, as argparse keeps), spelled with '-' or '_'.
std::optional<std::string> flag_value(const std::vector<std::string>& args, std::string_view flag);
/// True when `--flag` (either spelling, with or without `=value`) is present.
bool has_flag(const std::vector<std::string>& args, std::string_view flag);

}  // namespace preflight::wrap
