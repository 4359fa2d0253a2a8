// The launchers preflight knows (one table), and how each says its world size.  See launch.hpp.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>

#include <yaml-cpp/yaml.h>

#include "launch_words.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/launch.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::wrap {

namespace detail {

std::optional<int> positive_count(std::string_view s) {
  if (s.empty() || s.size() > 6 ||
      !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  const int n = std::stoi(std::string(s));
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

std::string_view basename_of(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_runner(std::string_view name) {
  // (container runners too: `docker exec -it CTR torchrun …`, `docker run --gpus all … IMAGE torchrun …`,
  // podman's and enroot's alike — the analysis runs outside the container, without them)
  static constexpr std::string_view kRunners[] = {"uv",          "nsys", "ncu",    "numactl", "taskset",
                                                  "stdbuf",      "nice", "ionice", "timeout", "apptainer",
                                                  "singularity", "chrt", "docker", "podman",  "enroot"};
  for (std::string_view r : kRunners)
    if (name == r) return true;
  return false;
}

bool is_python(std::string_view name) {
  if (name.substr(0, 6) != "python") return false;
  for (char c : name.substr(6))
    if (!((c >= '0' && c <= '9') || c == '.')) return false;
  return true;
}

bool is_assignment(std::string_view w) {
  auto eq = w.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  for (std::size_t i = 0; i < eq; ++i) {
    char c = w[i];
    bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string normalize_flag(std::string_view f) {
  std::string s(f);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

}  // namespace detail

using detail::basename_of;
using detail::is_python;

const std::vector<LauncherInfo>& launchers() {
  using E = EntryPosition;
  using W = WorldSizeSource;
  static const std::vector<LauncherInfo> all = {
      {Launcher::Torchrun,
       "torchrun",
       {"torchrun"},
       nullptr,
       {"torchrun"},
       E::AnyArgument,
       W::TorchFlags,
       true,
       false},
      {Launcher::TorchDistributedRun,
       "python -m torch.distributed.run",
       {},
       "torch.distributed.run",
       {},
       E::AnyArgument,
       W::TorchFlags,
       true,
       false},
      {Launcher::TorchDistributedLaunch,
       "python -m torch.distributed.launch",
       {},
       "torch.distributed.launch",
       {},
       E::AnyArgument,
       W::TorchFlags,
       true,
       false},
      {Launcher::Deepspeed,
       "deepspeed",
       {"deepspeed"},
       nullptr,
       {"deepspeed"},
       E::AnyArgument,
       W::Deepspeed,
       false,
       false},
      {Launcher::Msrun, "msrun", {"msrun"}, nullptr, {"msrun"}, E::AnyArgument, W::Msrun, false, true},
      {Launcher::MsrunLauncher,
       "msrun_launcher.sh",
       {"msrun_launcher.sh"},
       nullptr,
       {},
       E::CommandString,
       W::MsrunLauncher,
       false,
       true},
      {Launcher::Python,
       "python",
       {},
       nullptr,
       {"python", "python3"},
       E::AfterOptions,
       W::OneProcess,
       true,
       false},
      {Launcher::Srun, "srun", {"srun"}, nullptr, {"srun"}, E::InnerLaunch, W::Slurm, false, false},
      {Launcher::Mpirun,
       "mpirun",
       {"mpirun", "mpiexec"},
       nullptr,
       {"mpirun", "mpiexec"},
       E::InnerLaunch,
       W::Mpi,
       false,
       false},
      {Launcher::MegatronSwift,
       "megatron sft|pt (ms-swift)",
       {"megatron"},
       nullptr,
       {"megatron"},
       E::Subcommand,
       W::SwiftEnv,
       false,
       false},
      {Launcher::Accelerate,
       "accelerate launch",
       {"accelerate"},
       nullptr,
       {"accelerate"},
       E::AnyArgument,
       W::Accelerate,
       false,
       false},
      {Launcher::NemoCli,
       "nemo llm pretrain|finetune (NeMo 2)",
       {"nemo"},
       nullptr,
       {"nemo"},
       E::Subcommand,
       W::Configuration,
       false,
       false},
  };
  return all;
}

const LauncherInfo& launcher_info(Launcher l) {
  for (const LauncherInfo& info : launchers())
    if (info.id == l) return info;
  return launchers().front();
}

std::string launcher_name(Launcher l) {
  return launcher_info(l).name;
}

bool is_torch_launcher(Launcher l) {
  return launcher_info(l).world == WorldSizeSource::TorchFlags;
}

bool is_mindspore_launcher(Launcher l) {
  return launcher_info(l).mindspore;
}

namespace {

struct Host {
  std::string name;
  int slots;
};

std::vector<Host> read_hostfile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), "cannot read the deepspeed hostfile");
  std::vector<Host> hosts;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::vector<std::string> words = split_shell_words(line, location(path.string(), lineno));
    if (words.empty()) continue;
    int slots = 0;
    for (std::size_t i = 1; i < words.size(); ++i)
      if (words[i].rfind("slots=", 0) == 0)
        slots = parse_count(words[i].substr(6), location(path.string(), lineno));
    if (slots == 0) throw InputError(location(path.string(), lineno), "expected 'HOST slots=N'");
    hosts.push_back({words[0], slots});
  }
  if (hosts.empty()) throw InputError(path.string(), "the deepspeed hostfile lists no host");
  return hosts;
}

/// deepspeed --include/--exclude "host1:0,1@host2" applied to the host list (runner.py
/// parse_resource_filter).
void filter_hosts(std::vector<Host>& hosts, const std::string& spec, bool include, const std::string& where) {
  std::vector<Host> picked;
  std::set<std::string> seen;
  for (std::size_t start = 0; start <= spec.size();) {
    auto at = spec.find('@', start);
    std::string item = spec.substr(start, at == std::string::npos ? std::string::npos : at - start);
    start = at == std::string::npos ? spec.size() + 1 : at + 1;
    if (item.empty()) continue;
    std::string host = item;
    int count = -1;
    if (auto colon = item.find(':'); colon != std::string::npos) {
      host = item.substr(0, colon);
      count = 1 + static_cast<int>(
                      std::count(item.begin() + static_cast<std::ptrdiff_t>(colon), item.end(), ','));
    }
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const Host& h) { return h.name == host; });
    if (it == hosts.end()) {
      if (hosts.size() == 1 && hosts[0].name == "localhost") {
        it = hosts.begin();  // no hostfile: deepspeed accepts localhost filters
      } else {
        throw InputError(where, "host '" + host + "' is not in the host list");
      }
    }
    if (include) {
      picked.push_back({it->name, count < 0 ? it->slots : count});
    } else if (count < 0) {
      seen.insert(it->name);
    } else {
      it->slots = std::max(0, it->slots - count);
    }
  }
  if (include) {
    hosts = picked;
  } else {
    std::erase_if(hosts, [&](const Host& h) { return seen.count(h.name) > 0 || h.slots == 0; });
  }
  if (hosts.empty()) throw InputError(where, "selects no device");
}

/// `-n N`, `-nN`, `--ntasks N`, `--ntasks=N` (short and long spellings of one srun option) before the
/// interpreter word; the last one wins, as srun takes it.
std::optional<std::string> srun_option(const std::vector<std::string>& args, std::string_view short_name,
                                       std::string_view long_name) {
  std::optional<std::string> found;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (is_python(basename_of(a))) break;
    if ((!short_name.empty() && a == short_name) || a == long_name) {
      if (i + 1 < args.size()) found = args[++i];
    } else if (!short_name.empty() && a.size() > 2 && a.rfind(short_name, 0) == 0 && a[1] != '-') {
      found = a.substr(short_name.size());
    } else if (a.size() > long_name.size() && a.rfind(long_name, 0) == 0 && a[long_name.size()] == '=') {
      found = a.substr(long_name.size() + 1);
    }
  }
  return found;
}

std::optional<std::string> env_value(const std::map<std::string, std::string>& env,
                                     std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (auto it = env.find(n); it != env.end() && !it->second.empty()) return it->second;
  return std::nullopt;
}

