// NeMo 2's configurations (NeMo-Run task YAML, a checkpoint's context/model.yaml) → Megatron-LM arguments
// (nemo2_config.hpp), through the Megatron-Bridge conversion: the NeMo 2 sections are written into a
// ConfigContainer's and converted by bridge_root_to_megatron_args().
#include "preflight/analyzer/frontends/nemo2_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>

#include "config_section.hpp"
#include "megatron_flags.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {
namespace {

using detail::apply_override;
using detail::Section;
using detail::yaml_of;
using detail::yaml_tree;

const std::string kLlm = "nemo.collections.llm.";

std::string target_of(const YAML::Node& n) {
  if (n && n.IsMap() && n["_target_"] && n["_target_"].IsScalar()) return n["_target_"].Scalar();
  return "";
}
std::string last_part(const std::string& dotted) {
  const auto dot = dotted.rfind('.');
  return dot == std::string::npos ? dotted : dotted.substr(dot + 1);
}

/// The NeMo 2 model configuration classes' defaults (analyzer/data/nemo2/model_configs.json).
const nlohmann::json& class_table() {
  static const nlohmann::json table = detail::embedded_json("nemo2/model_configs.json");
  return table;
}

/// A list (or one mapping) of `_target_` mappings, as trainer.plugins / trainer.callbacks are written.
std::vector<YAML::Node> targets_in(const YAML::Node& n) {
  std::vector<YAML::Node> out;
  if (!n) return out;
  if (n.IsMap()) out.push_back(n);
  if (n.IsSequence())
    for (const auto& e : n)
      if (e.IsMap()) out.push_back(e);
  return out;
}

bool flag_value(const YAML::Node& n) {
  return n && n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "True");
}
bool is_set(const YAML::Node& n) {
  return n && n.IsDefined() && !n.IsNull();
}

/// A restore path of an imported Hugging Face model (`resume.restore_config.path: nemo://ORG/REPO`, or
/// hf://), as its repository id; "" otherwise.
std::string restore_path(const YAML::Node& root) {
  const YAML::Node resume = root["resume"];
  if (!resume || !resume.IsMap() || !resume["restore_config"] || !resume["restore_config"].IsMap()) return "";
  const YAML::Node p = resume["restore_config"]["path"];
  if (!p || !p.IsScalar()) return "";
  for (const char* scheme : {"nemo://", "hf://"})
    if (p.Scalar().rfind(scheme, 0) == 0) return p.Scalar().substr(std::strlen(scheme));
  return "";
}

const nlohmann::json& recipe_table() {
  static const nlohmann::json table = detail::embedded_json("nemo2/recipes.json");
  return table;
}

}  // namespace

bool is_nemo2_recipe(const std::string& spec) {
  std::string name = spec;
  for (const char* task : {"pretrain:", "finetune:"})
    if (name.rfind(task, 0) == 0) name = name.substr(std::strlen(task));
  name = name.substr(0, name.find('('));
  return !name.empty() && recipe_table().at("recipes").contains(name);
}

std::vector<std::string> nemo2_recipe_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : recipe_table().at("recipes").items()) names.push_back(k);
  return names;
}

BridgeConfigArgs nemo2_recipe_to_megatron_args(const std::string& spec,
                                               const std::vector<std::string>& extra) {
  std::string task = "pretrain", rest = spec;
  for (const std::string t : {"pretrain", "finetune"})
    if (rest.rfind(t + ":", 0) == 0) {
      task = t;
      rest = rest.substr(t.size() + 1);
    }
  std::string name = rest.substr(0, rest.find('(')), call;
  if (const auto open = rest.find('('); open != std::string::npos) {
    if (rest.back() != ')')
      throw InputError("NeMo 2 recipe " + spec, "the factory's arguments must end with ')'");
    call = rest.substr(open + 1, rest.size() - open - 2);
  }
  const auto& recipes = recipe_table().at("recipes");
  if (!recipes.contains(name))
    throw InputError("NeMo 2 recipe " + spec,
                     "'" + name +
                         "' is not one of NeMo's recipes (nemo/collections/llm/recipes: llama3_8b, "
                         "llama31_405b, deepseek_v3, qwen3_30b_a3b, nemotronh_8b, …)");
  const auto& entry = recipes.at(name);
  if (!entry.contains(task))
    throw InputError("NeMo 2 recipe " + spec, "NeMo's " + name + " recipe has no " + task + "_recipe");
  // The factory's own arguments (`llama3_8b(num_nodes=2)`): the ones that choose the task the recipe builds
  // (performance_mode, peft_scheme: branches of the recipe, evaluated into the table as their own tasks), and
  // the ones that map onto the task's fields.
  const std::string said = "NeMo 2 recipe " + spec;
  std::vector<std::string> overrides;
  std::string variant;  // "" (the default arguments), "performance", or a peft_scheme
  std::istringstream in(call);
  for (std::string arg; std::getline(in, arg, ',');) {
    auto trim = [](std::string x) {
      x.erase(0, x.find_first_not_of(" \t"));
      x.erase(x.find_last_not_of(" \t") + 1);
      return x;
    };
    arg = trim(arg);
    if (arg.empty()) continue;
    const auto eq = arg.find('=');
    if (eq == std::string::npos)
      throw InputError(said, "the factory argument '" + arg + "' must be given as name=value");
    const std::string key = trim(arg.substr(0, eq));
    std::string value = trim(arg.substr(eq + 1));
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"'))
      value = value.substr(1, value.size() - 2);
    auto choose = [&](const std::string& v) {
      if (!variant.empty() && variant != v)
        throw InputError(said,
                         "performance_mode=True and another peft_scheme together are not in the "
                         "recipe table (each is, with the recipe's other arguments at their defaults)");
      variant = v;
    };
    if (key == "num_nodes") {
      overrides.push_back("trainer.num_nodes=" + value);
    } else if (key == "num_gpus_per_node") {
      overrides.push_back("trainer.devices=" + value);
    } else if (key == "seq_length") {
      overrides.push_back("data.seq_length=" + value);
    } else if (key == "name" || key == "dir" || (key == "performance_mode" && value == "False")) {
      // (where the run writes; the recipe as it stands)
    } else if (key == "performance_mode" && value == "True") {
      choose("performance");
    } else if (key == "peft_scheme" && task == "finetune") {
      std::string scheme = value;
      std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (scheme != "none" && scheme != "lora" && scheme != "dora")
        throw InputError(said, "peft_scheme '" + value + "' is not one of lora, dora, none");
      if (entry.contains(task + "_" + scheme)) choose(scheme);  // (else the recipe's default is that scheme)
    } else {
      throw InputError(said, "the factory argument " + key +
                                 " is not read (num_nodes, num_gpus_per_node, seq_length, peft_scheme, "
                                 "performance_mode are): give its effect as an override "
                                 "(trainer.strategy.x=…, model.config.x=…)");
    }
  }
  if (variant == "performance" && !entry.contains(task + "_performance"))
    variant.clear();  // (the recipe's performance mode changes nothing of its task)
  YAML::Node root = yaml_tree(entry.at(variant.empty() ? task : task + "_" + variant));
  const std::string source = "NeMo 2 recipe " + name + " (" + task + "_recipe" +
                             (variant == "performance" ? ", performance_mode=True"
                              : !variant.empty()       ? ", peft_scheme='" + variant + "'"
                                                       : "") +
                             ")";
  overrides.insert(overrides.end(), extra.begin(), extra.end());
  BridgeConfigArgs out = nemo2_config_to_megatron_args(root, source, overrides);
  out.warnings.insert(out.warnings.begin(),
                      source + ": the task NeMo's recipe builds with its default arguments (" +
                          recipe_table().at("source").get<std::string>() + ")");
  return out;
}

