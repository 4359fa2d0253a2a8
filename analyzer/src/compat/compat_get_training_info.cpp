// --compat get_training_info: byte-identical stdout of Megatron-LM PR 482's get_training_info.py.
// The formulas follow that file line for line (../shared/notes/megatron_info.md §3), evaluated with
// Python semantics through compat::PyNum; the layout follows its print templates (§4).
#include "preflight/analyzer/compat/compat_get_training_info.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

#include "compat_python_value.hpp"
#include "preflight/analyzer/compat/compat_python.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

using compat::PyNum;
using compat::PythonError;

// ================================================================ argparse emulation

enum class Kind { kHelp, kInt, kStr, kTrue };

// Integer slots, string slot and switch slots of the original's namespace.
enum Slot : int {
  kTp,
  kPp,
  kSplitRank,
  kLayers,
  kHidden,
  kHeads,
  kMbs,
  kGbs,
  kSeq,
  kMaxPos,
  kVocabFile,
  kMakeVocab,
  kNproc,
  kNnodes,
  kFp16,
  kBf16,
  kFlash,
  kDistOpt,
  kSwiglu,
  kSlotCount,
  kNoSlot = -1,
};

struct OptionDef {
  std::string_view flag;
  Kind kind;
  int slot;
};

// The original's add_argument calls, in its order (argparse lists ambiguous matches in this order).
constexpr OptionDef kOptions[] = {
    {"-h", Kind::kHelp, kNoSlot},
    {"--help", Kind::kHelp, kNoSlot},
    {"--tensor-model-parallel-size", Kind::kInt, kTp},
    {"--pipeline-model-parallel-size", Kind::kInt, kPp},
    {"--pipeline-model-parallel-split-rank", Kind::kInt, kSplitRank},
    {"--num-layers", Kind::kInt, kLayers},
    {"--hidden-size", Kind::kInt, kHidden},
    {"--num-attention-heads", Kind::kInt, kHeads},
    {"--micro-batch-size", Kind::kInt, kMbs},
    {"--global-batch-size", Kind::kInt, kGbs},
    {"--seq-length", Kind::kInt, kSeq},
    {"--max-position-embeddings", Kind::kInt, kMaxPos},
    {"--vocab-file", Kind::kStr, kVocabFile},
    {"--make_vocab_size_divisible_by", Kind::kInt, kMakeVocab},
    {"--nproc_per_node", Kind::kInt, kNproc},
    {"--nnodes", Kind::kInt, kNnodes},
    {"--fp16", Kind::kTrue, kFp16},
    {"--bf16", Kind::kTrue, kBf16},
    {"--use-flash-attn", Kind::kTrue, kFlash},
    {"--use-distributed-optimizer", Kind::kTrue, kDistOpt},
    {"--swiglu", Kind::kTrue, kSwiglu},
};
constexpr int kOptionCount = static_cast<int>(std::size(kOptions));

std::string_view flag_of(int slot) {
  for (const auto& o : kOptions)
    if (o.slot == slot) return o.flag;
  return "";
}

/// One attribute of argparse's namespace.  kEmptyList is what `--flag=--` leaves (argparse strips the
/// "--" and stores an empty list); the original then crashes wherever it does arithmetic with it.
struct ArgValue {
  enum State { kNone, kValue, kEmptyList } state = kNone;
  std::string text;  ///< canonical decimal for ints, the word for strings
  bool on = false;   ///< store_true switches
};

struct Namespace {
  ArgValue v[kSlotCount];
};

/// (action, option_string, explicit_arg) as argparse's _parse_optional returns it; opt = -1: unknown.
struct OptTuple {
  int opt = -1;
  std::string option_string;
  std::optional<std::string> explicit_arg;
};

int find_exact(std::string_view s) {
  for (int k = 0; k < kOptionCount; ++k)
    if (kOptions[k].flag == s) return k;
  return -1;
}

bool is_decimal_cp(std::string_view s, std::size_t& i) {
  // One Unicode decimal digit (what Python's re \d matches), advancing i; ASCII fast path.
  if (i >= s.size()) return false;
  if (s[i] >= '0' && s[i] <= '9') {
    ++i;
    return true;
  }
  if (static_cast<unsigned char>(s[i]) < 0x80) return false;
  std::size_t j = i + 1;
  while (j < s.size() && (static_cast<unsigned char>(s[j]) & 0xc0) == 0x80) ++j;
  auto lit = compat::python_int_literal(s.substr(i, j - i));
  if (!lit) return false;
  i = j;
  return true;
}

/// argparse's _negative_number_matcher: '^-\d+$|^-\d*\.\d+$' ($ also matches before a final '\n').
bool looks_like_negative_number(std::string_view arg) {
  if (!arg.empty() && arg.back() == '\n') arg.remove_suffix(1);
  if (arg.size() < 2 || arg[0] != '-') return false;
  std::size_t i = 1;
  std::size_t int_digits = 0;
  while (is_decimal_cp(arg, i)) ++int_digits;
  if (i == arg.size()) return int_digits > 0;
  if (arg[i] != '.') return false;
  ++i;
  std::size_t frac = 0;
  while (is_decimal_cp(arg, i)) ++frac;
  return frac > 0 && i == arg.size();
}