/// SLURM's world size for `srun [options] python ENTRY`: tasks per node × nodes, from the options, else
/// the allocation's variables (srun inside sbatch/salloc inherits them), else srun's default of one task
/// per node.  `--nodes MIN-MAX` counts MIN; SLURM_NTASKS_PER_NODE such as `8(x2)` counts 8.
WorldSize srun_world_size(const std::vector<std::string>& args, const WorldSizeHints& hints,
                          const std::map<std::string, std::string>& env) {
  WorldSize w;
  std::vector<std::string> from;
  auto count = [&](std::optional<std::string> text, const std::string& where,
                   bool range) -> std::optional<int> {
    if (!text) return std::nullopt;
    std::string t = *text;
    if (range) t = t.substr(0, t.find('-'));
    if (auto paren = t.find('('); paren != std::string::npos) t = t.substr(0, paren);
    from.push_back(where);
    return parse_count(t, where);
  };
  // Sizes on the command line replace the allocation's altogether (srun -N 1 -n 2 inside a 4-node job).
  const bool given = srun_option(args, "-n", "--ntasks") || srun_option(args, "", "--ntasks-per-node") ||
                     srun_option(args, "-N", "--nodes");
  auto pick = [&](std::string_view s, std::string_view l, std::initializer_list<const char*> vars,
                  bool range) -> std::optional<int> {
    if (given) return count(srun_option(args, s, l), "srun " + std::string(l), range);
    for (const char* var : vars)
      if (auto v = env_value(env, {var})) return count(v, var, range);
    return std::nullopt;
  };
  std::optional<int> ntasks = pick("-n", "--ntasks", {"SLURM_NTASKS", "SLURM_NPROCS"}, false);
  std::optional<int> per_node = pick("", "--ntasks-per-node", {"SLURM_NTASKS_PER_NODE"}, false);
  std::optional<int> nodes = pick("-N", "--nodes", {"SLURM_JOB_NUM_NODES", "SLURM_NNODES"}, true);
  if (!nodes && hints.nnodes) {
    nodes = hints.nnodes;
    from.push_back("--nnodes");
  }
  if (per_node) {
    w.nproc_per_node = ntasks ? std::min(*per_node, *ntasks) : *per_node;
    w.nnodes = ntasks ? (*ntasks + *per_node - 1) / *per_node : nodes.value_or(1);
    if (ntasks && *ntasks % *per_node != 0)
      w.notes.push_back("srun: " + std::to_string(*ntasks) + " tasks is not a multiple of " +
                        std::to_string(*per_node) + " per node");
  } else if (ntasks) {
    w.nnodes = std::min(nodes.value_or(1), *ntasks);
    w.nproc_per_node = (*ntasks + w.nnodes - 1) / w.nnodes;
    if (*ntasks % w.nnodes != 0)
      w.notes.push_back("srun: " + std::to_string(*ntasks) + " tasks do not spread evenly over " +
                        std::to_string(w.nnodes) + " nodes; counting " + std::to_string(w.nproc_per_node) +
                        " per node");
  } else {
    w.nnodes = nodes.value_or(1);
    w.nproc_per_node = 1;
    w.notes.push_back(
        "srun without -n/--ntasks/--ntasks-per-node (and no SLURM_NTASKS): one task per node, srun's "
        "default");
  }
  w.source.clear();
  for (const std::string& f : from) w.source += (w.source.empty() ? "" : ", ") + f;
  if (w.source.empty()) w.source = "srun defaults";
  return w;
}

}  // namespace

std::optional<RemoteCommand> remote_command(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  RemoteCommand r;
  r.tool = std::string(basename_of(argv[0]));
  // Short options that take a value (attached, -p22, or the next word); any other letters are switches, which
  // may be combined (ssh -tt, -qn).  Long options (clush --nostdin, pdsh has none) take their value after '='
  // or, where listed, the next word.
  std::string_view with_value;
  std::set<std::string> long_with_value;
  bool host_word = false;
  if (r.tool == "ssh") {
    with_value = "BbcDEeFIiJLlmOopQRSWw";
    host_word = true;
  } else if (r.tool == "pdsh") {
    with_value = "wxgXRltufFmN";
  } else if (r.tool == "clush") {
    with_value = "wxgXftulOoRE";
    long_with_value = {"--nodes",   "--exclude",     "--group",   "--fanout", "--user",
                       "--options", "--worker",      "--rcopy",   "--copy",   "--dest",
                       "--pick",    "--groupsource", "--topology"};
  } else if (r.tool == "qrsh") {
    // Grid Engine's qrsh(1): switches below; every other option takes the next word (-now y|n, -l, -q, -pe
    // takes two).  `-inherit` runs on a host of the job's own allocation, named next.
    static const std::set<std::string> switches = {"-inherit", "-V",   "-cwd", "-verbose", "-noshell",
                                                   "-nostdin", "-pty", "-X",   "-h",       "-help"};
    std::size_t i = 1;
    for (; i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-'; ++i) {
      if (argv[i] == "-inherit") host_word = true;
      if (switches.count(argv[i])) continue;
      i += argv[i] == "-pe" ? 2 : 1;
    }
    if (host_word && i < argv.size()) r.hosts = argv[i++];
    if (i >= argv.size()) return std::nullopt;
    r.command = i;
    return r;
  } else {
    return std::nullopt;
  }
  std::size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    if (a[1] == '-') {  // a long option (clush's)
      const std::string name = a.substr(0, a.find('='));
      if (a.find('=') == std::string::npos && long_with_value.count(name) && i + 1 < argv.size()) {
        if (name == "--nodes") r.hosts = argv[i + 1];
        ++i;
      } else if (name == "--nodes") {
        r.hosts = a.substr(a.find('=') + 1);
      }
      continue;
    }
    // -tt, -qn: switches; the first letter that takes a value takes the rest of the word or the next one
    for (std::size_t c = 1; c < a.size(); ++c) {
      if (with_value.find(a[c]) == std::string_view::npos) continue;
      std::string value;
      if (c + 1 < a.size()) {
        value = a.substr(c + 1);
      } else if (i + 1 < argv.size()) {
        value = argv[++i];
      }
      if (a[c] == 'w' && r.tool != "ssh") r.hosts = value;
      break;
    }
  }
  if (host_word) {
    if (i >= argv.size()) return std::nullopt;
    r.hosts = argv[i++];
  }
  if (i >= argv.size()) return std::nullopt;
  r.command = i;
  return r;
}

RemoteKind remote_command_kind(std::string_view text) {
  RemoteKind kind = RemoteKind::Other;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find_first_of(";&|()\n`", at);
    const std::string_view part =
        text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    at = end == std::string_view::npos ? text.size() : end + 1;
    // the command word: the first word that is no assignment or prefix (quotes around it dropped)
    std::size_t w = 0;
    while (w < part.size()) {
      w = part.find_first_not_of(" \t\"'{", w);
      if (w == std::string_view::npos) break;
      std::size_t e = part.find_first_of(" \t\"'", w);
      if (e == std::string_view::npos) e = part.size();
      const std::string_view word = part.substr(w, e - w);
      w = e;
      if (detail::is_assignment(word) || word == "env" || word == "nohup" || word == "exec" ||
          word == "time" || word == "then" || word == "do" || word == "else")
        continue;
      const std::string_view base = basename_of(word);
      if (base == "torchrun" || base == "deepspeed" || base == "msrun" || base == "megatron" ||
          base == "srun" || base == "mpirun" || base == "mpiexec" || detail::is_python(base) ||
          base == "bash" || base == "sh" || base == "eval" || base == "source" || base == "." ||
          (base.size() > 3 && base.ends_with(".sh")) || detail::is_runner(base))
        return RemoteKind::Starts;
      if (base == "nvidia-smi" || base == "hostname") kind = RemoteKind::Query;
      break;
    }
  }
  return kind;
}

