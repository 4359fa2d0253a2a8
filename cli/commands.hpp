#pragma once
/// @file commands.hpp
/// Subcommands of the `preflight` binary.  Each lives in its own cmd_<name>.cpp and is a plain function
/// over parsed options (ccache style); this folder holds wiring only, the work is in the components.
///
/// Two kinds:
///  - raw commands take the words after their name as-is (analyze accepts any torchrun + Megatron
///    command line, which CLI11 must not interpret);
///  - CLI11 commands register themselves on the app and run after parsing.
/// Every command returns the process exit status (preflight::ExitCode); bad input is thrown as
/// preflight::InputError and printed by main().

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/frontends/bridge_config.hpp"

namespace CLI {
class App;
}

namespace preflight::cli {

using Words = std::vector<std::string>;

/// CLI11 (2.1) splits a word "[a,b]" given to a list option into "a", "b"; a Megatron flag's Python list
/// (`--moe-layer-freq '[0,1,1,1]'`) after `--` would reach the command cut up.  main() prefixes such words
/// after `--` with kBracketGuard before parsing; the commands that take those words call
/// restore_bracket_words() on them.
constexpr char kBracketGuard = '\x1f';
void restore_bracket_words(Words& words);

/// File arguments where a directory stands for the files in it whose names end in one of `suffixes`, sorted
/// (below it too when `recursive`); other arguments are kept as given.  `what` names the files in the error.
/// @throws InputError naming a directory that holds none, or that cannot be listed.
Words expand_file_arguments(const Words& inputs, const std::vector<std::string>& suffixes, bool recursive,
                            const std::string& what);

/// `preflight analyze [options] [torchrun + Megatron args…]`
int run_analyze(const Words& args);
/// `preflight balance [options]` — raw because it accepts SAPP's single-dash long flags (-mb, -mem, -lm).
int run_balance(const Words& args);

/// `calibrate --measured LOG` and `logs megatron --predict`: every `[Rank N] … max allocated` of a Megatron
/// log against the prediction from the log's own argument dump (analyzer/calibrate/log_prediction.hpp).
/// Prints a table (or appends JSON to `json_out` when given); returns the largest |error|.
/// @throws InputError naming the log when it has no argument dump or no memory lines.
/// A Megatron-Bridge log (no argument dump; its `------- Task Configuration -------` YAML instead) is read
/// through frontends/bridge_config.hpp with `world_size` GPUs, `gpus_per_node` a node (Bridge logs do not
/// print the world size: 0 is refused for them).
double predict_megatron_log(const std::string& path, const std::string& calibration, bool json,
                            void* json_out, void* prediction_out = nullptr, int world_size = 0,
                            int gpus_per_node = 8);

/// The Megatron arguments of a Megatron-Bridge log's configuration block with the world given, or nothing
/// when `path` is not such a log (it has an argument dump, or no configuration block).
/// @throws InputError naming the log when it is one but `world_size` is 0 or does not fill whole nodes.
std::optional<std::vector<std::string>> bridge_log_words(const std::string& path, bool has_argument_dump,
                                                         int world_size, int gpus_per_node);

/// `preflight logs dryrun DIR` · `preflight logs megatron FILE…` (cmd_logs.cpp)
std::function<int()> add_logs_command(CLI::App& sub);

/// `preflight timeline FILE… [--sapp]` (cmd_timeline.cpp)
std::function<int()> add_timeline_command(CLI::App& sub);

/// A CLI11 subcommand: `add` registers options on `sub` and returns the function to run after parsing.
struct Command {
  const char* name;
  const char* help;
  std::function<std::function<int()>(CLI::App& sub)> add;
};

/// `preflight trace summarize|export FILE…` (cmd_trace.cpp)
Command trace_command();
/// `preflight wrap SCRIPT --mode analyze|trace|dryrun` (cmd_wrap.cpp)
Command wrap_command();
/// `preflight run --mode analyze|trace -- CMD…` (cmd_run.cpp)
Command run_command();
/// `preflight dryrun [options] -- CMD…` (cmd_dryrun.cpp)
Command dryrun_command();

/// The options `preflight run` and `preflight wrap` share: which scripts are training entry points, the
/// world size when the launcher does not say, and how trace mode shortens and traces the run.
/// Negative numbers and empty strings mean "not given" (the run's own defaults apply).
struct LaunchCli {
  std::vector<std::string> entries;       ///< --entry GLOB…, besides pretrain_*.py and run_mindformer.py
  std::vector<std::string> analyze_args;  ///< --analyze-arg=…, options for preflight analyze
  std::vector<std::string> search_args;   ///< --search-arg=…, options for preflight search (search mode)
  int gpus_per_node = 0;                  ///< --gpus-per-node (0: not given)
  int nnodes = 0;                         ///< --nnodes (0: not given)
  int steps = -1;                         ///< --steps, iterations of the short traced run
  bool full_run = false;                  ///< --full-run
  std::string trace_dir;                  ///< --trace-dir, folder of the per-run trace folders
  long long trace_min_bytes = -1;         ///< --trace-min-bytes (PREFLIGHT_TRACE_MIN_BYTES)
  int trace_host = -1;                    ///< --trace-host 0/1 (PREFLIGHT_TRACE_HOST)
  int trace_cuda = -1;                    ///< --trace-cuda 0/1 (PREFLIGHT_TRACE_CUDA)
};
/// Registers the LaunchCli options on `sub` (cmd_run.cpp); `o.trace_dir` as set beforehand is the default.
void add_launch_options(CLI::App& sub, LaunchCli& o);
/// `o` as `preflight run` options, in this order: --entry…, --gpus-per-node, --nnodes, then the analyze
/// options when `analyze`, then the trace options when `trace` (--trace-dir only when set).
std::vector<std::string> launch_run_words(const LaunchCli& o, bool analyze, bool trace);

/// For subcommands that take a command line after `--` (run, dryrun): CLI11 leaves "--" in remaining()
/// when it was given; anything else there means options of the command were mixed with ours.
/// @throws InputError (where = `command`) asking for `--`
void check_command_after_dashes(const std::vector<std::string>& remaining, const char* command);
/// `preflight estimate` (cmd_estimate.cpp).
Command estimate_command();
/// `preflight search` (cmd_search.cpp).
Command search_command();
/// `preflight search <options> -- <megatron>`: a launch's torchrun + Megatron words as the search's base
/// (`preflight run --mode search`).  @throws InputError for options search does not take.
int run_search_launch(const Words& options, const Words& megatron);
/// MindSpore caps its memory pool at a yaml's context.max_device_memory (GiB): below the system's device memory
/// it becomes the memory `estimate`/`search --config` compare with, with a warning (cmd_estimate.cpp).
void cap_device_memory(double& system_mem_gib, double max_device_memory_gib, std::vector<std::string>& warnings);
/// The system a Megatron-Bridge recipe named for a GPU (`…_8gpu_gb200_…`) is priced on when --system is not
/// given: that GPU's preset, written to `system` and said in `notes`; false (nothing changed) when the name
/// gives no GPU (cmd_estimate.cpp).
/// @throws InputError (where = "--system") when it names a GPU preflight has no preset for (vr200, r100).
bool system_of_recipe(const analyzer::BridgeConfigArgs& recipe, std::string& system,
                      std::vector<std::string>& notes);
/// `preflight calibrate`: predicted vs measured memory, least-squares fit (cmd_calibrate.cpp).
Command calibrate_command();

/// All CLI11 subcommands, in the order `preflight --help` lists them.
std::vector<Command> cli11_commands();

}  // namespace preflight::cli
