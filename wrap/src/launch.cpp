// Launch recognition and the per-launcher world size.  See launch.hpp.
#include "preflight/wrap/launch.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>

#include "preflight/common/error.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::wrap {

namespace {

std::string_view basename_of(std::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
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

}  // namespace

int parse_count(const std::string& text, const std::string& where) {
  std::size_t pos = 0;
  int v = 0;
  try {
    v = std::stoi(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != text.size() || text.empty() || v < 1)
    throw InputError(where, "expected a positive whole number, got '" + text + "'");
  return v;
}

bool is_recipe_tool(std::string_view path) {
  return basename_of(path) == "get_training_info.py";
}

int count_local_gpus_nvidia_smi() {
  FILE* p = ::popen("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null", "r");
  if (!p) return 0;
  int count = 0;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) {
    std::string line(buf);
    if (line.find_first_not_of(" \t\r\n") != std::string::npos) ++count;
  }
  int status = ::pclose(p);
  return status == 0 ? count : 0;
}

std::string launcher_name(Launcher l) {
  switch (l) {
    case Launcher::Torchrun:
      return "torchrun";
    case Launcher::TorchDistributedRun:
      return "python -m torch.distributed.run";
    case Launcher::TorchDistributedLaunch:
      return "python -m torch.distributed.launch";
    case Launcher::Deepspeed:
      return "deepspeed";
    case Launcher::Msrun:
      return "msrun";
    case Launcher::MsrunLauncher:
      return "msrun_launcher.sh";
    case Launcher::Python:
      return "python";
    case Launcher::Srun:
      return "srun";
  }
  return "?";
}

bool is_torch_launcher(Launcher l) {
  return l == Launcher::Torchrun || l == Launcher::TorchDistributedRun ||
         l == Launcher::TorchDistributedLaunch;
}

bool is_mindspore_launcher(Launcher l) {
  return l == Launcher::Msrun || l == Launcher::MsrunLauncher;
}

bool EntryPatterns::matches(std::string_view path) const {
  std::string name(basename_of(path));
  if (name.empty()) return false;
  for (const std::string& g : globs) {
    std::string_view pattern = g;
    if (g.find('/') != std::string::npos) pattern = basename_of(g);
    if (fnmatch(std::string(pattern).c_str(), name.c_str(), 0) == 0) return true;
  }
  return false;
}

std::string EntryPatterns::describe() const {
  std::string s;
  for (const std::string& g : globs) s += (s.empty() ? "" : ", ") + g;
  return s;
}

std::optional<LaunchMatch> match_launch(const std::vector<WordView>& words, const EntryPatterns& entries) {
  const std::size_t n = words.size();
  std::size_t i = 0;
  while (i < n && words[i].value) {
    const std::string& v = *words[i].value;
    if (v == "exec" || v == "nohup" || v == "command" || v == "time") {
      ++i;
    } else if (v == "env") {
      ++i;
      while (i < n && words[i].value &&
             (is_assignment(*words[i].value) || words[i].value->rfind('-', 0) == 0))
        i += (*words[i].value == "-u" || *words[i].value == "--unset" || *words[i].value == "-C") ? 2 : 1;
    } else {
      break;
    }
  }
  if (i >= n || !words[i].value) return std::nullopt;
  auto matches = [&](std::size_t k) {
    if (k >= n) return false;
    if (words[k].value) return entries.matches(*words[k].value);
    return words[k].tail && entries.matches(*words[k].tail);
  };
  auto entry_name = [&](std::size_t k) { return words[k].value ? *words[k].value : *words[k].tail; };
  LaunchMatch m;
  m.command = i;
  std::string_view name = basename_of(*words[i].value);
  if (name == "srun") {
    // srun's options, then the launch it starts: the first word from which one is recognised.
    for (std::size_t k = i + 1; k < n; ++k) {
      if (!words[k].value || basename_of(*words[k].value) == "srun") continue;
      std::vector<WordView> rest(words.begin() + static_cast<std::ptrdiff_t>(k), words.end());
      auto inner = match_launch(rest, entries);
      if (!inner) continue;
      LaunchMatch r = *inner;
      r.args_begin += k;
      r.entry += k;
      if (r.launcher == Launcher::Python && !r.recipe_tool) {
        r.launcher = Launcher::Srun;  // the SLURM tasks are the ranks
        r.args_begin = i + 1;
      }
      r.command = i;
      return r;
    }
    return std::nullopt;
  }
  if (name == "torchrun" || name == "deepspeed" || name == "msrun" || name == "msrun_launcher.sh") {
    m.launcher = name == "torchrun"    ? Launcher::Torchrun
                 : name == "deepspeed" ? Launcher::Deepspeed
                 : name == "msrun"     ? Launcher::Msrun
                                       : Launcher::MsrunLauncher;
    m.args_begin = i + 1;
  } else if (name == "bash" || name == "sh") {
    std::size_t j = i + 1;
    while (j < n && words[j].value && words[j].value->rfind('-', 0) == 0) ++j;
    if (j >= n || !words[j].value || basename_of(*words[j].value) != "msrun_launcher.sh") return std::nullopt;
    m.launcher = Launcher::MsrunLauncher;
    m.args_begin = j + 1;
  } else if (is_python(name)) {
    std::size_t j = i + 1;
    m.launcher = Launcher::Python;
    while (j < n && words[j].value && words[j].value->rfind('-', 0) == 0) {
      const std::string& o = *words[j].value;
      if (o == "-m" || o.rfind("-m", 0) == 0) {
        std::optional<std::string> module = o == "-m" ? (j + 1 < n ? words[j + 1].value : std::nullopt)
                                                      : std::optional<std::string>(o.substr(2));
        if (module == "torch.distributed.run") {
          m.launcher = Launcher::TorchDistributedRun;
        } else if (module == "torch.distributed.launch") {
          m.launcher = Launcher::TorchDistributedLaunch;
        } else {
          return std::nullopt;
        }
        j += o == "-m" ? 2 : 1;
        break;
      }
      if (o == "-c" || o == "-") return std::nullopt;
      j += (o == "-W" || o == "-X") ? 2 : 1;
    }
    m.args_begin = j;
  } else {
    return std::nullopt;
  }

  if (m.launcher == Launcher::MsrunLauncher) {
    std::size_t k = m.args_begin;
    if (k >= n || (!words[k].value && !words[k].head)) return std::nullopt;
    std::vector<std::string> cmd;
    try {
      cmd = split_shell_words(words[k].value ? *words[k].value : *words[k].head, "msrun_launcher.sh");
    } catch (const InputError&) {
      return std::nullopt;
    }
    if (!words[k].value && !cmd.empty() && !words[k].head->empty() &&
        std::string_view(" \t\n").find(words[k].head->back()) == std::string_view::npos)
      cmd.pop_back();  // the last word continues into the expansion
    std::size_t c = 0;
    if (c < cmd.size() && is_python(basename_of(cmd[c]))) {
      ++c;
      while (c < cmd.size() && cmd[c].rfind('-', 0) == 0) ++c;
    }
    if (c >= cmd.size() || !entries.matches(cmd[c])) return std::nullopt;
    m.entry = k;
    m.entry_name = cmd[c];
    return m;
  }
  if (m.launcher == Launcher::Python) {
    if (m.args_begin < n && !matches(m.args_begin)) {
      const WordView& w = words[m.args_begin];
      if ((w.value && is_recipe_tool(*w.value)) || (!w.value && w.tail && is_recipe_tool(*w.tail))) {
        m.entry = m.args_begin;
        m.entry_name = entry_name(m.entry);
        m.recipe_tool = true;
        return m;
      }
    }
    if (!matches(m.args_begin)) return std::nullopt;
    m.entry = m.args_begin;
    m.entry_name = entry_name(m.entry);
    return m;
  }
  for (std::size_t k = m.args_begin; k < n; ++k) {
    if (matches(k)) {
      m.entry = k;
      m.entry_name = entry_name(k);
      return m;
    }
  }
  return std::nullopt;
}

std::optional<LaunchMatch> match_launch(const std::vector<std::string>& argv, const EntryPatterns& entries) {
  std::vector<WordView> views;
  views.reserve(argv.size());
  for (const std::string& a : argv) views.push_back({a, std::nullopt});
  return match_launch(views, entries);
}

std::vector<std::string> LaunchCommand::argv() const {
  std::vector<std::string> out = wrappers;
  out.insert(out.end(), prefix.begin(), prefix.end());
  if (launcher == Launcher::MsrunLauncher) {
    std::string cmd;
    for (const std::string& w : python) cmd += shell_quote(w) + " ";
    cmd += shell_quote(entry);
    for (const std::string& a : entry_args) cmd += " " + shell_quote(a);
    out.push_back(cmd);
    out.insert(out.end(), launcher_args.begin(), launcher_args.end());
    return out;
  }
  out.insert(out.end(), launcher_args.begin(), launcher_args.end());
  out.push_back(entry);
  out.insert(out.end(), entry_args.begin(), entry_args.end());
  return out;
}

std::optional<LaunchCommand> parse_launch(const std::vector<std::string>& argv,
                                          const EntryPatterns& entries) {
  auto m = match_launch(argv, entries);
  if (!m) return std::nullopt;
  LaunchCommand c;
  c.launcher = m->launcher;
  c.recipe_tool = m->recipe_tool;
  auto range = [&](std::size_t a, std::size_t b) {
    return std::vector<std::string>(argv.begin() + static_cast<std::ptrdiff_t>(a),
                                    argv.begin() + static_cast<std::ptrdiff_t>(b));
  };
  c.wrappers = range(0, m->command);
  c.prefix = range(m->command, m->args_begin);
  if (c.launcher == Launcher::MsrunLauncher) {
    std::vector<std::string> cmd = split_shell_words(argv[m->entry], "msrun_launcher.sh");
    std::size_t k = 0;
    while (k < cmd.size() && !entries.matches(cmd[k])) c.python.push_back(cmd[k++]);
    c.entry = cmd[k];
    c.entry_args.assign(cmd.begin() + static_cast<std::ptrdiff_t>(k) + 1, cmd.end());
    c.launcher_args = range(m->entry + 1, argv.size());
    return c;
  }
  c.launcher_args = range(m->args_begin, m->entry);
  c.entry = argv[m->entry];
  c.entry_args = range(m->entry + 1, argv.size());
  return c;
}

std::optional<std::string> flag_value(const std::vector<std::string>& args, std::string_view flag) {
  std::string want = normalize_flag(flag);
  std::optional<std::string> found;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("-", 0) != 0) continue;
    auto eq = a.find('=');
    std::string name = normalize_flag(a.substr(0, eq));
    if (name != want) continue;
    if (eq != std::string::npos) {
      found = a.substr(eq + 1);
    } else if (i + 1 < args.size()) {
      found = args[++i];
    }
  }
  return found;
}