std::optional<std::string> package_install_command(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  const std::string tool(basename_of(argv[0]));
  std::size_t i = 1;
  std::string said;
  auto is_pip = [](std::string_view name) {
    return name == "pip" || name == "pip3" || (name.rfind("pip3.", 0) == 0 && name.size() > 5);
  };
  if (is_pip(tool)) {
    said = tool;
  } else if (tool.rfind("python", 0) == 0) {
    // python [-u -q …] -m pip …: the interpreter's own switches take no value except -W / -X / -c
    while (i < argv.size() && argv[i] != "-m") {
      const std::string& a = argv[i];
      if (a.size() < 2 || a[0] != '-' || a == "-c") return std::nullopt;
      i += (a == "-W" || a == "-X") ? 2 : 1;
    }
    if (i + 1 >= argv.size() || !is_pip(argv[i + 1])) return std::nullopt;
    said = tool + " -m " + argv[i + 1];
    i += 2;
  } else if (tool == "uv") {
    if (argv.size() < 3 || argv[1] != "pip") return std::nullopt;
    return argv[2] == "install" || argv[2] == "uninstall" || argv[2] == "sync"
               ? std::optional<std::string>("uv pip " + argv[2])
               : std::nullopt;
  } else {
    return std::nullopt;
  }
  // pip's general options before the command (pip/_internal/cli/cmdoptions.py general_group)
  static const std::set<std::string> with_value = {"--log",
                                                   "--log-file",
                                                   "--python",
                                                   "--proxy",
                                                   "--retries",
                                                   "--timeout",
                                                   "--exists-action",
                                                   "--trusted-host",
                                                   "--cert",
                                                   "--client-cert",
                                                   "--cache-dir",
                                                   "--use-feature",
                                                   "--use-deprecated",
                                                   "--keyring-provider",
                                                   "--index-url",
                                                   "--extra-index-url",
                                                   "-i"};
  while (i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-')
    i += argv[i].find('=') == std::string::npos && with_value.count(argv[i]) ? 2 : 1;
  if (i < argv.size() && (argv[i] == "install" || argv[i] == "uninstall")) return said + " " + argv[i];
  return std::nullopt;
}

std::optional<std::size_t> binding_command_index(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  const std::string_view tool = basename_of(argv[0]);
  const std::size_t n = argv.size();
  std::size_t i = 1;
  if (tool == "numactl") {
    // numactl(8): the policy options take a value (attached to a short option or after '=' is the same);
    // the rest are switches.  Options end at the first other word, as getopt's "+" mode.
    static const std::set<std::string> with_value = {"--interleave",
                                                     "--preferred",
                                                     "--membind",
                                                     "--cpunodebind",
                                                     "--physcpubind",
                                                     "--cpubind",
                                                     "--preferred-many",
                                                     "--weighted-interleave",
                                                     "--offset",
                                                     "--length",
                                                     "--shm",
                                                     "--shmid",
                                                     "--file",
                                                     "--mode"};
    while (i < n) {
      const std::string& a = argv[i];
      if (a == "--") return i + 1 < n ? std::optional<std::size_t>(i + 1) : std::nullopt;
      if (a.size() < 2 || a[0] != '-') break;
      if (a[1] == '-')
        i += a.find('=') == std::string::npos && with_value.count(a) ? 2 : 1;
      else
        i += std::string_view("ipmNCPwoLSfM").find(a[1]) != std::string_view::npos && a.size() == 2 ? 2 : 1;
    }
  } else if (tool == "taskset") {
    // taskset(1): [-a] [-c] MASK|LIST COMMAND …; -p works on a running process.
    while (i < n && argv[i].size() > 1 && argv[i][0] == '-') {
      const std::string& a = argv[i];
      if (a == "--pid" || (a[1] != '-' && a.find('p') != std::string::npos)) return std::nullopt;
      ++i;
    }
    ++i;  // the mask or CPU list
  } else {
    return std::nullopt;
  }
  return i < n ? std::optional<std::size_t>(i) : std::nullopt;
}

std::optional<std::size_t> srun_command_index(const std::vector<std::string>& argv) {
  // srun's options that are switches (everything else given without '=' takes the next word).
  static const std::set<std::string> switches = {"-l",
                                                 "-u",
                                                 "-Q",
                                                 "-v",
                                                 "-X",
                                                 "-E",
                                                 "-H",
                                                 "-k",
                                                 "-K",
                                                 "-O",
                                                 "-s",
                                                 "-Z",
                                                 "-h",
                                                 "--label",
                                                 "--unbuffered",
                                                 "--quiet",
                                                 "--verbose",
                                                 "--exclusive",
                                                 "--overcommit",
                                                 "--pty",
                                                 "--no-kill",
                                                 "--kill-on-bad-exit",
                                                 "--disable-status",
                                                 "--test-only",
                                                 "--spread-job",
                                                 "--multi-prog",
                                                 "--help",
                                                 "--usage",
                                                 "--container-remap-root",
                                                 "--no-container-remap-root",
                                                 "--container-mount-home",
                                                 "--no-container-mount-home",
                                                 "--container-writable",
                                                 "--container-readonly",
                                                 "--container-entrypoint",
                                                 "--no-container-entrypoint",
                                                 "--preserve-env",
                                                 "--propagate",
                                                 "--contiguous",
                                                 "--oversubscribe",
                                                 "--exact",
                                                 "--whole",
                                                 "--overlap",
                                                 "--nvmps"};
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return i + 1 < argv.size() ? std::optional<std::size_t>(i + 1) : std::nullopt;
    if (a.empty() || a[0] != '-') return i;
    if (switches.count(a) || a.find('=') != std::string::npos) continue;
    if (a.size() > 2 && a[1] != '-') continue;  // -N2: the value attached
    ++i;                                        // the option's value
  }
  return std::nullopt;
}

std::optional<std::size_t> submission_script_index(const std::vector<std::string>& argv) {
  // Each scheduler's switches (every other option takes the next word unless given as --opt=value or with its
  // value attached, -N2): the same letters mean different things (sbatch -v verbose, qsub -v variables).
  static const std::set<std::string> sbatch = {"--exclusive",  "--wait",
                                               "-W",           "-H",
                                               "--hold",       "--requeue",
                                               "--no-requeue", "--parsable",
                                               "--test-only",  "-Q",
                                               "--quiet",      "-v",
                                               "--verbose",    "--contiguous",
                                               "--overcommit", "-O",
                                               "--spread-job", "--use-min-nodes",
                                               "--ignore-pbs", "--no-kill",
                                               "-k",           "--oversubscribe",
                                               "-s",           "--help",
                                               "--usage",      "-h"};
  static const std::set<std::string> qsub = {"-V",   "-I",     "-X",    "-z",   "-h", "-f",
                                             "-cwd", "-terse", "-sync", "-now", "-b", "-notify"};
  static const std::set<std::string> bsub = {"-K", "-B",  "-N",  "-r",  "-rn", "-x",
                                             "-I", "-Ip", "-Is", "-is", "-H"};
  static const std::set<std::string> pjsub = {"-X", "-z", "--no-check-directory", "--step", "--bulk"};
  if (argv.empty()) return std::nullopt;
  const std::string_view tool = detail::basename_of(argv[0]);
  const std::set<std::string>& switches = tool == "sbatch"  ? sbatch
                                          : tool == "bsub"  ? bsub
                                          : tool == "pjsub" ? pjsub
                                                            : qsub;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--") return i + 1 < argv.size() ? std::optional<std::size_t>(i + 1) : std::nullopt;
    if (a.empty() || a[0] != '-') return i;
    if (switches.count(a) || a.find('=') != std::string::npos) continue;
    if (tool == "qsub" && a == "-pe") {  // Grid Engine's -pe NAME SLOTS
      i += 2;
      continue;
    }
    if (a.size() > 2 && a[1] != '-' && tool != "qsub" && tool != "bsub") continue;  // -N2
    ++i;
  }
  return std::nullopt;
}

WorldSize srun_tasks(const std::vector<std::string>& srun_options, const WorldSizeHints& hints,
                     const std::map<std::string, std::string>& env) {
  return srun_world_size(srun_options, hints, env);
}

std::optional<std::size_t> mpirun_command_index(const std::vector<std::string>& argv) {
  // Open MPI / MPICH / Intel MPI switches (other options take the next word unless given as --opt=value;
  // --mca / --gmca take two).
  static const std::set<std::string> switches = {"--allow-run-as-root",
                                                 "-allow-run-as-root",
                                                 "--oversubscribe",
                                                 "-oversubscribe",
                                                 "--nooversubscribe",
                                                 "--tag-output",
                                                 "-tag-output",
                                                 "--timestamp-output",
                                                 "--report-bindings",
                                                 "-report-bindings",
                                                 "--display-map",
                                                 "-display-map",
                                                 "--display-allocation",
                                                 "--display-devel-map",
                                                 "-v",
                                                 "--verbose",
                                                 "-q",
                                                 "--quiet",
                                                 "--noprefix",
                                                 "--use-hwthread-cpus",
                                                 "--nolocal",
                                                 "-nolocal",
                                                 "--merge-stderr-to-stdout",
                                                 "--show-progress",
                                                 "--enable-recovery",
                                                 "--disable-recovery",
                                                 "--continuous",
                                                 "--leave-session-attached",
                                                 "--do-not-resolve",
                                                 "--bind-to-core",
                                                 "--bind-to-socket",
                                                 "--bynode",
                                                 "-bynode",
                                                 "--byslot",
                                                 "-byslot",
                                                 "-l",
                                                 "-prepend-rank",
                                                 "-print-rank-map",
                                                 "-disable-auto-cleanup",
                                                 "-ordered-output",
                                                 "-rr",
                                                 "-genvall",
                                                 "-genvnone",
                                                 "-envall",
                                                 "-envnone",
                                                 "--help",
                                                 "-h",
                                                 "--version",
                                                 "-V",
                                                 "--debug",
                                                 "--no-daemonize"};
  static const std::set<std::string> two_values = {"--mca", "-mca", "--gmca", "-gmca", "-genv", "-env"};
  const std::size_t n = argv.size();
  std::size_t i = 1;
  while (i < n) {
    const std::string& a = argv[i];
    if (a == "--" || a == ":") return i + 1 < n ? std::optional<std::size_t>(i + 1) : std::nullopt;
    if (a.size() < 2 || a[0] != '-') return i;
    if (switches.count(a) || a.find('=') != std::string::npos)
      i += 1;
    else if (two_values.count(a))
      i += 3;
    else
      i += 2;
  }
  return std::nullopt;
}