bool is_nemo2_config(const YAML::Node& root) {
  if (!root || !root.IsMap()) return false;
  if (target_of(root).rfind(kLlm, 0) == 0) return true;
  const YAML::Node model = root["model"];
  return target_of(model).rfind(kLlm, 0) == 0 ||
         (model && model.IsMap() && target_of(model["config"]).rfind(kLlm, 0) == 0);
}

std::string nemo2_checkpoint_model_yaml(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::path& p : {fs::path(dir) / "context" / "model.yaml", fs::path(dir) / "model.yaml"})
    if (fs::is_regular_file(p, ec)) return p.string();
  return "";
}

BridgeConfigArgs nemo2_config_to_megatron_args(YAML::Node root, const std::string& source,
                                               const std::vector<std::string>& extra) {
  // --- Overrides (NeMo-Run's CLI: trainer.strategy.tensor_model_parallel_size=2, model.config.x=…) --------
  std::vector<std::string> passed_on;
  static const std::set<std::string> sections = {"model",  "trainer", "data",   "optim",    "peft",
                                                 "resume", "log",     "config", "tokenizer"};
  for (const auto& w : extra)
    if (!apply_override(root, w, source, sections)) passed_on.push_back(w);

  // The model: a task's `model` section, or the file itself (a checkpoint's context/model.yaml).
  const bool is_task = !(target_of(root).rfind(kLlm, 0) == 0 && root["config"]);
  const YAML::Node model = is_task ? root["model"] : root;
  const std::string model_name = is_task ? "model" : "";
  auto model_field = [&](const std::string& k) { return model_name.empty() ? k : model_name + "." + k; };
  if (!model || !model.IsMap())
    throw InputError(source, "a NeMo 2 configuration without a `model` section: nothing to price");
  const std::string model_class = target_of(model);
  if (model_class.find("HFAutoModel") != std::string::npos)
    throw InputError(source + ": " + model_field("_target_"),
                     "NeMo's Hugging Face AutoModel (transformers' own model, not Megatron's): give "
                     "--model ORG/REPO with its layout as Megatron flags");
  if (model_class.find(".t5.") != std::string::npos || model_class.find(".bert.") != std::string::npos ||
      last_part(model_class).rfind("T5", 0) == 0 || last_part(model_class).rfind("Bert", 0) == 0)
    throw InputError(
        source + ": " + model_field("_target_"),
        last_part(model_class) + ": an encoder-decoder or encoder-only model (T5, BERT) is not priced");
  if (model_class.find("yena") != std::string::npos)
    throw InputError(
        source + ": " + model_field("_target_"),
        last_part(model_class) + " is a Hyena (Evo 2) model: its convolution operators are not priced");
  const YAML::Node inner = model["config"];
  const bool model_is_config = model_class.find("Config") != std::string::npos || !inner.IsDefined();
  if (!model_is_config && !inner.IsMap())
    throw InputError(source + ": " + model_field("config"),
                     "the model's configuration (a mapping with its _target_, such as "
                     "nemo.collections.llm.gpt.model.llama.Llama3Config8B) is missing");
  YAML::Node config = model_is_config ? model : inner;
  const std::string config_field = model_is_config ? model_name : model_field("config");
  const std::string config_class = last_part(target_of(config));
  const std::string config_module = target_of(config);
  auto cfield = [&](const std::string& k) { return config_field.empty() ? k : config_field + "." + k; };

  BridgeConfigArgs out;
  out.source = source;
  if (config_module.find(".hyena") != std::string::npos || config_class.rfind("Hyena", 0) == 0)
    throw InputError(source + ": " + cfield("_target_"),
                     config_class + " is a Hyena (Evo 2) model: its convolution operators are not priced");
  if (target_of(model).find(".vlm.") != std::string::npos || config_module.find(".vlm.") != std::string::npos)
    throw InputError(source + ": " + model_field("_target_"),
                     "a vision-language model: its vision encoder is not priced (the language model's "
                     "configuration alone can be given with --nemo-config)");

  // --- The Bridge container the conversion reads
  // ------------------------------------------------------------
  YAML::Node b(YAML::NodeType::Map);
  YAML::Node bm(YAML::NodeType::Map);
  std::map<std::string, std::string> origin;  // Bridge field → NeMo 2 field
  const auto& classes = class_table().at("classes");
  if (auto it = classes.find(config_class); it != classes.end()) {
    for (const auto& [k, v] : it->at("fields").items()) {
      if (v.is_null() || v.is_object()) continue;
      bm[k] = yaml_of(v);
      origin["model." + k] = cfield(k) + " (" + config_class + "'s default)";
    }
  } else {
    out.warnings.push_back(source + ": " + cfield("_target_") + ": " + config_class +
                           " is not a NeMo model configuration class preflight has the defaults of: only "
                           "the fields the file writes are read");
  }
  for (const auto& kv : config) {
    const std::string k = kv.first.as<std::string>();
    if (k == "_target_" || k == "_partial_" || k == "_call_") continue;
    bm[k] = YAML::Clone(kv.second);
    origin["model." + k] = cfield(k);
  }
  for (const char* k : {"heterogeneous_layers_config_encoded_json", "heterogeneous_layers_config_path"})
    if (is_set(bm[k]))
      throw InputError(
          source + ": " +
              (origin.count(std::string("model.") + k) ? origin[std::string("model.") + k] : cfield(k)),
          config_class +
              " is a heterogeneous model (Llama-Nemotron's NAS layers: each layer its own "
              "attention and MLP sizes): its per-layer blocks are not priced");
  // Gemma 3's rope bases of its local and global layers: the base changes neither memory nor time.
  if (bm["rotary_base"].IsSequence() && bm["rotary_base"].size() > 0)
    bm["rotary_base"] = YAML::Clone(bm["rotary_base"][bm["rotary_base"].size() - 1]);
  // The strategy's sizes replace the model configuration's (MegatronStrategy.connect → parallelism config).
  const YAML::Node trainer = is_task ? root["trainer"] : YAML::Node();
  const YAML::Node strategy = trainer && trainer.IsMap() ? trainer["strategy"] : YAML::Node();
  if (strategy && strategy.IsMap()) {
    for (const char* k : {"tensor_model_parallel_size", "pipeline_model_parallel_size",
                          "virtual_pipeline_model_parallel_size", "microbatch_group_size_per_vp_stage",
                          "context_parallel_size", "sequence_parallel", "expert_model_parallel_size",
                          "expert_tensor_parallel_size", "num_layers_in_first_pipeline_stage",
                          "num_layers_in_last_pipeline_stage", "account_for_embedding_in_pipeline_split",
                          "account_for_loss_in_pipeline_split", "pipeline_model_parallel_layout"}) {
      const YAML::Node v = strategy[k];
      if (!v.IsDefined()) continue;
      bm[k] = YAML::Clone(v);
      origin[std::string("model.") + k] = "trainer.strategy." + std::string(k);
    }
  }
  auto size_of = [&](const char* k) {
    const YAML::Node v = bm[k];
    try {
      return is_set(v) ? v.as<long long>() : 1LL;
    } catch (const YAML::Exception&) {
      throw InputError(source + ": " + origin["model." + std::string(k)], "must be a whole number");
    }
  };
  const long long tp = size_of("tensor_model_parallel_size"), pp = size_of("pipeline_model_parallel_size"),
                  vpp = size_of("virtual_pipeline_model_parallel_size");
  const bool sp = flag_value(bm["sequence_parallel"]);

  // DDP: `ddp: megatron` (the default) is DistributedDataParallelConfig's defaults.
  YAML::Node bddp(YAML::NodeType::Map);
  const YAML::Node ddp = strategy && strategy.IsMap() ? strategy["ddp"] : YAML::Node();
  if (ddp && ddp.IsMap())
    for (const auto& kv : ddp) {
      const std::string k = kv.first.as<std::string>();
      if (k != "_target_") bddp[k] = YAML::Clone(kv.second);
    }
  const YAML::Node fsdp = strategy && strategy.IsMap() ? strategy["fsdp"] : YAML::Node();
  if (is_set(fsdp) && fsdp.IsScalar()) {
    if (fsdp.Scalar() == "pytorch")
      out.warnings.push_back(source + ": trainer.strategy.fsdp is PyTorch FSDP2: priced as Megatron FSDP");
    bddp["use_megatron_fsdp"] = "true";
  } else if (flag_value(bddp["use_custom_fsdp"])) {
    bddp["use_megatron_fsdp"] = "true";
  }

  // The optimizer: the model's optim (MegatronOptimizerModule) config.
  YAML::Node bopt(YAML::NodeType::Map);
  YAML::Node optim = is_task ? root["optim"] : root["optim"];
  if (!optim && model["optim"]) optim = model["optim"];
  if (optim && optim.IsMap() && optim["config"] && optim["config"].IsMap())
    for (const auto& kv : optim["config"]) {
      const std::string k = kv.first.as<std::string>();
      if (k != "_target_") bopt[k] = YAML::Clone(kv.second);
    }
  const bool dist_opt = flag_value(bopt["use_distributed_optimizer"]);
  if (dist_opt) bddp["use_distributed_optimizer"] = "true";

  // Mixed precision: MegatronMixedPrecision among the trainer's plugins.
  std::optional<bool> plugin_grad_fp32;
  for (const YAML::Node& p : targets_in(trainer && trainer.IsMap() ? trainer["plugins"] : YAML::Node())) {
    if (last_part(target_of(p)) != "MegatronMixedPrecision") continue;
    YAML::Node mp(YAML::NodeType::Map);
    const std::string precision = is_set(p["precision"]) ? p["precision"].Scalar() : "bf16-mixed";
    mp["fp16"] = precision.rfind("16", 0) == 0 || precision.rfind("fp16", 0) == 0 ? "true" : "false";
    mp["fp8"] = is_set(p["fp8"]) ? YAML::Clone(p["fp8"]) : YAML::Node(YAML::NodeType::Null);
    if (is_set(p["fp8"])) mp["fp8_recipe"] = is_set(p["fp8_recipe"]) ? p["fp8_recipe"].Scalar() : "delayed";
    mp["fp4"] = is_set(p["fp4"]) ? YAML::Clone(p["fp4"]) : YAML::Node(YAML::NodeType::Null);
    if (is_set(p["fp4_recipe"])) mp["fp4_recipe"] = YAML::Clone(p["fp4_recipe"]);
    const bool gather = flag_value(p["fp8_param_gather"]) || flag_value(p["fp8_params"]);
    mp["fp8_param_gather"] = gather ? "true" : "false";
    for (const char* k : {"first_last_layers_bf16", "num_layers_at_start_in_bf16",
                          "num_layers_at_end_in_bf16", "fp8_dot_product_attention"})
      if (is_set(p[k])) mp[k] = YAML::Clone(p[k]);
    // The plugin's DtypeConfig overwrites the model configuration's fields of the same names, its defaults
    // too (mixed_precision.py update_config_with_dtype_overrides): NemotronH's configurations keep their
    // first and last layers in bf16 only under a plugin that says so.
    if (!is_set(mp["first_last_layers_bf16"])) mp["first_last_layers_bf16"] = "false";
    for (const char* k : {"num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"})
      if (!is_set(mp[k])) mp[k] = "0";
    plugin_grad_fp32 = is_set(p["grad_reduce_in_fp32"]) ? flag_value(p["grad_reduce_in_fp32"]) : true;
    b["mixed_precision"] = mp;
  }
  // The plugin's DtypeConfig overwrites the DDP configuration's grad_reduce_in_fp32 too (MegatronStrategy's
  // setup: update_config_with_dtype_overrides on ddp_config; the plugin's default is fp32): NeMo's
  // performance scripts reduce in bf16 by setting the plugin's, whatever the recipe's DDP config says.
  if (plugin_grad_fp32)
    bddp["grad_reduce_in_fp32"] = *plugin_grad_fp32 ? "true" : "false";
  else if (!is_set(bddp["grad_reduce_in_fp32"]))
    bddp["grad_reduce_in_fp32"] = "false";

  // Communication overlaps: MegatronCommOverlapCallback among the trainer's callbacks.
  YAML::Node overlap(YAML::NodeType::Map);
  bool callback = false;
  for (const YAML::Node& c : targets_in(trainer && trainer.IsMap() ? trainer["callbacks"] : YAML::Node())) {
    if (last_part(target_of(c)) != "MegatronCommOverlapCallback") continue;
    callback = true;
    if (flag_value(c["tp_comm_overlap"])) {
      if (tp >= 2 && sp)
        overlap["tp_comm_overlap"] = "true";
      else
        out.warnings.push_back(source +
                               ": MegatronCommOverlapCallback's tp_comm_overlap is off, as NeMo turns it "
                               "off, without tp ≥ 2 and sequence parallelism");
    }
    const bool p2p = is_set(c["overlap_p2p_comm"]) ? flag_value(c["overlap_p2p_comm"]) : (pp > 1 && vpp > 1);
    bm["overlap_p2p_comm"] = p2p ? "true" : "false";
    if (flag_value(c["defer_embedding_wgrad_compute"])) {
      overlap["defer_embedding_wgrad_compute"] = "true";
      if (is_set(c["wgrad_deferral_limit"]))
        overlap["wgrad_deferral_limit"] = YAML::Clone(c["wgrad_deferral_limit"]);
    }
    if (dist_opt)  // the callback sets the DDP overlaps (data parallel > 1) unless told otherwise
      for (const char* k : {"overlap_grad_reduce", "overlap_param_gather"})
        bddp[k] = is_set(c[k]) ? (flag_value(c[k]) ? "true" : "false") : "true";
  }
  if (!callback && !is_set(bm["overlap_p2p_comm"])) bm["overlap_p2p_comm"] = "false";

  // The batch and the training sequence: the data module's.
  YAML::Node btrain(YAML::NodeType::Map), bdata(YAML::NodeType::Map);
  const YAML::Node data = is_task ? root["data"] : YAML::Node();
  if (data && data.IsMap()) {
    for (const char* k : {"global_batch_size", "micro_batch_size"})
      if (data[k].IsDefined()) btrain[k] = YAML::Clone(data[k]);
    if (data["seq_length"].IsDefined()) bdata["sequence_length"] = YAML::Clone(data["seq_length"]);
  }
  b["model"] = bm;
  b["ddp"] = bddp;
  b["optimizer"] = bopt;
  b["train"] = btrain;
  b["dataset"] = bdata;
  if (callback) b["comm_overlap"] = overlap;  // (without it no CommOverlapConfig: the DDP config's overlaps)

  // The vocabulary: the configuration's, as it stands, else its tokenizer's.
  std::vector<std::string> tail;
  auto put_value = [&](const std::string& flag, const std::string& v) {
    tail.push_back(flag);
    tail.push_back(v);
  };
  if (is_set(bm["vocab_size"])) {
    bm["should_pad_vocab"] = "false";
  } else {
    YAML::Node tok;
    const std::pair<YAML::Node, std::string> places[] = {
        {data && data.IsMap() ? data["tokenizer"] : YAML::Node(), "data.tokenizer"},
        {model["tokenizer"], model_field("tokenizer")},
        {is_task ? root["tokenizer"] : YAML::Node(), "tokenizer"}};
    for (const auto& [n, field] : places)
      if (n && n.IsMap()) {
        tok = n;
        origin["model.vocab_size"] = field;
        break;
      }
    if (!tok.IsMap()) origin["model.vocab_size"] = cfield("vocab_size") + " (or a tokenizer)";
    const std::string kind = last_part(target_of(tok));
    auto text = [&](const char* k) {
      return tok.IsMap() && is_set(tok[k]) && tok[k].IsScalar() ? tok[k].Scalar() : "";
    };
    if (kind == "AutoTokenizer" && !text("pretrained_model_name").empty()) {
      put_value("--tokenizer-type", "HuggingFaceTokenizer");
      put_value("--tokenizer-model", text("pretrained_model_name"));
    } else if (kind == "SentencePieceTokenizer" && !text("model_path").empty()) {
      put_value("--tokenizer-type", "SentencePieceTokenizer");
      put_value("--tokenizer-model", text("model_path"));
    } else if (kind == "NullTokenizer" && !text("vocab_size").empty()) {
      put_value("--vocab-size", text("vocab_size"));
    } else if (kind == "get_nmt_tokenizer") {
      const std::string library = text("library"), name = text("model_name"), file = text("tokenizer_model");
      if (library == "megatron" && !name.empty()) {
        put_value("--tokenizer-type", name);
      } else if (library == "sentencepiece" && !file.empty()) {
        put_value("--tokenizer-type", "SentencePieceTokenizer");
        put_value("--tokenizer-model", file);
      } else if (library == "huggingface" && !name.empty()) {
        put_value("--tokenizer-type", "HuggingFaceTokenizer");
        put_value("--tokenizer-model", name);
      } else if (library == "null" && !text("vocab_size").empty()) {
        put_value("--vocab-size", text("vocab_size"));  // NeMo's performance scripts: a NullTokenizer
      }
    } else if (const std::string restore = restore_path(root); !tok.IsMap() && !restore.empty()) {
      // a fine-tuning run restoring an imported Hugging Face model (nemo://ORG/REPO): its tokenizer
      put_value("--tokenizer-type", "HuggingFaceTokenizer");
      put_value("--tokenizer-model", restore);
      origin["model.vocab_size"] = "resume.restore_config.path";
    } else if (!tok.IsMap() && data && last_part(target_of(data)) == "MockDataModule") {
      put_value("--tokenizer-type", "GPT2BPETokenizer");  // MockDataModule's default tokenizer
    } else if (!tok.IsMap() && is_set(bm["tokenizer_name"]) && bm["tokenizer_library"].IsScalar() &&
               bm["tokenizer_library"].Scalar() == "huggingface") {
      put_value("--tokenizer-type", "HuggingFaceTokenizer");  // the SSM configurations' own
      put_value("--tokenizer-model", bm["tokenizer_name"].Scalar());
    } else if (tok.IsMap()) {
      out.warnings.push_back(source + ": the tokenizer " + (kind.empty() ? "given" : kind) +
                             " is not read: give --vocab-size");
    }
  }

  // The world: trainer.devices × trainer.num_nodes, unless torchrun's sizes are given.
  if (!detail::world_given(passed_on) && trainer && trainer.IsMap()) {
    const Section t(trainer, source, "trainer");
    const YAML::Node devices = trainer["devices"];
    if (devices && devices.IsScalar() && (devices.Scalar() == "-1" || devices.Scalar() == "auto"))
      out.warnings.push_back(source + ": trainer.devices is " + devices.Scalar() +
                             " (every GPU of the node): give --nproc_per_node N for the run's");
    else if (auto d = t.integer("devices"))
      put_value("--nproc_per_node", std::to_string(*d));
    if (auto n = t.integer("num_nodes")) put_value("--nnodes", std::to_string(*n));
  }

  // PEFT: LoRA / DoRA on their target modules.
  const YAML::Node peft = is_task ? root["peft"] : YAML::Node();
  if (const std::string kind = last_part(target_of(peft)); !kind.empty()) {
    if (kind == "LoRA" || kind == "DoRA" || kind == "CanonicalLoRA") {
      const std::vector<std::string> lora = detail::lora_words(Section(peft, source, "peft"));
      tail.insert(tail.end(), lora.begin(), lora.end());
    } else {
      out.warnings.push_back(source + ": peft " + kind + " is priced as full fine-tuning (an upper bound)");
    }
  }
  tail.insert(tail.end(), passed_on.begin(), passed_on.end());

  // --- Convert, naming NeMo 2's fields in messages --------------------------------------------------------
  origin["train.global_batch_size"] = "data.global_batch_size";
  origin["train.micro_batch_size"] = "data.micro_batch_size";
  origin["dataset.sequence_length"] = "data.seq_length";
  auto rename = [&](const std::string& field) {
    auto it = origin.find(field);
    if (it != origin.end()) return it->second;
    if (field.rfind("model.", 0) == 0) return cfield(field.substr(6));  // a field neither file nor class sets
    return field;
  };
  BridgeConfigArgs converted;
  try {
    converted = detail::bridge_root_to_megatron_args(b, source, tail);
  } catch (const InputError& e) {
    const std::string prefix = source + ": ";
    if (e.where().rfind(prefix, 0) == 0)
      throw InputError(prefix + rename(e.where().substr(prefix.size())), e.detail());
    throw;
  }
  converted.field_of_flag["--vocab-size"] = "model.vocab_size";
  converted.field_of_flag["--tokenizer-model"] = "model.vocab_size";
  for (auto& [flag, field] : converted.field_of_flag) field = rename(field);
  if (!data || !data.IsMap() || !data["seq_length"].IsDefined())
    if (auto it = converted.field_of_flag.find("--seq-length"); it != converted.field_of_flag.end())
      it->second = rename("model.seq_length");
  converted.warnings.insert(converted.warnings.begin(), out.warnings.begin(), out.warnings.end());
  for (auto& w : converted.warnings)  // the conversion's messages name Bridge's fields
    for (const auto& [from, to] : origin)
      if (auto at = w.find(source + ": " + from);
          at != std::string::npos && w.compare(at + source.size() + 2 + from.size(), 1, ":") == 0)
        w.replace(at + source.size() + 2, from.size(), to);
  converted.override_file = false;
  return converted;
}

}  // namespace preflight::analyzer