std::optional<OptTuple> parse_optional(const std::string& arg) {
  if (arg.empty() || arg[0] != '-') return std::nullopt;
  if (int k = find_exact(arg); k >= 0) return OptTuple{k, arg, std::nullopt};
  if (arg.size() == 1) return std::nullopt;
  const std::size_t eq = arg.find('=');
  if (eq != std::string::npos) {
    if (int k = find_exact(std::string_view(arg).substr(0, eq)); k >= 0)
      return OptTuple{k, arg.substr(0, eq), arg.substr(eq + 1)};
  }
  // _get_option_tuples: unique-prefix abbreviations (allow_abbrev is on).
  std::vector<OptTuple> tuples;
  if (arg[1] == '-') {
    const std::string prefix = eq == std::string::npos ? arg : arg.substr(0, eq);
    std::optional<std::string> explicit_arg;
    if (eq != std::string::npos) explicit_arg = arg.substr(eq + 1);
    for (int k = 0; k < kOptionCount; ++k)
      if (kOptions[k].flag.substr(0, prefix.size()) == prefix && kOptions[k].flag.size() >= prefix.size())
        tuples.push_back(OptTuple{k, std::string(kOptions[k].flag), explicit_arg});
  } else if (arg.compare(0, 2, "-h") == 0) {
    tuples.push_back(OptTuple{0, "-h", arg.substr(2)});  // "-hX": -h with the attached argument "X"
  }
  if (tuples.size() > 1) {
    std::string matches;
    for (const auto& t : tuples) matches += (matches.empty() ? "" : ", ") + t.option_string;
    throw InputError(arg,
                     "ambiguous option: could match " + matches +
                         " (get_training_info.py's argparse takes unique prefixes of its flags and exits "
                         "with this error)");
  }
  if (tuples.size() == 1) return tuples[0];
  if (looks_like_negative_number(arg)) return std::nullopt;
  if (arg.find(' ') != std::string::npos) return std::nullopt;
  return OptTuple{-1, arg, std::nullopt};
}

[[noreturn]] void argparse_error(std::string_view flag, const std::string& msg) {
  throw InputError(std::string(flag), msg + " (get_training_info.py's argparse exits with this error)");
}

/// `word`: what to name in an error (the option as typed for help, else its full spelling).
void take_action(Namespace& ns, int opt, const std::vector<std::string>& values, const std::string& word) {
  const OptionDef& def = kOptions[opt];
  switch (def.kind) {
    case Kind::kHelp:
      throw InputError(word,
                       "get_training_info.py prints its argparse help here and exits; that text is not "
                       "reproduced (see `preflight analyze --help`)");
    case Kind::kTrue:
      ns.v[def.slot].on = true;
      return;
    case Kind::kInt:
    case Kind::kStr: {
      ArgValue& out = ns.v[def.slot];
      if (values.size() == 1 && values[0] == "--") {  // _get_values strips '--' → empty list
        out.state = ArgValue::kEmptyList;
        out.text.clear();
        return;
      }
      if (def.kind == Kind::kStr) {
        out.state = ArgValue::kValue;
        out.text = values[0];
        return;
      }
      auto lit = compat::python_int_literal(values[0]);
      if (!lit) argparse_error(def.flag, "invalid int value: '" + values[0] + "'");
      out.state = ArgValue::kValue;
      out.text = *lit;
      return;
    }
  }
}

/// argparse.ArgumentParser.parse_known_args over the original's options (CPython 3.11 argparse.py,
/// _parse_known_args with no positionals).  Unknown words are dropped.
Namespace parse_known_args(const std::vector<std::string>& args) {
  Namespace ns;
  ns.v[kTp] = {ArgValue::kValue, "1", false};
  ns.v[kPp] = {ArgValue::kValue, "1", false};
  ns.v[kMakeVocab] = {ArgValue::kValue, "128", false};
  ns.v[kNproc] = {ArgValue::kValue, "1", false};
  ns.v[kNnodes] = {ArgValue::kValue, "1", false};

  // Classify every word: 'O' option, 'A' argument, '-' the "--" separator (all after it are 'A').
  const std::size_t n = args.size();
  std::string pattern;
  std::vector<std::optional<OptTuple>> tuples(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (args[i] == "--") {
      pattern += '-';
      pattern.append(n - i - 1, 'A');
      break;
    }
    tuples[i] = parse_optional(args[i]);
    pattern += tuples[i] ? 'O' : 'A';
  }

  std::size_t i = 0;
  while (i < n) {
    if (pattern[i] != 'O') {  // no positionals: arguments before the next option are extras
      ++i;
      continue;
    }
    OptTuple t = *tuples[i];
    if (t.opt < 0) {  // unknown option: an extra
      ++i;
      continue;
    }
    std::vector<std::pair<int, std::vector<std::string>>> actions;
    std::vector<std::string> option_strings;
    std::size_t stop = i + 1;
    while (true) {
      const Kind kind = kOptions[t.opt].kind;
      const int arg_count = kind == Kind::kInt || kind == Kind::kStr ? 1 : 0;
      if (t.explicit_arg) {
        if (arg_count == 0 && t.option_string[1] != '-' && !t.explicit_arg->empty()) {
          // "-hX…": more single-dash switches packed after -h
          actions.push_back({t.opt, {}});
          option_strings.push_back(t.option_string);
          const std::string next = std::string("-") + (*t.explicit_arg)[0];
          const int k = find_exact(next);
          if (k < 0) argparse_error(t.option_string, "ignored explicit argument '" + *t.explicit_arg + "'");
          std::optional<std::string> rest;
          if (t.explicit_arg->size() > 1) rest = t.explicit_arg->substr(1);
          t = OptTuple{k, next, rest};
          continue;
        }
        if (arg_count == 1) {
          actions.push_back({t.opt, {*t.explicit_arg}});
          option_strings.push_back(t.option_string);
          stop = i + 1;
          break;
        }
        argparse_error(kOptions[t.opt].flag, "ignored explicit argument '" + *t.explicit_arg + "'");
      }
      if (arg_count == 1) {
        if (i + 1 >= n || pattern[i + 1] != 'A')
          argparse_error(kOptions[t.opt].flag, "expected one argument");
        actions.push_back({t.opt, {args[i + 1]}});
        stop = i + 2;
      } else {
        actions.push_back({t.opt, {}});
        stop = i + 1;
      }
      option_strings.push_back(t.option_string);
      break;
    }
    for (std::size_t k = 0; k < actions.size(); ++k)
      take_action(ns, actions[k].first, actions[k].second,
                  kOptions[actions[k].first].kind == Kind::kHelp ? args[i] : option_strings[k]);
    i = stop;
  }
  return ns;
}

