// AMD Primus experiments (AMD-AGI/Primus): the Megatron module's merged configuration back to Megatron-LM's
// command line.
//
// Primus (primus/core/launcher/parser.py, primus/core/config/yaml_loader.py) builds a trainer module from
// three YAMLs: the module preset `primus/configs/modules/megatron/<config>` (pre_trainer.yaml, which extends
// trainer_base.yaml and Primus's own module files), the model preset `primus/configs/models/megatron/<model>`
// (llama3.1_8B.yaml → llama3_8B.yaml → llama_base.yaml → language_model.yaml …), and the experiment's
// `overrides:`.  Each file's `${VAR}` / `${VAR:default}` are replaced from the environment and its `extends:`
// presets deep-merged under it (later ones win); the model's keys are added where the module has none
// (merge_namespace(allow_override=False)); the overrides, then the command line's `--key value` /
// `key=value`, win.  The keys are Megatron-LM's argparse destinations, which Primus sets on Megatron's args
// directly: they go back to flags as an argument dump's do (append_destinations_as_flags).
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include "megatron_flags.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

namespace fs = std::filesystem;

std::string at_line(const fs::path& file, const YAML::Mark& mark) {
  return file.string() + (mark.line >= 0 ? ":" + std::to_string(mark.line + 1) : std::string());
}

YAML::Node load_yaml(const fs::path& file) {
  try {
    return YAML::LoadFile(file.string());
  } catch (const YAML::BadFile&) {
    throw InputError(file.string(), "cannot read the Primus configuration");
  } catch (const YAML::Exception& e) {
    throw InputError(at_line(file, e.mark), "malformed YAML: " + e.msg);
  }
}

/// `${VAR}` and `${VAR:default}` in `s` replaced from `env` (yaml_loader.py's ENV_PATTERN); a `${VAR}`
/// without a default that `env` lacks is an error, as in Primus.
std::string resolve_env(const std::string& s, const std::map<std::string, std::string>& env,
                        const std::string& where) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t open = s.find("${", i);
    if (open == std::string::npos) break;
    const std::size_t close = s.find('}', open + 2);
    if (close == std::string::npos) break;
    const std::string inner = s.substr(open + 2, close - open - 2);
    out += s.substr(i, open - i);
    const std::size_t colon = inner.find(':');
    const std::string var = inner.substr(0, colon);
    if (var.empty() || var.find('{') != std::string::npos) {  // not a variable: kept as written
      out += s.substr(open, close + 1 - open);
    } else if (const auto it = env.find(var); it != env.end()) {
      out += it->second;
    } else if (colon != std::string::npos) {
      out += inner.substr(colon + 1);
    } else {
      throw InputError(where, "${" + var +
                                  "}: the environment variable is not set and has no default (Primus "
                                  "requires it)");
    }
    i = close + 1;
  }
  return out + s.substr(std::min(i, s.size()));
}

void resolve_env_in(YAML::Node node, const std::map<std::string, std::string>& env, const fs::path& file) {
  if (node.IsMap()) {
    for (auto kv : node) resolve_env_in(kv.second, env, file);
  } else if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i) resolve_env_in(node[i], env, file);
  } else if (node.IsScalar() && node.Scalar().find("${") != std::string::npos) {
    node = resolve_env(node.Scalar(), env, at_line(file, node.Mark()));
  }
}

/// `over` deep-merged onto a copy of `base`: mappings key by key, anything else replaced (merge_utils.py).
YAML::Node deep_merge(const YAML::Node& base, const YAML::Node& over) {
  if (!base.IsMap() || !over.IsMap()) return YAML::Clone(over);
  YAML::Node out = YAML::Clone(base);
  for (const auto& kv : over) {
    const std::string key = kv.first.as<std::string>();
    out[key] = out[key] && out[key].IsMap() && kv.second.IsMap() ? deep_merge(out[key], kv.second)
                                                                 : YAML::Clone(kv.second);
  }
  return out;
}

