// Launch recognition and the per-launcher world size.  See launch.hpp.
#include "preflight/wrap/launch.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>

#include "launch_words.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::wrap {

using detail::basename_of;
using detail::is_assignment;
using detail::is_python;
using detail::is_runner;
using detail::normalize_flag;

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

bool EntryPatterns::matches(std::string_view path) const {
  std::string name(basename_of(path));
  if (name.empty()) return false;
  for (const std::string& tail : tails)
    if (path == tail || (path.ends_with(tail) && path[path.size() - tail.size() - 1] == '/')) return true;
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
  for (const std::string& t : tails) s += (s.empty() ? "" : ", ") + t;
  return s;
}

namespace {

std::optional<LaunchMatch> match_at(const std::vector<WordView>& words, std::size_t i,
                                    const EntryPatterns& entries);

}  // namespace

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
  if (i >= n) return std::nullopt;
  if (words[i].value) {
    if (auto m = match_at(words, i, entries)) {
      m->prefix = i;
      return m;
    }
  }
  // A prefix that runs the launcher: a runner (nsys profile …, uv run …) or words only known at run time
  // ($VENV_PREFIX "${PROFILE_CMD[@]}"): the launch is the first launcher after it.
  // A value known to be blank or several fields (`$UV_PREFIX` set to "uv run" or "" on two branches: the last
  // literal assignment is what is known) is split by the shell: its first field, if any, is what runs.
  if (words[i].value) {
    const std::string& v = *words[i].value;
    const std::size_t b = v.find_first_not_of(" \t\n");
    if (b != std::string::npos && !is_runner(basename_of(v.substr(b, v.find_first_of(" \t\n", b) - b))))
      return std::nullopt;
  }
  for (std::size_t k = i + 1; k < n; ++k) {
    if (!words[k].value) continue;
    if (auto m = match_at(words, k, entries)) {
      m->prefix = i;
      return m;
    }
  }
  return std::nullopt;
}

