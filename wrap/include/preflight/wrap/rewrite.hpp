#pragma once
/// @file rewrite.hpp
/// `preflight wrap`: rewrites the launch lines of a launch script and leaves every other byte alone.
///
/// Per launch of a training entry point (launch.hpp), by mode:
///  - analyze, torch launchers and plain python: the launcher and the entry script are replaced by
///    `"${PREFLIGHT:-<preflight>}" analyze`, so the launcher's own flags (world size) and the entry's
///    arguments reach `preflight analyze` exactly as the public recipe does with `sed`;
///  - analyze, other launchers (deepspeed, msrun, msrun_launcher.sh): the line is prefixed with
///    `"${PREFLIGHT:-…}" run --mode analyze --`, which translates the launcher's size flags when it runs;
///  - trace: prefixed with `"${PREFLIGHT:-…}" run --mode trace [options] --` (the real launch is kept and
///    started with the allocator hook, see run.hpp);
///  - dryrun (MindSpore launches only): prefixed with `"${PREFLIGHT:-…}" dryrun --out DIR [options] --`.
/// Launches already wrapped are left alone, so wrapping twice changes nothing.  In analyze and dryrun modes
/// Megatron's `NAME=<Specify path>` placeholders are quoted (`NAME='<Specify path>'`) so the script runs.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "preflight/wrap/launch.hpp"

namespace preflight::wrap {

enum class WrapMode { Analyze, Trace, Dryrun };

/// "analyze" | "trace" | "dryrun"
std::string mode_name(WrapMode m);
/// @throws InputError (where = "--mode") for anything else
WrapMode parse_mode(const std::string& s);

struct WrapOptions {
  WrapMode mode = WrapMode::Analyze;
  EntryPatterns entries;
  /// Command baked into the rewritten script; `$PREFLIGHT` overrides it when the script runs.
  std::string preflight = "preflight";
  /// Extra words for `preflight analyze` (analyze mode, e.g. --json, --device-memory 80).
  std::vector<std::string> analyze_args;
  /// Extra words for `preflight run` (analyze mode with non-torch launchers, and trace mode).
  std::vector<std::string> run_args;
  /// Extra words for `preflight dryrun` (dryrun mode), after `--out DIR`.
  std::vector<std::string> dryrun_args;
  /// Dryrun output directory; with several launches each gets `DIR/line<N>`.
  std::string dryrun_out = "output/preflight_dryrun";
  /// Quote `<Specify …>` placeholder assignments (analyze and dryrun modes).
  bool fix_placeholders = true;
  /// Name of the script in messages.
  std::string script_name = "script";
};

/// One launch found in the script.
struct LaunchSite {
  std::size_t line = 0;  ///< 1-based line of the launcher word
  Launcher launcher = Launcher::Torchrun;
  std::string entry;   ///< entry point as far as known
  std::string action;  ///< what was done: "preflight analyze", "preflight run --mode trace", "skipped: …",
                       ///< "already wrapped"
};

struct WrapResult {
  std::string text;                  ///< the rewritten script
  std::vector<LaunchSite> launches;  ///< in order of appearance
  std::vector<std::string> notes;  ///< `SCRIPT:LINE: …` lines about other edits (placeholders) and warnings
  bool changed = false;            ///< text differs from the input
};

/// Rewrites every launch of a training entry point.
/// @throws InputError (where = script name) when the script has no launch of a training entry point (the
///         message lists what was looked for and the lines that came closest), or, in dryrun mode, no
///         MindSpore launch
WrapResult wrap_script(std::string_view text, const WrapOptions& options);

/// The public recipe's one-line rewrite (Megatron-LM PR #482, tools/get_training_info/README):
/// `sed 's%torchrun $DISTRIBUTED_ARGS pretrain_gpt.py%python ../get_training_info.py $DISTRIBUTED_ARGS %g'`,
/// byte for byte (every occurrence on every line; all other bytes, the final newline or its absence kept).
/// `matches` receives how many occurrences were replaced.
std::string sed_compatible(std::string_view text, std::size_t& matches);

/// The pattern and replacement of the public recipe (for messages and tests).
inline constexpr std::string_view kRecipePattern = "torchrun $DISTRIBUTED_ARGS pretrain_gpt.py";
inline constexpr std::string_view kRecipeReplacement = "python ../get_training_info.py $DISTRIBUTED_ARGS ";

/// The SLURM variables a job script's `#SBATCH` lines (-N/--nodes, --ntasks-per-node, -n/--ntasks) give it
/// inside its allocation, as written: SLURM_NNODES and SLURM_JOB_NUM_NODES, SLURM_NTASKS_PER_NODE, and
/// SLURM_NTASKS / SLURM_NPROCS (given, or nodes × tasks per node when both are numbers), SLURM_GPUS_PER_NODE
/// / SLURM_GPUS_ON_NODE from --gpus-per-node, SLURM_TASKS_PER_NODE in SLURM's `8(x2)` form,
/// SLURM_JOB_NODELIST / SLURM_NODELIST (`preflight-node[1-N]`, made-up names) and SLURM_JOB_ID / SLURM_JOBID
/// (1).  Empty when the lines give no node count.  For a run outside any allocation (`preflight run` sets
/// them all or none).
std::vector<std::pair<std::string, std::string>> sbatch_job_environment(std::string_view script);
/// The same with sbatch's own options (`sbatch -N 4 job.sh`: they win over the #SBATCH lines).
std::vector<std::pair<std::string, std::string>> sbatch_job_environment(
    std::string_view script, const std::vector<std::string>& options);

/// What a job script's `#SBATCH` lines and sbatch's `options` say of its size, for a run outside its
/// allocation: the variables of sbatch_job_environment, where a value is not a whole number (a template's
/// `#SBATCH --nodes=your_own_num_nodes`, a variable) left out — never passed on as a size — and
/// `hints` (preflight run's --nnodes / --gpus-per-node) taken in its place: the node count; GPUs a node,
/// and tasks a node when --ntasks-per-node was such a value (one process a GPU).  `notes` says what was
/// left out and taken.  Hints are not applied to a script without #SBATCH lines or options.
struct SbatchJobSize {
  std::vector<std::pair<std::string, std::string>> variables;
  std::vector<std::string> notes;
};
SbatchJobSize sbatch_job_size(std::string_view script, const std::vector<std::string>& options,
                              const WorldSizeHints& hints);

/// `"${PREFLIGHT:-<path>}"` with `path` escaped for a double-quoted default.
std::string preflight_invocation(const std::string& path);

}  // namespace preflight::wrap