// ================================================================ the tool's computation

bool word_present(const std::vector<std::string>& args, std::string_view prefix) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a.rfind(prefix, 0) == 0; });
}

/// An int the original uses in arithmetic: None or an empty list crash it with TypeError.
PyNum need_int(const Namespace& ns, Slot slot) {
  const ArgValue& v = ns.v[slot];
  const std::string flag(flag_of(slot));
  if (v.state == ArgValue::kNone)
    throw InputError(flag,
                     "is required: get_training_info.py computes with it and crashes (TypeError) without it");
  if (v.state == ArgValue::kEmptyList)
    throw InputError(flag, "'" + flag +
                               "=--' leaves argparse's empty list, with which get_training_info.py "
                               "crashes (TypeError)");
  return PyNum(mpz_class(v.text));
}

[[noreturn]] void zero_division(Slot slot, const std::string& what) {
  throw InputError(std::string(flag_of(slot)),
                   what + "; get_training_info.py divides by it and crashes (ZeroDivisionError)");
}

/// len(json.load(open(path))) with the original's failure modes turned into InputError.
PyNum vocab_entries(const Namespace& ns) {
  const ArgValue& v = ns.v[kVocabFile];
  if (v.state == ArgValue::kNone)
    throw InputError("--vocab-file",
                     "is required: get_training_info.py takes the vocabulary size from the number of entries "
                     "of this JSON file (it crashes with TypeError without it)");
  if (v.state == ArgValue::kEmptyList)
    throw InputError("--vocab-file",
                     "'--vocab-file=--' leaves argparse's empty list, which "
                     "get_training_info.py cannot open (TypeError)");
  const std::string& path = v.text;
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec))
    throw InputError("--vocab-file",
                     "'" + path + "': no such file (get_training_info.py crashes with FileNotFoundError)");
  if (fs::is_directory(path, ec))
    throw InputError("--vocab-file",
                     "'" + path + "' is a directory (get_training_info.py crashes with IsADirectoryError)");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw InputError("--vocab-file",
                     "'" + path + "' cannot be read (get_training_info.py crashes with PermissionError)");
  std::ostringstream buf;
  buf << in.rdbuf();
  const std::string bytes = buf.str();
  try {
    return PyNum(mpz_class(std::to_string(compat::python_json_len(bytes))));
  } catch (const compat::PythonJsonError& e) {
    std::size_t line = 1, col = 1;
    for (std::size_t k = 0; k < e.offset() && k < bytes.size(); ++k) {
      if (bytes[k] == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<unsigned char>(bytes[k]) & 0xc0) != 0x80) {
        ++col;
      }
    }
    throw InputError(
        path + ":" + std::to_string(line) + ":" + std::to_string(col),
        e.what() + std::string(" (get_training_info.py's json.load of --vocab-file crashes here)"));
  }
}

// ---------------------------------------------------------------- text helpers (str.ljust etc.)