namespace {

WorldSize msrun_world_size(const std::vector<std::string>& args) {
  WorldSize w;
  auto total = flag_value(args, "--worker_num");
  auto local = flag_value(args, "--local_worker_num");
  int t = total ? parse_count(*total, "msrun --worker_num") : 8;
  int l = local ? parse_count(*local, "msrun --local_worker_num") : 8;
  if (!total) w.notes.push_back("msrun without --worker_num: 8 workers (msrun's default)");
  if (l >= t) {
    w.nproc_per_node = t;
  } else {
    w.nproc_per_node = l;
    w.nnodes = (t + l - 1) / l;
    if (t % l != 0)
      w.notes.push_back("msrun --worker_num " + std::to_string(t) +
                        " is not a multiple of --local_worker_num " + std::to_string(l));
  }
  w.source = "msrun --worker_num/--local_worker_num";
  return w;
}

WorldSize msrun_launcher_world_size(const std::vector<std::string>& args) {
  WorldSize w;
  const std::size_t count = args.size() + 1;
  if (count != 1 && count != 2 && count != 6 && count != 9)
    throw InputError(
        "msrun_launcher.sh",
        "takes 1, 2, 6 or 9 arguments (the command string, then WORKER_NUM …), got " + std::to_string(count));
  int total = count == 1 ? 8 : parse_count(args[0], "msrun_launcher.sh WORKER_NUM");
  int local = count == 9 ? parse_count(args[1], "msrun_launcher.sh LOCAL_WORKER") : total;
  if (count == 1) w.notes.push_back("msrun_launcher.sh with the command only: 8 devices (its default)");
  w.nproc_per_node = std::min(local, total);
  w.nnodes = (total + w.nproc_per_node - 1) / w.nproc_per_node;
  w.source = "msrun_launcher.sh WORKER_NUM" + std::string(count == 9 ? "/LOCAL_WORKER" : "");
  return w;
}

/// Hugging Face Accelerate (accelerate/commands/launch.py): --num_processes is the processes of all machines,
/// --num_machines the nodes; without them its config file (--config_file, else
/// $HF_HOME/accelerate/default_config.yaml or ~/.cache/huggingface/accelerate/default_config.yaml:
/// num_processes, num_machines); without that, every GPU of the node (as --multi_gpu does).
WorldSize accelerate_world_size(const std::vector<std::string>& args, const WorldSizeHints& hints,
                                const std::map<std::string, std::string>& env) {
  WorldSize w;
  std::optional<std::string> procs = flag_value(args, "--num_processes");
  std::optional<std::string> machines = flag_value(args, "--num_machines");
  std::string source = "accelerate launch --num_processes / --num_machines";
  if (!procs || !machines) {
    std::vector<std::filesystem::path> files;
    if (auto f = flag_value(args, "--config_file")) {
      files.push_back(*f);
    } else {
      if (auto h = env.find("HF_HOME"); h != env.end() && !h->second.empty())
        files.push_back(std::filesystem::path(h->second) / "accelerate" / "default_config.yaml");
      if (auto h = env.find("HOME"); h != env.end() && !h->second.empty())
        files.push_back(std::filesystem::path(h->second) / ".cache" / "huggingface" / "accelerate" /
                        "default_config.yaml");
    }
    for (const auto& file : files) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) {
        if (flag_value(args, "--config_file"))
          throw InputError("accelerate launch --config_file", file.string() + " is not on this machine");
        continue;
      }
      YAML::Node cfg;
      try {
        cfg = YAML::LoadFile(file.string());
      } catch (const YAML::Exception& e) {
        throw InputError(file.string() + (e.mark.line >= 0 ? ":" + std::to_string(e.mark.line + 1) : ""),
                         "malformed accelerate configuration: " + e.msg);
      }
      if (!cfg.IsMap()) continue;
      if (!procs && cfg["num_processes"] && cfg["num_processes"].IsScalar())
        procs = cfg["num_processes"].Scalar();
      if (!machines && cfg["num_machines"] && cfg["num_machines"].IsScalar())
        machines = cfg["num_machines"].Scalar();
      source = "accelerate configuration " + file.string();
      break;
    }
  }
  const int nodes = machines ? parse_count(*machines, "accelerate launch --num_machines") : 1;
  int total = 0;
  if (procs) {
    total = parse_count(*procs, "accelerate launch --num_processes");
  } else if (hints.gpus_per_node) {
    total = *hints.gpus_per_node * nodes;
    source = "--gpus-per-node";
  } else if (hints.count_local_gpus && hints.count_local_gpus() > 0) {
    total = hints.count_local_gpus() * nodes;
    source = "local GPU count";
    w.notes.push_back("accelerate launch without --num_processes or a configuration uses every local GPU: " +
                      std::to_string(total / nodes) + " (nvidia-smi); pass --gpus-per-node to say otherwise");
  } else {
    total = nodes;
    source = "default";
    w.notes.push_back(
        "accelerate launch without --num_processes or a configuration uses every local GPU, and none was "
        "found here: assuming 1 a node; pass --gpus-per-node N");
  }
  if (total % nodes != 0)
    throw InputError("accelerate launch --num_processes",
                     std::to_string(total) + " processes do not divide over " + std::to_string(nodes) +
                         " machines (--num_processes counts every machine's)");
  w.nnodes = nodes;
  w.nproc_per_node = total / nodes;
  w.source = source;
  return w;
}

WorldSize deepspeed_world_size(const std::vector<std::string>& args, const WorldSizeHints& hints) {
  WorldSize w;
  std::vector<Host> hosts;
  auto hostfile = flag_value(args, "--hostfile");
  if (!hostfile) hostfile = flag_value(args, "-H");
  std::filesystem::path hf = hostfile ? *hostfile : "/job/hostfile";
  if (hostfile || std::filesystem::exists(hf)) {
    hosts = read_hostfile(hf);
    w.source = "deepspeed hostfile " + hf.string();
  } else {
    auto num_gpus = flag_value(args, "--num_gpus");
    int local = 0;
    if (num_gpus) {
      local = parse_count(*num_gpus, "deepspeed --num_gpus");
      w.source = "deepspeed --num_gpus";
    } else if (hints.gpus_per_node) {
      local = *hints.gpus_per_node;
      w.source = "--gpus-per-node";
    } else if (hints.count_local_gpus && (local = hints.count_local_gpus()) > 0) {
      w.source = "local GPU count";
      w.notes.push_back("deepspeed without --num_gpus or a hostfile uses every local GPU: " +
                        std::to_string(local) + " (nvidia-smi); pass --gpus-per-node to say otherwise");
    } else {
      local = 1;
      w.source = "default";
      w.notes.push_back(
          "deepspeed without --num_gpus or a hostfile uses every local GPU, and none was found here: "
          "assuming 1; pass --gpus-per-node N");
    }
    int nodes = 1;
    if (auto nn = flag_value(args, "--num_nodes")) {
      nodes = parse_count(*nn, "deepspeed --num_nodes");
    } else if (hints.nnodes) {
      nodes = *hints.nnodes;
    }
    for (int k = 0; k < nodes; ++k)
      hosts.push_back({k == 0 ? "localhost" : "node" + std::to_string(k), local});
    if (auto inc = flag_value(args, "--include")) filter_hosts(hosts, *inc, true, "deepspeed --include");
    if (auto exc = flag_value(args, "--exclude")) filter_hosts(hosts, *exc, false, "deepspeed --exclude");
    w.nnodes = static_cast<int>(hosts.size());
    w.nproc_per_node = hosts.front().slots;
    return w;
  }
  if (auto inc = flag_value(args, "--include")) filter_hosts(hosts, *inc, true, "deepspeed --include");
  if (auto exc = flag_value(args, "--exclude")) filter_hosts(hosts, *exc, false, "deepspeed --exclude");
  if (auto nn = flag_value(args, "--num_nodes")) {
    int k = parse_count(*nn, "deepspeed --num_nodes");
    if (k < static_cast<int>(hosts.size())) hosts.resize(static_cast<std::size_t>(k));
  }
  if (auto ng = flag_value(args, "--num_gpus")) {
    int k = parse_count(*ng, "deepspeed --num_gpus");
    for (Host& h : hosts) h.slots = std::min(h.slots, k);
  }
  w.nnodes = static_cast<int>(hosts.size());
  w.nproc_per_node = hosts.front().slots;
  for (const Host& h : hosts)
    if (h.slots != w.nproc_per_node) {
      w.notes.push_back("hosts have different slot counts; using " + std::to_string(w.nproc_per_node) +
                        " per node from the first host");
      break;
    }
  return w;
}

/// One host of an MPI host list or hostfile: `node1`, `node1:4` (MPICH, Open MPI --host), `node1 slots=4`
/// (Open MPI hostfile); 0 slots when not said.
Host mpi_host(const std::vector<std::string>& words, const std::string& where) {
  Host h{words[0], 0};
  if (auto colon = h.name.find(':'); colon != std::string::npos) {
    h.slots = parse_count(h.name.substr(colon + 1), where);
    h.name.erase(colon);
  }
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("slots=", 0) == 0) h.slots = parse_count(w.substr(6), where);
  }
  return h;
}

std::vector<Host> mpi_hostfile(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string(), "cannot read the MPI hostfile");
  std::vector<Host> hosts;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (auto hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::vector<std::string> words = split_shell_words(line, location(path.string(), lineno));
    if (!words.empty()) hosts.push_back(mpi_host(words, location(path.string(), lineno)));
  }
  if (hosts.empty()) throw InputError(path.string(), "the MPI hostfile lists no host");
  return hosts;
}

