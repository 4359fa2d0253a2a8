// Trace environment, short runs and PATH shims for `preflight run`.  See run.hpp.
#include "preflight/wrap/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include "preflight/common/error.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::wrap {

namespace fs = std::filesystem;

namespace {

/// `first` in front of the list `rest` (separator `sep`), without repeating it.
std::string put_first(const std::string& first, const std::string& rest, char sep) {
  std::string out = first;
  std::size_t start = 0;
  while (start <= rest.size()) {
    auto pos = rest.find(sep, start);
    std::string item = rest.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
    start = pos == std::string::npos ? rest.size() + 1 : pos + 1;
    if (item.empty() || item == first) continue;
    out += sep;
    out += item;
  }
  return out;
}

}  // namespace

HookFiles locate_hook(const fs::path& exe, const Environment& env) {
  HookFiles h;
  fs::path lib_dir = fs::absolute(exe).parent_path() / ".." / "lib";
  std::string lib = env_get(env, "PREFLIGHT_HOOK_LIB");
  std::string py = env_get(env, "PREFLIGHT_HOOK_PYTHONPATH");
  h.library = fs::absolute(lib.empty() ? lib_dir / "libpreflight_hook.so" : fs::path(lib)).lexically_normal();
  h.pythonpath = fs::absolute(py.empty() ? lib_dir / "python" : fs::path(py)).lexically_normal();
  if (!fs::is_regular_file(h.library))
    throw InputError(h.library.string(),
                     "the allocator hook library is missing: build the allocator_hook target, or set "
                     "PREFLIGHT_HOOK_LIB to libpreflight_hook.so");
  if (!fs::is_directory(h.pythonpath))
    throw InputError(h.pythonpath.string(),
                     "the hook's Python glue directory is missing: build the allocator_hook target, or set "
                     "PREFLIGHT_HOOK_PYTHONPATH to the directory holding its sitecustomize.py");
  return h;
}

fs::path make_run_dir(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw InputError(root.string(), "cannot create the trace directory: " + ec.message());
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string base = "run-" + std::string(stamp) + "-" + std::to_string(::getpid());
  for (int k = 0; k < 1000; ++k) {
    fs::path dir = fs::absolute(root) / (k == 0 ? base : base + "-" + std::to_string(k));
    if (fs::create_directory(dir, ec)) return dir.lexically_normal();
    if (ec) throw InputError(dir.string(), "cannot create the run directory: " + ec.message());
  }
  throw InputError(root.string(), "cannot find a free run directory name");
}

Environment trace_environment(const Environment& base, const HookFiles& hook, const fs::path& run_dir,
                              const TraceOptions& options) {
  Environment env = base;
  env["LD_PRELOAD"] = put_first(hook.library.string(), env_get(base, "LD_PRELOAD"), ':');
  env["PYTHONPATH"] = put_first(hook.pythonpath.string(), env_get(base, "PYTHONPATH"), ':');
  env["PREFLIGHT_TRACE_DIR"] = run_dir.string();
  if (options.min_bytes) env["PREFLIGHT_TRACE_MIN_BYTES"] = std::to_string(*options.min_bytes);
  if (options.host) env["PREFLIGHT_TRACE_HOST"] = *options.host ? "1" : "0";
  if (options.cuda) env["PREFLIGHT_TRACE_CUDA"] = *options.cuda ? "1" : "0";
  return env;
}

std::vector<std::string> short_run_args(const LaunchCommand& launch, const TraceOptions& options,
                                        std::vector<std::string>& notes) {
  if (options.full_run) return {};
  const int steps = options.steps.value_or(kDefaultTraceSteps);
  const std::string n = std::to_string(steps);
  if (is_megatron_entry(launch)) {
    if (has_flag(launch.entry_args, "--train-samples")) {
      notes.push_back("the script trains by samples (--train-samples): the run stops with --exit-interval " +
                      n);
      return {"--exit-interval", n};
    }
    return {"--train-iters", n};
  }
  std::string base =
      launch.entry.substr(launch.entry.rfind('/') == std::string::npos ? 0 : launch.entry.rfind('/') + 1);
  if (is_mindspeed_fsdp2_entry(launch.entry)) return {"--training.max_steps", n};  // (its command line wins)
  if (base == "run_mindformer.py") {
    notes.push_back(
        "run_mindformer.py has no step-count flag: the run is not shortened (limit it in the YAML, e.g. "
        "runner_config.epochs and sink_size)");
    return {};
  }
  if (options.steps) return {"--steps", n};
  return {};
}

std::vector<std::string> shim_names(const std::string& path_var) {
  std::vector<std::string> names;
  for (const LauncherInfo& l : launchers())
    for (const char* shim : l.shims) names.push_back(shim);
  names.push_back("nvidia-smi");  // a script's GPU count, answered in analyze mode (cmd_run.cpp)
  // Remote shells: in analysis modes a launch meant for another node runs here, once (cmd_run.cpp)
  for (const char* remote : {"ssh", "pdsh", "clush", "qrsh"}) names.push_back(remote);
  names.push_back("scontrol");    // Slurm's host list where Slurm is not installed (cmd_run.cpp)
  names.push_back("ds_ssh");      // DeepSpeed's cluster-wide form of it (Megatron-DeepSpeed's examples)
  names.push_back("numactl");     // CPU / memory binding: the analysis runs the command without it
  // A runner that picks its own python (`uv run [options] python …`, Megatron-Bridge's scripts): a launch
  // after it is read as one; anything else goes to the real uv
  names.push_back("uv");
  names.push_back("taskset");
  // Package installs before the launch (`pip install -r requirements.txt`): not run in analysis modes
  names.push_back("pip");
  names.push_back("pip3");
  // Job submissions: in analysis modes the job runs here instead of being submitted (cmd_run.cpp)
  for (const char* submit : {"sbatch", "qsub", "bsub", "pjsub"}) names.push_back(submit);
  for (int minor = 6; minor <= 20; ++minor) {
    std::string n = "python3." + std::to_string(minor);
    if (find_program(n, path_var)) names.push_back(n);
  }
  return names;
}

void write_shims(const fs::path& dir, const fs::path& preflight, const std::vector<std::string>& names,
                 const std::vector<std::string>& forward) {
  for (const std::string& name : names) {
    fs::path file = dir / name;
    std::ofstream out(file, std::ios::trunc);
    if (!out) throw InputError(file.string(), "cannot write the shim");
    out << "#!/bin/sh\n# preflight run shim: launches of training entry points go to preflight, the rest to "
           "the "
           "real "
        << name << "\nexec " << shell_quote(preflight.string()) << " run --shim " << shell_quote(name);
    for (const std::string& f : forward) out << " " << shell_quote(f);
    out << " -- \"$@\"\n";
    out.close();
    if (!out) throw InputError(file.string(), "cannot write the shim");
    std::error_code ec;
    fs::permissions(file, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec, ec);
    if (ec) throw InputError(file.string(), "cannot make the shim executable: " + ec.message());
  }
}

std::vector<fs::path> list_trace_files(const fs::path& run_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(run_dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace preflight::wrap
