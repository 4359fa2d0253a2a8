#include "preflight/analyzer/frontends/megatron_args.hpp"

#include "megatron_flags.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"

extern char** environ;

namespace preflight::analyzer {

namespace megatron {

I64 parse_int(const std::string& flag, const std::string& v) {
  I64 out = 0;
  const char* b = v.data();
  const char* e = v.data() + v.size();
  auto r = std::from_chars(b, e, out);
  if (r.ec != std::errc() || r.ptr != e) throw InputError(flag, "expected an integer, got '" + v + "'");
  return out;
}

double parse_float(const std::string& flag, const std::string& v) {
  try {
    std::size_t pos = 0;
    double d = std::stod(v, &pos);
    if (pos != v.size()) throw std::invalid_argument(v);
    return d;
  } catch (const std::exception&) {
    throw InputError(flag, "expected a number, got '" + v + "'");
  }
}

I64 Flags::require_int(const char* f) const {
  if (!has(f)) throw InputError(f, "is required (the analysis cannot guess this size)");
  return parse_int(f, get(f));
}

std::vector<std::string> Flags::list(const char* f) const {
  std::vector<std::string> out;
  if (!has(f)) return out;
  // Words as argparse's nargs gives them; a list written as one word the way YAML configs and Megatron's CI
  // recipes spell it ("[layernorm moe_act]", "['attn', 'mlp']", "[2,2]") is read as its items.
  std::string text = get(f);
  const auto first = text.find_first_not_of(' ');
  if (first != std::string::npos && text[first] == '[' && text.find_last_not_of(' ') == text.rfind(']'))
    for (char& ch : text)
      if (ch == '[' || ch == ']' || ch == ',' || ch == '\'' || ch == '"') ch = ' ';
  std::istringstream in(text);
  for (std::string v; in >> v;) out.push_back(v);
  return out;
}

}  // namespace megatron

namespace {

using megatron::Arity;
using megatron::I64;

std::string canonical(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

bool looks_like_value(const std::string& w) {
  if (w.empty()) return true;
  if (w.rfind("--", 0) == 0) return false;
  if (w[0] == '-' && w.size() > 1 && !(std::isdigit(static_cast<unsigned char>(w[1])) || w[1] == '.'))
    return false;
  return true;
}

/// Splits array items like "--fp8-format hybrid" into separate words.
std::vector<std::string> split_words(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const auto& a : args) {
    if (a.rfind("--", 0) == 0 && a.find_first_of(" \t\n") != std::string::npos) {
      std::istringstream in(a);
      std::string w;
      while (in >> w) out.push_back(w);
    } else {
      out.push_back(a);
    }
  }
  return out;
}

}  // namespace

std::int64_t known_tokenizer_vocab_size(const std::string& t) {
  if (t == "GPT2BPETokenizer") return 50257;
  if (t == "Llama2Tokenizer") return 32000;
  if (t == "Llama3Tokenizer") return 128256;
  if (t == "BertWordPieceLowerCase") return 30522;
  if (t == "BertWordPieceCase") return 28996;
  if (t == "MistralTokenizer") return 32768;
  return 0;
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

namespace {

/// An InputError naming a flag (`--num-layers`), as the key of the configuration file the flags came from
/// (num_layers); any other error as it is.
[[noreturn]] void rethrow_as_file_key(const InputError& e, const std::string& path, const std::string& label,
                                      const std::string& tail = "") {
  if (e.where().rfind("--", 0) != 0) throw e;
  std::string key = e.where().substr(2);
  std::replace(key.begin(), key.end(), '-', '_');
  throw InputError(path, label + " " + key + ": " + e.detail() + tail);
}

/// The launcher's words of `args` (torchrun's sizes, with their values) apart from the others, in order; the
/// words at `skip_a` / `skip_b` (a configuration file's flag and path) left out.
struct LauncherSplit {
  std::vector<std::string> launcher, others;
};

}  // namespace

/// parse_megatron_args(), with the flags of `not_named` left out of the note on the flags read past (a
/// configuration file's defaults of every Megatron argument, which the run did not set).
static MegatronConfig parse_megatron_args_quiet(const std::vector<std::string>& raw_args,
                                                const std::map<std::string, std::string>& env,
                                                const ModelSpec* base,
                                                const std::set<std::string>& not_named);

MegatronConfig parse_megatron_args(const std::vector<std::string>& raw_args,
                                   const std::map<std::string, std::string>& env, const ModelSpec* base) {
  return parse_megatron_args_quiet(raw_args, env, base, {});
}

static MegatronConfig parse_megatron_args_quiet(const std::vector<std::string>& raw_args,
                                                const std::map<std::string, std::string>& env,
                                                const ModelSpec* base,
                                                const std::set<std::string>& not_named) {
  // Known flags with their arity, by group (megatron_flags.hpp).  Values are stored raw in `seen` and
  // interpreted by the groups' readers below.
  static const std::map<std::string, Arity> known = [] {
    std::map<std::string, Arity> all;
    for (const auto* group :
         {&megatron::launcher_flags(), &megatron::model_flags(), &megatron::parallel_flags(),
          &megatron::training_flags(), &megatron::mindspeed_flags()})
      for (const auto& flag : *group) all.emplace(flag.name, flag.arity);
    return all;
  }();
  // Megatron spellings that differ from our canonical names.
  static const std::map<std::string, std::string> aliases = {
      {"--nproc_per_node", "--nproc-per-node"},
      {"--model-parallel-size", "--tensor-model-parallel-size"},
      {"--deepspeed_config", "--deepspeed-config"},
      {"--num-virtual-stages-per-pipeline-rank", "--num-virtual-stages-per-pipeline-rank"},
      // the destination Megatron sets from them (argument dumps print it; AMD Primus's configs set it)
      {"--virtual-pipeline-model-parallel-size", "--num-virtual-stages-per-pipeline-rank"},
      // Pai-Megatron-Patch's names of the MLA head dimensions (its DeepSeek-V2/V3 scripts).
      {"--qk-nope-head-dim", "--qk-head-dim"},
      {"--qk-rope-head-dim", "--qk-pos-emb-head-dim"},
  };

  auto split_launcher = [](const std::vector<std::string>& args, std::size_t skip_a, std::size_t skip_b) {
    LauncherSplit out;
    const auto& lf = megatron::launcher_flags();
    for (std::size_t j = 0; j < args.size(); ++j) {
      if (j == skip_a || j == skip_b) continue;
      const std::string& w = args[j];
      const bool takes_value = w.rfind("--", 0) == 0 && w.find('=') == std::string::npos &&
                               j + 1 < args.size() && looks_like_value(args[j + 1]);
      std::string name = canonical(w.substr(0, w.find('=')));
      if (auto a = aliases.find(name); a != aliases.end()) name = a->second;
      const auto spec = std::find_if(lf.begin(), lf.end(), [&](const auto& f) { return name == f.name; });
      auto& to = w.rfind("--", 0) == 0 && spec != lf.end() ? out.launcher : out.others;
      to.push_back(w);
      if (takes_value && (&to == &out.others || spec->arity == Arity::One)) to.push_back(args[++j]);
    }
    return out;
  };

  MegatronConfig cfg;
  std::vector<std::string> args = split_words(raw_args);
  // Megatron's YAML config (`--yaml-cfg FILE`) replaces the command line: the launcher's sizes and the
  // file's arguments are the run.
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string path;
    if (args[i] == "--yaml-cfg" || args[i] == "--yaml_cfg") {
      if (i + 1 >= args.size() || !looks_like_value(args[i + 1]))
        throw InputError("--yaml-cfg", "expects a value (the YAML config's path)");
      path = args[i + 1];
    } else if (args[i].rfind("--yaml-cfg=", 0) == 0 || args[i].rfind("--yaml_cfg=", 0) == 0) {
      path = args[i].substr(11);
    } else {
      continue;
    }
    std::vector<std::string> notes;
    std::vector<std::string> run = megatron_words_from_yaml_cfg(path, notes);
    LauncherSplit split = split_launcher(args, i, args[i].find('=') == std::string::npos ? i + 1 : i);
    std::vector<std::string>& launcher = split.launcher;
    std::vector<std::string> dropped;
    for (const std::string& w : split.others)
      if (w.rfind("--", 0) == 0) {
        std::string name = canonical(w.substr(0, w.find('=')));
        if (auto a = aliases.find(name); a != aliases.end()) name = a->second;
        dropped.push_back(name);
      }
    launcher.insert(launcher.end(), run.begin(), run.end());
    MegatronConfig out;
    try {
      out = parse_megatron_args(launcher, env, base);
    } catch (const InputError& e) {
      // A flag named in the message is a key of the file here (Megatron ignores the command line's).
      rethrow_as_file_key(e, path, "(--yaml-cfg)",
                          " — with --yaml-cfg these are the file's keys; the command "
                          "line's are ignored");
    }
    out.warnings.insert(out.warnings.begin(), notes.begin(), notes.end());
    if (!dropped.empty()) {
      std::string list;
      for (const auto& d : dropped) list += (list.empty() ? "" : ", ") + d;
      out.warnings.insert(out.warnings.begin(), "--yaml-cfg " + path +
                                                    ": Megatron reads the run from the file "
                                                    "and ignores the command line's other flags (" +
                                                    list + ")");
    }
    return out;
  }
  // MindSpeed-LLM's FSDP2 trainer (`torchrun … train_fsdp2.py CONFIG.yaml [--section.key value …]`): the
  // words after the entry point are its own, read as its fsdp2_parse_args reads them; the launcher's before
  // it give the world.
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    const std::string entry = w.substr(w.rfind('/') == std::string::npos ? 0 : w.rfind('/') + 1);
    if (entry != "train_fsdp2.py" || w.rfind("--", 0) == 0) continue;
    const std::vector<std::string> before(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(i));
    LauncherSplit split = split_launcher(before, before.size(), before.size());
    // the launch's world as any launch's is read (torchrun's sizes, `gpu` / elastic forms, PET_* and the
    // launcher's environment); 0 when nothing says it
    std::map<std::string, std::string> seen;
    for (std::size_t k = 0; k < split.launcher.size(); ++k) {
      const std::string& fw = split.launcher[k];
      std::string name = canonical(fw.substr(0, fw.find('='))), value;
      if (auto a = aliases.find(name); a != aliases.end()) name = a->second;
      if (fw.find('=') != std::string::npos)
        value = fw.substr(fw.find('=') + 1);
      else if (k + 1 < split.launcher.size() && looks_like_value(split.launcher[k + 1]))
        value = split.launcher[++k];
      seen[name] = value;
    }
    MegatronConfig sizes;
    megatron::read_launcher_and_sizes(megatron::Flags(seen), env, sizes);
    const int world = sizes.strategy.world_size;
    std::vector<std::string> notes, run = split.launcher;
    const std::vector<std::string> own(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
    std::vector<std::string> words = megatron_words_from_mindspeed_fsdp2(own, world, notes);
    // the model (--model PATH, its first words): its config.json, or the preset its folder names; a model
    // given to the command (base) wins
    ModelSpec model;
    const ModelSpec* model_base = base;
    if (words.size() >= 2 && words[0] == "--model") {
      if (!base) {
        model = load_model(words[1], &notes);
        model_base = &model;
      }
      words.erase(words.begin(), words.begin() + 2);
    }
    run.insert(run.end(), words.begin(), words.end());
    MegatronConfig out = parse_megatron_args_quiet(run, env, model_base, {});
    out.warnings.insert(out.warnings.begin(), notes.begin(), notes.end());
    return out;
  }
  // A Megatron-LM functional test case (`--config tests/functional_tests/test_cases/…/model_config.yaml`):
  // its MODEL_ARGS are the command line, the launcher's sizes the world (else one node of 8 GPUs, its H100
  // recipes' size, said), the command line's other flags after them (a repeated flag's last value wins).
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string path;
    std::size_t value_at = i;
    if (args[i] == "--config" && i + 1 < args.size()) {
      path = args[i + 1];
      value_at = i + 1;
    } else if (args[i].rfind("--config=", 0) == 0) {
      path = args[i].substr(9);
    }
    if (path.empty() || !is_megatron_test_case(path)) continue;
    LauncherSplit split = split_launcher(args, i, value_at);
    std::vector<std::string> notes, run = split.launcher;
    const bool sized = std::any_of(run.begin(), run.end(), [](const std::string& w) {
      const std::string n = canonical(w.substr(0, w.find('=')));
      return n == "--nproc-per-node" || n == "--nproc_per_node" || n == "--world-size" || n == "--nnodes";
    });
    if (!sized) {
      run.insert(run.end(), {"--nproc_per_node", "8"});
      notes.push_back(path +
                      ": a test case's GPU count is its recipe's (tests/test_utils/recipes): priced on "
                      "one node of 8 GPUs; --nproc_per_node / --nnodes say otherwise");
    }
    const std::vector<std::string> words = megatron_words_from_test_case(path, env, notes);
    run.insert(run.end(), words.begin(), words.end());
    run.insert(run.end(), split.others.begin(), split.others.end());
    MegatronConfig out;
    try {
      out = parse_megatron_args_quiet(run, env, base, {});
    } catch (const InputError& e) {
      if (e.where().rfind("--", 0) != 0) throw;
      std::string unset;  // (a value that is an unset variable of the CI explains most such errors)
      for (const std::string& n : notes)
        if (n.find("variables the environment does not set") != std::string::npos)
          unset = " (" + n.substr(path.size() + 2) + ")";
      throw InputError(path, "MODEL_ARGS " + e.where() + ": " + e.detail() + unset);
    }
    out.warnings.insert(out.warnings.begin(), notes.begin(), notes.end());
    return out;
  }
  // An AMD Primus launch (`torchrun … primus/cli/main.py train pretrain --config EXP.yaml [overrides]`): the
  // experiment's Megatron module is the run, the launcher gives the world, the other options are Primus's
  // overrides of the module's keys.
  if (const auto primus = find_primus_config_arg(args)) {
    const std::string& path = primus->path;
    const std::size_t i = primus->flag_at, value_at = primus->value_at;
    LauncherSplit split = split_launcher(args, i, value_at);
    std::vector<std::string> overrides, notes;
    for (std::size_t j = 0; j < split.others.size(); ++j) {
      const std::string& w = split.others[j];
      if (w.rfind("--", 0) != 0) {
        if (w.find('=') != std::string::npos) overrides.push_back(w);  // key=value
        continue;  // the entry point and the CLI's words (train pretrain)
      }
      const std::string name = canonical(w.substr(0, w.find('=')));
      const bool valued = j + 1 < split.others.size() && split.others[j + 1].rfind("--", 0) != 0 &&
                          w.find('=') == std::string::npos;
      if (name == "--data-path" || name == "--backend-path" || name == "--export-config") {
        if (valued) ++j;  // the train CLI's own options
        continue;
      }
      overrides.push_back(w);
      if (valued) overrides.push_back(split.others[++j]);
    }
    // The flags that only carry Primus's defaults of Megatron's arguments (its trainer_base.yaml lists them
    // all) are not the experiment's: not named among the flags read past.
    std::set<std::string> defaults;
    std::vector<std::string> launcher = split.launcher;
    const std::vector<std::string> run =
        megatron_words_from_primus_experiment(path, overrides, env, notes, &defaults);
    launcher.insert(launcher.end(), run.begin(), run.end());
    MegatronConfig out;
    try {
      out = parse_megatron_args_quiet(launcher, env, base, defaults);
    } catch (const InputError& e) {
      rethrow_as_file_key(e, path, "(Primus)");  // a flag named in the message is a key of the experiment
    }
    out.warnings.insert(out.warnings.begin(), notes.begin(), notes.end());
    return out;
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w.rfind("--", 0) != 0) {
      if (w.size() > 1 && w[0] == '-' && !looks_like_value(w)) cfg.ignored.push_back(w);
      continue;  // positional: the training script (pretrain_gpt.py) or a stray value
    }
    std::string name = w, value;
    bool has_eq = false;
    if (auto eq = w.find('='); eq != std::string::npos) {
      name = w.substr(0, eq);
      value = w.substr(eq + 1);
      has_eq = true;
    }
    name = canonical(name);
    if (auto a = aliases.find(name); a != aliases.end()) name = a->second;
    auto k = known.find(name);
    if (k == known.end()) {
      cfg.ignored.push_back(name);
      if (!has_eq)
        while (i + 1 < args.size() && looks_like_value(args[i + 1])) ++i;
      continue;
    }
    switch (k->second) {
      case Arity::Switch:
        cfg.seen[name] = "";
        break;
      case Arity::One:
        if (!has_eq) {
          if (i + 1 >= args.size() || !looks_like_value(args[i + 1])) {
            // Launch scripts often leave path placeholders empty ($TOKENIZER_MODEL unset); the analysis
            // does not need those paths, so only sizes are required to have values.
            if (name == "--vocab-file" || name == "--merge-file" || name == "--tokenizer-model" ||
                name == "--tokenizer-name-or-path" || name == "--master-addr" || name == "--master-port" ||
                name == "--node-rank" || name == "--load" || name == "--pretrained-checkpoint") {
              cfg.warnings.push_back(name +
                                     " has no value (an empty variable in the launch script?); ignored");
              break;
            }
            if (name == "--nproc-per-node" || name == "--nnodes")
              throw InputError(name,
                               "expects a value (an empty variable in the launch script? `preflight run "
                               "--gpus-per-node N --nnodes M` fills it)");
            throw InputError(name, "expects a value");
          }
          value = args[++i];
        }
        cfg.seen[name] = value;
        break;
      case Arity::Many: {
        std::string joined = value;
        if (!has_eq)
          while (i + 1 < args.size() && looks_like_value(args[i + 1]))
            joined += (joined.empty() ? "" : " ") + args[++i];
        cfg.seen[name] = joined;
        break;
      }
    }
  }

  // Megatron features the analysis reads past without modelling: say what that does to the numbers.
  static const std::map<std::string, std::string> unmodelled = {
      {"--cpu-offloading-weights", "weight offloading to the CPU is not modelled: memory here is high"},
      {"--fp8-dot-product-attention",
       "FP8 attention is priced as 16-bit attention (no published kernel rate): the run may be faster than "
       "priced (NeMo's DeepSeek-V3 on GB300 with it: +12 %)"},
      {"--moe-paged-stash",
       "the paged expert-activation stash is not modelled: the experts' activations are priced as Megatron's "
       "plain tensors"},
      {"--fp32-residual-connection",
       "the residual stream is priced in the compute dtype, not fp32: activation memory here is low"},
      {"--distribute-saved-activations",
       "checkpointed layer inputs are priced whole on every tensor-parallel rank, not split over it: memory "
       "here is high under full recompute"},
      {"--spec",
       "a custom layer spec (a module and function of the launch's own): its layers are priced as Megatron's "
       "standard ones for these flags"},
      {"--step-batch-size-schedule",
       "the batch-size schedule is not priced: the iteration is priced at --global-batch-size (the "
       "schedule's "
       "steps below it run fewer micro batches)"},
      {"--rampup-batch-size",
       "the batch-size ramp is not priced: the iteration is priced at --global-batch-size (the ramp's steps "
       "run "
       "fewer micro batches)"},
      {"--mlp-chunks-for-training",
       "the MLP is priced over the whole sequence at once, not in chunks: its activation peak here is high"},
  };
  std::set<std::string> said;
  for (const auto& name : cfg.ignored)
    if (auto u = unmodelled.find(name); u != unmodelled.end() && said.insert(u->second).second)
      cfg.warnings.push_back(name + ": " + u->second);

  // Other flags read past whose names say they may change memory or time (a newer Megatron's, or a feature
  // not modelled): named in one warning, so that a number which ignores them is not taken silently.  Flags of
  // logging, data, checkpoints and the learning-rate schedule are not named.
  static constexpr std::string_view kCostWords[] = {"parallel",
                                                    "overlap",
                                                    "recompute",
                                                    "offload",
                                                    "fsdp",
                                                    "shard",
                                                    "graph",
                                                    "zero",
                                                    "pipeline",
                                                    "expert-model",
                                                    "context",
                                                    "batch",
                                                    "layers",
                                                    "hidden",
                                                    "head",
                                                    "vocab",
                                                    "mtp",
                                                    "window",
                                                    "dispatcher",
                                                    "fp4",
                                                    "checkpoint-activations",
                                                    "activation-offload",
                                                    "memory-efficient",
                                                    "dot-product-attention",
                                                    "capacity",
                                                    "stash",
                                                    "transpose-cache",
                                                    "precision",
                                                    "quant",
                                                    "moe",
                                                    "expert",
                                                    "router",
                                                    "swap",
                                                    "coc",
                                                    "mc2",
                                                    "mem-efficient",
                                                    "o2-"};
  // (ckpt: checkpoint formats and their saving, e.g. --dist-ckpt-optim-fully-reshardable's "shard".)
  static constexpr std::string_view kNotCost[] = {"log",   "logging",    "tensorboard", "wandb", "save",
                                                  "load",  "eval",       "tokenizer",   "seed",  "profile",
                                                  "timer", "dataloader", "ckpt"};
  std::vector<std::string> unread;
  bool frozen_said = false;
  for (const auto& name : cfg.ignored) {
    if (name == "--freeze-all-layers") {
      // Megatron-LM 2026: a frozen model run forward only under no_grad (a teacher's logits dumped for
      // distillation, training/training.py): no gradients, optimizer states or kept activations.
      if (!std::exchange(frozen_said, true))
        cfg.warnings.push_back(
            "--freeze-all-layers: Megatron runs this model forward only (no gradients, no optimizer "
            "states, no activations kept for a backward pass); it is priced as training, an "
            "upper bound of its memory and time");
      continue;
    }
    if (unmodelled.count(name) || not_named.count(name) || name.rfind("--", 0) != 0) continue;
    auto has = [&](std::string_view w) { return name.find(w) != std::string::npos; };
    // A word of logging / data / checkpoints is one of the name's dash-separated words: "load" is
    // --no-load-optim's, not --offload-modules' (a part of "offload").
    auto has_word = [&](std::string_view w) {
      for (std::size_t at = name.find(w); at != std::string::npos; at = name.find(w, at + 1)) {
        const bool starts = at == 0 || name[at - 1] == '-';
        const bool ends = at + w.size() == name.size() || name[at + w.size()] == '-';
        if (starts && ends) return true;
      }
      return false;
    };
    if (!std::any_of(std::begin(kCostWords), std::end(kCostWords), has)) continue;
    if (std::any_of(std::begin(kNotCost), std::end(kNotCost), has_word)) continue;
    if (std::find(unread.begin(), unread.end(), name) == unread.end()) unread.push_back(name);
  }
  if (!unread.empty()) {
    std::string list;
    for (const auto& n : unread) list += (list.empty() ? "" : ", ") + n;
    cfg.warnings.push_back("read past, not modelled (they may change memory or time): " + list);
  }

  // Model families whose layers are not transformer layers: refused by name, not as a missing size.
  // DeepSeek sparse attention (an indexer picks the keys; its variant flag is refused where the gated delta
  // net's is read).
  for (const char* name : {"--dsa-indexer-n-heads"})
    if (std::find(cfg.ignored.begin(), cfg.ignored.end(), name) != cfg.ignored.end())
      throw InputError(name,
                       "DeepSeek sparse attention (an indexer picks the keys each query attends) is not "
                       "modelled: preflight prices softmax attention over the causal keys "
                       "(or a sliding window), which would misprice these layers' time and memory");
  // Manifold-constrained hyper-connections (mHC: n residual streams mixed by learned doubly stochastic
  // matrices; TransformerConfig.enable_mhc_connections) widen every layer's residual stream n-fold.
  if (std::find(cfg.ignored.begin(), cfg.ignored.end(), "--enable-mhc-connections") != cfg.ignored.end())
    throw InputError(
        "--enable-mhc-connections",
        "hyper-connections (several residual streams per token) are not modelled: preflight prices "
        "one residual stream of the hidden size");
  // Vision-language models (Megatron's LLaVA, pretrain_vlm.py: a vision encoder over --img-h × --img-w
  // images in --patch-dim patches, a projector, then the language model) and reinforcement learning
  // (train_rl.py, GRPO: an inference engine with its KV-cache buffers generates the rollouts the training
  // step consumes): pricing the language model's training step alone was 50 … 85 % below the peaks
  // Megatron-LM's CI measured for them (tests/functional_tests multimodal_llava_*, gpt_grpo_*).
  // (Every argument dump lists --img-h 224, --img-w 224 and --patch-dim 16, Megatron's defaults: a value
  // of its own names a vision run.)
  static const std::map<std::string, std::string> vision_defaults = {
      {"--img-h", "224"}, {"--img-w", "224"}, {"--patch-dim", "16"}, {"--vision-model-type", ""}};
  for (const auto& [name, fallback] : vision_defaults)
    if (auto v = cfg.seen.find(name); v != cfg.seen.end() && (fallback.empty() || v->second != fallback))
      throw InputError(name,
                       "vision models (a vision encoder and projector beside or instead of the language "
                       "model: LLaVA, ViT) are not modelled: preflight prices decoder-only language models");
  // Heterogeneous stacks (Llama-Nemotron's NAS models: per-layer attention and FFN shapes, some blocks
  // no-ops or linear replacements; TransformerConfig.heterogeneous_block_specs): priced as identical layers
  // they would be wrong layer by layer, as the Hugging Face nemotron-nas config is refused.
  for (const char* name :
       {"--heterogeneous-layers-config-path", "--heterogeneous-layers-config-encoded-json"})
    if (std::find(cfg.ignored.begin(), cfg.ignored.end(), name) != cfg.ignored.end())
      throw InputError(name,
                       "a heterogeneous stack (per-layer attention and FFN shapes, Llama-Nemotron's NAS "
                       "models) is not modelled: preflight prices every layer of a kind the same");
  // FastMoE's Megatron patch (laekov/fastmoe fmoe/megatron: `--fmoefy`): its --num-experts counts the experts
  // of each GPU, not of the layer — read as Megatron's it would price a model a world size smaller.
  if (std::find(cfg.ignored.begin(), cfg.ignored.end(), "--fmoefy") != cfg.ignored.end())
    throw InputError(
        "--fmoefy",
        "FastMoE's experts (its --num-experts counts the experts of each GPU, spread over the "
        "data-parallel ranks) are not modelled; Megatron's own MoE flags are (--num-experts of the "
        "layer, --expert-model-parallel-size, --moe-router-topk)");
  for (const char* name : {"--perform-rl-step", "--langrl-env-config"})
    if (std::find(cfg.ignored.begin(), cfg.ignored.end(), name) != cfg.ignored.end())
      throw InputError(name,
                       "reinforcement learning (GRPO rollouts by an inference engine with its KV-cache "
                       "buffers beside the training step) is not modelled: preflight prices pretraining and "
                       "fine-tuning steps");
  // Encoder-decoder models (Megatron's T5: --encoder-num-layers / --decoder-num-layers instead of
  // --num-layers).
  if (!cfg.seen.count("--num-layers"))
    for (const char* name : {"--encoder-num-layers", "--decoder-num-layers"})
      if (std::find(cfg.ignored.begin(), cfg.ignored.end(), name) != cfg.ignored.end())
        throw InputError(name,
                         "encoder-decoder models (T5) are not modelled: preflight prices decoder-only "
                         "transformer layers (GPT, Llama, MoE, multi-latent attention)");

  // A launch that takes its architecture from the checkpoint it loads (--use-checkpoint-args) and does not
  // give it: say where the sizes are, rather than "--num-layers: is required".
  if (!base && !cfg.seen.count("--num-layers") && !cfg.seen.count("--hybrid-layer-pattern") &&
      std::find(cfg.ignored.begin(), cfg.ignored.end(), "--use-checkpoint-args") != cfg.ignored.end())
    throw InputError("--use-checkpoint-args",
                     "the launch reads its architecture from the checkpoint it loads (--load" +
                         (cfg.seen.count("--load") ? " " + cfg.seen.at("--load") : std::string()) +
                         "), and gives no --num-layers: name the model with --model (a preset such as "
                         "llama2-7b, or the checkpoint's Hugging Face config.json; through wrap or run: "
                         "--analyze-arg=--model=NAME)");
  // The training script the launch started (`--entry-point NAME`, which preflight wrap and run pass for
  // Megatron's entry points that are not pretrain_gpt.py): what its model_provider builds.
  if (const auto entry = cfg.seen.find("--entry-point"); entry != cfg.seen.end()) {
    std::string name = entry->second;
    if (const auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    const bool hybrid_given =
        cfg.seen.count("--hybrid-layer-pattern") || cfg.seen.count("--hybrid-override-pattern") ||
        cfg.seen.count("--is-hybrid-model") || cfg.seen.count("--hybrid-attention-ratio") ||
        cfg.seen.count("--hybrid-mlp-ratio");
    if (name == "pretrain_t5.py")
      throw InputError("--entry-point",
                       "pretrain_t5.py trains T5, an encoder-decoder: not modelled (preflight "
                       "prices decoder-only transformer and hybrid Mamba stacks)");
    if (name == "pretrain_mamba.py" && !hybrid_given) {
      // pretrain_mamba.py builds MambaModel: without a pattern its layers are allocated from
      // --hybrid-attention-ratio and --hybrid-mlp-ratio, both 0 by default — every layer a Mamba mixer.
      cfg.seen["--is-hybrid-model"] = "";
      cfg.warnings.push_back(
          "pretrain_mamba.py builds Megatron's Mamba model: its layers allocated from the "
          "hybrid ratios (0 by default: every layer a Mamba mixer)");
    } else if (name == "pretrain_bert.py") {
      cfg.warnings.push_back(
          "pretrain_bert.py: analysed as its transformer stack with the language-model "
          "head; BERT's pooler, binary head and head transform (about 2·hidden² "
          "parameters) are left out");
    } else if (name == "pretrain_vlm.py" || name.rfind("pretrain_vision", 0) == 0 ||
               name == "pretrain_retro.py" || name == "pretrain_ict.py") {
      cfg.warnings.push_back(name +
                             ": only the language model's transformer stack is analysed (its vision "
                             "encoder, retrieval or biencoder parts are not modelled)");
    }
  }
  // Pai-Megatron-Patch's vision-language models (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3-Omni: its
  // examples/qwen*_vl and qwen3_omni scripts, all with this tokenizer) train a vision encoder on the first
  // pipeline stage beside the language model.
  if (const auto t = cfg.seen.find("--patch-tokenizer-type");
      t != cfg.seen.end() && t->second == "Qwen2VLTokenizer")
    cfg.warnings.push_back(
        "--patch-tokenizer-type Qwen2VLTokenizer: Pai-Megatron-Patch's vision-language model; only its "
        "language "
        "model is analysed — the vision encoder (on the first pipeline stage), its activations and time are "
        "not "
        "modelled: memory and time here are low");
  megatron::translate_megablocks_moe(cfg.seen, cfg.warnings);
  megatron::translate_pai_shared_expert(cfg.seen, cfg.warnings);
  megatron::translate_mindspeed(cfg.seen, cfg.warnings);
  megatron::Flags f(cfg.seen);
  if (base)
    cfg.model = *base;
  else
    cfg.model.name = "megatron-args";
  megatron::read_architecture(f, base, cfg.model, cfg.strategy, cfg.warnings);
  megatron::read_vocabulary(f, base, cfg.model, cfg.warnings);
  megatron::read_moe_and_mla(f, base, cfg.model);
  megatron::read_launcher_and_sizes(f, env, cfg);
  megatron::read_pipeline_split(f, cfg);
  megatron::read_numerics(f, cfg.strategy);
  if ((f.has("--use-megatron-fsdp") || f.has("--use-custom-fsdp")) && cfg.strategy.megatron_version.empty() &&
      cfg.strategy.precision != Precision::FP32 && !f.has("--megatron-fsdp-main-grads-dtype") &&
      !f.has("--grad-reduce-in-bf16"))
    cfg.warnings.push_back(
        "Megatron-FSDP: main gradients in the parameters' 16-bit dtype, Megatron-LM's default since "
        "2026-07-01 "
        "(--megatron-fsdp-main-grads-dtype auto); before, fp32 — pass --megatron-version for an older "
        "checkout "
        "or --megatron-fsdp-main-grads-dtype fp32");
  if (cfg.strategy.optimizer_cpu_offload_fraction > 0)
    cfg.warnings.push_back(
        "--optimizer-cpu-offload: the optimizer states of " +
        std::to_string(static_cast<int>(std::lround(100 * cfg.strategy.optimizer_cpu_offload_fraction))) +
        " % of the parameters are on the host; the host's optimizer step and the gradients' copies to it are "
        "not priced (the iteration may be slower than priced)");
  megatron::read_deepspeed(f, cfg);
  megatron::read_recompute(f, cfg.strategy);
  megatron::read_kernels(f, cfg);
  megatron::read_precision_config(f, cfg);
  megatron::fit_world_size(f, env, cfg);
  megatron::megablocks_expert_parallel(f, cfg);
  megatron::mindspeed_after(f, cfg);
  if (f.has("--moe-load-imbalance")) {
    if (!cfg.model.moe.enabled())
      throw InputError("--moe-load-imbalance", "is given for a model without experts (--num-experts)");
    for (auto& w : check_moe_load_imbalance(cfg.model, cfg.strategy, "--moe-load-imbalance"))
      cfg.warnings.push_back(std::move(w));
  }
  check_packed_seq_mean_length(cfg.strategy);
  megatron::check_interleaved_groups(cfg.strategy);
  megatron::read_cpu_offloading(f, cfg);
  megatron::read_embedding_wgrad_deferral(f, cfg);
  if (!cfg.strategy.offload_modules.empty()) {
    std::string list;
    for (const auto& m : cfg.strategy.offload_modules) list += (list.empty() ? "" : ", ") + m;
    cfg.warnings.push_back(
        "--fine-grained-activation-offloading: the tensors saved by " + list + " (from " +
        std::to_string(cfg.strategy.min_offloaded_tensor_elements) +
        " elements) leave the device between forward and backward; the transfers are taken "
        "as hidden behind compute (not priced)");
  }
  // Megatron's OptimizerStateOffloader works on the distributed optimizer's shards only
  // (distrib_optimizer.py).
  if (cfg.strategy.offload_optimizer_states && !cfg.strategy.distributed_optimizer)
    throw InputError("--offload-optimizer-states",
                     "needs --use-distributed-optimizer (Megatron's offloader "
                     "moves the distributed optimizer's shards)");
  // TransformerConfig.__post_init__'s checks of the selective-recompute modules against the model.
  const auto& mods = cfg.strategy.recompute_modules;
  auto listed = [&](const char* m) { return std::find(mods.begin(), mods.end(), m) != mods.end(); };
  if (cfg.strategy.recompute_granularity == RecomputeGranularity::Selective) {
    if (listed("moe_act") && !cfg.strategy.moe_grouped_gemm)
      throw InputError("--recompute-modules",
                       "moe_act is only supported with --moe-grouped-gemm (Megatron raises it too)");
    if (listed("mla_up_proj") && !cfg.model.mla.enabled)
      throw InputError(
          "--recompute-modules",
          "mla_up_proj is only supported with --multi-latent-attention (Megatron raises it too)");
  }
  return cfg;
}

}  // namespace preflight::analyzer
