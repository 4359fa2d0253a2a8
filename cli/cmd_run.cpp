// preflight run --mode analyze|trace -- CMD…: a launch given directly is analysed or traced; any other
// command (bash script.sh …) runs with torchrun/deepspeed/msrun/python shadowed on PATH by shims that call
// back here with --shim NAME.
#include <CLI/CLI.hpp>
#include <algorithm>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/job_header.hpp"
#include "preflight/wrap/launch.hpp"
#include "preflight/wrap/process.hpp"
#include "preflight/wrap/rewrite.hpp"
#include "preflight/wrap/run.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::cli {

namespace fs = std::filesystem;

namespace {

struct RunCli {
  std::string mode = "analyze";
  LaunchCli launch;
  bool explain = false;
  std::string shim;
  std::vector<std::string> command;
};

const char* kShimDirVar = "PREFLIGHT_SHIM_DIR";

/// Analyze and search modes run nothing of the training: the launch is read, the shims answer for the node.
bool analysis_mode(const RunCli& c) {
  return c.mode == "analyze" || c.mode == "search";
}
const char* kRunTraceDirVar = "PREFLIGHT_RUN_TRACE_DIR";

/// Our options again, for the shims to pass back (the trace folder made absolute).
std::vector<std::string> forward_words(const RunCli& c) {
  LaunchCli l = c.launch;
  l.trace_dir = fs::absolute(l.trace_dir).string();
  std::vector<std::string> f{"--mode", c.mode};
  std::vector<std::string> rest = launch_run_words(l, true, true);
  f.insert(f.end(), rest.begin(), rest.end());
  return f;
}

wrap::TraceOptions trace_options(const LaunchCli& c) {
  wrap::TraceOptions t;
  t.trace_root = c.trace_dir;
  if (c.steps >= 0) t.steps = c.steps;
  t.full_run = c.full_run;
  if (c.trace_min_bytes >= 0) t.min_bytes = c.trace_min_bytes;
  if (c.trace_host >= 0) t.host = c.trace_host != 0;
  if (c.trace_cuda >= 0) t.cuda = c.trace_cuda != 0;
  return t;
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : " ") + wrap::shell_quote(w);
  return s;
}

void note_launch(const wrap::Environment& env, const wrap::LaunchCommand& l, const std::string& action) {
  std::string dir = wrap::env_get(env, kShimDirVar);
  if (dir.empty()) return;
  std::ofstream log(fs::path(dir) / "launches.log", std::ios::app);
  log << wrap::launcher_name(l.launcher) << "\t" << l.entry << "\t" << action << "\n";
  ::unsetenv(kShimDirVar);  // counted: the analysis run in this process does not count itself again
}

/// The job size given to preflight run (--nnodes, --gpus-per-node), for what a launcher or job header
/// does not say.
wrap::WorldSizeHints size_hints(const RunCli& c) {
  wrap::WorldSizeHints hints;
  if (c.launch.gpus_per_node > 0) hints.gpus_per_node = c.launch.gpus_per_node;
  if (c.launch.nnodes > 0) hints.nnodes = c.launch.nnodes;
  return hints;
}

/// What the run's options say of the world size where the launcher does not (--gpus-per-node, --nnodes), this
/// machine's GPUs last.
wrap::WorldSizeHints launch_hints(const RunCli& c) {
  wrap::WorldSizeHints hints = size_hints(c);
  hints.count_local_gpus = &wrap::count_local_gpus_nvidia_smi;
  return hints;
}

/// The workers an msrun launch of run_mindformer.py starts (its notes said); none for other launchers.
std::optional<wrap::WorldSize> mindspore_workers(const wrap::LaunchCommand& l, const wrap::Environment& env) {
  if (!wrap::is_mindspore_launcher(l.launcher)) return std::nullopt;
  auto w = wrap::launch_world_size(l, wrap::WorldSizeHints{}, env);
  for (const auto& n : w->notes) std::cerr << "preflight run: note: " << n << "\n";
  return w;
}

int analyze_launch(const RunCli& c, const wrap::LaunchCommand& l, const wrap::Environment& env) {
  if (fs::path(l.entry).filename() == "run_mindformer.py") {
    // MindFormers: the yaml and run_mindformer.py's overrides; the launch's worker count must match.
    std::vector<std::string> words = c.launch.analyze_args;
    std::string world;
    if (auto w = mindspore_workers(l, env)) {
      words.push_back("--worker_num=" + std::to_string(w->world()));
      world = " (" + std::to_string(w->world()) + " workers, from " + w->source + ")";
    }
    words.insert(words.end(), l.entry_args.begin(), l.entry_args.end());
    std::cerr << "preflight run: " << wrap::launcher_name(l.launcher) << " " << l.entry
              << " -> preflight analyze --config" << world << "\n";
    note_launch(env, l, "analyze");
    return run_analyze(words);
  }
  const wrap::WorldSizeHints hints = launch_hints(c);
  std::vector<std::string> notes;
  std::vector<std::string> words = c.launch.analyze_args;
  std::vector<std::string> rest = wrap::analyze_arguments(l, hints, env, notes);
  words.insert(words.end(), rest.begin(), rest.end());
  std::cerr << "preflight run: " << wrap::launcher_name(l.launcher) << " " << l.entry
            << " -> preflight analyze";
  if (l.launcher == wrap::Launcher::Python && wrap::is_nemo1_script(l.entry)) {
    std::cerr << " (NeMo's configuration: trainer.devices x trainer.num_nodes processes)";
  } else if (l.launcher == wrap::Launcher::NemoCli) {
    std::cerr << " (NeMo's recipe: trainer.devices x trainer.num_nodes processes)";
  } else if (wrap::is_bridge_experiment_launcher(l.entry)) {
    std::cerr << " (Megatron-Bridge's experiment: its GPUs and nodes)";
  } else if (wrap::is_nemo2_perf_script(l.entry)) {
    std::cerr << " (NeMo 2's performance script: its GPUs and nodes)";
  } else if (!wrap::is_torch_launcher(l.launcher) && !l.recipe_tool) {
    if (auto w = wrap::launch_world_size(l, hints, env))
      std::cerr << " (world size " << w->world() << " = " << w->nnodes << " node"
                << (w->nnodes > 1 ? "s" : "") << " x " << w->nproc_per_node << ", from " << w->source << ")";
  }
  std::cerr << "\n";
  for (const auto& n : notes) std::cerr << "preflight run: note: " << n << "\n";
  note_launch(env, l, "analyze");
  return run_analyze(words);
}