/// `mpirun|mpiexec [options] python ENTRY`: Open MPI, MPICH and Intel MPI spellings.  Processes from
/// -np/-n/--np/-c; per node from -N/--npernode/-npernode/-ppn/--ppn (Cray PALS)/-perhost or --map-by
/// ppr:N:node; hosts from
/// --host/-H/-hosts (`a,b` or `a:4,b:4`) or --hostfile/-hostfile/--machinefile/-machinefile/-f.  Without a
/// process count Open MPI starts one per slot of the hosts.
WorldSize mpi_world_size(const std::vector<std::string>& args, const WorldSizeHints& hints) {
  WorldSize w;
  std::vector<std::string> from;
  auto first = [&](std::initializer_list<const char*> spellings)
      -> std::optional<std::pair<std::string, std::string>> {
    for (const char* f : spellings)
      if (auto v = flag_value(args, f)) {
        // `-np $NUM_GPUS --npernode …` with the variable empty where the analysis runs (a scheduler's
        // variable outside its allocation): the option has no value; the other sizes decide.
        if (v->empty() || (v->size() > 1 && (*v)[0] == '-')) {
          w.notes.push_back("mpirun " + std::string(f) + " has no value (an empty variable?): left out");
          continue;
        }
        return std::make_pair(std::string(f), *v);
      }
    return std::nullopt;
  };
  std::optional<int> np, per_node;
  if (auto v = first({"-np", "--np", "-n", "-c"})) {
    np = parse_count(v->second, "mpirun " + v->first);
    from.push_back("mpirun " + v->first);
  }
  if (auto v = first({"-N", "--npernode", "-npernode", "-ppn", "--ppn", "-perhost"})) {
    per_node = parse_count(v->second, "mpirun " + v->first);
    from.push_back("mpirun " + v->first);
  } else if (auto map = flag_value(args, "--map-by"); map && map->rfind("ppr:", 0) == 0) {
    std::string rest = map->substr(4);
    auto colon = rest.find(':');
    if (colon != std::string::npos && rest.substr(colon + 1).rfind("node", 0) == 0) {
      per_node = parse_count(rest.substr(0, colon), "mpirun --map-by");
      from.push_back("mpirun --map-by");
    }
  }
  std::vector<Host> hosts;
  if (auto v = first({"--host", "-H", "-host", "-hosts", "--hosts"})) {
    std::string list = v->second;
    for (std::size_t start = 0; start <= list.size();) {
      auto comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? list.size() + 1 : comma + 1;
      if (!item.empty()) hosts.push_back(mpi_host({item}, "mpirun " + v->first));
    }
    from.push_back("mpirun " + v->first);
  } else if (auto f = first(
                 {"--hostfile", "-hostfile", "--machinefile", "-machinefile", "-f", "--default-hostfile"});
             f && !(np && per_node)) {  // (with both counts the hosts change nothing; the file may be remote)
    hosts = mpi_hostfile(f->second);
    from.push_back("MPI hostfile " + f->second);
  }
  // Hosts named more than once (a host list `a,a,b`) count their slots together.
  std::vector<Host> unique;
  for (const Host& h : hosts) {
    auto it = std::find_if(unique.begin(), unique.end(), [&](const Host& u) { return u.name == h.name; });
    if (it == unique.end())
      unique.push_back({h.name, h.slots > 0 ? h.slots : 1});
    else
      it->slots += h.slots > 0 ? h.slots : 1;
  }
  hosts = unique;
  if (np && per_node) {
    w.nproc_per_node = std::min(*per_node, *np);
    w.nnodes = (*np + w.nproc_per_node - 1) / w.nproc_per_node;
  } else if (np && !hosts.empty()) {
    // Open MPI fills each host's slots in turn (--map-by slot).
    w.nproc_per_node = std::min(*np, hosts.front().slots);
    w.nnodes = (*np + w.nproc_per_node - 1) / w.nproc_per_node;
  } else if (np) {
    w.nnodes = std::min(hints.nnodes.value_or(1), *np);
    w.nproc_per_node = (*np + w.nnodes - 1) / w.nnodes;
    if (w.nnodes > 1) from.push_back("--nnodes");
  } else if (per_node) {
    w.nproc_per_node = *per_node;
    w.nnodes = hosts.empty() ? hints.nnodes.value_or(1) : static_cast<int>(hosts.size());
  } else if (!hosts.empty()) {
    w.nproc_per_node = hosts.front().slots;
    w.nnodes = static_cast<int>(hosts.size());
    w.notes.push_back("mpirun without -np: one process per slot of the hosts");
  } else {
    w.nproc_per_node = hints.gpus_per_node.value_or(1);
    w.nnodes = hints.nnodes.value_or(1);
    w.notes.push_back(
        "mpirun without -np, a host list or a hostfile starts one process per slot of the allocation, "
        "unknown here: assuming " +
        std::to_string(w.world()) + "; pass --gpus-per-node and --nnodes to preflight");
  }
  if (np && *np % w.nproc_per_node != 0)
    w.notes.push_back("mpirun: " + std::to_string(*np) + " processes do not fill " +
                      std::to_string(w.nnodes) + " nodes of " + std::to_string(w.nproc_per_node));
  for (const std::string& f : from) w.source += (w.source.empty() ? "" : ", ") + f;
  if (w.source.empty()) w.source = "mpirun defaults";
  return w;
}

}  // namespace

std::vector<std::string> megatron_words_from_swift(const std::vector<std::string>& args,
                                                   std::vector<std::string>& notes) {
  // Options as ms-swift parses them (HfArgumentParser): `--name value…`, booleans as true / false.
  std::vector<std::pair<std::string, std::vector<std::string>>> opts;
  for (const std::string& a : args) {
    if (a.rfind("--", 0) == 0) {
      const auto eq = a.find('=');
      std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::replace(name.begin(), name.end(), '-', '_');
      opts.push_back({name, {}});
      if (eq != std::string::npos) opts.back().second.push_back(a.substr(eq + 1));
    } else if (!opts.empty()) {
      opts.back().second.push_back(a);
    }
  }
  auto value_of = [&](const char* name) -> std::optional<std::string> {
    std::optional<std::string> v;
    for (const auto& [n, vals] : opts)
      if (n == name && !vals.empty()) v = vals.front();
    return v;
  };
  auto truth = [](std::string v) {
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    return v == "true" || v == "1" || v == "yes";
  };
  auto dashed = [](std::string n) {
    std::replace(n.begin(), n.end(), '_', '-');
    return "--" + n;
  };
  // ms-swift's MegatronArguments defaults where they differ from Megatron-LM's
  // (swift/megatron/arguments/megatron_args.py): the distributed optimizer, flash attention, the fused
  // cross entropy, expert tp 1, selective recompute of core_attn; bf16 unless the model says otherwise.
  bool dist_opt = true, ce_fusion = true;
  std::string recompute = "selective", precision = "--bf16";
  std::vector<std::string> words, swift_only;
  std::string tuner = "full";
  std::string lora_rank = "8", lora_alpha = "32";
  std::vector<std::string> targets;
  bool etp_given = false, modules_given = false, attention_given = false, dispatcher_given = false,
       grouped_gemm = true;
  static const std::set<std::string> store_false = {"masked_softmax_fusion",        "bias_dropout_fusion",
                                                    "gradient_accumulation_fusion", "bias_swiglu_fusion",
                                                    "bias_activation_fusion",       "apply_rope_fusion"};
  static const std::set<std::string> not_megatron = {"dataset",
                                                     "val_dataset",
                                                     "output_dir",
                                                     "save_safetensors",
                                                     "load_from_cache_file",
                                                     "split_dataset_ratio",
                                                     "dataloader_num_workers",
                                                     "dataset_num_proc",
                                                     "system",
                                                     "model_author",
                                                     "model_name",
                                                     "num_train_epochs",
                                                     "merge_lora",
                                                     "streaming",
                                                     "save_steps",
                                                     "eval_steps",
                                                     "logging_steps",
                                                     "save_strategy",
                                                     "columns",
                                                     "template",
                                                     "truncation_strategy",
                                                     "loss_scale",
                                                     "packing",
                                                     "padding_free",
                                                     "lazy_tokenize",
                                                     "new_special_tokens",
                                                     "max_epochs",
                                                     "eval_iters",
                                                     "report_to",
                                                     "add_version",
                                                     "model_type",
                                                     "use_hf",
                                                     "hub_token",
                                                     "finetune",
                                                     "torch_dtype",
                                                     "tuner_type",
                                                     "train_type",
                                                     "lora_rank",
                                                     "lora_alpha",
                                                     "lora_dropout",
                                                     "target_modules",
                                                     "max_length",
                                                     "model",
                                                     "load_safetensors",
                                                     "no_save_optim",
                                                     "no_save_rng",
                                                     "no_load_optim",
                                                     "no_load_rng",
                                                     "mcore_model",
                                                     "mcore_adapter",
                                                     "use_flash_attn"};
  for (const auto& [name, vals] : opts) {
    const std::string v = vals.empty() ? "" : vals.front();
    if (name == "model") {
      if (!v.empty()) words.insert(words.end(), {"--model", v});
    } else if (name == "max_length") {
      if (!v.empty()) words.insert(words.end(), {"--seq-length", v});
    } else if (name == "tuner_type" || name == "train_type") {
      tuner = v;
    } else if (name == "lora_rank") {
      lora_rank = v;
    } else if (name == "lora_alpha") {
      lora_alpha = v;
    } else if (name == "target_modules") {
      for (const std::string& t : vals)
        if (t != "all-linear" && t != "all_linear") targets.push_back(t);
    } else if (name == "torch_dtype") {
      precision = v == "float16" ? "--fp16" : v == "float32" ? "" : "--bf16";
    } else if (name == "bf16" || name == "fp16") {
      if (truth(v)) precision = "--" + name;
    } else if (name == "use_distributed_optimizer") {
      dist_opt = truth(v);
    } else if (name == "cross_entropy_loss_fusion") {
      ce_fusion = truth(v);
    } else if (name == "recompute_granularity") {
      recompute = v;
    } else if (name == "moe_grouped_gemm") {
      grouped_gemm = truth(v);
    } else if (not_megatron.count(name)) {
      if (name != "packing" && name != "padding_free") swift_only.push_back(name);
    } else if (store_false.count(name)) {
      if (!truth(v)) words.push_back("--no-" + dashed(name).substr(2));
    } else if (v == "true" || v == "True" || v == "false" || v == "False") {
      if (truth(v)) words.push_back(dashed(name));
    } else {
      etp_given = etp_given || name == "expert_tensor_parallel_size";
      modules_given = modules_given || name == "recompute_modules";
      attention_given = attention_given || name == "attention_backend";
      dispatcher_given = dispatcher_given || name == "moe_token_dispatcher_type";
      words.push_back(dashed(name));
      words.insert(words.end(), vals.begin(), vals.end());
    }
  }
  if (!precision.empty()) words.push_back(precision);
  if (dist_opt) words.push_back("--use-distributed-optimizer");
  if (ce_fusion) words.push_back("--cross-entropy-loss-fusion");
  if (!attention_given) words.insert(words.end(), {"--attention-backend", "flash"});
  if (!etp_given) words.insert(words.end(), {"--expert-tensor-parallel-size", "1"});
  // (read by a MoE model only)
  if (!dispatcher_given) words.insert(words.end(), {"--moe-token-dispatcher-type", "alltoall"});
  if (grouped_gemm) words.push_back("--moe-grouped-gemm");
  if (recompute == "selective") {
    words.insert(words.end(), {"--recompute-granularity", "selective"});
    if (!modules_given) words.insert(words.end(), {"--recompute-modules", "core_attn"});
  } else if (recompute == "full") {
    words.insert(words.end(), {"--recompute-granularity", "full"});
  }
  if (tuner == "lora" || tuner == "lora_llm") {
    words.insert(words.end(), {"--lora-rank", lora_rank, "--lora-alpha", lora_alpha});
    if (!targets.empty()) {
      words.push_back("--lora-target-modules");
      words.insert(words.end(), targets.begin(), targets.end());
    }
  } else if (tuner != "full") {
    notes.push_back("ms-swift --tuner_type " + tuner + ": not modelled, priced as a full fine-tuning");
  }
  notes.push_back(
      "ms-swift: samples are packed or padding-free (its default): each micro batch is priced as " +
      std::string(value_of("max_length") ? "--max_length " + *value_of("max_length") : "its") +
      " tokens with full causal attention, an upper bound");
  if (!swift_only.empty()) {
    std::string list;
    for (const auto& s : swift_only) list += (list.empty() ? "" : ", ") + s;
    notes.push_back("ms-swift: options left out (its own, or without effect on memory and time): " + list);
  }
  return words;
}

