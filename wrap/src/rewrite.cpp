// Launch-script rewriting.  See rewrite.hpp.
#include "preflight/wrap/rewrite.hpp"

#include "preflight/wrap/job_header.hpp"
#include "preflight/wrap/process.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "launch_words.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::wrap {

namespace {

struct Edit {
  std::size_t begin;
  std::size_t end;
  std::string text;
};

bool is_name_char(char c) {
  return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

std::string join_quoted(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += " " + shell_quote(w);
  return s;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return std::string(s);
}

bool in_spans(std::size_t offset, const std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  for (const auto& [b, e] : spans)
    if (offset >= b && offset < e) return true;
  return false;
}

/// Finds `NAME=<Specify …>…` on one line; returns [value_begin, value_end) within the line.
std::optional<std::pair<std::size_t, std::size_t>> placeholder_value(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (line.substr(i, 7) == "export " || line.substr(i, 7) == "export\t") {
    i += 7;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  }
  std::size_t name = i;
  while (i < line.size() && is_name_char(line[i])) ++i;
  if (i == name || (line[name] >= '0' && line[name] <= '9') || i >= line.size() || line[i] != '=')
    return std::nullopt;
  std::size_t vb = i + 1;
  std::size_t ve = line.size();
  for (std::size_t k = vb; k < line.size(); ++k) {
    if (line[k] == '#' && k > vb && (line[k - 1] == ' ' || line[k - 1] == '\t')) {
      ve = k;
      break;
    }
  }
  while (ve > vb && (line[ve - 1] == ' ' || line[ve - 1] == '\t' || line[ve - 1] == '\r')) --ve;
  std::string_view value = line.substr(vb, ve - vb);
  if (value.empty() || value.find_first_of("'\"`") != std::string_view::npos) return std::nullopt;
  // A path with a blank in it (`CKPT=/path/to/my checkpoints`): bash would run `checkpoints` as a command
  // with CKPT in its environment.  Taken for a placeholder when the value's first word is a path and what
  // follows the blank (past further NAME=value words) is no program here nor a launcher
  // (so `CUDA_VISIBLE_DEVICES=0 python …` and `NPROC_PER_NODE=8 CUDA_VISIBLE_DEVICES=0,1 megatron sft --model
  // Qwen/…` stay commands).
  if (auto blank = value.find_first_of(" \t"); blank != std::string_view::npos &&
                                               value.substr(0, blank).find('/') != std::string_view::npos &&
                                               value.find_first_of("$<>|;&()") == std::string_view::npos) {
    std::string_view next = value.substr(blank);
    std::string word;
    for (;;) {
      next.remove_prefix(std::min(next.find_first_not_of(" \t"), next.size()));
      word = std::string(next.substr(0, next.find_first_of(" \t")));
      const auto eq = word.find('=');
      if (word.empty() || eq == std::string::npos || eq == 0 ||
          !std::all_of(word.begin(), word.begin() + static_cast<std::ptrdiff_t>(eq), is_name_char))
        break;
      next.remove_prefix(word.size());  // NAME=value: another assignment of the command's environment
    }
    const char* path = std::getenv("PATH");
    bool launcher =
        detail::is_python(detail::basename_of(word)) || detail::is_runner(detail::basename_of(word));
    for (const LauncherInfo& l : launchers())
      for (const char* c : l.commands) launcher = launcher || detail::basename_of(word) == c;
    if (!word.empty() && word[0] != '-' && !launcher && !find_program(word, path ? path : "/usr/bin:/bin"))
      return std::make_pair(vb, ve);
  }
  auto lt = value.find('<');
  if (lt == std::string_view::npos || lt + 1 >= value.size()) return std::nullopt;
  char first = value[lt + 1];
  if (!((first >= 'A' && first <= 'Z') || (first >= 'a' && first <= 'z'))) return std::nullopt;
  auto gt = value.find('>', lt);
  if (gt == std::string_view::npos || value.substr(lt, gt - lt).find('(') != std::string_view::npos)
    return std::nullopt;
  return std::make_pair(vb, ve);
}

/// `<Words of a placeholder>` where a value belongs: after `--flag ` / `--flag=`, or opening a double-quoted
/// assignment (`DATASET_1="<PATH TO THE FIRST DATASET>"`), as Megatron's older GPT-3 175B example writes its
/// paths.  bash reads `<PATH` as a redirection of the command it sits in — directly, or when a string holding
/// it runs under `sh -c` / `eval` — so the launch stops with "PATH: No such file".  Returns the spans
/// [begin, end) of each `<…>` on the line (comments, echo / printf lines and redirections excluded: the
/// words hold letters, digits, blanks and `_ . / , : + -`, start with a letter and end right at `>`).
std::vector<std::pair<std::size_t, std::size_t>> flag_placeholders(std::string_view line) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t first = line.find_first_not_of(" \t");
  if (first == std::string_view::npos || line[first] == '#') return spans;
  for (std::string_view word : {"echo", "printf"})
    if (line.substr(first, word.size()) == word &&
        (first + word.size() == line.size() || line[first + word.size()] == ' ' ||
         line[first + word.size()] == '\t'))
      return spans;
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  for (std::size_t i = line.find('<'); i != std::string_view::npos; i = line.find('<', i + 1)) {
    if (i + 1 >= line.size() || !alpha(line[i + 1]) || (i > 0 && line[i - 1] == '<')) continue;
    // What stands before: `--flag ` / `--flag=` or `NAME="`.
    bool value_place = false;
    if (i >= 2 && line[i - 1] == '"' && line[i - 2] == '=') {
      value_place = true;
    } else {
      std::size_t k = i;
      if (k > 0 && line[k - 1] == '=') {
        --k;
      } else {
        while (k > 0 && (line[k - 1] == ' ' || line[k - 1] == '\t')) --k;
        if (k == i) continue;
      }
      std::size_t w = k;
      while (w > 0 && (is_name_char(line[w - 1]) || line[w - 1] == '-')) --w;
      value_place = k - w > 2 && line.substr(w, 2) == "--" &&
                    (w == 0 || line[w - 1] == ' ' || line[w - 1] == '\t' || line[w - 1] == '"');
    }
    if (!value_place) continue;
    std::size_t j = i + 1;
    while (j < line.size() && (alpha(line[j]) || (line[j] >= '0' && line[j] <= '9') ||
                               std::string_view(" _./,:+-").find(line[j]) != std::string_view::npos))
      ++j;
    if (j >= line.size() || line[j] != '>' || line[j - 1] == ' ') continue;
    std::size_t fd = j;  // `<in.txt 2>err`: an input and a descriptor redirection
    while (fd > i + 1 && line[fd - 1] >= '0' && line[fd - 1] <= '9') --fd;
    if (fd < j && line[fd - 1] == ' ') continue;
    if (j + 1 < line.size() && std::string_view(" \t\"\\;").find(line[j + 1]) == std::string_view::npos)
      continue;
    spans.emplace_back(i, j + 1);
    i = j;
  }
  return spans;
}

/// `<PATH TO gpt-vocab.json>` → `PLACEHOLDER_PATH_TO_gpt-vocab.json`: one word, no redirection.
std::string placeholder_word(std::string_view p) {
  std::string w = "PLACEHOLDER_";
  for (char c : p.substr(1, p.size() - 2)) w += c == ' ' ? '_' : c;
  return w;
}

std::string quote_value(std::string_view v) {
  if (v.find('$') == std::string_view::npos) return "'" + std::string(v) + "'";
  std::string q = "\"";
  for (char c : v) {
    if (c == '"' || c == '`' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

std::string handle_placeholders(std::string_view text, const WrapOptions& o,
                                std::vector<std::string>& notes) {
  ShellScript pre = parse_shell(text);
  std::string out;
  out.reserve(text.size() + 64);
  std::size_t pos = 0;
  std::size_t lineno = 0;
  while (pos < text.size()) {
    ++lineno;
    std::size_t eol = text.find('\n', pos);
    std::size_t end = eol == std::string_view::npos ? text.size() : eol;
    std::string_view line = text.substr(pos, end - pos);
    auto span = in_spans(pos, pre.heredoc_bodies) ? std::nullopt : placeholder_value(line);
    if (span) {
      std::string_view value = line.substr(span->first, span->second - span->first);
      std::string where = o.script_name + ":" + std::to_string(lineno) + ": ";
      if (o.fix_placeholders && o.mode != WrapMode::Trace) {
        out.append(line.substr(0, span->first));
        out += quote_value(value);
        out.append(line.substr(span->second));
        notes.push_back(where + "quoted the placeholder value " + std::string(value) +
                        " so that the script runs (a real run needs a real path here)");
      } else {
        out.append(line);
        notes.push_back(where + "placeholder value " + std::string(value) +
                        " left as is: bash stops at this line until it holds a real path");
      }
    } else if (auto flags = in_spans(pos, pre.heredoc_bodies) ? decltype(flag_placeholders(line)){}
                                                              : flag_placeholders(line);
               !flags.empty()) {
      std::string where = o.script_name + ":" + std::to_string(lineno) + ": ";
      std::size_t at = 0;
      for (const auto& [b, e] : flags) {
        std::string_view p = line.substr(b, e - b);
        out.append(line.substr(at, b - at));
        if (o.fix_placeholders && o.mode != WrapMode::Trace) {
          out += placeholder_word(p);
          notes.push_back(where + "replaced the placeholder " + std::string(p) + " by " +
                          placeholder_word(p) +
                          " so that bash does not read it as a redirection (a real run needs a real path)");
        } else {
          out.append(p);
          notes.push_back(where + "placeholder " + std::string(p) +
                          " left as is: bash reads it as a redirection until it holds a real path");
        }
        at = e;
      }
      out.append(line.substr(at));
    } else {
      out.append(line);
    }
    if (eol != std::string_view::npos) out += '\n';
    pos = end + 1;
  }
  return out;
}

/// The script's logical lines (backslash-newline continuations joined, their blanks squeezed), each with the
/// 1-based number of its first physical line.
std::vector<std::pair<std::size_t, std::string>> logical_lines(std::string_view text) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::size_t pos = 0, lineno = 0;
  std::string cur;
  std::size_t first = 0;
  while (pos < text.size()) {
    ++lineno;
    std::size_t eol = text.find('\n', pos);
    std::size_t end = eol == std::string_view::npos ? text.size() : eol;
    std::string line = trim(text.substr(pos, end - pos));
    pos = end + 1;
    if (cur.empty()) first = lineno;
    const bool continues = !line.empty() && line.back() == '\\' && (line.empty() || line[0] != '#');
    if (continues) line.pop_back();
    cur += (cur.empty() ? "" : " ") + trim(line);
    if (!continues) {
      out.push_back({first, cur});
      cur.clear();
    }
  }
  if (!cur.empty()) out.push_back({first, cur});
  return out;
}

/// A hint for a launch hidden in another script: `mpirun|mpiexec|srun … [bash|sh] FILE.sh` lines.
std::string shell_script_under_launcher_hint(std::string_view text, const std::string& script_name,
                                             const std::string& mode) {
  std::string out;
  for (const auto& [line, l] : logical_lines(text)) {
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> words;
    try {
      words = split_shell_words(l, script_name);
    } catch (const InputError&) {
      continue;
    }
    std::size_t first = 0;  // past NAME=value words
    while (first < words.size() && detail::is_assignment(words[first])) ++first;
    if (first >= words.size()) continue;
    const std::string head = std::string(detail::basename_of(words[first]));
    if (head == "sbatch" || head == "qsub" || head == "pjsub") {
      // A submission: the job script is its last argument.
      const std::string& job = words.back();
      if (words.size() > first + 1 && job.rfind('-', 0) != 0)
        out += "\n  hint: line " + std::to_string(line) + " submits " + job + " with " + head +
               ": wrap that job script (its " +
               (head == "sbatch" ? "#SBATCH"
                : head == "qsub" ? "#PBS / #$"
                                 : "#PJM") +
               " lines give the job's size outside the allocation; give the variables the submission passes, "
               "e.g. qsub -v / sbatch --export, in the environment)";
      continue;
    }
    if (head != "mpirun" && head != "mpiexec" && head != "srun") continue;
    for (const std::string& w : words)
      if (w.size() > 3 && w.ends_with(".sh")) {
        out += "\n  hint: line " + std::to_string(line) + " runs " + w + " under " + head +
               ": the launch is probably inside it — wrap " + w +
               " (it reads what the job passes it from the environment), or analyse this job as it runs with "
               "`preflight run --mode " +
               mode + " -- bash " + script_name + "`";
        break;
      }
  }
  return out;
}

/// A hint for ms-swift lines that are no training run preflight models: `megatron rlhf|export|…` (only
/// `megatron sft|pt` are), `swift sft|pt|rlhf` (its transformers / DeepSpeed trainer, not Megatron).
std::string swift_hint(std::string_view text) {
  std::string out;
  for (const auto& [line, l] : logical_lines(text)) {
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> words;
    try {
      words = split_shell_words(l, "swift");
    } catch (const InputError&) {
      continue;
    }
    std::size_t k = 0;
    while (k < words.size() && detail::is_assignment(words[k])) ++k;
    if (k + 1 >= words.size()) continue;
    const std::string_view tool = detail::basename_of(words[k]);
    if (tool == "megatron" && words[k + 1] != "sft" && words[k + 1] != "pt")
      out += "\n  hint: line " + std::to_string(line) + ": ms-swift's `megatron " + words[k + 1] +
             "` is not modelled (`megatron sft` and `megatron pt` are: RLHF adds reference, reward or "
             "rollout models)";
    else if (tool == "swift" && (words[k + 1] == "sft" || words[k + 1] == "pt" || words[k + 1] == "rlhf"))
      out += "\n  hint: line " + std::to_string(line) + ": ms-swift's `swift " + words[k + 1] +
             "` trains with transformers / DeepSpeed, not Megatron; its Megatron launch is `megatron sft|pt`";
    if (out.size() > 600) break;
  }
  return out;
}

std::string closest_lines(std::string_view text) {
  struct Scored {
    int score;
    std::size_t line;
    std::string text;
  };
  static const std::pair<const char*, int> kHints[] = {
      {"torchrun", 4},  {"deepspeed", 4},      {"msrun", 4},  {"torch.distributed", 4},
      {"pretrain_", 3}, {"run_mindformer", 3}, {"python", 2}, {".py", 2},
      {"eval ", 2},     {"srun", 1},           {"mpirun", 1}, {"EXECUTE_ORDER", 1},
      {"CMD", 1},       {"eval", 1},           {".sh", 1},    {"megatron ", 1},
      {"swift ", 1}};
  std::vector<Scored> scored;
  for (auto [lineno, line] : logical_lines(text)) {
    int score = 0;
    for (const auto& [word, weight] : kHints)
      if (line.find(word) != std::string::npos) score += weight;
    if (line.rfind("$", 0) == 0 || line.rfind("\"$", 0) == 0)
      score += 3;  // the command comes from a variable
    if (line.rfind("echo", 0) == 0 || (!line.empty() && line[0] == '#')) score /= 3;
    if (score >= 2) {
      if (line.size() > 110) line = line.substr(0, 107) + "...";
      scored.push_back({score, lineno, line});
    }
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  if (scored.size() > 5) scored.resize(5);
  std::sort(scored.begin(), scored.end(), [](const Scored& a, const Scored& b) { return a.line < b.line; });
  if (scored.empty()) return "  (no line mentions a launcher, python or a .py script)\n";
  std::string s;
  for (const Scored& c : scored) s += "  " + std::to_string(c.line) + ": " + c.text + "\n";
  return s;
}

/// Span to erase for a word: the word plus the blanks on one side, so that no double blank is left.
std::pair<std::size_t, std::size_t> erase_span(std::string_view text, std::size_t begin, std::size_t end) {
  std::size_t b = begin;
  while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t')) --b;
  bool first_on_line = b == 0 || text[b - 1] == '\n';
  if (first_on_line) {
    std::size_t e = end;
    while (e < text.size() && (text[e] == ' ' || text[e] == '\t')) ++e;
    return {begin, e};
  }
  return {b, end};
}

/// Commands that only handle files or print text: naming an entry point there is not a launch.
/// The launcher (launchers()) its first word starts — a command of one (torchrun, deepspeed, …) or
/// python with `-m MODULE` among the words after it; nullopt for anything else.
std::optional<Launcher> launcher_of_words(const std::vector<std::string>& words) {
  if (words.empty()) return std::nullopt;
  const auto head = literal_value(words.front());
  if (!head) return std::nullopt;
  const std::string base(detail::basename_of(*head));
  for (const LauncherInfo& l : launchers()) {
    if (std::any_of(l.commands.begin(), l.commands.end(), [&](const char* c) { return base == c; }))
      return l.id;
    if (l.python_module && detail::is_python(base))
      for (std::size_t k = 1; k + 1 < words.size(); ++k)
        if (words[k] == "-m" && words[k + 1] == l.python_module) return l.id;
  }
  return std::nullopt;
}

/// The script defines a shell function `name` (`name() {`, `name () {`, `function name`).
bool defines_function(const std::string& text, const std::string& name) {
  if (name.empty() ||
      !std::all_of(name.begin(), name.end(), [](char ch) { return is_name_char(ch) || ch == '-'; }))
    return false;
  for (std::size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
    const std::size_t line = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
    std::string_view before = std::string_view(text).substr(line, at - line);
    while (!before.empty() && (before.front() == ' ' || before.front() == '\t')) before.remove_prefix(1);
    if (!(before.empty() || before == "function " || before == "function\t")) continue;
    std::size_t k = at + name.size();
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
    if ((k + 1 < text.size() && text[k] == '(' && text[k + 1] == ')') || before.rfind("function", 0) == 0)
      return true;
  }
  return false;
}

/// `"${NAME[@]}"`, `${NAME[@]}` or `"${NAME[*]}"` … : NAME (an array's items as words).
std::optional<std::string> array_items_ref(std::string_view raw) {
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') raw = raw.substr(1, raw.size() - 2);
  if (raw.size() < 7 || raw.substr(0, 2) != "${" || raw.back() != '}') return std::nullopt;
  const std::string_view inner = raw.substr(2, raw.size() - 3);
  const std::size_t br = inner.find('[');
  if (br == std::string_view::npos || br == 0 || (inner.substr(br) != "[@]" && inner.substr(br) != "[*]"))
    return std::nullopt;
  for (char ch : inner.substr(0, br))
    if (!is_name_char(ch)) return std::nullopt;
  return std::string(inner.substr(0, br));
}

bool is_file_command(std::string_view w) {
  auto slash = w.rfind('/');
  if (slash != std::string_view::npos) w = w.substr(slash + 1);
  static const std::set<std::string_view> kFileCommands = {
      "echo", "printf",   "cat",     "cp",       "mv",       "rm",     "ls",        "ln",    "test",   "[",
      "[[",   "grep",     "sed",     "awk",      "head",     "tail",   "chmod",     "touch", "git",    "wget",
      "curl", "realpath", "dirname", "basename", "readlink", "tee",    "mkdir",     "cd",    "source", ".",
      "diff", "find",     "stat",    "file",     "wc",       "md5sum", "sha256sum", "rsync", "scp",    "tar"};
  return kFileCommands.count(w) > 0;
}

/// The variable a word expands whole: `$X`, `${X}`, `"${X[@]}"`, `${X[*]}`.
std::optional<std::string> expanded_name(std::string raw) {
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') raw = raw.substr(1, raw.size() - 2);
  for (const char* all : {"[@]}", "[*]}"})
    if (raw.size() > 6 && raw.rfind("${", 0) == 0 && raw.ends_with(all))
      raw = "${" + raw.substr(2, raw.size() - 6) + "}";
  auto ref = parameter_ref(raw);
  return ref ? std::optional<std::string>(ref->name) : std::nullopt;
}

/// The variable a launch's `--nnodes $NUM_NODES` (or `--nnodes=${NNODES:-1}`) reads, in `text`.
std::optional<std::string> nnodes_variable(const std::string& text) {
  for (std::size_t at = text.find("--nnodes"); at != std::string::npos; at = text.find("--nnodes", at + 1)) {
    std::size_t i = at + 8;
    while (i < text.size() && (text[i] == ' ' || text[i] == '=' || text[i] == '"' || text[i] == '\t')) ++i;
    if (i >= text.size() || text[i] != '$') continue;
    ++i;
    if (i < text.size() && text[i] == '{') ++i;
    std::size_t b = i;
    while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
    if (i > b && !std::isdigit(static_cast<unsigned char>(text[b]))) return text.substr(b, i - b);
  }
  return std::nullopt;
}

/// "torchrun, python -m torch.distributed.run, …, msrun_launcher.sh "CMD", srun, mpirun or python".
std::string launcher_list() {
  std::vector<std::string> names;
  for (const LauncherInfo& l : launchers()) {
    if (l.id == Launcher::Python) continue;
    std::string n = l.name;
    if (l.entry == EntryPosition::CommandString) n += " \"CMD\"";
    names.push_back(n);
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out + " or python";
}

bool is_mindspore_launch(const LaunchMatch& m) {
  if (is_mindspore_launcher(m.launcher)) return true;
  if (m.launcher != Launcher::Python) return false;
  auto slash = m.entry_name.rfind('/');
  std::string base = slash == std::string::npos ? m.entry_name : m.entry_name.substr(slash + 1);
  return base == "run_mindformer.py";
}

std::optional<std::string> tail_of(const std::string& raw) {
  auto slash = raw.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  std::string tail = raw.substr(slash + 1);
  if (auto v = literal_value(tail)) return v;
  if (raw.size() >= 2 && raw.front() == '"' && tail.size() >= 1 && tail.back() == '"')
    return literal_value(tail.substr(0, tail.size() - 1));
  return std::nullopt;
}

}  // namespace

std::string mode_name(WrapMode m) {
  switch (m) {
    case WrapMode::Analyze:
      return "analyze";
    case WrapMode::Trace:
      return "trace";
    case WrapMode::Dryrun:
      return "dryrun";
  }
  return "?";
}

WrapMode parse_mode(const std::string& s) {
  if (s == "analyze") return WrapMode::Analyze;
  if (s == "trace") return WrapMode::Trace;
  if (s == "dryrun") return WrapMode::Dryrun;
  throw InputError("--mode", "expected analyze, trace or dryrun, got '" + s + "'");
}

/// The invocation as written inside a command string of `quote` ('"': unquoted `${PREFLIGHT:-PATH}` when the
/// path needs no quoting — such a string may be run as a bare `${APP}`, split into words without quote
/// removal; else preflight_invocation()).
std::string invocation_in_string(const std::string& path, char quote);

std::string preflight_invocation(const std::string& path) {
  std::string esc;
  for (char c : path) {
    if (c == '\\' || c == '"' || c == '$' || c == '`' || c == '}') esc += '\\';
    esc += c;
  }
  return "\"${PREFLIGHT:-" + esc + "}\"";
}

std::string invocation_in_string(const std::string& path, char quote) {
  const bool plain = !path.empty() && std::all_of(path.begin(), path.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("/._+-:@%,=").find(c) != std::string_view::npos;
  });
  return quote == '"' && plain ? "${PREFLIGHT:-" + path + "}" : preflight_invocation(path);
}

namespace {

/// Where a script being rewritten sits: the top-level file, or a command string inside it (the value of a
/// variable that is eval'ed, the argument of `bash -c`, a here-document fed to sbatch/bash) whose text is
/// read through one more level of quoting.
struct Nesting {
  char quote = 0;               ///< '"' or '\'' inside such a quoted word; 'h' in an unquoted here-document
  std::size_t line_offset = 0;  ///< lines before the text in the file
  bool nested = false;          ///< no launch here is not an error
  /// Variables of the enclosing script whose value had a launch rewritten: `bash -c "${CMD}"` here runs one.
  const std::set<std::string>* launching_variables = nullptr;
};

/// `text` as it must be written inside the quoting of `n` to mean `text` after that quoting is removed.
std::string escape_for(const Nesting& n, const std::string& text) {
  std::string out;
  for (char c : text) {
    if (n.quote == '"' && (c == '"' || c == '\\' || c == '`')) out += '\\';
    if (n.quote == 'h' && (c == '\\' || c == '`')) out += '\\';
    if (n.quote == '\'' && c == '\'') {
      out += "'\\''";
      continue;
    }
    out += c;
  }
  return out;
}

/// What separates the words of a remote shell's command line when looking for an entry point in it.
constexpr const char* kRemoteTokenBreaks = " \t\n\\\"';&|()`";

/// Where the wrapped script's header goes: after the leading comment block (shebang, #SBATCH lines).
std::size_t header_position(const std::string& work) {
  std::size_t at = 0;
  while (at < work.size() && (work[at] == '#' || work[at] == '\n')) {
    std::size_t eol = work.find('\n', at);
    if (eol == std::string::npos) break;
    at = eol + 1;
  }
  return at;
}

/// The offsets in `work` where `tool` is written as a command word (after a blank, a quote, `=`, `(`, `;`, a
/// pipe, `&`, a backquote or a '/', and followed by a blank), outside comment lines.
std::vector<std::size_t> command_word_positions(const std::string& work, std::string_view tool) {
  std::vector<std::size_t> at_words;
  for (std::size_t at = work.find(tool); at != std::string::npos; at = work.find(tool, at + 1)) {
    const char before = at ? work[at - 1] : ' ',
               after = at + tool.size() < work.size() ? work[at + tool.size()] : '\n';
    const std::size_t line = work.rfind('\n', at) == std::string::npos ? 0 : work.rfind('\n', at) + 1;
    const std::size_t first = work.find_first_not_of(" \t", line);
    if (std::string_view(" \t\n\"'=(;|&`/").find(before) != std::string_view::npos &&
        (after == ' ' || after == '\t') && work[first] != '#')  // (not in a comment line)
      at_words.push_back(at);
  }
  return at_words;
}

/// A shell function standing in for Slurm's `tool` (scontrol, srun) where it is not installed: `preflight
/// run`'s shim of that name (cmd_run.cpp) answers for it.
std::string slurm_stand_in(const std::string& tool, const WrapOptions& o) {
  return "if ! command -v " + tool + " >/dev/null 2>&1; then\n" + tool +
         "() {  # preflight wrap: no Slurm here: " +
         (tool == "srun" ? "the command runs once, here" : "the host list of the job's nodes") + "\n  " +
         preflight_invocation(o.preflight) + " run --mode analyze" + join_quoted(o.run_args) + " --shim " +
         tool + " -- \"$@\"\n}\nif [ -n \"${BASH_VERSION:-}\" ]; then export -f " + tool + "; fi\nfi\n";
}

WrapResult wrap_impl(std::string_view input, const WrapOptions& o, const Nesting& nest,
                     std::vector<Edit>* edits_out = nullptr);

/// The inside of a word that is one quoted string ("…" or '…'), as a span of `text`; nullopt otherwise.
std::optional<std::pair<std::size_t, std::size_t>> quoted_inside(const std::string& text, const ShellWord& w,
                                                                 char& quote) {
  if (w.end - w.begin < 2) return std::nullopt;
  char q = text[w.begin];
  if ((q != '"' && q != '\'') || text[w.end - 1] != q) return std::nullopt;
  for (std::size_t i = w.begin + 1; i + 1 < w.end; ++i) {
    if (q == '"' && text[i] == '\\') {
      ++i;
      continue;
    }
    if (text[i] == q) return std::nullopt;  // "a"b"c": not one string
  }
  quote = q;
  return std::make_pair(w.begin + 1, w.end - 1);
}

/// The text a shell sees after one level of quoting is removed — inside "…" or an unquoted here-document
/// the escapes \$ \` \\ (and \" in "…") lose their backslash and backslash-newline disappears; inside '…' or
/// a quoted here-document nothing changes — with, for each of its bytes, the offset in `raw` it came from
/// (map.back() = raw.size()).
struct Unescaped {
  std::string text;
  std::vector<std::size_t> map;
};
Unescaped unescape(std::string_view raw, char quote) {
  Unescaped u;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if ((quote == '"' || quote == 'h') && raw[i] == '\\' && i + 1 < raw.size()) {
      char n = raw[i + 1];
      if (n == '\n') {
        ++i;
        continue;
      }
      if (n == '$' || n == '`' || n == '\\' || (quote == '"' && n == '"')) {
        u.text += n;
        u.map.push_back(i);
        ++i;
        continue;
      }
    }
    u.text += raw[i];
    u.map.push_back(i);
  }
  u.map.push_back(raw.size());
  return u;
}

}  // namespace

WrapResult wrap_script(std::string_view input, const WrapOptions& o) {
  // The rewrite writes POSIX / bash shell; a csh, tcsh or fish script would not run with it.
  if (input.starts_with("#!")) {
    const std::string_view first = input.substr(0, input.find('\n'));
    std::vector<std::string> words;
    try {
      words = split_shell_words(first.substr(2), o.script_name);
    } catch (const InputError&) {
    }
    std::string shell = words.empty() ? "" : std::string(detail::basename_of(words[0]));
    if (shell == "env" && words.size() > 1) shell = std::string(detail::basename_of(words[1]));
    if (shell == "csh" || shell == "tcsh" || shell == "fish")
      throw InputError(o.script_name + ":1",
                       "a " + shell +
                           " script: wrap rewrites sh / bash scripts; run this one as it is with "
                           "`preflight run --mode " +
                           mode_name(o.mode) + " -- " + shell + " " + o.script_name +
                           "` (its launchers are caught on PATH, its job header read)");
  }
  return wrap_impl(input, o, Nesting{});
}

namespace {

/// The job size sbatch reads: -N/--nodes, --ntasks-per-node, -n/--ntasks in `words` (sbatch's options)
/// and in the `#SBATCH` lines of `script` (the options win): whole numbers as written, "" when absent.
/// A value that is not one — a template's placeholder (`--nodes=your_own_num_nodes`), a variable the
/// shell would expand, `--ntasks-per-node=8(x2)` — is left out and listed in `unread` (as written,
/// `--nodes=your_own_num_nodes`), so that no made-up size reaches the launch; `--nodes=MIN-MAX` counts MIN
/// (what sbatch allocates at least).  With `shell_text` (sizes written into the rewritten script, where the
/// shell expands them: `sbatch --nodes=$NODES`) a value with a `$` is kept as written.
struct JobSize {
  std::string nodes, per_node, tasks;
  std::string gpus_per_node;  ///< --gpus-per-node (its count, a `type:` prefix left out)
  bool directives = false;    ///< any #SBATCH line or sbatch option at all
  std::vector<std::string> unread;
};
bool whole_number(std::string_view s) {
  return detail::positive_count(s).has_value();
}
JobSize sbatch_size(std::vector<std::string> words, std::string_view script, bool shell_text = false) {
  JobSize j;
  j.directives = !words.empty();
  for (std::size_t pos = 0; pos < script.size();) {
    std::size_t eol = script.find('\n', pos);
    std::string_view line =
        script.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? script.size() : eol + 1;
    if (!line.starts_with("#SBATCH")) continue;
    j.directives = true;
    try {
      for (const std::string& w : split_shell_words(line.substr(7), "#SBATCH"))
        words.insert(words.begin(), w);
    } catch (const InputError&) {
    }
  }
  auto option = [&](std::string_view short_name, std::string_view long_name) -> std::string {
    std::string found;
    for (std::size_t i = 0; i < words.size(); ++i) {
      const std::string& w = words[i];
      if ((!short_name.empty() && w == short_name) || w == long_name) {
        if (i + 1 < words.size()) found = words[i + 1];
      } else if (w.size() > long_name.size() && w.rfind(long_name, 0) == 0 && w[long_name.size()] == '=') {
        found = w.substr(long_name.size() + 1);
      } else if (!short_name.empty() && w.size() > 2 && w.rfind(short_name, 0) == 0 && w[1] != '-') {
        found = w.substr(2);
      }
    }
    return found;
  };
  auto number = [&](std::string value, std::string_view long_name, bool range) -> std::string {
    if (value.empty()) return value;
    const std::string written = std::string(long_name) + "=" + value;
    if (range && value.find('-') != std::string::npos) value = value.substr(0, value.find('-'));
    if (whole_number(value) || (shell_text && value.find('$') != std::string::npos)) return value;
    j.unread.push_back(written);
    return "";
  };
  std::string gpus = option("", "--gpus-per-node");
  if (const auto colon = gpus.rfind(':'); colon != std::string::npos) gpus = gpus.substr(colon + 1);
  j.nodes = number(option("-N", "--nodes"), "--nodes", true);
  j.per_node = number(option("", "--ntasks-per-node"), "--ntasks-per-node", false);
  j.tasks = number(option("-n", "--ntasks"), "--ntasks", false);
  j.gpus_per_node = number(gpus, "--gpus-per-node", false);
  return j;
}

/// `j` with the sizes given to preflight (`preflight run --nnodes N --gpus-per-node G`) where the job's own
/// lines give none or one that is not a number: N nodes; G GPUs a node, and G tasks a node when the lines
/// asked for tasks per node without a number (a template's `--ntasks-per-node=your_own_tasks_per_node`:
/// one process a GPU).  Only for a job with #SBATCH lines or sbatch options.  Says what it took in `notes`.
JobSize with_hints(JobSize j, const WorldSizeHints& hints, std::vector<std::string>& notes) {
  if (!j.directives) return j;
  auto unread = [&](std::string_view name) {
    return std::any_of(j.unread.begin(), j.unread.end(),
                       [&](const std::string& u) { return u.starts_with(std::string(name) + "="); });
  };
  if (j.nodes.empty() && hints.nnodes) {
    j.nodes = std::to_string(*hints.nnodes);
    notes.push_back("nodes: " + j.nodes + " (--nnodes)");
  }
  if (hints.gpus_per_node) {
    if (j.gpus_per_node.empty()) j.gpus_per_node = std::to_string(*hints.gpus_per_node);
    if (j.per_node.empty() && j.tasks.empty() && unread("--ntasks-per-node")) {
      j.per_node = std::to_string(*hints.gpus_per_node);
      notes.push_back("tasks per node: " + j.per_node + " (--gpus-per-node)");
    }
  }
  return j;
}

/// The variables of a job of size `j` (see sbatch_job_environment); empty when the node count is not known.
std::vector<std::pair<std::string, std::string>> job_variables(JobSize j, bool derive_tasks) {
  if (j.nodes.empty()) return {};
  if (derive_tasks && j.tasks.empty() && whole_number(j.nodes) && whole_number(j.per_node))
    j.tasks = std::to_string(std::stol(j.nodes) * std::stol(j.per_node));
  std::vector<std::pair<std::string, std::string>> vars = {{"SLURM_NNODES", j.nodes},
                                                           {"SLURM_JOB_NUM_NODES", j.nodes}};
  if (!j.per_node.empty()) vars.push_back({"SLURM_NTASKS_PER_NODE", j.per_node});
  if (!j.tasks.empty()) {
    vars.push_back({"SLURM_NTASKS", j.tasks});
    vars.push_back({"SLURM_NPROCS", j.tasks});
  }
  if (!j.gpus_per_node.empty()) {  // what the allocation says of its GPUs (scripts size tp or torchrun by it)
    vars.push_back({"SLURM_GPUS_PER_NODE", j.gpus_per_node});
    vars.push_back({"SLURM_GPUS_ON_NODE", j.gpus_per_node});
  }
  // What else job scripts compute sizes and addresses from: `$SLURM_TASKS_PER_NODE | cut -d '(' -f 1`
  // (SLURM's `8(x2)` form), `scontrol show hostname $SLURM_JOB_NODELIST | head -n1`, a port from
  // `$SLURM_JOBID % 50000` (made-up host names, job 1).
  if (!j.per_node.empty())
    vars.push_back({"SLURM_TASKS_PER_NODE", j.nodes == "1" ? j.per_node : j.per_node + "(x" + j.nodes + ")"});
  const std::string nodelist = j.nodes == "1" ? "preflight-node1" : "preflight-node[1-" + j.nodes + "]";
  vars.push_back({"SLURM_JOB_NODELIST", nodelist});
  vars.push_back({"SLURM_NODELIST", nodelist});
  vars.push_back({"SLURM_JOB_ID", "1"});
  vars.push_back({"SLURM_JOBID", "1"});
  return vars;
}

/// `SLURM_NNODES=… SLURM_JOB_NUM_NODES=… SLURM_NTASKS_PER_NODE=… SLURM_NTASKS=… ` (with a trailing blank)
/// for a job of size `j`; "" when the node count is not known.
std::string slurm_environment(const JobSize& j) {
  std::string env;
  for (const auto& [name, value] : job_variables(j, false))
    env +=
        name + "=" + (value.find_first_of("()[]") == std::string::npos ? value : "\"" + value + "\"") + " ";
  return env;
}

WrapResult wrap_impl(std::string_view input, const WrapOptions& o, const Nesting& nest,
                     std::vector<Edit>* edits_out) {
  WrapResult result;
  std::string work = handle_placeholders(input, o, result.notes);
  ShellScript sh = parse_shell(work);
  if (!sh.complete)
    result.notes.push_back(
        o.script_name +
        ": an unterminated quote, substitution or here-document: the end of the script was "
        "read as one word");

  struct Found {
    const SimpleCommand* cmd;
    LaunchMatch m;
  };
  std::vector<Found> found;
  std::map<std::string, std::optional<std::string>> vars;
  std::map<std::string, std::string> assigned_raw;  // NAME → its value as written (arrays too)
  auto record = [&](const std::string& raw) {
    auto eq = raw.find('=');
    std::string name = raw.substr(0, eq);
    assigned_raw[name] = raw.substr(eq + 1);
    if (!name.empty() && name.back() == '+') return;  // NAME+=… appends: value no longer literal-known
    if (auto br = name.find('['); br != std::string::npos) return;
    vars[name] = literal_value(std::string_view(raw).substr(eq + 1));
  };
  auto view_of = [&](const ShellWord& w) {
    WordView v;
    v.value = literal_value(w.raw);
    if (!v.value) {
      if (auto ref = parameter_ref(w.raw)) {
        auto it = vars.find(ref->name);
        if (it != vars.end() && it->second) {
          v.value = it->second;
        } else if (it == vars.end() && ref->default_raw) {
          v.value = literal_value(*ref->default_raw);
        }
      }
    }
    if (!v.value) {
      v.tail = tail_of(w.raw);
      v.head = literal_head(w.raw);
      // `"${PY}"` with PY="${ENV}/venv/bin/python": the word ends as its value does
      if (const auto ref = parameter_ref(w.raw); ref && !v.tail && !ref->default_raw)
        if (const auto it = assigned_raw.find(ref->name); it != assigned_raw.end())
          v.tail = tail_of(it->second);
      // an interpreter or launcher by a path under an expansion (`${VENV}/bin/python`, `"${PY}"` as above,
      // `$CONDA_PREFIX/bin/torchrun`): the launch is recognised by its name
      if (v.tail && (detail::is_python(*v.tail) || *v.tail == "torchrun" || *v.tail == "deepspeed"))
        v.value = v.tail;
    }
    return v;
  };

  std::vector<const SimpleCommand*> remote_launches;
  // Launches whose launcher is a variable run as the command word, the entry point written after it
  // (`${LAUNCH_SCRIPT} ${SCRIPT_DIR}/finetune.py …` with LAUNCH_SCRIPT="torchrun --nproc_per_node=…" set in a
  // sourced file or on a branch: Megatron-LM's ModelOpt scripts; `$LAUNCHER pretrain_gpt.py …`): the launch
  // is known only when the script runs, so `preflight run` goes in front and reads it then.
  struct RuntimeLaunch {
    const SimpleCommand* cmd;
    std::string variable, entry;
  };
  std::vector<RuntimeLaunch> runtime_launches;
  for (const SimpleCommand& cmd : sh.commands) {
    if (cmd.words.empty()) {
      for (const ShellWord& a : cmd.assignments) record(a.raw);
      continue;
    }
    std::vector<WordView> views;
    for (const ShellWord& w : cmd.words) views.push_back(view_of(w));
    const std::string& first = views[0].value ? *views[0].value : cmd.words[0].raw;
    if (first == "export" || first == "declare" || first == "typeset" || first == "local" ||
        first == "readonly") {
      for (std::size_t i = 1; i < cmd.words.size(); ++i)
        if (cmd.words[i].raw.find('=') != std::string::npos && cmd.words[i].raw[0] != '-')
          record(cmd.words[i].raw);
      continue;
    }
    bool wrapped = false;
    for (std::size_t i = 0; i < cmd.words.size(); ++i) {
      const std::string& raw = cmd.words[i].raw;
      std::string base = views[i].value ? *views[i].value : raw;
      if (base == "exec" || base == "nohup" || base == "command" || base == "time" || base == "env" ||
          (i > 0 && base.find('=') != std::string::npos && base[0] != '-'))
        continue;
      if (auto s = base.rfind('/'); s != std::string::npos) base = base.substr(s + 1);
      wrapped = raw.find("${PREFLIGHT") != std::string::npos || raw.find("$PREFLIGHT") != std::string::npos ||
                base == "preflight";
      break;
    }
    if (wrapped) {
      result.launches.push_back(
          {line_of(work, cmd.words[0].begin) + nest.line_offset, Launcher::Torchrun, "", "already wrapped"});
      continue;
    }
    // A launch on other nodes by a remote shell (`ssh $HOST "cd $DIR && torchrun … pretrain_gpt.py …" &` in a
    // loop over the hosts, `pdsh -w $HOSTS …`, Grid Engine's `qrsh -inherit $NODE eval "torchrun …"`): kept
    // aside (below) — the analysis must not start it there.
    if (const std::string_view tool = detail::basename_of(first);
        tool == "ssh" || tool == "pdsh" || tool == "clush" || tool == "qrsh") {
      // (a command held in a variable, `ssh $HOST $CMD` with CMD="python -m torch.distributed.launch …
      // pretrain_gpt.py …": its value as assigned is read too)
      std::string text(std::string_view(work).substr(cmd.words.front().begin,
                                                     cmd.words.back().end - cmd.words.front().begin));
      for (const ShellWord& w : cmd.words)
        if (const auto name = expanded_name(w.raw); name && assigned_raw.count(*name))
          text += " " + assigned_raw[*name];
      bool names_entry = false;
      for (std::size_t b = text.find_first_not_of(kRemoteTokenBreaks);
           b != std::string::npos && !names_entry;) {
        const std::size_t e = std::min(text.find_first_of(kRemoteTokenBreaks, b), text.size());
        names_entry = o.entries.matches(text.substr(b, e - b));
        b = text.find_first_not_of(kRemoteTokenBreaks, e);
      }
      // (the command for the nodes must start something: `ssh $HOST "pkill -f pretrain_gpt.py"` does not)
      std::vector<std::string> raw_words;
      for (const ShellWord& w : cmd.words) {
        const auto name = expanded_name(w.raw);
        raw_words.push_back(name && assigned_raw.count(*name) ? assigned_raw[*name] : w.raw);
      }
      std::string remote_text;
      if (const auto rc = remote_command(raw_words))
        for (std::size_t i = rc->command; i < raw_words.size(); ++i) remote_text += raw_words[i] + " ";
      if (names_entry && remote_command_kind(remote_text) == RemoteKind::Starts) {
        remote_launches.push_back(&cmd);
        continue;
      }
    }
    if (auto m = match_launch(views, o.entries)) {
      found.push_back({&cmd, *m});
    } else if (!is_file_command(first)) {
      // A command that names the entry point but is no launch recognised here (mpirun, a launcher held in a
      // variable, srun bash -c "…"): the rewritten script would still start the real run from it.
      // A launcher whose entry point comes with a function's arguments (`run_train() { torchrun
      // --nproc_per_node 8
      // "$@"; }`, called with pretrain_gpt.py …): known when the function runs.
      if (o.mode != WrapMode::Dryrun && !views.empty() && views[0].value) {
        std::vector<std::string> words;
        for (const ShellWord& w : cmd.words) words.push_back(w.raw);
        const auto known = launcher_of_words(words);
        const bool launcher =
            known && (*known == Launcher::Torchrun || *known == Launcher::TorchDistributedRun ||
                      *known == Launcher::TorchDistributedLaunch || *known == Launcher::Deepspeed);
        const bool forwards = std::any_of(cmd.words.begin(), cmd.words.end(), [](const ShellWord& w) {
          return w.raw == "\"$@\"" || w.raw == "$@" || w.raw == "\"${@}\"" || w.raw == "$*" ||
                 w.raw == "\"$*\"";
        });
        if (launcher && forwards) {
          runtime_launches.push_back({&cmd, "@", "\"$@\""});
          continue;
        }
      }
      // the launcher: `$LAUNCHER` / `${LAUNCHER}` split into words, or an array's items (`"${LAUNCHER[@]}"`)
      std::string launcher_var;
      if (const auto ref = parameter_ref(cmd.words[0].raw); ref && !ref->quoted) launcher_var = ref->name;
      if (const auto array = array_items_ref(cmd.words[0].raw)) launcher_var = *array;
      for (const WordView& v : views) {
        const std::optional<std::string>& name = v.value ? v.value : v.tail;
        if (!name || !o.entries.matches(*name)) continue;
        if (!launcher_var.empty() && o.mode != WrapMode::Dryrun && &v != &views[0]) {
          runtime_launches.push_back({&cmd, launcher_var, *name});
          break;
        }
        // a call of a function of the script whose launch takes the call's arguments ("$@", rewritten above)
        if (views[0].value && defines_function(work, *views[0].value) &&
            std::any_of(runtime_launches.begin(), runtime_launches.end(),
                        [](const RuntimeLaunch& rl) { return rl.variable == "@"; }))
          break;
        std::string text = trim(std::string_view(work).substr(
            cmd.words.front().begin, cmd.words.back().end - cmd.words.front().begin));
        if (auto nl = text.find('\n'); nl != std::string::npos) text = text.substr(0, nl) + " …";
        if (text.size() > 80) text = text.substr(0, 77) + "...";
        result.notes.push_back(o.script_name + ":" +
                               std::to_string(line_of(work, cmd.words.front().begin) + nest.line_offset) +
                               ": `" + text + "` names " + *name +
                               " but is no launch wrap recognises: left as is (it will start the real run); "
                               "`preflight run --mode " +
                               mode_name(o.mode) + " -- bash " + o.script_name +
                               "` catches launchers found on PATH when the script runs");
        break;
      }
    }
  }

  // Command strings: launches inside the value of a variable that is eval'ed or run, inside `bash -c "…"`,
  // inside a here-document fed to sbatch / bash / sh.  Each is rewritten as a script of its own and put
  // back with its quoting.
  std::vector<Edit> nested_edits;
  std::size_t nested_launches = 0;
  std::set<std::string> launching_variables;  // variables whose value had a launch rewritten
  if (nest.launching_variables) launching_variables = *nest.launching_variables;
  auto rewrite_inside = [&](std::size_t b, std::size_t e, char quote) -> bool {
    Unescaped u = unescape(std::string_view(work).substr(b, e - b), quote);
    Nesting inner{quote, line_of(work, b) - 1 + nest.line_offset, true, &launching_variables};
    WrapOptions io = o;
    io.fix_placeholders = false;
    std::vector<Edit> inner_edits;
    WrapResult r = wrap_impl(u.text, io, inner, &inner_edits);
    std::size_t n = 0;
    for (const LaunchSite& site : r.launches)
      if (site.action != "already wrapped") ++n;
    for (auto& site : r.launches) result.launches.push_back(site);
    for (auto& note : r.notes) result.notes.push_back(note);
    for (const Edit& ed : inner_edits)
      nested_edits.push_back({b + u.map[ed.begin], b + u.map[ed.end], ed.text});
    nested_launches += inner_edits.empty() ? 0 : n;
    return n > 0;
  };
  auto expands = [](const std::string& raw, const std::string& name) {
    return raw.find("$" + name) != std::string::npos || raw.find("${" + name + "}") != std::string::npos ||
           raw.find("${" + name + ":") != std::string::npos;
  };
  // `bash|sh [options] -c STRING` in a command: (index of the shell word, index of STRING); the first shell
  // word decides.
  auto shell_command_string =
      [&](const SimpleCommand& c) -> std::optional<std::pair<std::size_t, std::size_t>> {
    for (std::size_t k = 0; k + 2 < c.words.size(); ++k) {
      std::optional<std::string> w = literal_value(c.words[k].raw);
      if (!w) continue;
      std::string base = w->substr(w->rfind('/') == std::string::npos ? 0 : w->rfind('/') + 1);
      if (base != "bash" && base != "sh") continue;
      std::size_t m = k + 1;
      while (m < c.words.size() && c.words[m].raw != "-c" && c.words[m].raw.rfind('-', 0) == 0) ++m;
      if (m + 1 >= c.words.size() || c.words[m].raw != "-c") return std::nullopt;
      return std::pair{k, m + 1};
    }
    return std::nullopt;
  };
  // Variables run as a command: `eval $CMD`, `eval "${run_cmd}"`, or `$CMD` in command position.
  auto run_as_command = [&](const std::string& name) {
    for (const SimpleCommand& c : sh.commands) {
      if (c.words.empty()) continue;
      std::optional<std::string> first = literal_value(c.words[0].raw);
      if (first == "eval") {
        for (std::size_t k = 1; k < c.words.size(); ++k)
          if (expands(c.words[k].raw, name)) return true;
      } else if (auto ref = parameter_ref(c.words[0].raw); ref && ref->name == name) {
        return true;
      }
      // `sh -c "${CMD}"` / `srun … bash -c "$CMD"` (Megatron-LM's sc21 SRUN.sh).
      if (auto sc = shell_command_string(c); sc && expands(c.words[sc->second].raw, name)) return true;
    }
    // … or inside a here-document (sbatch <<EOF … srun bash -c "${CMD}" … EOF: Megatron-LM's
    // examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh).
    for (const auto& [b, e] : sh.heredoc_bodies) {
      const std::string_view body = std::string_view(work).substr(b, e - b);
      for (std::size_t at = body.find("-c "); at != std::string_view::npos; at = body.find("-c ", at + 3)) {
        std::size_t w = at + 3;
        while (w < body.size() && body[w] == ' ') ++w;
        std::size_t end = w;
        while (end < body.size() && body[end] != ' ' && body[end] != '\n' && body[end] != ';') ++end;
        if (expands(std::string(body.substr(w, end - w)), name)) return true;
      }
    }
    return false;
  };
  // Each plain `NAME=value` of a command (its leading assignments, or the words after export / local /
  // declare / readonly): the name and the value's word.
  auto assignments_of = [&](const SimpleCommand& cmd) {
    std::vector<std::pair<std::string, ShellWord>> out;
    std::vector<const ShellWord*> assigns;
    for (const ShellWord& a : cmd.assignments) assigns.push_back(&a);
    std::optional<std::string> head = cmd.words.empty() ? std::nullopt : literal_value(cmd.words[0].raw);
    if (head == "export" || head == "local" || head == "declare" || head == "readonly")
      for (std::size_t k = 1; k < cmd.words.size(); ++k) assigns.push_back(&cmd.words[k]);
    for (const ShellWord* a : assigns) {
      auto eq = a->raw.find('=');
      if (eq == std::string::npos || eq == 0 || a->raw[eq - 1] == '+') continue;
      out.push_back({a->raw.substr(0, eq), ShellWord{a->begin + eq + 1, a->end, a->raw.substr(eq + 1)}});
    }
    return out;
  };
  std::set<std::string> split_handled;  // command variables of a split launch, rewritten below
  // A launcher and its command in two variables run together (BigScience's and many HPC job scripts:
  // `export LAUNCHER="python -u -m torch.distributed.run --nproc_per_node 8 …"`, `export CMD="pretrain_gpt.py
  // …"`, `srun … bash -c "$LAUNCHER --node_rank \$SLURM_PROCID $CMD"`): the launcher's words in the one
  // become the analysis and the entry point leaves the other — the launch rewritten where its halves are
  // written.
  {
    struct Quoted {
      std::size_t begin = 0, end = 0;  // inside the quotes
      char quote = 0;
    };
    std::map<std::string, std::vector<Quoted>> quoted_values;  // every quoted assignment of each name
    for (const SimpleCommand& cmd : sh.commands)
      for (const auto& [name, value] : assignments_of(cmd)) {
        char q = 0;
        if (auto in = quoted_inside(work, value, q))
          quoted_values[name].push_back({in->first, in->second, q});
      }
    // The words of a value (after its quoting), each with its [begin, end) in the script.
    struct Span {
      std::string text;
      std::size_t begin, end;
    };
    auto words_of = [&](const Quoted& qv) {
      Unescaped u = unescape(std::string_view(work).substr(qv.begin, qv.end - qv.begin), qv.quote);
      std::vector<Span> out;
      for (std::size_t i = 0; i < u.text.size();) {
        while (i < u.text.size() && std::isspace(static_cast<unsigned char>(u.text[i]))) ++i;
        std::size_t j = i;
        while (j < u.text.size() && !std::isspace(static_cast<unsigned char>(u.text[j]))) ++j;
        if (j > i) out.push_back({u.text.substr(i, j - i), qv.begin + u.map[i], qv.begin + u.map[j]});
        i = j;
      }
      return out;
    };
    auto name_of = [](const std::string& w) -> std::string {  // `$NAME` / `${NAME}`
      if (w.size() > 3 && w.rfind("${", 0) == 0 && w.back() == '}') return w.substr(2, w.size() - 3);
      if (w.size() > 1 && w[0] == '$') return w.substr(1);
      return "";
    };
    // The words a launcher takes (torchrun, python [-u] -m torch.distributed.run|launch) at the start of a
    // value without an entry point of its own, or after a runner (`singularity exec --nv $IMAGE python -u -m
    // torch.distributed.run …`): [start, end) of its words; end 0 when it is no such launcher.
    struct LauncherWords {
      std::size_t start = 0, end = 0;
      bool torchrun = false;
    };
    auto launcher_words_of = [&](const std::vector<Span>& lw) -> LauncherWords {
      for (const Span& w : lw)
        if (o.entries.matches(std::string(detail::basename_of(w.text)))) return {};  // a whole launch
      auto at = [&](std::size_t s) -> LauncherWords {
        if (detail::basename_of(lw[s].text) == "torchrun") return {s, s + 1, true};
        if (detail::is_python(detail::basename_of(lw[s].text)))
          for (std::size_t k = s + 1; k + 1 < lw.size() && lw[k].text.rfind('-', 0) == 0; ++k)
            if (lw[k].text == "-m" &&
                (lw[k + 1].text == "torch.distributed.run" || lw[k + 1].text == "torch.distributed.launch"))
              return {s, k + 2, false};
        return {};
      };
      if (lw.empty()) return {};
      if (const LauncherWords l = at(0); l.end > 0) return l;
      if (!detail::is_runner(detail::basename_of(lw[0].text))) return {};
      for (std::size_t s = 1; s < lw.size(); ++s)
        if (const LauncherWords l = at(s); l.end > 0) return l;
      return {};
    };
    auto starts_with_entry = [&](const std::vector<Span>& words) {
      return !words.empty() && o.entries.matches(std::string(detail::basename_of(words.front().text)));
    };
    for (const SimpleCommand& cmd : sh.commands) {
      auto sc = shell_command_string(cmd);
      if (!sc || o.mode == WrapMode::Dryrun) continue;
      char q = 0;
      auto in = quoted_inside(work, cmd.words[sc->second], q);
      if (!in) continue;
      const std::vector<Span> outer = words_of({in->first, in->second, q});
      if (outer.empty()) continue;
      const std::string launcher_var = name_of(outer.front().text);
      if (launcher_var.empty() || !quoted_values.count(launcher_var) || split_handled.count(launcher_var))
        continue;
      // Each assignment of the launcher variable that is a launcher (a script may set it on several
      // branches).
      std::vector<std::pair<const Quoted*, LauncherWords>> launchers;
      for (const Quoted& qv : quoted_values[launcher_var])
        if (const LauncherWords l = launcher_words_of(words_of(qv)); l.end > 0) launchers.push_back({&qv, l});
      if (launchers.empty()) continue;
      // The command variable: a later word of the string whose value starts with the entry point.
      std::string command_var;
      for (std::size_t k = 1; k < outer.size() && command_var.empty(); ++k) {
        const std::string v = name_of(outer[k].text);
        if (v.empty() || !quoted_values.count(v)) continue;
        for (const Quoted& qv : quoted_values[v])
          if (starts_with_entry(words_of(qv))) command_var = v;
      }
      // … or the entry point written in the string itself (LLM-jp's v4 job scripts: `srun … bash -c
      // "${LAUNCH} --node-rank=… ${ENV_DIR}/src/Megatron-LM/pretrain_gpt.py ${ALL_PARAMS[*]}"`).
      std::size_t literal_entry = 0;
      if (command_var.empty())
        for (std::size_t k = 1; k < outer.size() && literal_entry == 0; ++k)
          if (o.entries.matches(std::string(detail::basename_of(outer[k].text)))) literal_entry = k;
      if (command_var.empty() && literal_entry == 0) continue;
      std::string entry;
      if (literal_entry > 0) {
        entry = outer[literal_entry].text;
        // the entry point (and the blank after it) leaves the string
        if (o.mode == WrapMode::Analyze)
          nested_edits.push_back(
              {outer[literal_entry].begin,
               literal_entry + 1 < outer.size() ? outer[literal_entry + 1].begin : outer[literal_entry].end,
               ""});
      }
      for (const Quoted& qv : command_var.empty() ? std::vector<Quoted>{} : quoted_values[command_var]) {
        const std::vector<Span> cw = words_of(qv);
        if (!starts_with_entry(cw)) continue;
        entry = cw.front().text;
        // the entry point (and the blank after it) leaves the command variable
        if (o.mode == WrapMode::Analyze)
          nested_edits.push_back({cw.front().begin, cw.size() > 1 ? cw[1].begin : cw.front().end, ""});
      }
      for (const auto& [lq, l] : launchers) {
        const std::vector<Span> lw = words_of(*lq);
        const Nesting in_value{lq->quote, 0, true, nullptr};
        const std::size_t line = line_of(work, lw.front().begin) + nest.line_offset;
        LaunchSite site{line, l.torchrun ? Launcher::Torchrun : Launcher::TorchDistributedRun, entry, ""};
        if (o.mode == WrapMode::Analyze && l.start > 0) {
          std::string prefix;
          for (std::size_t k = 0; k < l.start; ++k) prefix += (k ? " " : "") + lw[k].text;
          result.notes.push_back(o.script_name + ":" + std::to_string(line) +
                                 ": the analysis runs without the prefix `" + prefix + "` of this launch");
        }
        if (o.mode == WrapMode::Analyze) {
          nested_edits.push_back({lw.front().begin, lw[l.end - 1].end,
                                  escape_for(in_value, invocation_in_string(o.preflight, lq->quote) +
                                                           " analyze" + join_quoted(o.analyze_args))});
          site.action = "preflight analyze";
        } else {
          nested_edits.push_back(
              {lw.front().begin, lw.front().begin,
               escape_for(in_value, preflight_invocation(o.preflight) + " run --mode " + mode_name(o.mode) +
                                        join_quoted(o.run_args) + " -- ")});
          site.action = "preflight run --mode " + mode_name(o.mode);
        }
        result.launches.push_back(site);
        result.notes.push_back(
            o.script_name + ":" + std::to_string(line) + ": the launcher in $" + launcher_var +
            (command_var.empty() ? " and the entry point in the command string (`" + outer.front().text +
                                       " … " + entry + " …`)"
                                 : " and the command in $" + command_var + " (run together by `" +
                                       outer.front().text + " … $" + command_var + "`)") +
            " are rewritten where written");
        ++nested_launches;
      }
      if (!command_var.empty()) split_handled.insert(command_var);
      split_handled.insert(launcher_var);
      launching_variables.insert(launcher_var);
    }
  }
  for (const SimpleCommand& cmd : sh.commands) {
    for (const auto& [name, value] : assignments_of(cmd)) {
      char quote = 0;
      auto inside = quoted_inside(work, value, quote);
      if (inside && !split_handled.count(name) && run_as_command(name) &&
          rewrite_inside(inside->first, inside->second, quote))
        launching_variables.insert(name);
    }
    // bash -c "…" / sh -c '…' (under srun: one shell per node).
    if (auto sc = shell_command_string(cmd)) {
      const std::size_t k = sc->first;
      const ShellWord& string = cmd.words[sc->second];
      char quote = 0;
      auto inside = quoted_inside(work, string, quote);
      const bool runs_variable = std::any_of(launching_variables.begin(), launching_variables.end(),
                                             [&](const std::string& v) { return expands(string.raw, v); });
      if (!runs_variable && (!inside || !rewrite_inside(inside->first, inside->second, quote))) continue;
      // srun/mpirun in front starts the shell once per node or rank: analysis runs it once.
      std::optional<std::string> head = literal_value(cmd.words[0].raw);
      if (o.mode == WrapMode::Analyze && k > 0 && head &&
          (*head == "srun" || detail::is_runner(detail::basename_of(*head)))) {
        // (a container or profiler runner before the shell: the analysis runs outside it)
        nested_edits.push_back({cmd.words[0].begin, cmd.words[k].begin, ""});
        result.notes.push_back(o.script_name + ":" +
                               std::to_string(line_of(work, cmd.words[0].begin) + nest.line_offset) +
                               ": the analysis runs the shell once, not under " + *head);
      } else if (o.mode == WrapMode::Analyze && k > 0 && head && (*head == "mpirun" || *head == "mpiexec")) {
        // mpirun's process count is often known only when it runs (-np ${NP}): `preflight run` runs the
        // shell once as rank 0 with the size mpirun gives (MPI's variables and WORLD_SIZE).
        nested_edits.push_back({cmd.words[0].begin, cmd.words[0].begin,
                                escape_for(nest, preflight_invocation(o.preflight) + " run --mode analyze" +
                                                     join_quoted(o.run_args) + " -- ")});
        result.notes.push_back(
            o.script_name + ":" + std::to_string(line_of(work, cmd.words[0].begin) + nest.line_offset) +
            ": the analysis runs the shell once, as rank 0 of " + *head + "'s processes (preflight run)");
      }
    }
  }
  // Here-documents fed to sbatch, bash or sh.
  for (std::size_t h = 0; h < sh.heredoc_bodies.size() && h < sh.heredoc_ops.size(); ++h) {
    const SimpleCommand* owner = nullptr;
    for (const SimpleCommand& c : sh.commands)
      if (!c.words.empty() && c.begin <= sh.heredoc_ops[h] && sh.heredoc_ops[h] < c.end) owner = &c;
    if (!owner) continue;
    std::optional<std::string> head = literal_value(owner->words[0].raw);
    if (!head) continue;
    std::string base = head->substr(head->rfind('/') == std::string::npos ? 0 : head->rfind('/') + 1);
    if (base != "sbatch" && base != "bash" && base != "sh") continue;
    auto [b, e] = sh.heredoc_bodies[h];
    const char quote = h < sh.heredoc_quoted.size() && sh.heredoc_quoted[h] ? '\'' : 'h';
    const std::string body(std::string_view(work).substr(b, e - b));
    const bool runs_variable = std::any_of(launching_variables.begin(), launching_variables.end(),
                                           [&](const std::string& v) { return expands(body, v); });
    if ((!rewrite_inside(b, e, quote) && !runs_variable) || base != "sbatch" || o.mode != WrapMode::Analyze)
      continue;
    // The job runs here for the analysis, with the size the allocation would give it.
    std::vector<std::string> opts;
    for (std::size_t k = 1; k < owner->words.size(); ++k) opts.push_back(owner->words[k].raw);
    std::string job = slurm_environment(sbatch_size(opts, std::string_view(work).substr(b, e - b), true));
    nested_edits.push_back({owner->words.front().begin, owner->words.back().end, job + "bash"});
    result.notes.push_back(
        o.script_name + ":" + std::to_string(line_of(work, owner->words[0].begin) + nest.line_offset) +
        ": the job's script runs here for the analysis" +
        (job.empty() ? " (no node count in the sbatch options or #SBATCH lines)" : ", with " + job));
  }

  for (const RuntimeLaunch& rl : runtime_launches) {
    const std::size_t line = line_of(work, rl.cmd->words.front().begin) + nest.line_offset;
    // the launcher as far as its words are known here (else torchrun, the usual one)
    std::optional<Launcher> launcher;
    if (rl.variable == "@") {
      std::vector<std::string> words;
      for (const ShellWord& w : rl.cmd->words) words.push_back(w.raw);
      launcher = launcher_of_words(words);
    } else if (const auto it = assigned_raw.find(rl.variable); it != assigned_raw.end()) {
      if (const auto value = literal_value(it->second)) {
        std::istringstream in(*value);
        std::vector<std::string> words;
        for (std::string w; in >> w;) words.push_back(w);
        launcher = launcher_of_words(words);
      }
    }
    nested_edits.push_back({rl.cmd->words.front().begin, rl.cmd->words.front().begin,
                            escape_for(nest, preflight_invocation(o.preflight) + " run --mode " +
                                                 mode_name(o.mode) + join_quoted(o.run_args) + " -- ")});
    result.launches.push_back(
        {line, launcher.value_or(Launcher::Torchrun), rl.entry, "preflight run --mode " + mode_name(o.mode)});
    if (rl.variable == "@") {
      result.notes.push_back(
          o.script_name + ":" + std::to_string(line) +
          ": the launch's entry point comes with the function's arguments (\"$@\"), known when "
          "it runs: `preflight run --mode " +
          mode_name(o.mode) + " -- …` reads the launch then");
    } else {
      result.notes.push_back(o.script_name + ":" + std::to_string(line) + ": the launcher is $" +
                             rl.variable + ", known when the script runs: `preflight run --mode " +
                             mode_name(o.mode) + " -- $" + rl.variable + " " + rl.entry +
                             " …` reads the launch then");
    }
    ++nested_launches;
  }

  // Launches on other nodes (remote shells, above) beside the script's own: in analyze mode left out, so that
  // the analysis starts nothing there (`: ` before them); the script's own launch is the run analysed.  In
  // trace mode they start the job's other nodes, as the job does.
  if (!remote_launches.empty() && (!found.empty() || nested_launches > 0)) {
    for (const SimpleCommand* cmd : remote_launches) {
      const std::size_t line = line_of(work, cmd->words.front().begin) + nest.line_offset;
      const std::string tool(detail::basename_of(cmd->words.front().raw));
      if (o.mode == WrapMode::Analyze) {
        nested_edits.push_back({cmd->words.front().begin, cmd->words.front().begin, ": "});
        result.notes.push_back(o.script_name + ":" + std::to_string(line) + ": the launch " + tool +
                               " starts on other nodes is left out of the analysis (`: " + tool +
                               " …`): the analysis is of this script's own launch");
      } else {
        result.notes.push_back(o.script_name + ":" + std::to_string(line) + ": the launch " + tool +
                               " starts on other nodes is left as is (not traced)");
      }
    }
  }

  // NeMo 2's other commands beside a launch it analyses (`nemo llm import` downloads and converts a
  // checkpoint, `nemo llm generate|deploy|export` need the trained model and GPUs): left out in analyze mode.
  if (o.mode == WrapMode::Analyze && !found.empty()) {
    for (const SimpleCommand& c : sh.commands) {
      std::size_t k = 0;
      while (k < c.words.size() && detail::is_assignment(c.words[k].raw)) ++k;
      if (k + 1 >= c.words.size() || detail::basename_of(c.words[k].raw) != "nemo" ||
          c.words[k + 1].raw != "llm")
        continue;
      if (std::any_of(found.begin(), found.end(), [&](const Found& f) { return f.cmd == &c; })) continue;
      const std::string what = k + 2 < c.words.size() ? c.words[k + 2].raw : "";
      nested_edits.push_back({c.words[k].begin, c.words[k].begin, ": "});
      result.notes.push_back(
          o.script_name + ":" + std::to_string(line_of(work, c.begin) + nest.line_offset) + ": `nemo llm " +
          what +
          "` is left out of the analysis (`: nemo …`; NeMo's import, generation and export "
          "need its checkpoints and GPUs)");
    }
  }

  // Package installs before the launch (Megatron-LM's ModelOpt scripts: `pip install -r requirements.txt`
  // under set -e): left out in analyze mode — the analysis needs no package and changes nothing on the
  // machine it runs on (`preflight run`'s pip shims do the same).
  if (o.mode == WrapMode::Analyze && (!found.empty() || nested_launches > 0)) {
    for (const SimpleCommand& c : sh.commands) {
      std::size_t k = 0;
      while (k < c.words.size() && detail::is_assignment(c.words[k].raw)) ++k;
      std::vector<std::string> words;
      for (std::size_t w = k; w < c.words.size(); ++w) words.push_back(c.words[w].raw);
      const auto install = wrap::package_install_command(words);
      if (!install) continue;
      nested_edits.push_back({c.words[k].begin, c.words[k].begin, ": "});
      result.notes.push_back(o.script_name + ":" + std::to_string(line_of(work, c.begin) + nest.line_offset) +
                             ": `" + *install + "` is left out of the analysis (`: " + words.front() +
                             " …`; the analysis needs no package and changes nothing here)");
    }
  }

  // A job script run outside its allocation for the analysis: the SLURM sizes its #SBATCH lines ask for,
  // unless the environment has them.  And numactl / taskset, which a job script may put before a launch it
  // builds at run time (`CMD_PREFIX="numactl --membind=0-3"` … `bash -c "$CMD_PREFIX $TRAINING_CMD"`): the
  // analysis runs the command without the binding (a login node may lack the NUMA nodes, or numactl).
  if (!nest.nested && o.mode == WrapMode::Analyze && (!found.empty() || nested_launches > 0)) {
    std::string header;
    // (numactl / taskset as a command word somewhere in the script)
    if (!command_word_positions(work, "numactl").empty() ||
        !command_word_positions(work, "taskset").empty()) {
      header =
          "_preflight_bind_skip() {  # preflight wrap: the option words of numactl / taskset ($1) before the "
          "command they run\n"
          "  _pf_t=$1; shift; _pf_n=0\n"
          "  if [ \"$_pf_t\" = numactl ]; then\n"
          "    while [ $# -gt 0 ]; do\n"
          "      case \"$1\" in\n"
          "        --) echo $((_pf_n + 1)); return ;;\n"
          "        --*=*) _pf_n=$((_pf_n + 1)); shift ;;\n"
          "        --interleave|--preferred|--membind|--cpunodebind|--physcpubind|--cpubind|--preferred-many|"
          "--weighted-interleave|--offset|--length|--shm|--shmid|--file|--mode|-[ipmNCPwoLSfM]) "
          "_pf_n=$((_pf_n + 2)); shift; [ $# -gt 0 ] && shift ;;\n"
          "        -?*) _pf_n=$((_pf_n + 1)); shift ;;\n"
          "        *) break ;;\n"
          "      esac\n"
          "    done\n"
          "  else\n"
          "    while [ $# -gt 0 ] && [ \"${1#-}\" != \"$1\" ]; do\n"
          "      case \"$1\" in --pid|-[!-]*p*) echo 100000; return ;; esac\n"
          "      _pf_n=$((_pf_n + 1)); shift\n"
          "    done\n"
          "    _pf_n=$((_pf_n + 1))\n"
          "  fi\n"
          "  echo \"$_pf_n\"\n"
          "}\n"
          "numactl() {  # preflight wrap: the command without its binding (it does not change the analysis); "
          "a "
          "query goes to numactl where it is installed\n"
          "  _pf_k=$(_preflight_bind_skip numactl \"$@\")\n"
          "  if [ \"$_pf_k\" -lt $# ]; then shift \"$_pf_k\"; \"$@\"\n"
          "  else command numactl \"$@\" 2>/dev/null || { _pf_k=$?; [ $_pf_k -eq 127 ] || return $_pf_k; }; "
          "fi\n"
          "}\n"
          "taskset() {  # preflight wrap: likewise\n"
          "  _pf_k=$(_preflight_bind_skip taskset \"$@\")\n"
          "  if [ \"$_pf_k\" -lt $# ]; then shift \"$_pf_k\"; \"$@\"\n"
          "  else command taskset \"$@\" 2>/dev/null || { _pf_k=$?; [ $_pf_k -eq 127 ] || return $_pf_k; }; "
          "fi\n"
          "}\n"
          "if [ -n \"${BASH_VERSION:-}\" ]; then export -f _preflight_bind_skip numactl taskset; fi\n";
      result.notes.push_back(o.script_name +
                             ": numactl / taskset run the command without binding for the analysis");
    }
    // pip in the script or in a file it sources (Megatron-LM's ModelOpt scripts source conf/arguments.sh,
    // which runs `pip install -r requirements.txt` under set -e): its installs are not run for the analysis —
    // `preflight run`'s pip shim decides, and runs the other pip commands.
    if (!command_word_positions(work, "pip").empty() || !command_word_positions(work, "pip3").empty() ||
        !command_word_positions(work, "source").empty() || !command_word_positions(work, ".").empty()) {
      for (const char* tool : {"pip", "pip3"})
        header += std::string(tool) + "() {  # preflight wrap: installs are not run for the analysis\n  " +
                  preflight_invocation(o.preflight) + " run --mode analyze" + join_quoted(o.run_args) +
                  " --shim " + tool + " -- \"$@\"\n}\n";
      header += "if [ -n \"${BASH_VERSION:-}\" ]; then export -f pip pip3; fi\n";
    }
    // A file the script sources may turn `set -e` / `-u` on itself (ModelOpt's conf/arguments.sh): under bash
    // a DEBUG trap, kept inside sourced files by set -T, switches them off before each command, as `preflight
    // run`'s BASH_ENV does (the script's own set lines get `; set +eu` below).
    if (!command_word_positions(work, "source").empty() || !command_word_positions(work, ".").empty())
      header +=
          "if [ -n \"${BASH_VERSION:-}\" ]; then set -T; trap 'set +e +u' DEBUG; fi  # preflight wrap: set "
          "-e / "
          "-u of sourced files switched off for the analysis\n";
    // nvidia-smi counting the node's GPUs (`GPUS_PER_NODE=$(nvidia-smi -L | wc -l)`): where it is missing (a
    // login node) its listings answer for $PREFLIGHT_GPUS_PER_NODE GPUs (8), as `preflight run`'s shim does;
    // bash only (a function name with '-'), defined through eval so that sh never parses it.
    if (work.find("nvidia-smi") != std::string::npos) {
      header +=
          "if [ -n \"${BASH_VERSION:-}\" ] && ! command -v nvidia-smi >/dev/null 2>&1; then eval '\n"
          "nvidia-smi() {  # preflight wrap: no nvidia-smi here: its GPU listings answer for "
          "${PREFLIGHT_GPUS_PER_NODE:-8} GPUs\n"
          "  _pf_n=${PREFLIGHT_GPUS_PER_NODE:-8}; _pf_q=; _pf_h=1\n"
          "  for _pf_a in \"$@\"; do\n"
          "    case \"$_pf_a\" in\n"
          "      -L|--list-gpus) _pf_q=L ;;\n"
          "      --query-gpu=*) _pf_q=${_pf_a#--query-gpu=} ;;\n"
          "      --format=*noheader*) _pf_h=0 ;;\n"
          "    esac\n"
          "  done\n"
          "  if [ -z \"$_pf_q\" ]; then echo \"nvidia-smi: not on this machine (preflight wrap answers -L "
          "and "
          "--query-gpu only)\" >&2; return 127; fi\n"
          "  if [ \"$_pf_q\" != L ] && [ \"$_pf_h\" = 1 ]; then echo \"$_pf_q\" | sed \"s/,/, /g\"; fi\n"
          "  _pf_i=0\n"
          "  while [ \"$_pf_i\" -lt \"$_pf_n\" ]; do\n"
          "    if [ \"$_pf_q\" = L ]; then echo \"GPU $_pf_i: NVIDIA GPU (preflight analysis) (UUID: "
          "GPU-preflight-$_pf_i)\"\n"
          "    else echo \"$_pf_q\" | sed \"s/,/, /g; s/name/NVIDIA GPU (preflight analysis)/; "
          "s/index/$_pf_i/; "
          "s/uuid/GPU-preflight-$_pf_i/; s/count/$_pf_n/\"; fi\n"
          "    _pf_i=$((_pf_i + 1))\n"
          "  done\n"
          "}\n"
          "export -f nvidia-smi'; fi\n";
      result.notes.push_back(
          o.script_name +
          ": where nvidia-smi is missing its GPU listings answer for $PREFLIGHT_GPUS_PER_NODE "
          "(8) GPUs");
    }
    // PyTorch asked for the node's GPU count (`GPUS_PER_NODE=$(python -c "import torch;
    // print(torch.cuda.device_count())")`, Pai-Megatron-Patch's way): answered for $PREFLIGHT_GPUS_PER_NODE,
    // else what PyTorch counts here when it counts any, else 8 — as `preflight run`'s python shim does. Other
    // python commands run as written.  bash only (functions exported to the script's children).
    if (work.find("device_count()") != std::string::npos) {
      header +=
          "if [ -n \"${BASH_VERSION:-}\" ]; then eval '\n"
          "_preflight_python() {  # preflight wrap: the GPU count of the node asked of PyTorch\n"
          "  _pf_py=$1; shift\n"
          "  if [ $# -eq 2 ] && [ \"$1\" = -c ]; then\n"
          "    case \"$2\" in *device_count\\(\\)*) case \"$2\" in *print*)\n"
          "      if [ -n \"${PREFLIGHT_GPUS_PER_NODE:-}\" ]; then echo \"$PREFLIGHT_GPUS_PER_NODE\"; return "
          "0; fi\n"
          "      _pf_c=$(command \"$_pf_py\" -c \"$2\" 2>/dev/null)\n"
          "      if [ \"${_pf_c:-0}\" -gt 0 ] 2>/dev/null; then echo \"$_pf_c\"; else echo 8; fi\n"
          "      return 0 ;; esac ;;\n"
          "    esac\n"
          "  fi\n"
          "  command \"$_pf_py\" \"$@\"\n"
          "}\n"
          "python() { _preflight_python python \"$@\"; }\n"
          "python3() { _preflight_python python3 \"$@\"; }\n"
          "export -f _preflight_python python python3'; fi\n";
      result.notes.push_back(
          o.script_name +
          ": `python -c \"…torch.cuda.device_count()…\"` answers $PREFLIGHT_GPUS_PER_NODE, "
          "else the GPUs PyTorch counts here, else 8");
    }
    // Slurm's scontrol where Slurm is not installed (the wrapped job script run on a login node of another
    // cluster, a laptop): `MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)` would end
    // a script under `set -euo pipefail`.  It goes to `preflight run`'s shim, which answers the host list of
    // the job's (made-up) nodes.  (srun, likewise, once the launches are rewritten: slurm_stand_in.)
    if (!command_word_positions(work, "scontrol").empty()) {
      header += slurm_stand_in("scontrol", o);
      result.notes.push_back(
          o.script_name +
          ": where Slurm is not installed, scontrol answers the host list of the job's nodes "
          "(preflight run)");
    }
    JobSize j = sbatch_size({}, work, true);
    for (const std::string& u : j.unread)
      result.notes.push_back(o.script_name + ": #SBATCH " + u +
                             " is not a number (a template's placeholder?): left out; `preflight run "
                             "--nnodes N --gpus-per-node G` gives the job's size");
    if (!j.nodes.empty()) {
      std::string set = "export";
      // (the task count is not derived from the other two here: an environment giving only a node count
      // would keep a default that disagrees with it)
      for (const auto& [name, value] : job_variables(j, false))
        set += " " + name + "=\"${" + name + ":-" + value + "}\"";
      header = set + "  # preflight wrap: the job's #SBATCH size outside an allocation\n" + header;
      result.notes.push_back(
          o.script_name +
          ": outside an allocation the analysis takes the job size of its #SBATCH "
          "lines (" +
          j.nodes + (j.nodes == "1" ? " node" : " nodes") +
          (j.per_node.empty() ? ""
                              : ", " + j.per_node + (j.per_node == "1" ? " task" : " tasks") + " per node") +
          ")");
    }
    // `set -e` / `set -u` (`set -x -e`, `set -euo pipefail`): a job script run for the analysis away from its
    // cluster fails on the cluster's environment — `source ~/.bashrc`, `conda activate`, `pushd /fsx/…`, an
    // unset SLURM_PROCID — before it reaches its launch.  The analysis runs no training, so errexit and
    // nounset are switched off after such a line (`; set +eu`), said; a value that then comes out empty is
    // refused by the analysis naming its flag.
    bool relaxed = false;
    for (const SimpleCommand& c : sh.commands) {
      if (!turns_on_errexit_or_nounset(c)) continue;
      nested_edits.push_back(
          {c.words.back().end, c.words.back().end,
           "; set +eu  # preflight wrap: the analysis goes on past the cluster's environment"});
      relaxed = true;
      result.notes.push_back(o.script_name + ":" + std::to_string(line_of(work, c.begin) + nest.line_offset) +
                             ": `set -e` / `-u` is switched off for the analysis (the script's environment — "
                             "sourced files, conda, module, paths of its cluster — may be missing here)");
    }
    if (relaxed)  // an analysis that fails is still the script's status (cli/main.cpp appends it to the file)
      // The EXIT trap that keeps it survives the script's own `trap HANDLER EXIT`: under bash a function
      // named trap runs the script's handler first, then this one (the composed trap is bash's, so a POSIX
      // shell keeps its builtin and the script's own trap replaces ours, as before).
      header +=
          "export PREFLIGHT_STATUS_FILE=\"${TMPDIR:-/tmp}/preflight-status.$$\"; rm -f "
          "\"$PREFLIGHT_STATUS_FILE\"\n"
          "_pf_exit() { if [ -s \"$PREFLIGHT_STATUS_FILE\" ]; then _pf_rc=$(sort -n "
          "\"$PREFLIGHT_STATUS_FILE\" | "
          "tail -n 1); fi; rm -f \"$PREFLIGHT_STATUS_FILE\"; exit $_pf_rc; }\n"
          "trap '_pf_rc=$?; _pf_exit' EXIT  # preflight wrap: the analysis' status is the script's\n"
          "if [ -n \"${BASH_VERSION:-}\" ]; then eval 'trap() {\n"
          "  if [ $# -lt 2 ] || [ \"$1\" = -p ] || [ \"$1\" = -l ]; then builtin trap \"$@\"; return; fi\n"
          "  local _pf_h=$1 _pf_s; local -a _pf_rest=(); shift\n"
          "  if [ \"$_pf_h\" = -- ]; then _pf_h=$1; shift; fi\n"
          "  for _pf_s in \"$@\"; do case $_pf_s in\n"
          "    EXIT|0|SIGEXIT) if [ \"$_pf_h\" = - ] || [ -z \"$_pf_h\" ]; then builtin trap \"_pf_rc=\\$?; "
          "_pf_exit\" EXIT;\n"
          "      else builtin trap \"_pf_rc=\\$?; $_pf_h\n_pf_exit\" EXIT; fi ;;\n"
          "    *) _pf_rest+=(\"$_pf_s\") ;; esac; done\n"
          "  if [ ${#_pf_rest[@]} -gt 0 ]; then builtin trap -- \"$_pf_h\" \"${_pf_rest[@]}\"; fi\n"
          "}'; fi\n";
    // `exec > $LOGFILE` (a job script sending its own output to a log, LLM-jp's PBS scripts): the analysis
    // goes there too, which a user running the wrapped script at a terminal would not expect silently.
    for (const SimpleCommand& c : sh.commands) {
      if (c.words.size() != 1 || c.words[0].raw != "exec") continue;
      for (std::size_t r = 0; r + 1 < c.redirections.size(); ++r) {
        const std::string& op = c.redirections[r].raw;
        if (op == ">" || op == ">>" || op == "1>" || op == "1>>" || op == ">|" || op == "&>" || op == "&>>")
          result.notes.push_back(o.script_name + ":" +
                                 std::to_string(line_of(work, c.begin) + nest.line_offset) + ": `exec " + op +
                                 " " + c.redirections[r + 1].raw +
                                 "` sends the script's output there: the analysis is printed to that file");
      }
    }
    if (j.nodes.empty()) {  // PBS, Grid Engine, PJM job headers alike (job_header.hpp)
      if (const BatchJob job = batch_job_header(work); !job.empty()) {
        header = batch_job_shell_defaults(job) + header;
        result.notes.push_back(o.script_name +
                               ": outside an allocation the analysis takes the job size of its " +
                               job.directive + " lines (" + job.summary + ")");
      }
    }
    if (!header.empty()) nested_edits.push_back({header_position(work), header_position(work), header});
  }
  // srun where Slurm is not installed: a srun left once the launches are rewritten (`HEAD_IP=$(srun -w
  // "$HEAD_NODE" hostname -I)` under `set -euo pipefail`) runs its command once, here (`preflight run`'s
  // shim).
  auto add_srun_stand_in = [&](std::vector<Edit>& all) {
    if (nest.nested || o.mode != WrapMode::Analyze || (found.empty() && nested_launches == 0)) return;
    for (const std::size_t at : command_word_positions(work, "srun"))
      if (std::none_of(all.begin(), all.end(), [&](const Edit& e) {
            // replaced, or given to `preflight run … -- srun …` (whose shim answers for it)
            return (e.begin <= at && at < e.end) || (e.begin == at && e.end == at && e.text.ends_with("-- "));
          })) {
        all.push_back({header_position(work), header_position(work), slurm_stand_in("srun", o)});
        result.notes.push_back(o.script_name + ":" + std::to_string(line_of(work, at) + nest.line_offset) +
                               ": where Slurm is not installed, srun runs its command once, here");
        return;
      }
  };

  if (found.empty()) {
    if (nested_launches > 0 || !result.launches.empty() || nest.nested) {
      add_srun_stand_in(nested_edits);
      if (edits_out) *edits_out = nested_edits;
      std::sort(nested_edits.begin(), nested_edits.end(),
                [](const Edit& x, const Edit& y) { return x.begin > y.begin; });
      for (const Edit& ed : nested_edits) work.replace(ed.begin, ed.end - ed.begin, ed.text);
      std::sort(result.launches.begin(), result.launches.end(),
                [](const LaunchSite& x, const LaunchSite& y) { return x.line < y.line; });
      result.text = work;
      result.changed = work != input;
      return result;
    }
    throw InputError(
        o.script_name,
        "no launch of a training entry point found\n"
        "  looked for: " +
            launcher_list() + ", starting an entry point named " + o.entries.describe() +
            "\n"
            "  closest lines:\n" +
            closest_lines(input) +
            "  hint: name another entry point with --entry NAME; a command line built at run time "
            "(eval, functions) needs `preflight run --mode " +
            mode_name(o.mode) + " -- bash " + o.script_name + "`" +
            (remote_launches.empty()
                 ? std::string()
                 : "\n  hint: line " +
                       std::to_string(line_of(work, remote_launches.front()->words.front().begin) +
                                      nest.line_offset) +
                       " starts the run on other nodes (" +
                       std::string(detail::basename_of(remote_launches.front()->words.front().raw)) +
                       "): `preflight run --mode analyze -- bash " + o.script_name +
                       "` runs one node's launch here instead, for the analysis") +
            (input.find("run_recipe.py") != std::string_view::npos ||
                     input.find("pretrain_recipe.py") != std::string_view::npos
                 ? "\n  hint: a Megatron-Bridge recipe script takes a recipe name and Hydra overrides, not "
                   "Megatron's flags: price the recipe by its name (`preflight estimate --bridge-config "
                   "llama3_8b_pretrain_config -- --nproc_per_node N --nnodes M`) or the run's saved "
                   "configuration (--bridge-config run_config.yaml: the recipe's "
                   "logger.save_config_filepath, "
                   "a checkpoint's run_config.yaml, or its log)"
                 : std::string()) +
            shell_script_under_launcher_hint(input, o.script_name, mode_name(o.mode)) + swift_hint(input));
  }

  // Inside a double-quoted command string the invocation goes unquoted when the path needs no quoting: the
  // string may be run by `bash -c "$CMD"` or eval (where quotes would do) or as `${APP}` (split into words
  // without quote removal: a quoted path would be looked up with its quote characters, HYGON-AI's
  // Megatron-LM-das examples).  ${PREFLIGHT:-…} expands when the string is assigned.
  const std::string inv = invocation_in_string(o.preflight, nest.quote);
  std::size_t mindspore = 0;
  for (const Found& f : found) mindspore += is_mindspore_launch(f.m) ? 1 : 0;
  if (o.mode == WrapMode::Dryrun && mindspore == 0) {
    std::string list;
    for (const Found& f : found)
      list += "\n  " + std::to_string(line_of(work, f.cmd->words[f.m.command].begin) + nest.line_offset) +
              ": " + launcher_name(f.m.launcher) + " " + f.m.entry_name;
    throw InputError(
        o.script_name,
        "dryrun mode needs a MindSpore launch (msrun, msrun_launcher.sh or python run_mindformer.py); "
        "found only:" +
            list);
  }

  std::vector<Edit> edits;
  for (const Found& f : found) {
    const auto& words = f.cmd->words;
    // The launch starts at its runner prefix when it has one (nsys profile …, uv run …, $VENV_PREFIX …).
    const ShellWord& launcher = words[f.m.prefix];
    std::size_t line = line_of(work, launcher.begin) + nest.line_offset;
    if (f.m.prefix < f.m.command && o.mode == WrapMode::Analyze &&
        launcher_info(f.m.launcher).analyze_inline) {
      std::string prefix(
          std::string_view(work).substr(launcher.begin, words[f.m.command].begin - launcher.begin));
      while (!prefix.empty() && (prefix.back() == ' ' || prefix.back() == '\\' || prefix.back() == '\n'))
        prefix.pop_back();
      result.notes.push_back(o.script_name + ":" + std::to_string(line) +
                             ": the analysis runs without the prefix `" + prefix + "` of this launch");
    }
    LaunchSite site{line, f.m.launcher, f.m.entry_name, ""};
    if (f.m.recipe_tool && o.mode != WrapMode::Analyze) {
      site.action = "skipped: the public recipe's analysis tool, not a training run";
      result.launches.push_back(site);
      continue;
    }
    switch (o.mode) {
      case WrapMode::Analyze:
        if (launcher_info(f.m.launcher).analyze_inline && !is_mindspore_launch(f.m) &&
            !is_bridge_recipe_runner(f.m.entry_name) && !is_bridge_experiment_launcher(f.m.entry_name) &&
            !is_nemo2_perf_script(f.m.entry_name)) {
          const bool torch = is_torch_launcher(f.m.launcher);
          std::size_t end = torch ? words[f.m.args_begin - 1].end : words[f.m.entry].end;
          std::vector<std::string> args = o.analyze_args;
          if (torch) {
            // The script variable behind torchrun's --nnodes, for analyze to name when the launch is smaller
            // than its layout ("set NUM_NODES=16").
            std::string text;
            for (std::size_t k = f.m.args_begin; k < f.m.entry; ++k) {
              text += words[k].raw + " ";
              if (auto name = expanded_name(words[k].raw); name && assigned_raw.count(*name))
                text += assigned_raw[*name] + " ";
            }
            if (auto var = nnodes_variable(text)) args.push_back("--nnodes-variable=" + *var);
          }
          // NeMo 1's script by its path as written (shell text: the configuration is beside it)
          const std::string nemo_entry =
              is_nemo1_script(f.m.entry_name) ? " --entry-point=" + words[f.m.entry].raw : std::string();
          if (const std::string entry = megatron_entry_point_word(f.m.entry_name);
              !entry.empty() && nemo_entry.empty())
            args.push_back(entry);
          edits.push_back(
              {launcher.begin, end, escape_for(nest, inv + " analyze" + join_quoted(args) + nemo_entry)});
          if (torch) {
            auto [b, e] = erase_span(work, words[f.m.entry].begin, words[f.m.entry].end);
            edits.push_back({b, e, ""});
          }
          site.action = "preflight analyze";
        } else {
          edits.push_back({launcher.begin, launcher.begin,
                           escape_for(nest, inv + " run --mode analyze" + join_quoted(o.run_args) + " -- ")});
          site.action = "preflight run --mode analyze";
        }
        break;
      case WrapMode::Trace:
        edits.push_back({launcher.begin, launcher.begin,
                         escape_for(nest, inv + " run --mode trace" + join_quoted(o.run_args) + " -- ")});
        site.action = "preflight run --mode trace";
        break;
      case WrapMode::Dryrun:
        if (!is_mindspore_launch(f.m)) {
          site.action = "skipped: not a MindSpore launch";
          break;
        }
        {
          std::string out = o.dryrun_out;
          if (mindspore > 1) out += "/line" + std::to_string(line);
          edits.push_back({launcher.begin, launcher.begin,
                           escape_for(nest, inv + " dryrun --out " + shell_quote(out) +
                                                join_quoted(o.dryrun_args) + " -- ")});
          site.action = "preflight dryrun --out " + out;
        }
        break;
    }
    result.launches.push_back(site);
  }
  std::sort(result.launches.begin(), result.launches.end(),
            [](const LaunchSite& a, const LaunchSite& b) { return a.line < b.line; });
  edits.insert(edits.end(), nested_edits.begin(), nested_edits.end());
  add_srun_stand_in(edits);
  if (edits_out) *edits_out = edits;
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.begin > b.begin; });
  for (const Edit& e : edits) work.replace(e.begin, e.end - e.begin, e.text);
  result.text = std::move(work);
  result.changed = result.text != input;
  return result;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> sbatch_job_environment(std::string_view script) {
  return job_variables(sbatch_size({}, script), true);
}

std::vector<std::pair<std::string, std::string>> sbatch_job_environment(
    std::string_view script, const std::vector<std::string>& options) {
  return job_variables(sbatch_size(options, script), true);
}

SbatchJobSize sbatch_job_size(std::string_view script, const std::vector<std::string>& options,
                              const WorldSizeHints& hints) {
  SbatchJobSize out;
  const JobSize j = sbatch_size(options, script);
  for (const std::string& u : j.unread)
    out.notes.push_back("#SBATCH " + u + " is not a number (a template's placeholder?): left out");
  out.variables = job_variables(with_hints(j, hints, out.notes), true);
  if (out.variables.empty() && !j.unread.empty())
    out.notes.push_back(
        "the job's node count is not known: pass --nnodes N (and --gpus-per-node G) to preflight run");
  return out;
}

std::string sed_compatible(std::string_view text, std::size_t& matches) {
  std::string out;
  out.reserve(text.size() + 64);
  matches = 0;
  std::size_t pos = 0;
  while (true) {
    std::size_t hit = text.find(kRecipePattern, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(kRecipeReplacement);
    pos = hit + kRecipePattern.size();
    ++matches;
  }
  out.append(text.substr(pos));
  return out;
}

}  // namespace preflight::wrap