/// Search mode: the launch's torchrun + Megatron words are `preflight search`'s base (--search-arg options).
int search_launch(const RunCli& c, const wrap::LaunchCommand& l, const wrap::Environment& env) {
  if (fs::path(l.entry).filename() == "run_mindformer.py") {
    // MindFormers: the yaml and run_mindformer.py's overrides; msrun's workers are the world searched.
    std::vector<std::string> options = c.launch.search_args;
    if (auto w = mindspore_workers(l, env))
      options.insert(options.end(), {"--world-size", std::to_string(w->world())});
    std::cerr << "preflight run: " << wrap::launcher_name(l.launcher) << " " << l.entry
              << " -> preflight search\n";
    note_launch(env, l, "search");
    return run_search_launch(options, l.entry_args);
  }
  std::vector<std::string> notes;
  std::vector<std::string> words = wrap::analyze_arguments(l, launch_hints(c), env, notes);
  // A model the launch names by --model (ms-swift's `--model ORG/REPO`) is search's --model, and the
  // configuration it names (NeMo 2's recipe: --nemo-config) search's --nemo-config, before `--`.
  std::vector<std::string> options = c.launch.search_args;
  for (const std::string option : {"--model", "--nemo-config"})
    for (std::size_t i = 0; i < words.size(); ++i) {
      const bool split = words[i] == option && i + 1 < words.size(),
                 joined = words[i].rfind(option + "=", 0) == 0;
      if (!split && !joined) continue;
      const std::string value = joined ? words[i].substr(option.size() + 1) : words[i + 1];
      words.erase(words.begin() + static_cast<std::ptrdiff_t>(i),
                  words.begin() + static_cast<std::ptrdiff_t>(i) + (joined ? 1 : 2));
      if (std::none_of(options.begin(), options.end(),
                       [&](const std::string& o) { return o == option || o.rfind(option + "=", 0) == 0; }))
        options.insert(options.end(), {option, value});
      break;
    }
  std::cerr << "preflight run: " << wrap::launcher_name(l.launcher) << " " << l.entry
            << " -> preflight search\n";
  for (const auto& n : notes) std::cerr << "preflight run: note: " << n << "\n";
  note_launch(env, l, "search");
  return run_search_launch(options, words);
}

int trace_launch(const RunCli& c, wrap::LaunchCommand l, const wrap::Environment& env, const fs::path& skip) {
  if (!wrap::env_get(env, "PREFLIGHT_TRACE_DIR")
           .empty()) {  // already inside a traced run: hand over unchanged
    wrap::exec_program(l.argv(), env, skip);
  }
  wrap::TraceOptions opts = trace_options(c.launch);
  wrap::HookFiles hook = wrap::locate_hook(wrap::self_executable(), env);
  std::string shared = wrap::env_get(env, kRunTraceDirVar);
  fs::path run_dir = shared.empty() ? wrap::make_run_dir(opts.trace_root) : fs::path(shared);
  std::vector<std::string> notes;
  std::vector<std::string> extra = wrap::short_run_args(l, opts, notes);
  l.entry_args.insert(l.entry_args.end(), extra.begin(), extra.end());
  wrap::Environment traced = wrap::trace_environment(env, hook, run_dir, opts);
  std::vector<std::string> argv = l.argv();
  std::cerr << "preflight run: tracing " << wrap::launcher_name(l.launcher) << " " << l.entry;
  if (!extra.empty()) std::cerr << " with " << join(extra);
  std::cerr << "; per-rank traces in " << run_dir.string() << "\n";
  for (const auto& n : notes) std::cerr << "preflight run: note: " << n << "\n";
  if (c.explain) {
    for (const char* k : {"LD_PRELOAD", "PYTHONPATH", "PREFLIGHT_TRACE_DIR", "PREFLIGHT_TRACE_MIN_BYTES",
                          "PREFLIGHT_TRACE_HOST", "PREFLIGHT_TRACE_CUDA"}) {
      auto it = traced.find(k);
      if (it != traced.end()) std::cout << k << "=" << wrap::shell_quote(it->second) << " \\\n";
    }
    std::cout << join(argv) << "\n";
    return kExitOk;
  }
  note_launch(env, l, "trace");
  pid_t pid = wrap::spawn_program(argv, traced, std::nullopt, skip, false);
  int code = wrap::wait_foreground(pid);
  if (shared.empty()) {
    auto files = wrap::list_trace_files(run_dir);
    std::cerr << "preflight run: " << files.size() << " trace file" << (files.size() == 1 ? "" : "s")
              << " in " << run_dir.string() << "\n";
  }
  return code;
}

/// The job script `argv` runs (`bash [options] job.sh …`, or `./job.sh …`), when it is a readable file.
std::optional<fs::path> job_script_of(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  const std::string shell = fs::path(argv[0]).filename().string();
  std::size_t i = 0;
  if (shell == "bash" || shell == "sh" || shell == "dash" || shell == "zsh" || shell == "csh" ||
      shell == "tcsh") {
    for (i = 1; i < argv.size() && argv[i].size() > 1 && (argv[i][0] == '-' || argv[i][0] == '+'); ++i)
      if (argv[i] == "-c" || argv[i] == "--") return std::nullopt;  // a command string, not a script
  }
  std::error_code ec;
  if (i >= argv.size() || !fs::is_regular_file(argv[i], ec)) return std::nullopt;
  return fs::path(argv[i]);
}