WorldSize mpirun_tasks(const std::vector<std::string>& mpirun_options, const WorldSizeHints& hints) {
  return mpi_world_size(mpirun_options, hints);
}

std::optional<WorldSize> launch_world_size(const LaunchCommand& launch, const WorldSizeHints& hints,
                                           const std::map<std::string, std::string>& env) {
  const auto& args = launch.launcher_args;
  switch (launcher_info(launch.launcher).world) {
    case WorldSizeSource::TorchFlags:
      return std::nullopt;
    case WorldSizeSource::OneProcess: {
      // One process of a job whose launcher says its size in WORLD_SIZE / LOCAL_WORLD_SIZE (srun under
      // `preflight run`, torch's launcher environment); else one process.
      WorldSize w;
      w.source = "plain python: one process";
      if (auto world = env_value(env, {"WORLD_SIZE"})) {
        const int n = parse_count(*world, "WORLD_SIZE");
        const auto local = env_value(env, {"LOCAL_WORLD_SIZE"});
        w.nproc_per_node = local ? std::min(n, parse_count(*local, "LOCAL_WORLD_SIZE")) : std::min(n, 8);
        w.nnodes = (n + w.nproc_per_node - 1) / w.nproc_per_node;
        w.source = local ? "WORLD_SIZE, LOCAL_WORLD_SIZE" : "WORLD_SIZE";
      }
      return w;
    }
    case WorldSizeSource::Slurm:
      return srun_world_size(args, hints, env);
    case WorldSizeSource::Mpi:
      return mpi_world_size(args, hints);
    case WorldSizeSource::Msrun:
      return msrun_world_size(args);
    case WorldSizeSource::MsrunLauncher:
      return msrun_launcher_world_size(args);
    case WorldSizeSource::Deepspeed:
      return deepspeed_world_size(args, hints);
    case WorldSizeSource::Accelerate:
      return accelerate_world_size(args, hints, env);
    case WorldSizeSource::Configuration:
      return std::nullopt;  // the configuration's own (analyze reads it)
    case WorldSizeSource::SwiftEnv: {
      // ms-swift's cli: torchrun --nproc_per_node $NPROC_PER_NODE --nnodes $NNODES when either is set
      // (swift/cli/main.py use_torchrun), else the training script in one process.
      WorldSize w;
      const auto nproc = env_value(env, {"NPROC_PER_NODE"});
      const auto nnodes = env_value(env, {"NNODES"});
      w.nproc_per_node = nproc ? parse_count(*nproc, "NPROC_PER_NODE") : 1;
      w.nnodes = nnodes ? parse_count(*nnodes, "NNODES") : 1;
      w.source = nproc || nnodes ? "NPROC_PER_NODE, NNODES (ms-swift)"
                                 : "ms-swift without NPROC_PER_NODE: one process";
      return w;
    }
  }
  return std::nullopt;
}

bool is_nemo1_script(std::string_view entry) {
  const std::string_view name = basename_of(entry);
  return name.rfind("megatron_", 0) == 0 &&
         (name.ends_with("_pretraining.py") || name.ends_with("_finetuning.py"));
}

bool is_mindspeed_fsdp2_entry(std::string_view entry) {
  return basename_of(entry) == "train_fsdp2.py";
}

std::string megatron_entry_point_word(std::string_view entry) {
  const std::string_view name = basename_of(entry);
  // NeMo 1's Hydra scripts (megatron_gpt_pretraining.py): analyze reads the configuration beside the script,
  // so the path as given
  if (is_nemo1_script(entry)) return "--entry-point=" + std::string(entry);
  const bool other_model = name == "pretrain_mamba.py" || name == "pretrain_bert.py" ||
                           name == "pretrain_t5.py" || name == "pretrain_vlm.py" ||
                           name == "pretrain_retro.py" || name == "pretrain_ict.py" ||
                           name.rfind("pretrain_vision", 0) == 0;
  return other_model ? "--entry-point=" + std::string(name) : std::string();
}

namespace {

/// `preflight analyze`'s words for NeMo 2's CLI: its recipe (--nemo-config TASK:RECIPE) and its overrides.
/// @throws InputError when the launch names no recipe (--factory)
std::vector<std::string> nemo_cli_analyze_words(const LaunchCommand& launch,
                                                std::vector<std::string>& notes) {
  // NeMo-Run's CLI (nemo_run/cli): `--factory RECIPE` / `-f RECIPE` (`llama3_8b` or
  // `"llama3_8b(num_nodes=2)"`), key=value overrides of the task, and its own switches (-y/--yes, --dryrun,
  // -v, --repl, --detach, …) and executor settings, which change nothing of the run's memory or time.
  std::string factory;
  std::vector<std::string> overrides, left_out;
  const auto& a = launch.entry_args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& w = a[i];
    if ((w == "--factory" || w == "-f") && i + 1 < a.size()) {
      factory = a[++i];
    } else if (w.rfind("--factory=", 0) == 0) {
      factory = w.substr(10);
    } else if (w.find('=') != std::string::npos && w[0] != '-') {
      std::string key = w.substr(0, w.find('='));
      key.erase(0, std::min(key.find_first_not_of("+~"), key.size()));  // Hydra's +key / ~key
      const std::string head = key.substr(0, key.find('.'));
      if (head == "trainer" || head == "model" || head == "data" || head == "optim" || head == "peft")
        overrides.push_back(w);
      else
        left_out.push_back(w);
    } else {
      left_out.push_back(w);
    }
  }
  if (factory.empty())
    throw InputError(
        "nemo llm " + launch.entry,
        "no --factory RECIPE: preflight reads NeMo 2's CLI by its recipe (`nemo llm " + launch.entry +
            " --factory llama3_8b …`); a task built from separate model= / trainer= factories is "
            "read from its YAML (--nemo-config)");
  if (!left_out.empty()) {
    std::string list;
    for (const auto& w : left_out) list += (list.empty() ? "" : " ") + w;
    notes.push_back("nemo llm " + launch.entry +
                    ": left out (NeMo-Run's own options or executor settings): " + list);
  }
  std::vector<std::string> out = {"--nemo-config", launch.entry + ":" + factory};
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

}  // namespace

bool is_bridge_recipe_runner(std::string_view entry) {
  return basename_of(entry) == "run_recipe.py";
}