/// A Primus YAML with its environment references resolved and its `extends:` presets merged under it.
YAML::Node parse_primus_yaml(const fs::path& file, const std::map<std::string, std::string>& env,
                             int depth = 0) {
  if (depth > 32) throw InputError(file.string(), "extends: more than 32 levels (a cycle?)");
  YAML::Node cfg = load_yaml(file);
  if (!cfg.IsMap()) throw InputError(file.string(), "not a Primus configuration (a mapping of keys)");
  resolve_env_in(cfg, env, file);
  const YAML::Node ext = cfg["extends"];
  if (!ext) return cfg;
  std::vector<std::string> presets;
  if (ext.IsScalar()) {
    presets.push_back(ext.Scalar());
  } else if (ext.IsSequence()) {
    for (const auto& e : ext) {
      if (!e.IsScalar()) throw InputError(at_line(file, e.Mark()), "extends: a list of file names");
      presets.push_back(e.Scalar());
    }
  } else if (!ext.IsNull()) {
    throw InputError(at_line(file, ext.Mark()), "extends: a file name or a list of them");
  }
  YAML::Node merged(YAML::NodeType::Map);
  for (const std::string& p : presets) {
    const fs::path preset = file.parent_path() / p;
    std::error_code ec;
    if (!fs::is_regular_file(preset, ec))
      throw InputError(at_line(file, ext.Mark()), "extends: " + preset.string() + " not found");
    merged = deep_merge(merged, parse_primus_yaml(preset, env, depth + 1));
  }
  cfg.remove("extends");
  return deep_merge(merged, cfg);
}

/// Primus's `primus/configs` folder: $PRIMUS_PATH's, else the one above the experiment (Primus's examples sit
/// in its checkout).
fs::path primus_configs_root(const fs::path& experiment, const std::map<std::string, std::string>& env) {
  std::error_code ec;
  auto has_configs = [&](const fs::path& dir) {
    return fs::is_directory(dir / "primus" / "configs" / "modules", ec);
  };
  if (const auto it = env.find("PRIMUS_PATH"); it != env.end() && has_configs(it->second))
    return fs::path(it->second) / "primus" / "configs";
  for (fs::path dir = fs::absolute(experiment, ec).parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (has_configs(dir)) return dir / "primus" / "configs";
    if (dir == dir.parent_path()) break;
  }
  throw InputError(
      experiment.string(),
      "cannot find Primus's presets (primus/configs/modules and primus/configs/models): run from "
      "a Primus checkout holding the experiment, or set PRIMUS_PATH to the checkout");
}

bool truthy(const YAML::Node& n) {
  if (!n || !n.IsScalar()) return false;
  std::string v = n.Scalar();
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "true" || v == "1";
}

}  // namespace

bool is_primus_experiment(const std::string& path) {
  std::error_code ec;
  if (!(path.ends_with(".yaml") || path.ends_with(".yml")) || !fs::is_regular_file(path, ec)) return false;
  try {
    const YAML::Node raw = YAML::LoadFile(path);
    if (!raw.IsMap()) return false;
    if (raw["modules"]) return raw["modules"].IsMap();
    if (!raw["extends"]) return false;
    // an experiment extending another one (Primus's LoRA recipes)
    const YAML::Node root = parse_primus_yaml(path, process_environment());
    return root.IsMap() && root["modules"] && root["modules"].IsMap();
  } catch (const std::exception&) {
    return false;  // read again, with its error, by the caller's own front end
  }
}

std::optional<PrimusConfigArg> find_primus_config_arg(const std::vector<std::string>& args) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& w = args[i];
    PrimusConfigArg a{i, i, ""};
    if ((w == "--config" || w == "--exp") && i + 1 < args.size()) {
      a.value_at = i + 1;
      a.path = args[i + 1];
    } else if (w.rfind("--config=", 0) == 0 || w.rfind("--exp=", 0) == 0) {
      a.path = w.substr(w.find('=') + 1);
    }
    if (!a.path.empty() && is_primus_experiment(a.path)) return a;
  }
  return std::nullopt;
}

std::string primus_experiment_gpu(const std::vector<std::string>& args) {
  const auto a = find_primus_config_arg(args);
  if (!a) return "";
  const fs::path dir = fs::path(a->path).parent_path();
  return dir.parent_path().filename() == "configs" ? dir.filename().string() : std::string();
}