int run_with_shims(const RunCli& c, const wrap::Environment& env, const std::vector<std::string>& argv) {
  std::string tmpl = (fs::temp_directory_path() / "preflight-shims-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw InputError(tmpl, "cannot create the shim directory");
  fs::path dir = tmpl;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  std::string path = wrap::env_get(env, "PATH");
  wrap::write_shims(dir, wrap::self_executable(), wrap::shim_names(path), forward_words(c));
  wrap::Environment shimmed = env;
  shimmed["PATH"] = wrap::prepend_path(dir.string(), path);
  // The script the command runs (`bash job.sh …`), read once for what follows.
  const std::optional<fs::path> script = job_script_of(argv);
  std::string script_text;
  if (script) {
    std::ifstream in(*script);
    std::stringstream text;
    text << in.rdbuf();
    script_text = text.str();
  }
  // A job script run outside its allocation for the analysis: the SLURM sizes its #SBATCH lines ask for
  // (as `preflight wrap` writes them), unless the environment has an allocation's.
  if (analysis_mode(c) && wrap::env_get(env, "SLURM_NNODES").empty() &&
      wrap::env_get(env, "SLURM_JOB_NUM_NODES").empty()) {
    if (script) {
      const wrap::SbatchJobSize sbatch = wrap::sbatch_job_size(script_text, {}, size_hints(c));
      for (const std::string& n : sbatch.notes)
        std::cerr << "preflight run: " << script->string() << ": " << n << "\n";
      if (!sbatch.variables.empty()) {
        std::string said;
        for (const auto& [name, value] : sbatch.variables) {
          shimmed[name] = value;
          said += (said.empty() ? "" : " ") + name + "=" + value;
        }
        std::cerr << "preflight run: outside an allocation the analysis takes the job size of "
                  << script->string() << "'s #SBATCH lines (" << said << ")\n";
      } else if (const wrap::BatchJob job = wrap::batch_job_header(script_text); !job.empty()) {
        // PBS, Grid Engine, PJM: each variable the environment lacks; host files in the shim directory.
        for (const auto& [name, value] : job.variables)
          if (wrap::env_get(env, name).empty()) shimmed[name] = value;
        for (const std::string& name : job.workdir_variables)
          if (wrap::env_get(env, name).empty()) shimmed[name] = fs::current_path().string();
        for (const wrap::HostFile& f : job.host_files) {
          if (!wrap::env_get(env, f.variable).empty()) continue;
          const fs::path file = dir / ("hosts." + f.variable);
          std::ofstream out(file);
          for (const std::string& line : wrap::host_file_lines(f)) out << line << '\n';
          if (!out) throw InputError(file.string(), "cannot write the allocation's host file");
          shimmed[f.variable] = file.string();
        }
        std::cerr << "preflight run: outside an allocation the analysis takes the job size of "
                  << script->string() << "'s " << job.directive << " lines (" << job.summary << ")\n";
      }
    }
  }
  // A script run for the analysis away from its cluster stops, under `set -e`, at the first line of its
  // environment that fails here (Pai-Megatron-Patch's scripts copy the checkpoint's config.json with `find
  // $CKPT … | xargs cp`; a conda activate, a module load) and, under `set -u`, at an unset variable of its
  // cluster — before its launch.  As `preflight wrap` does, both are switched off in analyze / search mode:
  // bash reads $BASH_ENV before the script, and its DEBUG trap clears them before each of the script's
  // commands, those of the files it sources and of its functions included (a BASH_ENV of the user's is read
  // first).
  if (analysis_mode(c)) {
    const fs::path bash_env = dir / "bash_env.sh";
    std::ofstream out(bash_env);
    if (const std::string user = wrap::env_get(env, "BASH_ENV"); !user.empty())
      out << ". " << wrap::shell_quote(user) << "\n";
    // (set -T: files the script sources, and its functions, keep the trap — bash unsets it inside `.` /
    // source otherwise, and a sourced file's own `set -e` ended the analysis: Megatron-LM's ModelOpt scripts)
    out << "set -T; trap 'set +e +u' DEBUG  # preflight run: set -e / -u switched off for the analysis\n";
    if (!out) throw InputError(bash_env.string(), "cannot write the analysis' BASH_ENV");
    shimmed["BASH_ENV"] = bash_env.string();
    if (script) {
      // A `set -e` / `-u` command of the script (wrap's reading of it), or bash's `-e` on its #! line.
      const std::string shebang =
          script_text.rfind("#!", 0) == 0 ? script_text.substr(0, script_text.find('\n')) : std::string();
      const wrap::ShellScript sh = wrap::parse_shell(script_text);
      if (std::any_of(sh.commands.begin(), sh.commands.end(), wrap::turns_on_errexit_or_nounset) ||
          shebang.find(" -e") != std::string::npos)
        std::cerr << "preflight run: " << script->string()
                  << ": `set -e` / `-u` is switched off for the analysis (the script's environment — "
                     "checkpoints, sourced files, conda, paths of its cluster — may be missing here)\n";
    }
  }
  shimmed[kShimDirVar] = dir.string();
  fs::path run_dir;
  if (c.mode == "trace") {
    wrap::locate_hook(wrap::self_executable(), env);  // fail before the script starts
    run_dir = wrap::make_run_dir(c.launch.trace_dir);
    shimmed[kRunTraceDirVar] = run_dir.string();
  }
  std::cerr << "preflight run: running " << join(argv)
            << " with torchrun, deepspeed, msrun and python shadowed (" << c.mode << " mode)\n";
  // A command that is itself one of the shims (`preflight run -- mpirun … bash -c "…"`, as wrap writes an
  // mpirun of a shell) goes to its shim; anything else to the real program.
  const std::string first = fs::path(argv.front()).filename().string();
  const bool shimmed_first = argv.front().find('/') == std::string::npos &&
                             (first == "mpirun" || first == "mpiexec" || first == "srun" ||
                              first == "numactl" || first == "taskset");
  pid_t pid = wrap::spawn_program(argv, shimmed, std::nullopt, shimmed_first ? fs::path() : dir, false);
  int code = wrap::wait_foreground(pid);

  std::ifstream log(dir / "launches.log");
  std::vector<std::string> launches;
  for (std::string line; std::getline(log, line);) launches.push_back(line);
  if (launches.empty()) {
    wrap::EntryPatterns entries;
    entries.globs.insert(entries.globs.end(), c.launch.entries.begin(), c.launch.entries.end());
    std::ifstream skipped_log(dir / "skipped.log");
    std::vector<std::string> skipped;
    for (std::string line; std::getline(skipped_log, line);) skipped.push_back(line);
    if (!skipped.empty()) {
      std::cerr << "preflight run: nothing analysed: no launch of a training entry point ("
                << entries.describe() << "); " << skipped.size() << " distributed launch"
                << (skipped.size() == 1 ? " of " : "es of ") << skipped.front()
                << (skipped.size() > 1 ? " and others" : "")
                << " not run (said above): --entry NAME analyses such a script\n";
      if (!run_dir.empty()) {
        std::error_code ec;
        fs::remove(run_dir, ec);
      }
      return code != 0 ? code : kExitBadInput;
    }
    std::cerr << "preflight run: no launch of a training entry point (" << entries.describe()
              << ") reached the shims";
    if (code != 0)
      std::cerr
          << "; the script exited with status " << code
          << " before any — see its output above (a check for a file it expects, e.g. pretrain_gpt.py "
             "when not run from the Megatron-LM checkout, or a missing argument; under set -e, a line of "
             "its cluster's environment — source ~/.bashrc, conda activate, a path of its file system: "
             "`preflight wrap SCRIPT -o W && bash W` goes on past those)";
    std::cerr
        << ". Launchers called by absolute path (/usr/bin/torchrun) or through a runner that picks its own "
           "python (conda run) bypass the shims — `preflight wrap` rewrites such scripts — and "
           "--entry NAME adds an entry point\n";
    if (!run_dir.empty()) {
      std::error_code ec;
      fs::remove(run_dir, ec);
    }
    return code != 0 ? code : kExitBadInput;
  }
  std::cerr << "preflight run: " << launches.size() << " launch" << (launches.size() == 1 ? "" : "es")
            << " intercepted\n";
  if (!run_dir.empty()) {
    auto files = wrap::list_trace_files(run_dir);
    std::cerr << "preflight run: " << files.size() << " trace file" << (files.size() == 1 ? "" : "s")
              << " in " << run_dir.string() << "\n";
  }
  return code;
}

/// An nvidia-smi call that only lists the GPUs: `-L` / `--list-gpus`, or `--query-gpu=F,…` of the fields
/// name, index, uuid, count with `--format=csv` (noheader / nounits allowed).  Its answer for GPU i.
struct GpuListing {
  std::vector<std::string> fields;  ///< empty: the `-L` form
  bool header = false;
  std::string line(int i, int gpus) const {
    auto field = [&](const std::string& f) -> std::string {
      if (f == "name") return "NVIDIA GPU (preflight analysis)";
      if (f == "index") return std::to_string(i);
      if (f == "uuid") return "GPU-preflight-" + std::to_string(i);
      return std::to_string(gpus);  // count
    };
    if (fields.empty())
      return "GPU " + std::to_string(i) + ": NVIDIA GPU (preflight analysis) (UUID: GPU-preflight-" +
             std::to_string(i) + ")\n";
    std::string out = i == 0 && header ? join_fields(fields) + "\n" : "";
    for (std::size_t k = 0; k < fields.size(); ++k) out += (k ? ", " : "") + field(fields[k]);
    return out + "\n";
  }
  static std::string join_fields(const std::vector<std::string>& f) {
    std::string s;
    for (const auto& x : f) s += (s.empty() ? "" : ", ") + x;
    return s;
  }
};

std::optional<GpuListing> gpu_listing(const std::vector<std::string>& argv) {
  GpuListing g;
  bool list = false, query = false, csv = false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-L" || a == "--list-gpus") {
      list = true;
    } else if (a.rfind("--query-gpu=", 0) == 0) {
      query = true;
      std::string rest = a.substr(12);
      for (std::size_t b = 0; b <= rest.size();) {
        std::size_t e = rest.find(',', b);
        if (e == std::string::npos) e = rest.size();
        std::string f = rest.substr(b, e - b);
        if (f != "name" && f != "index" && f != "uuid" && f != "count") return std::nullopt;
        g.fields.push_back(f);
        b = e + 1;
      }
    } else if (a.rfind("--format=", 0) == 0) {
      const std::string fmt = a.substr(9);
      csv = fmt.rfind("csv", 0) == 0;
      g.header = fmt.find("noheader") == std::string::npos;
    } else {
      return std::nullopt;
    }
  }
  if (list && !query) return g;
  if (query && csv && !g.fields.empty()) return g;
  return std::nullopt;
}