namespace {

/// The batch, sequence and layout options Megatron-Bridge's runner and performance launcher share (their
/// --help: -gb, -mb, -sl, -tp, -pp, -cp, -vp, -ep and the long forms), as the ConfigContainer fields they
/// override, with `more` (each launcher's own spellings) added.
std::map<std::string, std::string> bridge_size_options(std::map<std::string, std::string> more) {
  static const std::pair<const char*, const char*> shared[] = {{"gb", "global_batch_size"},
                                                               {"mb", "micro_batch_size"},
                                                               {"sl", "seq_length"},
                                                               {"tp", "tensor_model_parallel_size"},
                                                               {"pp", "pipeline_model_parallel_size"},
                                                               {"cp", "context_parallel_size"},
                                                               {"vp", "virtual_pipeline_model_parallel_size"},
                                                               {"ep", "expert_model_parallel_size"},
                                                               {"", "expert_tensor_parallel_size"}};
  for (const auto& [shorthand, field] : shared) {
    const std::string f = field;
    const std::string section = f == "seq_length"                                     ? "dataset."
                                : f == "global_batch_size" || f == "micro_batch_size" ? "train."
                                                                                      : "model.";
    if (*shorthand) more.emplace(std::string("-") + shorthand, section + f);
    more.emplace("--" + f, section + f);
  }
  return more;
}

/// `preflight analyze`'s words for Megatron-Bridge's recipe runner (scripts/training/run_recipe.py):
/// `--bridge-config RECIPE` with its overrides.  The runner's convenience options are the overrides its
/// --help gives them (-gb → train.global_batch_size, -tp → model.tensor_model_parallel_size, -sl →
/// dataset.seq_length, …); trailing KEY=VALUE words are overrides as they stand (they win).
/// @throws InputError (where = "run_recipe.py") when the launch names no recipe
std::vector<std::string> bridge_runner_analyze_words(const LaunchCommand& launch,
                                                     std::vector<std::string>& notes) {
  static const std::map<std::string, std::string> option =
      bridge_size_options({{"-etp", "model.expert_tensor_parallel_size"}});
  // the runner's own options without a value
  static const std::set<std::string> switches = {"--dry-run", "--dry_run", "--deterministic", "--dump-env",
                                                 "--dump_env"};
  const auto& a = launch.entry_args;
  std::string recipe, stem, mode;
  std::vector<std::string> overrides, assignments, left_out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    std::string w = a[i], value;
    const auto eq = w.find('=');
    const bool dashed = w.rfind("-", 0) == 0;
    if (dashed && eq != std::string::npos) {
      value = w.substr(eq + 1);
      w = w.substr(0, eq);
    }
    auto take = [&]() -> std::string {
      if (eq != std::string::npos) return value;
      return i + 1 < a.size() ? a[++i] : "";
    };
    if (w == "--recipe") {
      recipe = take();
    } else if (w == "--model") {
      stem = take();
    } else if (w == "--mode") {
      mode = take();
    } else if (auto it = option.find(w); dashed && it != option.end()) {
      overrides.push_back(it->second + "=" + take());
    } else if (!dashed && eq != std::string::npos) {
      assignments.push_back(w);
    } else if (dashed && switches.count(w)) {
      left_out.push_back(w);
    } else if (dashed) {  // its data, step function, learning rates and checkpoints: a value each
      left_out.push_back(w + " " + take());
    } else {
      left_out.push_back(w);
    }
  }
  if (recipe.empty() && !stem.empty()) {
    const std::string m = mode.empty() ? "pretrain" : mode;
    recipe = stem + "_" + (m == "lora" || m == "dora" ? std::string("peft") : m) + "_config";
    if (m == "dora") notes.push_back("run_recipe.py --mode dora: priced as the recipe's LoRA adapters");
  }
  if (recipe.empty())
    throw InputError("run_recipe.py",
                     "names no recipe: give --recipe NAME (a function of megatron.bridge.recipes) or --model "
                     "STEM --mode pretrain|sft|lora|dora");
  if (!left_out.empty()) {
    std::string list;
    for (const auto& w : left_out) list += (list.empty() ? "" : " ") + w;
    notes.push_back(
        "run_recipe.py: left out (its data, step function, learning-rate and checkpoint options): " + list);
  }
  std::vector<std::string> out = {"--bridge-config", recipe};
  out.insert(out.end(), overrides.begin(), overrides.end());
  out.insert(out.end(), assignments.begin(), assignments.end());
  return out;
}

}  // namespace

std::string nemo2_perf_script_name(std::string_view entry) {
  // a path …/performance/llm/pretrain_X.py, or the module scripts.performance.llm.pretrain_X; the VLM and
  // diffusion families (performance/vlm/, performance/diffusion/) as `vlm/NAME`, for the analysis to refuse
  // them by name rather than run them (they submit too)
  for (const char* family : {"llm", "vlm", "diffusion"}) {
    const std::string dir = "performance/" + std::string(family) + "/";
    const std::string mod = "performance." + std::string(family) + ".";
    std::string name;
    if (entry.ends_with(".py") && entry.find(dir) != std::string_view::npos) {
      name = std::string(basename_of(entry));
      name.resize(name.size() - 3);
    } else if (entry.find('/') == std::string_view::npos && entry.find(mod) != std::string_view::npos) {
      name = std::string(entry.substr(entry.rfind('.') + 1));
    }
    if (name.rfind("pretrain_", 0) != 0 && name.rfind("finetune_", 0) != 0) continue;
    return std::string(family) == "llm" ? name : std::string(family) + "/" + name;
  }
  return "";
}

bool is_nemo2_perf_script(std::string_view entry) {
  return !nemo2_perf_script_name(entry).empty();
}

bool is_bridge_experiment_launcher(std::string_view entry) {
  const std::string_view name = basename_of(entry);
  if (name == "setup_experiment.py") return true;
  return name == "train.sh" && entry.ends_with("scripts/training/train.sh");  // (a bare train.sh is anyone's)
}

