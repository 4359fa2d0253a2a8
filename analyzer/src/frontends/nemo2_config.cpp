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
                          "account_for_loss_in_pipeline_split"}) {
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
    plugin_grad_fp32 = is_set(p["grad_reduce_in_fp32"]) ? flag_value(p["grad_reduce_in_fp32"]) : true;
    b["mixed_precision"] = mp;
  }
  if (!is_set(bddp["grad_reduce_in_fp32"]))
    bddp["grad_reduce_in_fp32"] = plugin_grad_fp32.value_or(false) ? "true" : "false";

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