int run_run(const RunCli& c) {
  wrap::Environment env = wrap::current_environment();
  std::vector<std::string> argv = c.command;
  fs::path skip;
  if (!c.shim.empty()) {
    argv.insert(argv.begin(), c.shim);
    skip = wrap::env_get(env, kShimDirVar);
  }
  if (argv.empty()) throw InputError("run", "expects a command after --");
  wrap::EntryPatterns entries;
  entries.globs.insert(entries.globs.end(), c.launch.entries.begin(), c.launch.entries.end());
  auto launch = wrap::parse_launch(argv, entries);
  if (launch && !(c.mode == "trace" && launch->recipe_tool)) {
    if (c.mode == "analyze") return analyze_launch(c, *launch, env);
    if (c.mode == "search") return search_launch(c, *launch, env);
    return trace_launch(c, *launch, env, skip);
  }
  // A package install or removal before the launch (Megatron-LM's ModelOpt scripts run `pip install -r
  // requirements.txt` under set -e): an analysis needs none of the packages and changes nothing on the
  // machine it runs on — not run, said.  A traced run is the real run: its installs run.
  if (!c.shim.empty() && analysis_mode(c)) {
    if (auto install = wrap::package_install_command(argv)) {
      std::cerr << "preflight run: `" << join(argv) << "` is not run for the analysis (a " << *install
                << ": the analysis needs no package and changes nothing here)\n";
      return kExitOk;
    }
  }
  // Analysis runs where the training runs not (a login node, a laptop): a script asking PyTorch how many GPUs
  // the node has (`python -c "import torch; print(torch.cuda.device_count())"`, Pai-Megatron-Patch's and
  // others' way of setting GPUS_PER_NODE) gets the node size it is analysed for — --gpus-per-node, else this
  // machine's GPUs, else 8 — instead of 0 or a missing-module error.
  if (!c.shim.empty() && analysis_mode(c) && c.shim.rfind("python", 0) == 0 && argv.size() == 3 &&
      argv[1] == "-c" && argv[2].find("device_count()") != std::string::npos &&
      argv[2].find("print") != std::string::npos) {
    int gpus = c.launch.gpus_per_node > 0 ? c.launch.gpus_per_node : wrap::count_local_gpus_nvidia_smi();
    if (gpus <= 0) gpus = 8;
    std::cerr << "preflight run: answered `" << argv[2] << "` with " << gpus
              << " (analysis mode; --gpus-per-node N to say otherwise)\n";
    std::cout << gpus << "\n";
    return kExitOk;
  }
  // The same for `nvidia-smi --query-gpu=name --format=csv,noheader | wc -l` and `nvidia-smi -L` (Megatron-
  // DeepSpeed's examples): with --gpus-per-node, or on a machine without nvidia-smi, the query is answered
  // for that many GPUs (8 by default); other queries, and machines with GPUs, get the real nvidia-smi.
  if (c.shim == "nvidia-smi" && analysis_mode(c)) {
    const std::string path = wrap::env_get(env, "PATH");
    const bool real = wrap::find_program("nvidia-smi", path, skip).has_value();
    if (auto listing = gpu_listing(argv); listing && (c.launch.gpus_per_node > 0 || !real)) {
      const int gpus = c.launch.gpus_per_node > 0 ? c.launch.gpus_per_node : 8;
      std::cerr << "preflight run: answered `" << join(argv) << "` for " << gpus << " GPUs (analysis mode; "
                << "--gpus-per-node N to say otherwise)\n";
      for (int i = 0; i < gpus; ++i) std::cout << listing->line(i, gpus);
      return kExitOk;
    }
  }
  // Slurm's scontrol where Slurm is not installed (a login node of another cluster, a laptop): job scripts
  // take their master address and node list from it (`MASTER_ADDR=$(scontrol show hostnames
  // $SLURM_JOB_NODELIST | head -n 1)`, often under `set -euo pipefail`, where its absence ends the script).
  // `show hostname(s) [LIST]` expands the list (else $SLURM_JOB_NODELIST — the job header's made-up nodes
  // outside an allocation), `show job` describes the job from the SLURM_* variables; anything else answers
  // nothing.
  if (c.shim == "scontrol" && analysis_mode(c) &&
      !wrap::find_program("scontrol", wrap::env_get(env, "PATH"), skip).has_value()) {
    std::vector<std::string> words;  // the words after scontrol's own options (-o, --oneliner, -d, …)
    for (std::size_t i = 1; i < argv.size(); ++i)
      if (!(argv[i].size() > 1 && argv[i][0] == '-')) words.push_back(argv[i]);
    const bool show = !words.empty() && words[0] == "show";
    std::string nodelist = wrap::env_get(env, "SLURM_JOB_NODELIST");
    if (nodelist.empty()) nodelist = wrap::env_get(env, "SLURM_NODELIST");
    if (show && words.size() > 1 && (words[1] == "hostname" || words[1] == "hostnames")) {
      const std::string list = words.size() > 2 ? words[2] : nodelist;
      if (list.empty()) {
        std::cerr << "scontrol: no host list given and SLURM_JOB_NODELIST is not set (preflight run answers "
                     "`scontrol show hostnames` where Slurm is not installed)\n";
        return kExitBadInput;
      }
      try {
        for (const std::string& host : wrap::expand_hostlist(list)) std::cout << host << "\n";
      } catch (const InputError& e) {
        std::cerr << "scontrol: " << e.what() << "\n";
        return kExitBadInput;
      }
      return kExitOk;
    }
    if (show && words.size() > 1 && words[1] == "job") {
      auto var = [&](const char* name, const char* fallback) {
        const std::string v = wrap::env_get(env, name);
        return v.empty() ? std::string(fallback) : v;
      };
      std::string first_node = "preflight-node1";
      try {
        if (const auto hosts = wrap::expand_hostlist(nodelist); !hosts.empty()) first_node = hosts.front();
      } catch (const InputError&) {
      }
      std::cerr << "preflight run: answered `" << join(argv)
                << "` from the job's SLURM_* variables (Slurm is not installed here)\n";
      const std::string nodes = var("SLURM_JOB_NUM_NODES", "1"), tasks = var("SLURM_NTASKS", nodes.c_str());
      const std::string gpus = wrap::env_get(env, "SLURM_GPUS_PER_NODE");
      std::cout << "JobId=" << var("SLURM_JOB_ID", "1") << " JobName=preflight-analysis\n"
                << "   JobState=RUNNING Reason=None\n"
                << "   NodeList=" << (nodelist.empty() ? first_node : nodelist) << "\n"
                << "   BatchHost=" << first_node << "\n"
                << "   NumNodes=" << nodes << " NumCPUs=" << tasks << " NumTasks=" << tasks
                << " CPUs/Task=1\n"
                << "   TRES=node=" << nodes << (gpus.empty() ? "" : ",gres/gpu=" + gpus) << "\n"
                << "   WorkDir=" << fs::current_path().string() << "\n";
      return kExitOk;
    }
    std::cerr << "preflight run: Slurm is not installed here: `" << join(argv)
              << "` answers nothing for the analysis\n";
    return kExitOk;
  }
  // A command for other nodes (ssh HOST CMD, pdsh -w HOSTS CMD, clush, Grid Engine's qrsh -inherit HOST CMD:
  // launch scripts start one launcher per node so, often in a loop over the hosts).  An analysis never
  // reaches another node — that would start the real run there.  A command that starts something (a launcher,
  // python, a shell or a script) runs here instead, through the shims, once: each node's launch is the same
  // run, so the others are left out, said.  A GPU count or host name query runs here (nvidia-smi answered by
  // its shim); anything else (pkill, mkdir on the node) is not run.
  if ((c.shim == "ssh" || c.shim == "pdsh" || c.shim == "clush" || c.shim == "qrsh") && analysis_mode(c)) {
    // (each message in one write: the commands for several nodes are often started together, with &)
    auto say = [](const std::string& message) { std::cerr << message << std::flush; };
    const auto remote = wrap::remote_command(argv);
    if (!remote) {
      say("preflight run: `" + join(argv) + "` (a login on another node) is not run for the analysis\n");
      return kExitOk;
    }
    std::string text;  // what the remote shell runs: the words joined by blanks
    for (std::size_t i = remote->command; i < argv.size(); ++i) text += (text.empty() ? "" : " ") + argv[i];
    const std::string where = remote->hosts.empty() ? remote->tool : remote->tool + " " + remote->hosts;
    const wrap::RemoteKind kind = wrap::remote_command_kind(text);
    if (kind == wrap::RemoteKind::Other) {
      say("preflight run: `" + where + " " + text +
          "` is a command for another node: not run for the analysis\n");
      return kExitOk;
    }
    if (kind == wrap::RemoteKind::Starts) {
      std::error_code ec;
      const bool first = skip.empty() || fs::create_directory(skip / "remote-launch", ec);
      if (!first) {
        say("preflight run: `" + where + " " + text +
            "` left out: the command another node was given already runs here for the analysis (each node's "
            "launch is the same run)\n");
        return kExitOk;
      }
      say("preflight run: " + where + "'s command runs here, once, for the analysis (not on " +
          (remote->hosts.empty() ? std::string("the nodes") : remote->hosts) + "): " + text + "\n");
    }
    // A plain command line (no shell syntax) that is a launch is analysed as it stands, whatever path its
    // launcher is written with (`ssh $HOST /opt/conda/bin/python -m torch.distributed.launch …
    // pretrain_gpt.py`: an absolute path of the other node would miss the shims); anything else runs through
    // a shell.
    if (kind == wrap::RemoteKind::Starts && text.find_first_of(";&|<>$`'\"(){}\\") == std::string::npos) {
      std::vector<std::string> words;
      std::istringstream split(text);
      for (std::string w; split >> w;) words.push_back(w);
      if (auto there = wrap::parse_launch(words, entries); there && !there->recipe_tool) {
        if (c.mode == "analyze") return analyze_launch(c, *there, env);
        return search_launch(c, *there, env);
      }
    }
    try {
      wrap::exec_program({"bash", "-c", text}, env, fs::path());
    } catch (const InputError& e) {
      std::cerr << c.shim << ": " << e.detail() << "\n";
      return 127;
    }
  }
  // DeepSpeed's `ds_ssh nvidia-smi --query-gpu=name --format=csv,noheader | wc -l` − 2 (Megatron-DeepSpeed's
  // examples count the cluster's GPUs so: ds_ssh prints `command -v pdsh` and a line of its own before the
  // hosts' output).  Outside a DeepSpeed cluster (no ds_ssh) or with --gpus-per-node, answered for --nnodes
  // nodes (1 by default) of that many GPUs, with the two lines first, so that the script's count comes out.
  if (c.shim == "ds_ssh" && analysis_mode(c) && argv.size() > 1 && argv[1] == "nvidia-smi") {
    const std::string path = wrap::env_get(env, "PATH");
    const bool real = wrap::find_program("ds_ssh", path, skip).has_value();
    const std::vector<std::string> remote(argv.begin() + 1, argv.end());
    if (auto listing = gpu_listing(remote); listing && (c.launch.gpus_per_node > 0 || !real)) {
      const int gpus = c.launch.gpus_per_node > 0 ? c.launch.gpus_per_node : 8;
      const int nodes = std::max(1, c.launch.nnodes);
      std::cerr << "preflight run: answered `" << join(argv) << "` for " << nodes << " node"
                << (nodes > 1 ? "s" : "") << " of " << gpus
                << " GPUs (analysis mode; --nnodes N --gpus-per-node M to say otherwise)\n";
      std::cout << "/usr/bin/pdsh\nhosts=";
      for (int n = 0; n < nodes; ++n) std::cout << (n ? "," : "") << "node" << n;
      std::cout << "\n";
      for (int n = 0; n < nodes; ++n)
        for (int i = 0; i < gpus; ++i) std::cout << "node" << n << ": " << listing->line(i, gpus);
      return kExitOk;
    }
  }
  // srun starting a shell or a script (Megatron-LM's sc21 SRUN.sh: `srun … sh -c "${CMD}"`): for the analysis
  // its command runs once, here, with the job size srun gives as SLURM_* variables, so that the launch inside
  // reaches the shims (and without Slurm on this machine).
  if (c.shim == "srun" && analysis_mode(c)) {
    if (auto k = wrap::srun_command_index(argv)) {
      const wrap::WorldSizeHints hints = size_hints(c);
      const wrap::WorldSize w =
          wrap::srun_tasks(std::vector<std::string>(argv.begin() + 1, argv.begin() + *k), hints, env);
      wrap::Environment inner = env;
      inner["SLURM_NNODES"] = inner["SLURM_JOB_NUM_NODES"] = std::to_string(w.nnodes);
      inner["SLURM_NTASKS_PER_NODE"] = std::to_string(w.nproc_per_node);
      inner["SLURM_NTASKS"] = std::to_string(w.world());
      inner["WORLD_SIZE"] = std::to_string(w.world());  // what a rank started by srun would be told
      inner["LOCAL_WORLD_SIZE"] = std::to_string(w.nproc_per_node);
      std::cerr << "preflight run: srun's command runs once for the analysis, with " << w.world()
                << (w.world() == 1 ? " task (" : " tasks (") << w.nnodes
                << (w.nnodes == 1 ? " node × " : " nodes × ") << w.nproc_per_node << ", from " << w.source
                << ")\n";
      const std::vector<std::string> command(argv.begin() + *k, argv.end());
      try {
        wrap::exec_program(command, inner, skip);
      } catch (const InputError& e) {
        std::cerr << "srun: " << e.detail() << "\n";
        return 127;
      }
    }
  }
  // mpirun starting a shell or a script (`mpirun -np 16 --hostfile h bash -c '… bash train.sh …'`, vendors'
  // example launchers): for the analysis its command runs once, here, with the job size mpirun gives as Open
  // MPI's and MPICH's rank variables (rank 0) and WORLD_SIZE, and its -x VAR=value exports, so that the
  // launch inside reaches the shims (and without MPI on this machine).
  if ((c.shim == "mpirun" || c.shim == "mpiexec") && analysis_mode(c)) {
    auto k = wrap::mpirun_command_index(argv);
    const std::string program = k ? fs::path(argv[*k]).filename().string() : std::string();
    const bool shell = program == "bash" || program == "sh" || program == "dash" || program == "zsh" ||
                       (program.size() > 3 && program.ends_with(".sh"));
    if (k && shell) {  // a python script that is not an entry point is left to the check below
      const wrap::WorldSizeHints hints = size_hints(c);
      const std::vector<std::string> options(argv.begin() + 1, argv.begin() + *k);
      wrap::WorldSize w;
      try {
        w = wrap::mpirun_tasks(options, hints);
      } catch (const InputError& e) {
        std::cerr << "preflight run: " << e.what() << "\n";
        return kExitBadInput;
      }
      wrap::Environment inner = env;
      for (std::size_t i = 0; i + 1 < options.size(); ++i)
        if ((options[i] == "-x" || options[i] == "--x") && options[i + 1].find('=') != std::string::npos) {
          const auto eq = options[i + 1].find('=');
          inner[options[i + 1].substr(0, eq)] = options[i + 1].substr(eq + 1);
        }
      const std::string world = std::to_string(w.world()), local = std::to_string(w.nproc_per_node);
      for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "WORLD_SIZE"}) inner[v] = world;
      for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "LOCAL_WORLD_SIZE"})
        inner[v] = local;
      for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK",
                            "PMI_RANK", "PMIX_RANK", "MPI_LOCALRANKID"})
        inner[v] = "0";
      std::cerr << "preflight run: mpirun's command runs once for the analysis, as rank 0 of " << world
                << " (" << w.nnodes << " nodes × " << w.nproc_per_node << ", from " << w.source << ")\n";
      for (const auto& note : w.notes) std::cerr << "preflight run: note: " << note << "\n";
      try {
        wrap::exec_program(std::vector<std::string>(argv.begin() + *k, argv.end()), inner, fs::path());
      } catch (const InputError& e) {
        std::cerr << "mpirun: " << e.detail() << "\n";
        return 127;
      }
    }
  }
  // A job submission (sbatch / qsub / bsub / pjsub) in an analysis mode: the job is not submitted — that
  // would start the real run on the cluster — but runs here, once, with the size its options and header give,
  // so that its launches reach the shims (a submit script of many jobs, LLM-jp's run_train.sh, is analysed).
  if ((c.shim == "sbatch" || c.shim == "qsub" || c.shim == "bsub" || c.shim == "pjsub") && analysis_mode(c)) {
    const auto k = wrap::submission_script_index(argv);
    std::vector<std::string> options(argv.begin() + 1,
                                     k ? argv.begin() + static_cast<std::ptrdiff_t>(*k) : argv.end());
    std::string script_text;
    std::vector<std::string> command;
    std::optional<std::string> wrapped;  // sbatch --wrap "CMD"
    for (std::size_t i = 0; i < options.size(); ++i) {
      if (options[i] == "--wrap" && i + 1 < options.size()) wrapped = options[i + 1];
      if (options[i].rfind("--wrap=", 0) == 0) wrapped = options[i].substr(7);
    }
    if (wrapped) {
      command = {"sh", "-c", *wrapped};
    } else if (k) {
      command.assign(argv.begin() + static_cast<std::ptrdiff_t>(*k), argv.end());
      std::ifstream in(command.front());
      if (in) {
        std::stringstream t;
        t << in.rdbuf();
        script_text = t.str();
        // the job script through its interpreter (its shebang's shell, else bash)
        std::string shell = "bash";
        if (script_text.rfind("#!", 0) == 0) {
          const std::string first = script_text.substr(2, script_text.find('\n') - 2);
          std::istringstream w(first);
          std::string prog, arg;
          w >> prog >> arg;
          prog = fs::path(prog).filename().string();
          if (prog == "env") prog = arg;
          if (prog == "sh" || prog == "bash" || prog == "dash" || prog == "zsh" || prog == "csh" ||
              prog == "tcsh")
            shell = prog;
        }
        command.insert(command.begin(), shell);
      }
    } else {
      command = {"bash"};  // the job script on standard input (`sbatch <<EOF`, `bsub < job.sh`)
    }
    wrap::Environment inner = env;
    std::string said;
    auto set = [&](const std::string& name, const std::string& value) {
      if (!wrap::env_get(env, name).empty()) return;  // an allocation's own value wins
      inner[name] = value;
      said += (said.empty() ? "" : " ") + name + "=" + value;
    };
    std::vector<fs::path> host_files;
    if (c.shim == "sbatch") {
      const wrap::SbatchJobSize sbatch = wrap::sbatch_job_size(script_text, options, size_hints(c));
      for (const std::string& n : sbatch.notes) std::cerr << "preflight run: sbatch: " << n << "\n";
      for (const auto& [name, value] : sbatch.variables) set(name, value);
      for (const std::string& o : options)  // --export=NAME=value,… (ALL / NONE aside)
        if (o.rfind("--export=", 0) == 0)
          for (std::size_t b = 9; b <= o.size();) {
            std::size_t e = o.find(',', b);
            if (e == std::string::npos) e = o.size();
            const std::string item = o.substr(b, e - b);
            if (const auto eq = item.find('='); eq != std::string::npos)
              inner[item.substr(0, eq)] = item.substr(eq + 1);
            b = e + 1;
          }
    } else {
      // The options as header lines after the script's own (they win): the scheduler's directive, Grid
      // Engine's when the script has `#$` lines.
      const std::string directive =
          c.shim == "bsub"                                                                     ? "#BSUB"
          : c.shim == "pjsub"                                                                  ? "#PJM"
          : script_text.find("\n#$ ") != std::string::npos || script_text.rfind("#$ ", 0) == 0 ? "#$"
                                                                                               : "#PBS";
      std::string header_text = script_text + "\n" + directive;
      for (const std::string& o : options) header_text += " " + wrap::shell_quote(o);
      header_text += "\n";
      const wrap::BatchJob job = wrap::batch_job_header(header_text);
      for (const auto& [name, value] : job.variables) set(name, value);
      for (const std::string& name : job.workdir_variables) set(name, fs::current_path().string());
      for (const wrap::HostFile& f : job.host_files) {
        if (!wrap::env_get(env, f.variable).empty()) continue;
        const fs::path file =
            fs::temp_directory_path() / ("preflight-hosts-" + std::to_string(::getpid()) + "-" + f.variable);
        std::ofstream out(file);
        for (const std::string& line : wrap::host_file_lines(f)) out << line << '\n';
        host_files.push_back(file);
        set(f.variable, file.string());
      }
      for (std::size_t i = 0; i + 1 < options.size(); ++i)  // qsub -v NAME=value,…
        if (options[i] == "-v")
          for (std::size_t b = 0; b <= options[i + 1].size();) {
            std::size_t e = options[i + 1].find(',', b);
            if (e == std::string::npos) e = options[i + 1].size();
            const std::string item = options[i + 1].substr(b, e - b);
            if (const auto eq = item.find('='); eq != std::string::npos)
              inner[item.substr(0, eq)] = item.substr(eq + 1);
            b = e + 1;
          }
    }
    std::cerr << "preflight run: " << c.shim
              << "'s job runs here for the analysis, not submitted: " << join(command)
              << (said.empty() ? std::string() : " (" + said + ")") << "\n";
    // The job's output goes to our standard error (a job's output goes to its own file, and the submission's
    // standard output — often captured, JOB=$(sbatch --parsable …) — gets the scheduler's message).
    command.insert(command.begin(), {"sh", "-c", "exec \"$@\" 1>&2", "sh"});
    int code = 0;
    try {
      const pid_t pid = wrap::spawn_program(command, inner, std::nullopt, fs::path(), false);
      code = wrap::wait_foreground(pid);
      const bool parsable = std::find(options.begin(), options.end(), "--parsable") != options.end();
      std::cout << (c.shim == "sbatch" ? (parsable ? "1" : "Submitted batch job 1")
                    : c.shim == "qsub" ? "1.preflight"
                    : c.shim == "bsub" ? "Job <1> is submitted to default queue <preflight>."
                                       : "[INFO] PJM 0000 pjsub Job 1 submitted.")
                << std::endl;
    } catch (const InputError& e) {
      std::cerr << c.shim << ": " << e.detail() << "\n";
      code = 127;
    }
    for (const fs::path& f : host_files) {
      std::error_code ec;
      fs::remove(f, ec);
    }
    return code;
  }
  // numactl / taskset (a job script's `numactl --membind=0-3 $TRAINING_CMD`): the analysis runs the command
  // without the binding — it does not change what is computed, and a login node may lack the NUMA nodes (or
  // numactl).  The command goes through the shims, so a launch inside is analysed.
  if ((c.shim == "numactl" || c.shim == "taskset") && analysis_mode(c)) {
    // A query (numactl --hardware, taskset -p PID) goes to the real program; where there is none, it answers
    // nothing rather than failing the script (a job script reading its node's NUMA layout under set -e).
    if (!wrap::binding_command_index(argv) &&
        !wrap::find_program(c.shim, wrap::env_get(env, "PATH"), skip).has_value()) {
      std::cerr << "preflight run: " << c.shim << " is not installed here: `" << join(argv)
                << "` answers nothing for the analysis\n";
      return kExitOk;
    }
    if (auto k = wrap::binding_command_index(argv)) {
      std::cerr << "preflight run: " << c.shim << "'s binding is left out of the analysis\n";
      try {
        wrap::exec_program(std::vector<std::string>(argv.begin() + *k, argv.end()), env, fs::path());
      } catch (const InputError& e) {
        std::cerr << c.shim << ": " << e.detail() << "\n";
        return 127;
      }
    }
  }
  // NeMo 2's CLI other than pretrain / finetune (caught above as launches): `nemo llm import` downloads and
  // converts a checkpoint, `generate` / `deploy` / `export` need the trained model and GPUs — not run for the
  // analysis; `nemo --help` and the like run.
  if (c.shim == "nemo" && analysis_mode(c) && argv.size() > 2 && argv[1] == "llm" && argv[2] != "--help" &&
      argv[2] != "-h") {
    std::cerr << "preflight run: `" << join(argv) << "` is not run for the analysis (NeMo's " << argv[2]
              << " needs its checkpoints and GPUs)\n";
    return kExitOk;
  }
  // A distributed launcher (torchrun, deepspeed, msrun, mpirun, srun) starting a python script that is not a
  // known entry point: in analyze mode it is not run — on a cluster it would start the job for real (an
  // --entry glob analyses it with Megatron's arguments).  Plain python and everything else run untouched.
  if (!c.shim.empty() && analysis_mode(c)) {
    wrap::EntryPatterns any_script;
    any_script.globs = {"*.py"};
    if (auto m = wrap::match_launch(argv, any_script);
        m && m->launcher != wrap::Launcher::Python && !m->recipe_tool) {
      const std::string name = m->entry_name.substr(
          m->entry_name.rfind('/') == std::string::npos ? 0 : m->entry_name.rfind('/') + 1);
      // Megatron-Bridge's recipe scripts take a recipe name and Hydra overrides, not Megatron's flags: what
      // preflight reads of such a run is its saved configuration.
      const bool bridge_recipe = name == "pretrain_recipe.py" ||  // (run_recipe.py is an entry point)
                                 std::find(argv.begin(), argv.end(), "--recipe") != argv.end();
      std::cerr << "preflight run: " << wrap::launcher_name(m->launcher) << " starting " << m->entry_name
                << " — not a training entry point preflight knows (" << entries.describe()
                << "): not run in analyze mode (it would start the job for real); "
                << (bridge_recipe
                        ? "a Megatron-Bridge recipe script: price the recipe by its name (`preflight "
                          "estimate --bridge-config llama3_8b_pretrain_config -- --nproc_per_node N --nnodes "
                          "M`, as scripts/training/run_recipe.py --recipe takes it) or the run's saved "
                          "configuration (--bridge-config run_config.yaml: the recipe's "
                          "logger.save_config_filepath, a checkpoint's run_config.yaml, or its log)\n"
                        : "--entry '" + name + "' analyses it with Megatron's arguments\n");
      if (!skip.empty()) std::ofstream(skip / "skipped.log", std::ios::app) << m->entry_name << "\n";
      return kExitOk;
    }
  }
  if (!c.shim.empty()) {  // not a training launch: the real program, untouched
    try {
      wrap::exec_program(argv, env, skip);
    } catch (const InputError& e) {
      std::cerr << c.shim << ": " << e.detail() << "\n";
      return 127;
    }
  }
  return run_with_shims(c, env, argv);
}

}  // namespace