std::vector<std::string> megatron_words_from_primus_experiment(const std::string& path,
                                                               const std::vector<std::string>& overrides,
                                                               const std::map<std::string, std::string>& env,
                                                               std::vector<std::string>& notes,
                                                               std::set<std::string>* preset_default_flags) {
  const fs::path exp_file = path;
  std::map<std::string, std::string> module_defaults;  // the module preset's values (trainer_base.yaml …)
  YAML::Node exp = parse_primus_yaml(exp_file, env);
  const YAML::Node modules = exp["modules"];
  if (!modules || !modules.IsMap())
    throw InputError(path, "no modules: mapping (a Primus experiment has one)");
  // The trainer the train CLI runs: pre_trainer (post_trainer for a fine-tuning experiment), else the only
  // trainer module.
  std::string name;
  for (const char* n : {"pre_trainer", "post_trainer"})
    if (modules[n] && name.empty()) name = n;
  if (name.empty())
    for (const auto& kv : modules)
      if (kv.first.as<std::string>().find("trainer") != std::string::npos && name.empty())
        name = kv.first.as<std::string>();
  if (name.empty()) throw InputError(path, "modules: no trainer module (pre_trainer or post_trainer)");
  const YAML::Node module = modules[name];
  const std::string where = "modules." + name;
  if (!module.IsMap()) throw InputError(at_line(exp_file, module.Mark()), where + ": a mapping");
  const std::string framework =
      module["framework"] && module["framework"].IsScalar() ? module["framework"].Scalar() : std::string();
  if (framework != "megatron")
    throw InputError(at_line(exp_file, module.Mark()),
                     where + ".framework '" + framework +
                         "': preflight reads Primus's Megatron-LM modules (torchtitan, MaxText and "
                         "Megatron-Bridge experiments are other front ends)");

  YAML::Node cfg(YAML::NodeType::Map);
  if (module["config"]) {
    if (!module["model"] || !module["model"].IsScalar())
      throw InputError(at_line(exp_file, module.Mark()), where + ": `config` without `model`");
    const fs::path root = primus_configs_root(exp_file, env);
    auto preset = [&](const char* kind, const std::string& file) {
      const std::string f = file.ends_with(".yaml") || file.ends_with(".yml") ? file : file + ".yaml";
      const fs::path p = root / kind / "megatron" / f;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec))
        throw InputError(at_line(exp_file, module.Mark()),
                         where + "." + (std::string(kind) == "modules" ? "config" : "model") + " '" + file +
                             "': " + p.string() + " not found");
      return parse_primus_yaml(p, env);
    };
    cfg = preset("modules", module["config"].Scalar());
    for (const auto& kv : cfg)
      module_defaults[kv.first.as<std::string>()] =
          megatron::yaml_dest_value(kv.second, kv.first.as<std::string>(), path);
    // The model's keys where the module has none (parser.py: merge_namespace(allow_override=False)).
    for (const auto& kv : preset("models", module["model"].Scalar())) {
      const std::string key = kv.first.as<std::string>();
      if (!cfg[key]) cfg[key] = YAML::Clone(kv.second);
    }
    if (module["overrides"] && module["overrides"].IsMap()) cfg = deep_merge(cfg, module["overrides"]);
  } else {
    cfg = YAML::Clone(module);  // an exported (flattened) configuration: the module's keys are the run
  }
  // The command line's overrides (arg_utils.py parse_cli_overrides: --key value, --key=value, key=value).
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    std::string w = overrides[i], key, value;
    if (w.rfind("--", 0) == 0) w = w.substr(2);
    if (const auto eq = w.find('='); eq != std::string::npos) {
      key = w.substr(0, eq);
      value = w.substr(eq + 1);
    } else if (overrides[i].rfind("--", 0) == 0 && i + 1 < overrides.size() &&
               overrides[i + 1].rfind("--", 0) != 0) {
      key = w;
      value = overrides[++i];
    } else if (overrides[i].rfind("--", 0) == 0) {
      key = w;
      value = "true";
    } else {
      continue;
    }
    std::replace(key.begin(), key.end(), '-', '_');
    if (key.find('.') != std::string::npos) {
      notes.push_back("Primus override " + key + "=" + value + ": a nested key, not read");
      continue;
    }
    cfg[key] = value;
  }

  // Primus's own tokenizer names are Megatron's HuggingFaceTokenizer of tokenizer_model
  // (primus/backends/megatron/training/tokenizer/tokenizer.py CUSTOM_TOKENIZER_TYPES,
  // _build_custom_hf_tokenizer).
  static const std::set<std::string> hf_tokenizers = {
      "DeepSeekV2Tokenizer", "DeepSeekV3Tokenizer", "DeepSeekV4Tokenizer",
      "Llama2Tokenizer",     "Llama3Tokenizer",     "MixtralTokenizer",
      "Llama4Tokenizer",     "Lfm2Tokenizer",       "KimiK2Tokenizer"};
  // (Llama2Tokenizer / Llama3Tokenizer keep Megatron's fixed sizes, which their repositories have: a Llama 3.2
  // repository is no preset, its 128256 tokens are Llama 3's.)
  if (cfg["tokenizer_type"] && cfg["tokenizer_type"].IsScalar() &&
      hf_tokenizers.count(cfg["tokenizer_type"].Scalar()) &&
      known_tokenizer_vocab_size(cfg["tokenizer_type"].Scalar()) == 0 && cfg["tokenizer_model"] &&
      cfg["tokenizer_model"].IsScalar())
    cfg["tokenizer_type"] = "HuggingFaceTokenizer";
  // What Primus changes that preflight does not price, said.
  if (truthy(cfg["patch_zero_bubble"]))
    notes.push_back("Primus zero-bubble pipeline (patch_zero_bubble): priced as Megatron's 1F1B schedules");
  if (truthy(cfg["patch_primus_pipeline"]))
    notes.push_back("Primus pipeline schedule (pp_algorithm " +
                    (cfg["pp_algorithm"]
                         ? megatron::yaml_dest_value(cfg["pp_algorithm"], "pp_algorithm", path)
                         : std::string("?")) +
                    "): priced as Megatron's 1F1B schedules");
  for (const char* k : {"recompute_layer_ids", "decoder_pipeline_manual_split_list"})
    if (cfg[k] && !cfg[k].IsNull())
      notes.push_back(std::string("Primus ") + k + " " + megatron::yaml_dest_value(cfg[k], k, path) +
                      ": not read");
  if (truthy(cfg["use_sink_attention"]))
    notes.push_back("Primus sink attention (use_sink_attention): priced as softmax attention");

  // Destinations → flags.  Not passed: the module's own keys, files and run bookkeeping, and Primus's own
  // switches (kernels, logging, its schedules above), which are not Megatron's.
  static const std::set<std::string> skip = {"name",
                                             "framework",
                                             "config",
                                             "model",
                                             "overrides",
                                             "params",
                                             "trainer_class",
                                             "trainable",
                                             "world_size",
                                             "rank",
                                             "local_rank",
                                             "data_path",
                                             "train_data_path",
                                             "valid_data_path",
                                             "test_data_path",
                                             "save",
                                             "sink_level",
                                             "file_sink_level",
                                             "stderr_sink_level",
                                             "use_rocm_mem_info_iters",
                                             "moe_router_force_load_balancing_type",
                                             "patch_moe_overlap",
                                             "moe_use_fused_router_with_aux_score",
                                             "mxfp4_gradient_stochastic_rounding",
                                             "turbo_gemm_backend",
                                             "turbo_grouped_gemm_backend",
                                             "turbo_deepep_num_cu",
                                             "turbo_sync_free_moe_stage",
                                             "turbo_mega_moe_precision",
                                             "recompute_layer_ids",
                                             "decoder_pipeline_manual_split_list",
                                             "zero_bubble_max_pending_backward",
                                             "stage",
                                             "hf_path",
                                             "patch_zero_bubble",
                                             "patch_primus_pipeline",
                                             "use_sink_attention",
                                             "zero_bubble_adaptive_memory_limit_percentile",
                                             "zero_bubble_v_schedule_mem_setup",
                                             "pp_algorithm",
                                             "offload_ops"};
  std::map<std::string, std::string> dests, defaults;
  std::vector<std::string> nested;
  for (const auto& kv : cfg) {
    const std::string key = kv.first.as<std::string>();
    if (skip.count(key) || key.starts_with("use_turbo_") || key.starts_with("odc_") ||
        key.starts_with("mlflow_"))
      continue;
    const std::string v = megatron::yaml_dest_value(kv.second, key, path);
    if (v.empty()) {
      nested.push_back(key);
      continue;
    }
    dests[key] = v;
    if (const auto d = module_defaults.find(key); d != module_defaults.end() && d->second == v)
      defaults[key] = v;
  }
  if (!nested.empty()) {
    std::string list;
    for (const auto& n : nested) list += (list.empty() ? "" : ", ") + n;
    notes.push_back("Primus experiment " + path + ": nested settings not read (" + list + ")");
  }
  std::vector<std::string> words;
  megatron::append_destinations_as_flags(dests, {}, {}, words);
  if (preset_default_flags) {  // the flags those of the module preset's own values become
    std::vector<std::string> default_words;
    megatron::append_destinations_as_flags(defaults, {}, {}, default_words);
    for (const auto& w : default_words)
      if (w.rfind("--", 0) == 0) preset_default_flags->insert(w);
  }
  return words;
}

}  // namespace preflight::analyzer