std::size_t code_points(std::string_view s) {
  return static_cast<std::size_t>(std::count_if(
      s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

std::string ljust(std::string s, std::size_t width) {
  const std::size_t n = code_points(s);
  if (n < width) s.append(width - n, ' ');
  return s;
}

std::string spaces(std::size_t n) {
  return std::string(n, ' ');
}

std::string repeat(std::string_view unit, std::size_t n) {
  std::string out;
  for (std::size_t k = 0; k < n; ++k) out += unit;
  return out;
}

// Tree drawing as the original prints it.
constexpr std::string_view kBar = "│    ";
constexpr std::string_view kLeaf = "└─";
constexpr std::string_view kTee = "├─";
constexpr std::size_t kLabelWidth = 43;  // every table row's label column

/// One printed table: the original's memory and shape cells, all depending on nbytes.
class Cells {
 public:
  explicit Cells(int nbytes) : nbytes_(nbytes) {}

  /// memory_mega_bytes: str(round(nbytes·x / 2^20, 1)) + suffix, ljust(pad)
  std::string mb(const PyNum& x, const std::string& suffix = "", std::size_t pad = 15) const {
    const PyNum mib = PyNum(nbytes_) * x / PyNum(1048576);
    return ljust(compat::py_str(compat::py_round(mib, 1)) + suffix, pad);
  }
  /// memory_giga_bytes: round(nbytes·x / 2^30, digits), printed with str()
  std::string gb(const PyNum& x, int digits = 1) const {
    const PyNum gib = PyNum(nbytes_) * x / PyNum(1073741824);
    return compat::py_str(compat::py_round(gib, digits));
  }
  double gb_value(const PyNum& x) const {
    return compat::py_round(PyNum(nbytes_) * x / PyNum(1073741824), 1).as_float();
  }

 private:
  int nbytes_;
};

std::string join_ints(const std::vector<PyNum>& xs) {
  std::string out;
  for (std::size_t k = 0; k < xs.size(); ++k) out += (k ? "," : "") + compat::py_str(xs[k]);
  return out;
}

/// get_shape_str: "w=[a,b]" (or "[a,b,c]" without prefix) plus ",b=[c]", ljust(25)
std::string shape(const std::vector<PyNum>& w, const std::vector<PyNum>& b = {}, bool prefix = true) {
  std::string s;
  if (!w.empty()) s += (prefix ? "w=[" : "[") + join_ints(w) + "]";
  if (!b.empty()) s += ",b=[" + join_ints(b) + "]";
  return ljust(s, 25);
}

/// A table row: label padded to 43 columns, then each cell followed by a tab, then `tail`.
std::string row(std::string_view label, const std::vector<std::string>& cells, std::string_view tail = "") {
  std::string out = ljust(std::string(label), kLabelWidth);
  for (const auto& c : cells) out += c + "\t";
  out += tail;
  return out;
}

std::string label(int bars, std::string_view name, bool pipe = false) {
  // "│    " × bars, then for sub-ops "|     ", then "└─name"
  std::string s = repeat(kBar, static_cast<std::size_t>(bars));
  if (pipe) s += "|     ";
  return s + std::string(kLeaf) + std::string(name);
}

class Printer {
 public:
  /// print(f"""\n…\n"""): an empty line, the lines, an empty line.
  void section(const std::vector<std::string>& lines) {
    out_ += '\n';
    for (const auto& l : lines) out_ += l + '\n';
    out_ += '\n';
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

// ---------------------------------------------------------------- rank groups (the original's loops)

using Group = std::vector<std::string>;

std::int64_t to_i64(const PyNum& x, const char* what) {
  // Beyond 2^62 the original would list billions of ranks (it hangs); the bound keeps our int64 loops exact.
  if (abs(x.as_int()) >= (mpz_class(1) << 62))
    throw InputError("--nproc_per_node", std::string(what) + " is too large to list its groups");
  return x.as_int().get_si();
}

/// Python range(start, stop, step) with floor semantics, as a vector (bounded by `budget` elements).
std::vector<std::int64_t> py_range(std::int64_t start, std::int64_t stop, std::int64_t step,
                                   std::int64_t& budget) {
  std::vector<std::int64_t> out;
  if (step == 0) throw PythonError("ValueError", "range() arg 3 must not be zero");
  for (std::int64_t r = start; step > 0 ? r < stop : r > stop; r += step) {
    if (--budget < 0)
      throw InputError("--nproc_per_node", "the world size is too large to list its communication groups");
    out.push_back(r);
  }
  return out;
}

std::int64_t floordiv64(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

std::string matrix_to_string(const std::vector<Group>& m, int bars) {
  std::string out;
  for (std::size_t k = 0; k < m.size(); ++k) {
    if (k) out += '\n';
    out += repeat(kBar, static_cast<std::size_t>(bars)) + std::string(kLeaf) + "[";
    for (std::size_t j = 0; j < m[k].size(); ++j) out += (j ? " " : "") + m[k][j];
    out += "]";
  }
  return out;
}

}  // namespace

std::string render_get_training_info(const std::vector<std::string>& args) {
  const Namespace ns = parse_known_args(args);
  const auto on = [&](Slot s) { return ns.v[s].on; };
  const bool bf16 = on(kBf16);
  const bool fp16 = on(kFp16);

  try {
    // ---- get_args(): world size, nbytes, asserts
    if (ns.v[kNproc].state == ArgValue::kEmptyList && ns.v[kNnodes].state == ArgValue::kEmptyList)
      throw InputError("--nproc_per_node",
                       "'--nproc_per_node=--' and '--nnodes=--' leave two empty lists, "
                       "which get_training_info.py cannot multiply (TypeError)");
    const int nbytes = fp16 || bf16 ? 2 : 4;
    if (!on(kFlash))
      throw InputError("--use-flash-attn",
                       "is required: get_training_info.py asserts "
                       "\"Currently, only the enabling of use_flash_attn is supported.\"");
    if (!on(kDistOpt))
      throw InputError("--use-distributed-optimizer",
                       "is required: get_training_info.py asserts "
                       "\"Currently, only the enabling of use_distributed_optimizer is supported.\"");
    if (!on(kSwiglu))
      throw InputError("--swiglu",
                       "is required: get_training_info.py asserts "
                       "\"Currently, only the enabling of swiglu is supported.\"");
    const PyNum nproc = need_int(ns, kNproc);
    const PyNum world = nproc * need_int(ns, kNnodes);

    // ---- get_megatron_info()
    const PyNum t = need_int(ns, kTp);
    const PyNum p = need_int(ns, kPp);
    if (p == 0) zero_division(kPp, "is 0");
    const PyNum world_over_p = floordiv(world, p);
    if (t == 0) zero_division(kTp, "is 0");
    const PyNum d = floordiv(world_over_p, t);

    // v: the vocab file's entry count padded to a multiple of make_vocab_size_divisible_by × t
    const PyNum raw_vocab = vocab_entries(ns);
    const PyNum multiple = need_int(ns, kMakeVocab) * t;
    if (multiple == 0)
      zero_division(kMakeVocab, "make_vocab_size_divisible_by × tensor-model-parallel-size is 0");
    mpz_class vocab = raw_vocab.as_int();
    {
      const mpz_class m = abs(multiple.as_int());
      const mpz_class r = vocab % m;  // vocab >= 0, so this is Python's % too
      if (r != 0) vocab += m - r;
    }
    const PyNum v(vocab);

    const PyNum gbs = need_int(ns, kGbs);
    const PyNum b = need_int(ns, kMbs);
    if (b == 0) zero_division(kMbs, "is 0");
    const PyNum gbs_over_b = floordiv(gbs, b);
    if (d == 0) {
      std::string hint;
      if (word_present(args, "--nproc-per-node"))
        hint =
            "; note that get_training_info.py reads only --nproc_per_node (underscores), not "
            "--nproc-per-node";
      throw InputError("--nproc_per_node",
                       "the data-parallel size world_size // pp // tp is 0 (world size " +
                           compat::py_str(world) + " = --nproc_per_node × --nnodes, pp " + compat::py_str(p) +
                           ", tp " + compat::py_str(t) +
                           "); get_training_info.py divides by it and crashes (ZeroDivisionError)" + hint);
    }
    const PyNum ga = floordiv(gbs_over_b, d);
    const PyNum h = need_int(ns, kHidden);
    const PyNum f = compat::py_int((4 * h * 2 / PyNum(3)) / PyNum(64)) * 64;  // SwiGLU ffn, floored to 64
    const PyNum n = need_int(ns, kLayers);
    const PyNum L = floordiv(n, p);  // layers per stage
    const PyNum s = need_int(ns, kSeq);

    // parameters (§3.1)
    const PyNum total_parameters = v * h + s * h + (7 * h + 4 * h * h + 3 * f * h + 2 * f) * n;
    const PyNum params_gpu = v * h / t + s * h + (7 * h + 4 * h * h / t + 3 * f * h / t + 2 * f) * L;
    const std::string params_gpu_text = compat::int_str(compat::py_int(params_gpu).as_int(), true);

    // activations (§3.2)
    const PyNum activations = n * (10 * s * h * b + 4 * s * b * f) + 1.5 * s * b * h + 4.5 * s * b * v;
    const PyNum activations_gpu =
        (L * ((5 * s * h * b + 4 * s * b * f) / t + 5 * s * h * b) + 1.5 * s * b * h) * p;

    // communication (§3.5)
    const PyNum pp_count = p == 1 ? PyNum(0) : world * ga * 4;
    const PyNum pp_size = pp_count * s * b * h;
    const PyNum tp_count = t == 1 ? PyNum(0) : world * 4 * L * ga;
    const PyNum tp_size = tp_count * s * b * h;
    const PyNum dp_count = d == 1 ? PyNum(0) : PyNum(2);
    const PyNum dp_size = bf16 ? params_gpu * 4 : params_gpu * 2;
    const PyNum total_count = pp_count + tp_count + dp_count;
    const PyNum total_size = pp_size + tp_size + dp_size;

    // peak memory, gradients, optimizer (§3.3, §3.4)
    Cells c(nbytes);
    const PyNum zero(0);
    PyNum gradient = zero, gradient_gpu = zero, optimizer = zero, optimizer_gpu = zero;
    double peak = 0;
    const auto peak_of = [&](const PyNum& transient, const PyNum& steady) {
      return std::max(c.gb_value(transient), c.gb_value(steady));  // max() keeps the first of equals
    };
    if (bf16) {
      const PyNum logits = p == 1 ? 5 * s * b * v / t : PyNum(0);
      peak =
          peak_of(params_gpu * (1 + 2 + 2 / d + 2), params_gpu * (1 + 2 + 6 / d) + activations_gpu + logits);
      gradient = total_parameters * 2;
      gradient_gpu = params_gpu * 2;
      optimizer = total_parameters * 6;
      optimizer_gpu = params_gpu * 6 / d;
    } else if (fp16) {
      const PyNum logits = p == 1 ? 2 * s * b * v / t : PyNum(0);
      peak =
          peak_of(params_gpu * (1 + 1 + 2 / d + 2), params_gpu * (1 + 1 + 8 / d) + activations_gpu + logits);
      gradient = total_parameters;
      gradient_gpu = params_gpu;
      optimizer = total_parameters * 8;
      optimizer_gpu = params_gpu * 8 / d;
    } else {
      const PyNum logits = p == 1 ? 2 * s * b * v / t : PyNum(0);
      peak =
          peak_of(params_gpu * (1 + 1 + 1 / d + 1), params_gpu * (1 + 1 + 2 / d) + activations_gpu + logits);
      gradient = total_parameters;
      gradient_gpu = params_gpu;
      optimizer = total_parameters * 2;
      optimizer_gpu = params_gpu * 2 / d;
    }

    Printer out;
    const PyNum sbh = s * b * h;
    const std::string blank25 = spaces(25);
    const std::string blank15 = spaces(15);

    // ---- 1. Full Model without Parallel
    out.section({
        "***Full Model without Parallel***",
        std::string(107, '='),
        "Layer                                      Param.(shape)           Param.(Mem. MB)  Act.(Mem. MB)   "
        "     ",
        std::string(106, '-'),
        ljust("GPTModel", 65),
        ljust(std::string(kTee) + "TransformerLanguageModel", kLabelWidth),
        row(label(1, "Embedding"), {blank25, blank15, c.mb(1.5 * s * b * h)}),
        row(label(2, "word_embeddings"), {shape({v, h}), c.mb(v * h)}, "  "),
        row(label(2, "position_embeddings"), {shape({s, h}), c.mb(s * h)}),
        label(1, "ParallelTransformer: X ") + compat::py_str(n) + "(layer_num)" + spaces(40) + "\t" +
            c.mb(10 * b * s * h + 4 * s * b * f, "/layer") + "\t",
        row(label(2, "input_layernorm"), {shape({h}, {h}), c.mb(h + b), c.mb(s * b * h)}),
        row(label(2, "self_attention"), {blank25, blank15, c.mb(6 * s * b * h)}),
        row(label(2, "query_key_value", true), {shape({3 * h, h}, {h}), c.mb(3 * h * h + h)}),
        row(label(2, "rearrange", true), {blank25, blank15, c.mb(3 * s * b * h)}),
        row(label(2, "core_attention_flash", true), {blank25, blank15, c.mb(s * b * h)}),
        row(label(2, "rearrange", true), {blank25, blank15, c.mb(s * b * h)}),
        row(label(2, "dense", true), {shape({h, h}, {h}), c.mb(h * h + h), c.mb(s * b * h)}),
        row(label(2, "post_attention_layernorm"), {shape({h}, {h}), c.mb(h + h), c.mb(s * b * h)}),
        row(label(2, "mlp"), {blank25, blank15, c.mb(s * b * h + 4 * s * b * f)}),
        row(label(2, "dense_h_to_4h", true), {shape({2 * f, h}, {2 * f}), c.mb(2 * f * h + 2 * f)}),
        row(label(2, "bias_glue", true), {blank25, blank15, c.mb(4 * s * b * f)}),
        row(label(2, "dense_4h_to_h", true), {shape({h, f}, {h}), c.mb(h * f + h), c.mb(s * b * h)}),
        row(label(2, "drop_add_fusion"), {blank25, blank15, c.mb(1.5 * s * b * h)}),
        std::string(107, '-'),
        "Amount of Parameters: " + compat::int_str(total_parameters.as_int(), true) + "  ",
        "Parameters: " + c.gb(total_parameters) + "GB",
        "Gradients: " + c.gb(gradient) + "GB",
        "Optimizers(Adam) States: " + c.gb(optimizer) + "GB",
        "Activations: " + c.gb(activations) + "GB",
        "Total memory demand: " + c.gb(total_parameters + gradient + optimizer + activations) + "GB",
        std::string(110, '='),
    });

    // ---- rank groups: TP = consecutive ranks, PP = stride W/p, DP = stride t within a stage (§3.6)
    const std::int64_t W = to_i64(world, "the world size");
    const std::int64_t T = to_i64(t, "--tensor-model-parallel-size");
    const std::int64_t P = to_i64(p, "--pipeline-model-parallel-size");
    const std::int64_t NP = to_i64(nproc, "--nproc_per_node");
    std::int64_t budget = 50'000'000;
    const auto names = [&](const std::vector<std::int64_t>& ranks) {
      Group g;
      for (std::int64_t r : ranks)
        g.push_back("n" + std::to_string(floordiv64(r, NP)) + "_g" +
                    std::to_string(r - floordiv64(r, NP) * NP));
      return g;
    };
    std::vector<Group> tp_groups, pp_groups, dp_groups;
    const std::int64_t num_tp_groups = floordiv64(W, T);
    const std::int64_t num_pp_groups = floordiv64(W, P);
    for (std::int64_t k : py_range(0, num_tp_groups, 1, budget))
      tp_groups.push_back(names(py_range(k * T, (k + 1) * T, 1, budget)));
    for (std::int64_t k : py_range(0, num_pp_groups, 1, budget))
      pp_groups.push_back(names(py_range(k, W, num_pp_groups, budget)));
    for (std::int64_t k : py_range(0, P, 1, budget)) {
      const std::int64_t lo = k * num_pp_groups;
      const std::int64_t hi = (k + 1) * num_pp_groups;
      for (std::int64_t j : py_range(0, T, 1, budget))
        dp_groups.push_back(names(py_range(lo + j, hi, T, budget)));
    }
    // pp_mapping = transpose(pp_groups): column k = the devices of stage k
    if (pp_groups.empty())
      throw InputError("--pipeline-model-parallel-size",
                       "there are no pipeline groups (world size " + std::to_string(W) + " // pp " +
                           std::to_string(P) +
                           " <= 0); get_training_info.py crashes listing its stages (IndexError)");
    std::vector<Group> pp_mapping(pp_groups[0].size());
    for (std::size_t k = 0; k < pp_mapping.size(); ++k)
      for (const Group& g : pp_groups) {
        if (k >= g.size())
          throw InputError(
              "--pipeline-model-parallel-size",
              "the world size " + std::to_string(W) + " does not split into " + std::to_string(P) +
                  " pipeline stages of equal size; get_training_info.py crashes listing them (IndexError)");
        pp_mapping[k].push_back(g[k]);
      }

    // ---- 2. Cluster Communication Summary
    const std::string fi = std::string(kBar) + std::string(kLeaf) + "frequency/iteration: ";
    const std::string vi = std::string(kBar) + std::string(kLeaf) + "volume/iteration: ";
    out.section({
        "***Cluster Communication Summary***",
        std::string(30, '='),
        "Pipeline Parallelism",
        fi + compat::py_str(pp_count),
        vi + c.gb(pp_size) + " GB",
        "Data Parallelism",
        fi + compat::py_str(dp_count),
        vi + c.gb(dp_size) + " GB",
        "Tensor Parallelism",
        fi + compat::py_str(tp_count),
        vi + c.gb(tp_size) + " GB",
        "All Communication",
        fi + compat::py_str(total_count),
        vi + c.gb(total_size) + " GB",
        std::string(30, '='),
    });

    // ---- 3. Memory demand on each GPU in the cluster
    out.section({
        "***Memory demand on each GPU in the cluster***",
        std::string(30, '='),
        "Amount of Parameters: " + params_gpu_text + "  ",
        "Parameters: " + c.gb(params_gpu) + "GB",
        "Gradients: " + c.gb(gradient_gpu) + "GB",
        "Optimizers(Adam) States: " + c.gb(optimizer_gpu) + "GB",
        "Activations: " + c.gb(activations_gpu) + "GB",
        "Memory Requirement: " + compat::python_float_repr(peak) + "GB",
        std::string(30, '='),
    });

    const std::string b1 = std::string(kBar);
    const std::string b2 = b1 + b1;
    const std::string b3 = b2 + b1;
    const std::string leaf(kLeaf);
    const auto devices = [](const Group& g) {
      std::string joined;
      for (std::size_t k = 0; k < g.size(); ++k) joined += (k ? " " : "") + g[k];
      return joined;
    };

    // ---- 4. Pipeline Parallel Communications (p != 1)
    if (!(p == 1)) {
      if (pp_mapping.empty())
        throw InputError(
            "--pipeline-model-parallel-size",
            "pipeline stage 0 has no devices; get_training_info.py crashes listing it (IndexError)");
      // Stages 1.. as the original lists them: L layers each from layer L on, while below n.
      std::string later_stages;
      PyNum start = L;
      std::size_t stage = 1;
      while (start < n) {
        const PyNum end = start + L <= n ? start + L - 1 : n - 1;
        if (stage >= pp_mapping.size())
          throw InputError("--num-layers",
                           compat::py_str(n) + " layers do not split evenly into " + compat::py_str(p) +
                               " pipeline stages: get_training_info.py gives every stage " +
                               compat::py_str(n) + " // " + compat::py_str(p) + " = " + compat::py_str(L) +
                               " layers and crashes (IndexError) listing "
                               "stage " +
                               std::to_string(stage) + ", which has no devices");
        later_stages += b1 + leaf + "Stage" + std::to_string(stage) + ": ParallelTransformerLayer_Index" +
                        compat::py_str(start) + "-" + compat::py_str(end) + "\n";
        later_stages += b2 + leaf + "stage_device_mappings \n";
        later_stages += b2 + "│      " + leaf + "[" + devices(pp_mapping[stage]) + "]\n";
        start = end + 1;
        ++stage;
      }
      std::vector<std::string> lines = {
          "***Pipeline Parallel Communications***",
          std::string(88, '='),
          ljust("GPTModel", 65),
          ljust(std::string(kTee) + "TransformerLanguageModel", kLabelWidth),
          ljust(b1 + leaf + "Embedding", 62),
          ljust(b2 + leaf + "word_embeddings", kLabelWidth),
          ljust(b2 + leaf + "position_embeddings", kLabelWidth),
          b1 + leaf + "Stage0: ParallelTransformerLayer_Index0-" + compat::py_str(L - 1),
          b2 + leaf + "stage_device_mappings",
          b2 + "│      " + leaf + "[" + devices(pp_mapping[0]) + "]",
          b2 + leaf + "each single communication on each gpu",
          b3 + leaf + "shape: " + shape({b, s, h}, {}, false) + "  ",
          b3 + leaf + "volume: " + c.mb(sbh, "MB"),
          b3 + leaf + "func: isend, irecv",
          b3 + leaf + "location: between stage in forward and backward process",
          b2 + leaf + "each iteration communication on each gpu",
          b3 + leaf + "frequency: " + compat::py_str(ga * 4) + " (num_gradient_accumulation_steps * 4)",
          b3 + leaf + "volume: " + c.mb(sbh * ga * 4, "MB"),
          later_stages,  // ends with '\n': an empty line follows the last stage
          std::string(88, '-'),
          std::to_string(pp_groups.size()) + " Pipeline Parallel Communication Groups:",
          matrix_to_string(pp_groups, 1),
          "All Communication of Cluster in Pipeline Parallelism",
          fi + compat::py_str(world * ga * 4),
          vi + c.gb(world * ga * 4 * s * b * h) + "GB",
          std::string(88, '='),
      };
      out.section(lines);
    }

    // ---- 5. Data Parallel Communications (d != 1)
    if (!(d == 1)) {
      const std::string groups = std::to_string(dp_groups.size()) + " Data Parallel Groups ";
      const std::string dp_matrix = matrix_to_string(dp_groups, 3);
      const std::string half = c.gb(dp_size / PyNum(2));
      out.section({
          "***Data Parallel Communications***",
          std::string(88, '='),
          ljust("GPTModel", 65),
          ljust(std::string(kTee) + "each iteration", 32),
          ljust(b1 + leaf + "synchronize_gradient", 68),
          b2 + leaf + groups,
          dp_matrix,
          b2 + leaf + "communication ",
          b3 + leaf + "volume: " + half + "GB",
          b3 + leaf + "func: reduce_scatter (using DistributedOptimizer) ",
          b2 + leaf + "frequency/iteration: 1",
          b2 + leaf + "location: after forward_and_backward_compute * " + compat::py_str(ga) +
              " times/iteration ",
          ljust(b1 + leaf + "gather_model_param (using DistributedOptimizer)", 96),
          b2 + leaf + groups,
          dp_matrix,
          b2 + leaf + "communication on each gpu",
          b3 + leaf + "volume: " + half + "GB",
          b3 + leaf + "func: all_gather",
          b2 + leaf + "frequency/iteration: 1",
          b2 + leaf + "location: after optimizer.iteration",
          std::string(88, '-'),
          "All Communication of Cluster in Data Parallelism",
          b1 + leaf + "frequency/iteration: 2",
          vi + c.gb(dp_size) + "GB",
          std::string(88, '='),
      });
    }

    // ---- 6. Tensor Parallel Communications (t != 1)
    if (!(t == 1)) {
      const std::string comm = shape({b, s, h}, {}, false);
      const std::string comm_mb = c.mb(b * s * h);
      const std::string allreduce = ljust("allreduce", 25);
      const std::string b4 = b3 + b1;
      out.section({
          "***Tensor Parallel Communications***",
          std::string(209, '='),
          "Layer                                      Param(shape)           Param(Mem. MB)  "
          "Activations(Mem. MB)   "
          "TP_Fw.(Comm. Shape)  TP_Fw.(Comm. Mem. MB)   TP_Bw.(Comm. Shape)  TP_Bw.(Comm. Mem. MB)   "
          "TP(Comm. func)",
          std::string(209, '-'),
          ljust("GPTModel", 65),
          ljust(std::string(kTee) + "TransformerLanguageModel", kLabelWidth),
          row(label(1, "Embedding"), {blank25, blank15, c.mb(1.5 * s * b * h)}, spaces(20)),
          row(label(2, "word_embeddings"), {shape({floordiv(v, t)}, {h}), c.mb(v * h), blank15, comm, comm_mb,
                                            blank25, blank15, allreduce}),
          row(label(2, "position_embeddings"), {shape({s}, {h}), c.mb(s * h)}),
          label(1, "ParallelTransformer: X ") + compat::py_str(L) + "(layer_num)" + spaces(40) + "\t" +
              c.mb(10 * b * s * h + 4 * s * b * f, "/layer") + "\t",
          row(label(2, "input_layernorm"), {shape({h}, {h}), c.mb(h + b), c.mb(s * b * h)}),
          row(label(2, "self_attention"), {blank25, blank15, c.mb(6 * s * b * h)}),
          row(label(2, "query_key_value", true),
              {shape({floordiv(3 * h, t), h}, {h}), c.mb(3 * h * h / t + h), blank15, blank25, blank15, comm,
               comm_mb, allreduce}),
          row(label(2, "rearrange", true), {blank25, blank15, c.mb(3 * s * b * h / t)}),
          row(label(2, "core_attention_flash", true), {blank25, blank15, c.mb(s * b * h / t)}),
          row(label(2, "rearrange", true), {blank25, blank15, c.mb(s * b * h / t)}),
          row(label(2, "dense", true), {shape({floordiv(h, t), h}, {h}), c.mb(h * h / t + h), c.mb(s * b * h),
                                        comm, comm_mb, blank25, blank15, allreduce}),
          row(label(2, "post_attention_layernorm"), {shape({h}, {h}), c.mb(h + h), c.mb(s * b * h)}),
          row(label(2, "mlp"), {blank25, blank15, c.mb(s * b * h + 4 * s * b * f)}),
          row(label(2, "dense_h_to_4h", true),
              {shape({floordiv(2 * f, t), h}, {floordiv(2 * f, t)}), c.mb(2 * f / t * h + 2 * f / t), blank15,
               blank25, blank15, comm, comm_mb, allreduce}),
          row(label(2, "bias_glue", true), {blank25, blank15, c.mb(4 * s * b * f)}),
          row(label(2, "dense_4h_to_h", true), {shape({h, floordiv(f, t)}, {h}), c.mb(h * f + h),
                                                c.mb(s * b * h), comm, comm_mb, blank25, blank15, allreduce}),
          row(label(2, "drop_add_fusion"), {blank25, blank15, c.mb(1.5 * s * b * h)}),
          std::string(211, '-'),
          std::to_string(tp_groups.size()) + " Tensor Parallel Communication Groups:",
          matrix_to_string(tp_groups, 1),
          "Communication in Tensor Parallel",
          b1 + leaf + "each gpu:",
          b2 + leaf + "each micro_batch:",
          b3 + leaf + "frequency: " + compat::py_str(4 * L),
          b3 + leaf + "volume: " + c.gb(4 * s * b * h * L) + "GB",
          b3 + leaf + "each transformer:",
          b4 + leaf + "frequency: 2(forward)+2(backward)=4",
          b4 + leaf + "volume: " + c.gb(4 * s * b * h, 2) + "GB",
          b2 + leaf + "each iteration:",
          b3 + leaf + "frequency: " + compat::py_str(4 * L * ga),
          b3 + leaf + "volume: " + c.gb(ga * 4 * s * b * h * L) + "GB",
          b1 + leaf + "cluster:",
          b2 + leaf + "each micro_batch:",
          b3 + leaf + "frequency: " + compat::py_str(world * 4 * L),
          b3 + leaf + "volume: " + c.gb(world * 4 * s * b * h * L) + "GB",
          b2 + leaf + "each iteration:",
          b3 + leaf + "frequency: " + compat::py_str(world * 4 * L * ga),
          b3 + leaf + "volume: " + c.gb(world * ga * 4 * s * b * h * L) + "GB",
          std::string(215, '='),
      });
    }
    return out.take();
  } catch (const PythonError& e) {
    throw InputError("--compat get_training_info",
                     std::string("get_training_info.py crashes on these arguments with ") + e.what());
  }
}

}  // namespace preflight::analyzer