void check_command_after_dashes(const std::vector<std::string>& remaining, const char* command) {
  for (const std::string& r : remaining)
    if (r != "--")
      throw InputError(command, std::string("put the command to run after -- (preflight ") + command +
                                    " [options] -- CMD [ARGS…]); '" + r +
                                    "' was read as an option of preflight");
}

void add_launch_options(CLI::App& sub, LaunchCli& o) {
  sub.add_option("--entry", o.entries,
                 "another training entry point (file-name glob), besides pretrain_*.py and run_mindformer.py")
      ->allow_extra_args(false);
  sub.add_option("--analyze-arg", o.analyze_args,
                 "analyze mode: an option for preflight analyze, e.g. --analyze-arg=--json")
      ->allow_extra_args(false);
  sub.add_option("--search-arg", o.search_args,
                 "search mode: an option for preflight search, e.g. --search-arg=--system=h100-sxm "
                 "--search-arg=--tp=1,2,4,8")
      ->allow_extra_args(false);
  sub.add_option("--gpus-per-node", o.gpus_per_node,
                 "processes per node when the launcher does not say (deepspeed without --num_gpus)");
  sub.add_option("--nnodes", o.nnodes, "nodes when the launcher does not say");
  sub.add_option("--steps", o.steps,
                 "trace mode: iterations of the short run (Megatron: --train-iters N, or --exit-interval N "
                 "when it trains by samples; default 10; other entry points get --steps N)");
  sub.add_flag("--full-run", o.full_run, "trace mode: do not shorten the run");
  sub.add_option("--trace-dir", o.trace_dir, "trace mode: per-run trace folders go here")
      ->capture_default_str();
  sub.add_option("--trace-min-bytes", o.trace_min_bytes, "trace mode: PREFLIGHT_TRACE_MIN_BYTES");
  sub.add_option("--trace-host", o.trace_host, "trace mode: PREFLIGHT_TRACE_HOST (0/1)");
  sub.add_option("--trace-cuda", o.trace_cuda, "trace mode: PREFLIGHT_TRACE_CUDA (0/1)");
}