namespace {

std::optional<LaunchMatch> match_at(const std::vector<WordView>& words, std::size_t i,
                                    const EntryPatterns& entries) {
  const std::size_t n = words.size();
  auto matches = [&](std::size_t k) {
    if (k >= n) return false;
    if (words[k].value) return entries.matches(*words[k].value);
    return words[k].tail && entries.matches(*words[k].tail);
  };
  auto entry_name = [&](std::size_t k) { return words[k].value ? *words[k].value : *words[k].tail; };
  LaunchMatch m;
  m.command = i;
  std::string_view name = basename_of(*words[i].value);
  const LauncherInfo* by_name = nullptr;
  for (const LauncherInfo& l : launchers())
    for (const char* c : l.commands)
      if (name == c) by_name = &l;
  if (by_name && by_name->entry == EntryPosition::InnerLaunch) {
    // srun / mpirun options, then the launch it starts: the first word from which one is recognised.
    for (std::size_t k = i + 1; k < n; ++k) {
      if (!words[k].value || basename_of(*words[k].value) == name) continue;
      std::vector<WordView> rest(words.begin() + static_cast<std::ptrdiff_t>(k), words.end());
      auto inner = match_launch(rest, entries);
      if (!inner) continue;
      LaunchMatch r = *inner;
      r.args_begin += k;
      r.entry += k;
      if (r.launcher == Launcher::Python && !r.recipe_tool) {
        r.launcher = by_name->id;  // its processes are the ranks
        r.args_begin = i + 1;
      }
      r.command = i;
      return r;
    }
    // A shell script run on every rank with the entry point and its arguments (`mpirun … ./entry.sh
    // pretrain_gpt.py …`, the script running `python $*`) stands for python.
    for (std::size_t k = i + 1; k + 1 < n; ++k) {
      const std::optional<std::string>& w = words[k].value ? words[k].value : words[k].tail;
      if (!w || !w->ends_with(".sh") || !matches(k + 1)) continue;
      m.launcher = by_name->id;
      m.args_begin = i + 1;
      m.entry = k + 1;
      m.entry_name = entry_name(k + 1);
      m.wrapper_script = *w;
      return m;
    }
    return std::nullopt;
  }
  if (by_name) {
    m.launcher = by_name->id;
    m.args_begin = i + 1;
  } else if (name == "train.sh" && is_bridge_experiment_launcher(*words[i].value)) {
    // Megatron-Bridge's scripts/training/train.sh: its own launcher (it runs setup_experiment.py)
    m.launcher = Launcher::Python;
    m.args_begin = i;
    m.entry = i;
    m.entry_name = *words[i].value;
    return m;
  } else if (name == "bash" || name == "sh") {
    std::size_t j = i + 1;
    while (j < n && words[j].value && words[j].value->rfind('-', 0) == 0) ++j;
    if (j < n && words[j].value && basename_of(*words[j].value) == "train.sh" &&
        is_bridge_experiment_launcher(*words[j].value)) {
      m.launcher = Launcher::Python;
      m.args_begin = j;
      m.entry = j;
      m.entry_name = *words[j].value;
      return m;
    }
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
        if (module && o == "-m" && is_nemo2_perf_script(*module)) {
          // NeMo 2's performance scripts run as modules (`python -m scripts.performance.llm.pretrain_X`)
          m.launcher = Launcher::Python;
          m.args_begin = j + 1;
          m.entry = j + 1;
          m.entry_name = *module;
          return m;
        }
        const LauncherInfo* by_module = nullptr;
        for (const LauncherInfo& l : launchers())
          if (l.python_module && module == l.python_module) by_module = &l;
        if (!by_module) return std::nullopt;
        m.launcher = by_module->id;
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

  const EntryPosition where = launcher_info(m.launcher).entry;
  if (where == EntryPosition::Subcommand && m.launcher == Launcher::NemoCli) {
    // `nemo llm pretrain|finetune` trains; `nemo llm generate|import|export|…` does not.
    if (m.args_begin + 1 >= n || !words[m.args_begin].value || *words[m.args_begin].value != "llm" ||
        !words[m.args_begin + 1].value ||
        (*words[m.args_begin + 1].value != "pretrain" && *words[m.args_begin + 1].value != "finetune"))
      return std::nullopt;
    m.entry = m.args_begin + 1;
    m.entry_name = *words[m.entry].value;
    return m;
  }
  if (where == EntryPosition::Subcommand) {
    // `megatron sft|pt` trains; `megatron rlhf|export|…` is no training run preflight models.
    if (m.args_begin >= n || !words[m.args_begin].value ||
        (*words[m.args_begin].value != "sft" && *words[m.args_begin].value != "pt"))
      return std::nullopt;
    m.entry = m.args_begin;
    m.entry_name = *words[m.args_begin].value;
    return m;
  }
  if (where == EntryPosition::CommandString) {
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
  if (where == EntryPosition::AfterOptions) {
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

}  // namespace

std::optional<LaunchMatch> match_launch(const std::vector<std::string>& argv, const EntryPatterns& entries) {
  std::vector<WordView> views;
  views.reserve(argv.size());
  for (const std::string& a : argv) views.push_back({a, std::nullopt});
  return match_launch(views, entries);
}

std::vector<std::string> LaunchCommand::argv() const {
  std::vector<std::string> out = wrappers;
  out.insert(out.end(), prefix.begin(), prefix.end());
  if (launcher_info(launcher).entry == EntryPosition::CommandString) {
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
  c.wrappers = range(0, m->command);  // exec/env … and a runner prefix (nsys profile, uv run …)
  c.prefix = range(m->command, m->args_begin);
  if (launcher_info(c.launcher).entry == EntryPosition::CommandString) {
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

bool is_megatron_entry(const LaunchCommand& launch) {
  std::string name(basename_of(launch.entry));
  return fnmatch("pretrain_*.py", name.c_str(), 0) == 0;
}

}  // namespace preflight::wrap