bool has_flag(const std::vector<std::string>& args, std::string_view flag) {
  std::string want = normalize_flag(flag);
  for (const std::string& a : args)
    if (a.rfind("-", 0) == 0 && normalize_flag(a.substr(0, a.find('='))) == want) return true;
  return false;
}

namespace {

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

std::optional<WorldSize> launch_world_size(const LaunchCommand& launch, const WorldSizeHints& hints,
                                           const std::map<std::string, std::string>& env) {
  WorldSize w;
  const auto& args = launch.launcher_args;
  switch (launch.launcher) {
    case Launcher::Torchrun:
    case Launcher::TorchDistributedRun:
    case Launcher::TorchDistributedLaunch:
      return std::nullopt;
    case Launcher::Python:
      w.source = "plain python: one process";
      return w;
    case Launcher::Srun:
      return srun_world_size(args, hints, env);
    case Launcher::Msrun: {
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
    case Launcher::MsrunLauncher: {
      const std::size_t count = args.size() + 1;
      if (count != 1 && count != 2 && count != 6 && count != 9)
        throw InputError("msrun_launcher.sh",
                         "takes 1, 2, 6 or 9 arguments (the command string, then WORKER_NUM …), got " +
                             std::to_string(count));
      int total = count == 1 ? 8 : parse_count(args[0], "msrun_launcher.sh WORKER_NUM");
      int local = count == 9 ? parse_count(args[1], "msrun_launcher.sh LOCAL_WORKER") : total;
      if (count == 1) w.notes.push_back("msrun_launcher.sh with the command only: 8 devices (its default)");
      w.nproc_per_node = std::min(local, total);
      w.nnodes = (total + w.nproc_per_node - 1) / w.nproc_per_node;
      w.source = "msrun_launcher.sh WORKER_NUM" + std::string(count == 9 ? "/LOCAL_WORKER" : "");
      return w;
    }
    case Launcher::Deepspeed: {
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
  }
  (void)env;
  return w;
}

std::vector<std::string> analyze_arguments(const LaunchCommand& launch, const WorldSizeHints& hints,
                                           const std::map<std::string, std::string>& env,
                                           std::vector<std::string>& notes) {
  std::vector<std::string> out;
  if (is_torch_launcher(launch.launcher) || launch.recipe_tool) {
    out = launch.launcher_args;
  } else {
    WorldSize w = *launch_world_size(launch, hints, env);
    notes.insert(notes.end(), w.notes.begin(), w.notes.end());
    out = {"--nproc_per_node", std::to_string(w.nproc_per_node), "--nnodes", std::to_string(w.nnodes)};
  }
  out.insert(out.end(), launch.entry_args.begin(), launch.entry_args.end());
  return out;
}

bool is_megatron_entry(const LaunchCommand& launch) {
  std::string name(basename_of(launch.entry));
  return fnmatch("pretrain_*.py", name.c_str(), 0) == 0;
}

}  // namespace preflight::wrap