std::vector<std::string> launch_run_words(const LaunchCli& o, bool analyze, bool trace) {
  std::vector<std::string> f;
  for (const std::string& e : o.entries) f.insert(f.end(), {"--entry", e});
  if (o.gpus_per_node > 0) f.insert(f.end(), {"--gpus-per-node", std::to_string(o.gpus_per_node)});
  if (o.nnodes > 0) f.insert(f.end(), {"--nnodes", std::to_string(o.nnodes)});
  if (analyze) {
    for (const std::string& a : o.analyze_args) f.push_back("--analyze-arg=" + a);
    for (const std::string& a : o.search_args) f.push_back("--search-arg=" + a);
  }
  if (trace) {
    if (o.steps >= 0) f.insert(f.end(), {"--steps", std::to_string(o.steps)});
    if (o.full_run) f.push_back("--full-run");
    if (!o.trace_dir.empty()) f.insert(f.end(), {"--trace-dir", o.trace_dir});
    if (o.trace_min_bytes >= 0) f.insert(f.end(), {"--trace-min-bytes", std::to_string(o.trace_min_bytes)});
    if (o.trace_host >= 0) f.insert(f.end(), {"--trace-host", std::to_string(o.trace_host)});
    if (o.trace_cuda >= 0) f.insert(f.end(), {"--trace-cuda", std::to_string(o.trace_cuda)});
  }
  return f;
}

Command run_command() {
  return {
      "run",
      "run a launch, or a whole script with torchrun/deepspeed/msrun/python shadowed, under analyze or trace",
      [](CLI::App& sub) -> std::function<int()> {
        auto c = std::make_shared<RunCli>();
        sub.add_option("--mode", c->mode,
                       "analyze (default) | trace | search (the launch as `preflight search`'s base, "
                       "--search-arg options)")
            ->check(CLI::IsMember({"analyze", "trace", "search"}));
        c->launch.trace_dir = "preflight_traces";
        add_launch_options(sub, c->launch);
        sub.add_flag("--explain", c->explain, "trace mode: print the environment and command, run nothing");
        sub.add_option("--shim", c->shim, "(used by the PATH shims) the name the command was called by")
            ->group("");
        sub.add_option("command", c->command, "the launch or script to run, after --");
        sub.prefix_command();  // with the positional above: everything after -- lands in it, in order
        sub.footer("usage: preflight run [options] -- CMD [ARGS…]");
        CLI::App* app = &sub;
        return [c, app]() {
          check_command_after_dashes(app->remaining(), "run");
          restore_bracket_words(c->command);
          return run_run(*c);
        };
      }};
}

}  // namespace preflight::cli