namespace {

/// `preflight analyze`'s words for Megatron-Bridge's experiment launchers (is_bridge_experiment_launcher()).
/// scripts/performance/setup_experiment.py (argument_parser.py): the flat performance recipe
/// `{MR}_{TASK}_{NG}gpu_{GPU}_{PRECISION}[_{VARIANT}]_config` its utils.py resolves, its
/// -tp/-pp/…/-gb/-mb/-sl options and KEY=VALUE words as overrides, the world -ng with -gn (else
/// NUM_GPUS_PER_NODE_MAP's) a node. scripts/training/setup_experiment.py and train.sh: --nodes ×
/// --gpus-per-node, the rest run_recipe.py's.
/// @throws InputError (where = the launcher) when it names no recipe, or for --use_recipes
std::vector<std::string> bridge_experiment_analyze_words(const LaunchCommand& launch,
                                                         std::vector<std::string>& notes) {
  const auto& a = launch.entry_args;
  const std::string where(basename_of(launch.entry));
  auto has = [&](std::initializer_list<const char*> names) {
    for (const auto& w : a)
      for (const char* n : names)
        if (w == n || w.rfind(std::string(n) + "=", 0) == 0) return true;
    return false;
  };
  // option → its value (--x=v or --x v), and the words not consumed
  std::map<std::string, std::string> value;
  std::vector<std::string> rest, left_out;
  auto consume = [&](const std::map<std::string, std::string>& options, const std::set<std::string>& switches,
                     bool keep_unknown) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string w = a[i], v;
      const auto eq = w.find('=');
      const bool dashed = w.rfind("-", 0) == 0;
      if (dashed && eq != std::string::npos) {
        v = w.substr(eq + 1);
        w = w.substr(0, eq);
      }
      if (auto it = options.find(w); dashed && it != options.end()) {
        if (eq == std::string::npos) v = i + 1 < a.size() ? a[++i] : "";
        if (it->second == "slurm")
          left_out.push_back(w + " " + v);
        else
          value[it->second] = v;
      } else if (dashed && switches.count(w)) {
        left_out.push_back(w);
      } else if (keep_unknown) {
        rest.push_back(a[i]);
      } else if (!dashed && eq != std::string::npos) {
        rest.push_back(a[i]);  // a KEY=VALUE override
      } else if (dashed) {
        left_out.push_back(w + (eq == std::string::npos && i + 1 < a.size() && a[i + 1].rfind("-", 0) != 0
                                    ? " " + a[++i]
                                    : ""));
      } else {
        left_out.push_back(w);
      }
    }
  };
  auto count = [&](const std::string& key, int fallback) {
    auto it = value.find(key);
    if (it == value.end() || it->second.empty()) return fallback;
    return parse_count(it->second, where + " " + key);
  };
  std::vector<std::string> out;
  if (has({"-mr", "--model_recipe_name"})) {
    // scripts/performance/setup_experiment.py
    static const std::map<std::string, std::string> options =
        bridge_size_options({{"-m", "family"},
                             {"--model_family_name", "family"},
                             {"-mr", "recipe"},
                             {"--model_recipe_name", "recipe"},
                             {"-ng", "gpus"},
                             {"--num_gpus", "gpus"},
                             {"-gn", "per_node"},
                             {"--gpus_per_node", "per_node"},
                             {"-g", "gpu"},
                             {"--gpu", "gpu"},
                             {"-c", "dtype"},
                             {"--compute_dtype", "dtype"},
                             {"--task", "task"},
                             {"-cv", "variant"},
                             {"--config_variant", "variant"},
                             {"-et", "model.expert_tensor_parallel_size"},
                             {"--num_layers", "model.num_layers"},
                             {"--hidden_size", "model.hidden_size"}});
    static const std::set<std::string> switches = {
        "-d", "--dryrun", "--detach", "--offline", "--list_config_variants", "--use_recipes"};
    consume(options, switches, false);
    if (std::find(left_out.begin(), left_out.end(), "--use_recipes") != left_out.end())
      throw InputError(
          where + " --use_recipes",
          "runs the model's library recipe through run_recipe.py, which this launch does not name: "
          "give `preflight analyze --bridge-config RECIPE` with the recipe it runs");
    for (const char* k : {"recipe", "gpus", "gpu"})
      if (value[k].empty())
        throw InputError(where, std::string("names no ") +
                                    (std::string(k) == "recipe" ? "-mr/--model_recipe_name"
                                     : std::string(k) == "gpus" ? "-ng/--num_gpus"
                                                                : "-g/--gpu") +
                                    ": it is required (scripts/performance/argument_parser.py)");
    std::string dtype = value.count("dtype") && !value["dtype"].empty() ? value["dtype"] : "bf16";
    std::transform(dtype.begin(), dtype.end(), dtype.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    // (utils.py _normalize_precision_name: fp8_cs → fp8cs, …)
    std::string prec = dtype;
    prec.erase(std::remove(prec.begin(), prec.end(), '_'), prec.end());
    std::string variant = value["variant"];
    std::transform(variant.begin(), variant.end(), variant.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const bool canonical = variant.empty() || variant == "v1" || variant == "v2";  // (legacy labels)
    const int gpus = count("gpus", 1);
    std::string gpu = value["gpu"];
    std::transform(gpu.begin(), gpu.end(), gpu.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string task = value["task"].empty() ? "pretrain" : value["task"];
    std::string recipe = value["recipe"];
    std::transform(recipe.begin(), recipe.end(), recipe.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    const std::string name = recipe + "_" + task + "_" + std::to_string(gpus) + "gpu_" + gpu + "_" + prec +
                             (canonical ? "" : "_" + variant) + "_config";
    out = {"--bridge-config", "perf:" + name};
    for (const auto& [k, v] : value)
      if (k.find('.') != std::string::npos &&
          !(k == "model.virtual_pipeline_model_parallel_size" && v == "-1"))  // (-1: the recipe's)
        out.push_back(k + "=" + (v == "None" ? "null" : v));
    out.insert(out.end(), rest.begin(), rest.end());
    // the world: the recipe's name gives it (and the GPU type's GPUs a node) unless -gn says otherwise
    if (value.count("per_node")) {
      const int nproc = std::min(gpus, count("per_node", 1));
      out.insert(out.end(), {"--nproc_per_node", std::to_string(nproc), "--nnodes",
                             std::to_string((gpus + nproc - 1) / nproc)});
    }
    notes.push_back(where + ": Megatron-Bridge's performance recipe " + name + " on " + std::to_string(gpus) +
                    " " + gpu + " GPUs");
  } else {
    // scripts/training/setup_experiment.py (train.sh): its Slurm options, then run_recipe.py's
    static const std::map<std::string, std::string> options = {{"--nodes", "nodes"},
                                                               {"--gpus-per-node", "per_node"},
                                                               {"--gpus_per_node", "per_node"},
                                                               {"--account", "slurm"},
                                                               {"--partition", "slurm"},
                                                               {"--time", "slurm"},
                                                               {"--gres", "slurm"},
                                                               {"--additional-slurm-params", "slurm"},
                                                               {"--additional_slurm_params", "slurm"},
                                                               {"--container-image", "slurm"},
                                                               {"--mount", "slurm"},
                                                               {"--env", "slurm"},
                                                               {"--srun-arg", "slurm"},
                                                               {"-lmc", "slurm"},
                                                               {"--peak-mem-clk", "slurm"},
                                                               {"--peak_mem_clk", "slurm"},
                                                               {"--experiment-name", "slurm"}};
    static const std::set<std::string> switches = {"--no-gpu-resource-request", "--submission-dry-run",
                                                   "--dry-run", "--wait"};
    consume(options, switches, true);
    LaunchCommand runner = launch;
    runner.entry = "run_recipe.py";
    runner.entry_args = rest;
    out = bridge_runner_analyze_words(runner, notes);
    if (value.count("per_node")) {
      out.insert(out.end(), {"--nproc_per_node", std::to_string(count("per_node", 8)), "--nnodes",
                             std::to_string(count("nodes", 1))});
    } else {
      notes.push_back(where +
                      ": no --gpus-per-node: the world is the GPU count the recipe's name gives, if any");
    }
  }
  if (!left_out.empty()) {
    std::string list;
    for (const auto& w : left_out) list += (list.empty() ? "" : " ") + w;
    notes.push_back(where + ": left out (its Slurm, container and experiment options): " + list);
  }
  return out;
}

}  // namespace

std::vector<std::string> analyze_arguments(const LaunchCommand& launch, const WorldSizeHints& hints,
                                           const std::map<std::string, std::string>& env,
                                           std::vector<std::string>& notes) {
  if (is_bridge_experiment_launcher(launch.entry))  // (its own world, whatever runs it)
    return bridge_experiment_analyze_words(launch, notes);
  if (is_nemo2_perf_script(launch.entry)) {  // likewise: its GPUs from its command line and CSV
    std::vector<std::string> out = {"--nemo-config", "nemo2-perf:" + nemo2_perf_script_name(launch.entry)};
    out.insert(out.end(), launch.entry_args.begin(), launch.entry_args.end());
    notes.push_back(launch.entry +
                    ": NeMo 2's performance script, read (its recommended configuration and command line), "
                    "not run: it would submit the job to Slurm");
    return out;
  }
  std::vector<std::string> out;
  if (is_torch_launcher(launch.launcher) && is_bridge_recipe_runner(launch.entry)) {
    out = launch.launcher_args;  // torchrun's sizes, then the recipe
    const std::vector<std::string> recipe = bridge_runner_analyze_words(launch, notes);
    out.insert(out.end(), recipe.begin(), recipe.end());
    return out;
  }
  if (is_torch_launcher(launch.launcher) || launch.recipe_tool) {
    out = launch.launcher_args;
    // A size flag left without its value by an empty variable (`--nproc_per_node $GPUS_PER_NODE` with the
    // cluster's variable unset where the analysis runs) takes preflight's --gpus-per-node / --nnodes.
    auto fill = [&](std::initializer_list<const char*> names, const std::optional<int>& given,
                    const char* ours) {
      if (!given) return;
      for (std::size_t i = 0; i < out.size(); ++i) {
        for (const char* name : names) {
          const std::string eq = std::string(name) + "=";
          std::string what = " has no value in the launch (an empty variable?): ";
          if (out[i] == eq) {
            out[i] = eq + std::to_string(*given);
          } else if (out[i] == name && (i + 1 == out.size() || out[i + 1].rfind("-", 0) == 0)) {
            out.insert(out.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::to_string(*given));
          } else if (out[i] == eq + "0" || (out[i] == name && i + 1 < out.size() && out[i + 1] == "0")) {
            // a count of the GPUs taken where there are none (`$(nvidia-smi -L | wc -l)` on a login node)
            if (out[i] == name)
              out[i + 1] = std::to_string(*given);
            else
              out[i] = eq + std::to_string(*given);
            what = " is 0 in the launch (GPUs counted where there are none?): ";
          } else if (const std::string v = out[i] == name && i + 1 < out.size() ? out[i + 1]
                                           : out[i].rfind(eq, 0) == 0           ? out[i].substr(eq.size())
                                                                                : std::string();
                     v == "gpu" || v == "auto") {
            // torchrun's `--nproc_per_node gpu`: the launching node's GPUs, which preflight's flag says
            if (out[i] == name)
              out[i + 1] = std::to_string(*given);
            else
              out[i] = eq + std::to_string(*given);
            what = " is '" + v + "' (the launching node's GPUs): ";
          } else {
            continue;
          }
          notes.push_back(std::string(name) + what + std::to_string(*given) + " from preflight's " + ours);
        }
      }
    };
    fill({"--nproc_per_node", "--nproc-per-node"}, hints.gpus_per_node, "--gpus-per-node");
    fill({"--nnodes"}, hints.nnodes, "--nnodes");
  } else if (launch.launcher == Launcher::NemoCli) {
    return nemo_cli_analyze_words(launch, notes);
  } else if (launch.launcher == Launcher::Python && is_nemo1_script(launch.entry)) {
    // (NeMo 1's script run by plain python: Lightning starts trainer.devices processes itself; the world is
    // the configuration's)
  } else {
    WorldSize w = *launch_world_size(launch, hints, env);
    notes.insert(notes.end(), w.notes.begin(), w.notes.end());
    out = {"--nproc_per_node", std::to_string(w.nproc_per_node), "--nnodes", std::to_string(w.nnodes)};
  }
  if (is_bridge_recipe_runner(launch.entry)) {  // (srun / mpirun / python: the world above, then the recipe)
    const std::vector<std::string> recipe = bridge_runner_analyze_words(launch, notes);
    out.insert(out.end(), recipe.begin(), recipe.end());
    return out;
  }
  if (const std::string entry = megatron_entry_point_word(launch.entry); !entry.empty()) out.push_back(entry);
  if (is_mindspeed_fsdp2_entry(launch.entry)) {
    // MindSpeed-LLM's FSDP2 trainer: analyze reads the entry point, its YAML and dotted overrides
    out.push_back(launch.entry);
    out.insert(out.end(), launch.entry_args.begin(), launch.entry_args.end());
    return out;
  }
  if (launch.launcher == Launcher::MegatronSwift) {
    const std::vector<std::string> megatron = megatron_words_from_swift(launch.entry_args, notes);
    out.insert(out.end(), megatron.begin(), megatron.end());
    return out;
  }
  out.insert(out.end(), launch.entry_args.begin(), launch.entry_args.end());
  return out;
}

}  // namespace preflight::wrap