// --- NeMo 2's performance scripts (scripts/performance/llm)
// -------------------------------------------------
namespace preflight::analyzer {
namespace {

const nlohmann::json& perf_script_table() {
  static const nlohmann::json table = detail::embedded_json("nemo2/perf_scripts.json");
  return table;
}

/// A dotted task field (`trainer.strategy.tensor_model_parallel_size`) as a JSON pointer.
nlohmann::json::json_pointer field_pointer(const std::string& key) {
  std::string p = "/" + key;
  std::replace(p.begin(), p.end(), '.', '/');
  return nlohmann::json::json_pointer(p);
}

/// Sets (or, for null, erases) the dotted field `key` of a task; a value of the path that is no mapping
/// (NeMo's plugin list) is replaced by one.
void set_dotted(nlohmann::json& task, const std::string& key, const nlohmann::json& value) {
  const auto ptr = field_pointer(key);
  if (value.is_null()) {
    if (task.contains(ptr) && task[ptr.parent_pointer()].is_object())
      task[ptr.parent_pointer()].erase(ptr.back());
    return;
  }
  for (auto p = ptr.parent_pointer(); !p.empty(); p = p.parent_pointer())
    if (task.contains(p) && !task[p].is_object()) task[p] = nlohmann::json::object();
  task[ptr] = value;
}

/// argument_parser.py's options: the destination, and how the value is given.
enum class Arity { Value, Switch, Bool, Many, Optional };
struct PerfOption {
  const char* dest;
  Arity arity;
  bool read;  ///< changes the run (else left out: Slurm, container, logging, profiling)
};
const std::map<std::string, PerfOption>& perf_options() {
  static const std::map<std::string, PerfOption> options = [] {
    const std::vector<std::tuple<const char*, const char*, const char*, Arity, bool>> spec = {
        {"-a", "--account", "account", Arity::Value, false},
        {"-p", "--partition", "partition", Arity::Value, false},
        {"-g", "--gpu", "gpu", Arity::Value, true},
        {"-l", "--log_dir", "log_dir", Arity::Value, false},
        {"-t", "--time_limit", "time_limit", Arity::Value, false},
        {"", "--additional_slurm_params", "additional_slurm_params", Arity::Value, false},
        {"-i", "--container_image", "container_image", Arity::Value, false},
        {"-c", "--compute_dtype", "compute_dtype", Arity::Value, true},
        {"-fr", "--fp8_recipe", "fp8_recipe", Arity::Value, true},
        {"-en", "--enable_nsys", "enable_nsys", Arity::Switch, false},
        {"-em", "--enable_memory_profile", "enable_memory_profile", Arity::Switch, false},
        {"-mp", "--memory_profile_out_path", "memory_profile_out_path", Arity::Value, false},
        {"-tb", "--tensorboard", "tensorboard", Arity::Switch, false},
        {"-wd", "--wandb", "wandb", Arity::Switch, false},
        {"-wdk", "--wandb_key", "wandb_key", Arity::Value, false},
        {"-wdp", "--wandb_prj_name", "wandb_prj_name", Arity::Value, false},
        {"-wdj", "--wandb_job_name", "wandb_job_name", Arity::Value, false},
        {"-f", "--finetuning", "finetuning", Arity::Value, true},
        {"-hf", "--hf_token", "hf_token", Arity::Value, false},
        {"-nh", "--nemo_home", "nemo_home", Arity::Value, false},
        {"-d", "--dryrun", "dryrun", Arity::Switch, false},
        {"-tp", "--tensor_parallel_size", "tp", Arity::Value, true},
        {"-pp", "--pipeline_parallel_size", "pp", Arity::Value, true},
        {"-cp", "--context_parallel_size", "cp", Arity::Value, true},
        {"-vp", "--virtual_pipeline_parallel_size", "vp", Arity::Value, true},
        {"-ep", "--expert_parallel_size", "ep", Arity::Value, true},
        {"-et", "--expert_tensor_parallel_size", "etp", Arity::Optional, true},
        {"-mb", "--micro_batch_size", "mbs", Arity::Value, true},
        {"-gb", "--global_batch_size", "gbs", Arity::Value, true},
        {"-ng", "--num_gpus", "num_gpus", Arity::Value, true},
        {"-gn", "--gpus_per_node", "gpus_per_node", Arity::Value, true},
        {"-ms", "--max_steps", "max_steps", Arity::Value, false},
        {"-cg", "--cuda_graphs", "cuda_graphs", Arity::Bool, true},
        {"-fsdp", "--use_mcore_fsdp", "fsdp", Arity::Bool, true},
        {"-fsdp_db", "--use_fsdp_double_buffer", "fsdp_double_buffer", Arity::Bool, false},
        {"-ubr", "--use_user_buffer_registration", "ubr", Arity::Bool, false},
        {"-sharp", "--use_sharp", "sharp", Arity::Bool, false},
        {"-rl", "--recompute_layers", "recompute_layers", Arity::Value, true},
        {"-ol", "--activation_offload_layers", "offload_layers", Arity::Value, true},
        {"", "--nccl_communicator_config_path", "nccl_config", Arity::Value, false},
        {"-rm", "--recompute_modules", "recompute_modules", Arity::Many, true},
        {"-cm", "--custom_mounts", "custom_mounts", Arity::Value, false},
        {"", "--use_hf_tokenizer", "use_hf_tokenizer", Arity::Switch, false},
        {"-dcdfr", "--dump_config_diff_from_base_recipe", "dump_diff", Arity::Switch, false},
        {"", "--keep_fsdp_fp8_transpose_cache", "keep_fp8_transpose", Arity::Bool, false},
        {"-vb", "--enable_vboost", "vboost", Arity::Bool, false},
        {"", "--use_te_op_fuser", "te_op_fuser", Arity::Bool, false},
        {"", "--use_te_act_func", "te_act_func", Arity::Bool, false},
        {"", "--act_func_fp8_input_store", "act_fp8_input", Arity::Bool, false},
        {"", "--detach", "detach", Arity::Bool, false}};
    std::map<std::string, PerfOption> m;
    for (const auto& [s, l, dest, arity, read] : spec) {
      if (*s) m.emplace(s, PerfOption{dest, arity, read});
      m.emplace(l, PerfOption{dest, arity, read});
    }
    return m;
  }();
  return options;
}

/// argument_parser.py's bool_arg: true / false (yes / no, 1 / 0, any case).
bool perf_bool(const std::string& v, const std::string& where) {
  std::string x = v;
  std::transform(x.begin(), x.end(), x.begin(), [](unsigned char c) { return std::tolower(c); });
  if (x == "true" || x == "yes" || x == "1" || x == "t" || x == "y") return true;
  if (x == "false" || x == "no" || x == "0" || x == "f" || x == "n") return false;
  throw InputError(where, "expected true or false, got '" + v + "'");
}

int perf_count(const std::string& v, const std::string& where, int least = 1) {
  const megatron::I64 n = megatron::parse_int(where, v);
  if (n < least || n > 1000000)
    throw InputError(where, "expected a whole number ≥ " + std::to_string(least) + ", got '" + v + "'");
  return static_cast<int>(n);
}

}  // namespace

BridgeConfigArgs nemo2_perf_script_to_megatron_args(const std::string& spec,
                                                    const std::vector<std::string>& cli) {
  const std::string script =
      spec.rfind(kNemo2PerfPrefix, 0) == 0 ? spec.substr(std::strlen(kNemo2PerfPrefix)) : spec;
  if (const auto slash = script.find('/'); slash != std::string::npos)  // vlm/NAME, diffusion/NAME
    throw InputError("scripts/performance/" + script + ".py",
                     "NeMo 2's " + script.substr(0, slash) +
                         " performance scripts are not priced (multimodal and diffusion models): only "
                         "scripts/performance/llm's");
  const std::string where = "scripts/performance/llm/" + script + ".py";
  const auto& scripts = perf_script_table().at("scripts");
  if (!scripts.contains(script))
    throw InputError(where,
                     "not one of NeMo 2's performance scripts (scripts/performance/llm: "
                     "pretrain_llama3_8b, pretrain_llama3_70b, pretrain_deepseek_v3, finetune_llama3_8b, …)");
  const auto& entry = scripts.at(script);
  if (entry.contains("unsupported"))
    throw InputError(where, entry.at("unsupported").get<std::string>() + ": not priced");

  // --- the command line (argparse: -x V, --long V, --long=V; a store_true switch; -rm takes the words up to
  // the next option) -------------------------------------------------------------------------------------
  std::map<std::string, std::string> value;
  std::vector<std::string> modules, left_out, megatron_words;
  for (std::size_t i = 0; i < cli.size(); ++i) {
    std::string w = cli[i], v;
    if (w == "--" && i == 0) continue;  // (`preflight analyze --nemo-config nemo2-perf:X -- OPTIONS`)
    if (w == "--") {  // OPTIONS -- Megatron flags (--megatron-version 2025-07-01, --vocab-size N, …)
      megatron_words.assign(cli.begin() + static_cast<std::ptrdiff_t>(i) + 1, cli.end());
      break;
    }
    bool attached = false;
    if (const auto eq = w.find('='); w.rfind("-", 0) == 0 && eq != std::string::npos) {
      v = w.substr(eq + 1);
      w = w.substr(0, eq);
      attached = true;
    }
    const auto it = perf_options().find(w);
    if (it == perf_options().end())
      throw InputError(where + " " + cli[i],
                       "not an option of NeMo's scripts/performance/argument_parser.py");
    const PerfOption& o = it->second;
    auto next_is_value = [&] { return i + 1 < cli.size() && cli[i + 1].rfind("-", 0) != 0; };
    if (o.arity == Arity::Switch) {
      if (attached) throw InputError(where + " " + w, "takes no value");
      v = "true";
    } else if (o.arity == Arity::Many) {
      if (attached) modules.push_back(v);
      while (next_is_value()) modules.push_back(cli[++i]);
      v = "given";
    } else if (!attached) {
      if (o.arity == Arity::Optional && !next_is_value()) {
        v = "";
      } else {
        if (i + 1 >= cli.size()) throw InputError(where + " " + w, "expects a value");
        v = cli[++i];
      }
    }
    if (o.read)
      value[o.dest] = v;
    else
      left_out.push_back(w);
  }

  // --- the recommended configuration (helpers.py get_user_configs) ----------------------------------------
  if (!value.count("gpu"))
    throw InputError(where,
                     "needs -g/--gpu (h100, b200 or gb200): the recommended configurations are per GPU");
  const std::string gpu = value["gpu"];
  if (gpu != "h100" && gpu != "b200" && gpu != "gb200")
    throw InputError(where + " -g", "'" + gpu + "' is not one of the script's GPUs (h100, b200, gb200)");
  const std::string dtype = value.count("compute_dtype") ? value["compute_dtype"] : "bf16";
  if (dtype != "bf16" && dtype != "fp8")
    throw InputError(where + " -c", "'" + dtype + "' is not one of bf16, fp8");
  std::string fp8_recipe = value.count("fp8_recipe") ? value["fp8_recipe"] : "ds";
  if (fp8_recipe != "ds" && fp8_recipe != "cs" && fp8_recipe != "mxfp8" && fp8_recipe != "ss")
    throw InputError(where + " -fr", "'" + fp8_recipe + "' is not one of ds, cs, mxfp8, ss");
  const std::string csv_task = entry.at("csv_task").is_null()
                                   ? (value.count("finetuning") ? value["finetuning"] : std::string("lora"))
                                   : entry.at("csv_task").get<std::string>();
  if (entry.at("csv_task").is_null() && csv_task != "sft" && csv_task != "lora")
    throw InputError(where + " -f", "'" + csv_task + "' is not one of sft, lora");
  const int num_gpus =
      value.count("num_gpus") ? perf_count(value["num_gpus"], where + " -ng") : 0;  // 0: not given
  std::vector<const nlohmann::json*> candidates;
  std::string counts;
  for (const auto& c : entry.at("configs")) {
    if (c.at("gpu") != gpu || c.at("csv_task") != csv_task || c.at("dtype") != dtype) continue;
    if (dtype == "fp8" && c.at("fp8_recipe") != fp8_recipe) continue;
    counts += (counts.empty() ? "" : ", ") + std::to_string(c.at("num_gpus").get<int>());
    if (num_gpus == 0 || c.at("num_gpus").get<int>() == num_gpus) candidates.push_back(&c);
  }
  const std::string what =
      gpu + " " + csv_task + " " + dtype + (dtype == "fp8" ? " (" + fp8_recipe + ")" : "");
  std::vector<std::string> notes;
  const nlohmann::json* config = candidates.empty() ? nullptr : candidates.front();
  if (!config) {
    // No recommended row for that GPU count: the script would take its sizes from the command line alone.
    for (const char* need : {"tp", "pp", "mbs", "gbs"})
      if (!value.count(need))
        throw InputError(where,
                         "has no recommended configuration for " + what +
                             (num_gpus > 0 ? " on " + std::to_string(num_gpus) + " GPUs" : std::string()) +
                             (counts.empty() ? " (none for that GPU, task and precision)"
                                             : " (the CSV has " + counts + " GPUs)") +
                             ": give -tp, -pp, -mb and -gb (and -cp, -vp, -ep) as NeMo's script then needs");
    for (const auto& c : entry.at("configs"))
      if (c.at("gpu") == gpu && c.at("dtype") == dtype &&
          (dtype != "fp8" || c.at("fp8_recipe") == fp8_recipe)) {
        config = &c;
        break;
      }
    if (!config)
      throw InputError(where, "has no recommended configuration for " + gpu + " " + dtype +
                                  ": its model-specific settings are not known here");
    notes.push_back(where + ": no recommended configuration for " + what + " on " + std::to_string(num_gpus) +
                    " GPUs; the script's own settings of its " +
                    std::to_string(config->at("num_gpus").get<int>()) +
                    "-GPU row with the command line's sizes");
  }
  const nlohmann::json& row = config->at("row");
  auto row_int = [&](const char* k, int fallback) {
    return row.contains(k) && row.at(k).is_number() ? row.at(k).get<int>() : fallback;
  };

  // --- the task: the recipe's, with the script's edits at that row ---------------------------------------
  const std::string recipe = entry.at("recipe").get<std::string>();
  nlohmann::json task = recipe_table().at("recipes").at(recipe).at(config->at("base").get<std::string>());
  for (const auto& [k, v] : config->at("overrides").items()) set_dotted(task, k, v);

  // --- the command line's sizes and switches on top (helpers.py set_primary_perf_configs) ------------------
  int gpn = value.count("gpus_per_node") ? perf_count(value["gpus_per_node"], where + " -gn") : 8;
  if (gpu == "gb200" && gpn > 4) gpn = 4;  // get_user_configs: "GB200 has 4 GPUs per node"
  const int gpus = num_gpus > 0 ? num_gpus : config->at("num_gpus").get<int>();
  set_dotted(task, "trainer.devices", gpn);
  set_dotted(task, "trainer.num_nodes", (gpus + gpn - 1) / gpn);
  auto size = [&](const char* dest, const char* flag, int least = 1) -> std::optional<int> {
    if (!value.count(dest) || value[dest].empty()) return std::nullopt;
    return perf_count(value[dest], where + " " + flag, least);
  };
  const int pp_before = row_int("pp_size", 1), vp_before = row_int("vp_size", 1);
  if (auto tp = size("tp", "-tp")) {
    set_dotted(task, "trainer.strategy.tensor_model_parallel_size", *tp);
    set_dotted(task, "trainer.strategy.sequence_parallel", *tp > 1);
  }
  if (auto pp = size("pp", "-pp")) set_dotted(task, "trainer.strategy.pipeline_model_parallel_size", *pp);
  if (auto cp = size("cp", "-cp")) set_dotted(task, "trainer.strategy.context_parallel_size", *cp);
  if (auto vp = size("vp", "-vp"))
    set_dotted(task, "trainer.strategy.virtual_pipeline_model_parallel_size",
               *vp == 1 ? nlohmann::json() : nlohmann::json(*vp));
  if (auto ep = size("ep", "-ep")) set_dotted(task, "trainer.strategy.expert_model_parallel_size", *ep);
  if (auto etp = size("etp", "-et")) set_dotted(task, "trainer.strategy.expert_tensor_parallel_size", *etp);
  if (auto mbs = size("mbs", "-mb")) set_dotted(task, "data.micro_batch_size", *mbs);
  if (auto gbs = size("gbs", "-gb")) set_dotted(task, "data.global_batch_size", *gbs);
  // A pipeline layout the script chose for the row's (pp, vp) (DeepSeek-V3's map): another row's for the
  // command line's, else none.
  const int pp_now = size("pp", "-pp").value_or(pp_before), vp_now = size("vp", "-vp").value_or(vp_before);
  const std::string layout_key = "trainer.strategy.pipeline_model_parallel_layout";
  if ((pp_now != pp_before || vp_now != vp_before) && config->at("overrides").contains(layout_key)) {
    nlohmann::json layout;
    for (const auto& c : entry.at("configs"))
      if (c.at("gpu") == gpu && c.at("row").value("pp_size", 1) == pp_now &&
          c.at("row").value("vp_size", 1) == vp_now && c.at("overrides").contains(layout_key)) {
        layout = c.at("overrides").at(layout_key);
        break;
      }
    set_dotted(task, layout_key, layout);
    if (layout.is_null())
      notes.push_back(where + ": the script's pipeline layout for pp " + std::to_string(pp_now) + ", vp " +
                      std::to_string(vp_now) +
                      " is not known here (its CSV rows have other ones): none used");
  }
  if (value.count("cuda_graphs")) {
    const bool on = perf_bool(value["cuda_graphs"], where + " -cg");
    set_dotted(task, "model.config.enable_cuda_graph", on);
    set_dotted(task, "trainer.strategy.use_te_rng_tracker", on);
  }
  if (value.count("fsdp") &&
      perf_bool(value["fsdp"], where + " -fsdp") != (row_int("use_mcore_fsdp", 0) != 0)) {
    if (!perf_bool(value["fsdp"], where + " -fsdp"))
      throw InputError(where + " -fsdp",
                       "false on a row that runs Megatron FSDP: not read (give the task's "
                       "trainer.strategy fields with --nemo-config instead)");
    // helpers.py set_mcore_fsdp_configs
    set_dotted(task, "trainer.strategy.fsdp", "megatron");
    set_dotted(task, "trainer.strategy.ddp.data_parallel_sharding_strategy", "optim_grads_params");
    set_dotted(task, "model.config.gradient_accumulation_fusion", false);
    set_dotted(task, "model.config.enable_cuda_graph", false);
  }
  // -rl / -ol 0 over a row that sets them: set_recompute_configs then leaves the recipe's own fields, which
  // the row's evaluation had replaced
  const nlohmann::json& base_task =
      recipe_table().at("recipes").at(recipe).at(config->at("base").get<std::string>());
  auto restore = [&](std::initializer_list<const char*> fields) {
    for (const char* f : fields) {
      const std::string key = std::string("model.config.") + f;
      const auto ptr = field_pointer(key);
      set_dotted(task, key, base_task.contains(ptr) ? base_task.at(ptr) : nlohmann::json());
    }
  };
  if (auto rl = size("recompute_layers", "-rl", 0); rl && *rl > 0) {
    set_dotted(task, "model.config.recompute_granularity", "full");
    set_dotted(task, "model.config.recompute_method", "block");
    set_dotted(task, "model.config.recompute_num_layers", *rl);
  } else if (rl && row_int("recompute_layers", 0) > 0) {
    restore({"recompute_granularity", "recompute_method", "recompute_num_layers"});
  }
  if (auto ol = size("offload_layers", "-ol", 0); ol && *ol > 0) {
    set_dotted(task, "model.config.cpu_offloading", true);
    set_dotted(task, "model.config.cpu_offloading_weights", false);
    set_dotted(task, "model.config.cpu_offloading_num_layers", *ol);
  } else if (ol && row_int("activation_offload_layers", 0) > 0) {
    restore({"cpu_offloading", "cpu_offloading_weights", "cpu_offloading_num_layers"});
  }
  if (value.count("recompute_modules")) {
    set_dotted(task, "model.config.recompute_modules", modules);
    set_dotted(task, "model.config.recompute_granularity", "selective");
  }

  const std::string source =
      where + " (" + what + " on " + std::to_string(gpus) + " GPUs, " + recipe + " recipe)";
  BridgeConfigArgs out = nemo2_config_to_megatron_args(detail::yaml_tree(task), source, megatron_words);
  out.source = source;
  out.gpu = gpu;
  out.system = gpu == "h100" ? "h100-sxm" : gpu;
  out.warnings.insert(out.warnings.begin(), notes.begin(), notes.end());
  out.warnings.insert(out.warnings.begin(),
                      source + ": the script's recommended configuration (its CSV row of " +
                          std::to_string(config->at("num_gpus").get<int>()) + " GPUs: tp " +
                          std::to_string(row_int("tp_size", 1)) + ", pp " + std::to_string(pp_before) +
                          ", vp " + std::to_string(vp_before) + ", mbs " + std::to_string(row_int("mbs", 1)) +
                          ", gbs " + std::to_string(row_int("gbs", 0)) +
                          ") with the command line's options on top (" +
                          perf_script_table().at("source").get<std::string>() + ")");
  if (!left_out.empty()) {
    std::string list;
    for (const auto& w : left_out) list += (list.empty() ? "" : " ") + w;
    out.warnings.push_back(where + ": left out (Slurm, container, logging and profiling options): " + list);
  }
  return out;
}

}  // namespace preflight::analyzer
