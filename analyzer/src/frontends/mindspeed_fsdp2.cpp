// MindSpeed-LLM's FSDP2 trainer (train_fsdp2.py): its YAML and dotted overrides as Megatron's words.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

bool truth(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "true" || v == "1" || v == "yes";
}

}  // namespace

std::vector<std::string> megatron_words_from_mindspeed_fsdp2(const std::vector<std::string>& args, int world,
                                                             std::vector<std::string>& notes) {
  // fsdp2_parse_args: a first argument ending in .yaml / .yml is the configuration; the command line's
  // `--section.key value` (or `=value`) win over it.
  std::string yaml_path;
  std::size_t i = 0;
  if (!args.empty() && (args[0].ends_with(".yaml") || args[0].ends_with(".yml"))) {
    yaml_path = args[0];
    i = 1;
  }
  std::map<std::string, std::string> value;  // "section.key" → value as text
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, std::string> origin;  // where each value was set, for messages
  if (!yaml_path.empty()) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(yaml_path);
    } catch (const YAML::BadFile&) {
      throw InputError(yaml_path,
                       "cannot read the MindSpeed FSDP2 configuration (train_fsdp2.py's first argument)");
    } catch (const YAML::Exception& e) {
      throw InputError(yaml_path + ":" + std::to_string(e.mark.line + 1), "not valid YAML: " + e.msg);
    }
    if (root && !root.IsMap())
      throw InputError(yaml_path, "expected sections (model, data, parallel, training, optimization)");
    for (const auto& section : root) {
      const std::string s = section.first.as<std::string>();
      if (!section.second.IsMap()) continue;
      for (const auto& kv : section.second) {
        const std::string key = s + "." + kv.first.as<std::string>();
        const std::string where = yaml_path + ":" + std::to_string(kv.first.Mark().line + 1);
        origin[key] = where + " (" + key + ")";
        if (kv.second.IsScalar()) {
          value[key] = kv.second.as<std::string>();
        } else if (kv.second.IsSequence()) {
          std::vector<std::string> items;
          for (const auto& item : kv.second)
            if (item.IsScalar()) items.push_back(item.as<std::string>());
          lists[key] = items;
        }
      }
    }
  }
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.rfind("--", 0) != 0) continue;
    const std::size_t eq = a.find('=');
    const std::string key = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string v;
    if (eq != std::string::npos) {
      v = a.substr(eq + 1);
    } else if (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) {
      v = args[++i];
    } else {
      v = "True";  // a bare switch
    }
    value[key] = v;
    lists.erase(key);
    origin[key] = "--" + key;
  }
  auto get = [&](const std::string& key) -> std::optional<std::string> {
    const auto it = value.find(key);
    return it == value.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  auto count = [&](const std::string& key, int fallback) {
    const auto v = get(key);
    if (!v) return fallback;
    try {
      std::size_t used = 0;
      const int n = std::stoi(*v, &used);
      if (used != v->size() || n < 1) throw std::invalid_argument(*v);
      return n;
    } catch (const std::exception&) {
      throw InputError(origin[key], "expected a positive whole number, got '" + *v + "'");
    }
  };

  std::vector<std::string> words;
  const auto model = get("model.model_name_or_path");
  if (!model || model->empty())
    throw InputError(yaml_path.empty() ? "train_fsdp2.py" : yaml_path,
                     "model.model_name_or_path is not set (the model's Hugging Face folder or repository): "
                     "the analysis needs its config.json");
  words.insert(words.end(), {"--model", *model});
  const int tp = count("parallel.tp_size", 1), fsdp = count("parallel.fsdp_size", 1),
            cp = count("parallel.cp_size", 1), ep = count("parallel.ep_size", 1),
            ep_fsdp = count("parallel.ep_fsdp_size", 1);
  const int mbs = count("training.per_device_train_batch_size", 8);  // its dataclass default
  const int accumulation = count("training.gradient_accumulation_steps", 1);
  const int seq = count("data.cutoff_len", 2048);
  words.insert(words.end(), {"--tensor-model-parallel-size", std::to_string(tp), "--context-parallel-size",
                             std::to_string(cp), "--expert-model-parallel-size", std::to_string(ep),
                             "--expert-tensor-parallel-size", "1", "--seq-length", std::to_string(seq),
                             "--micro-batch-size", std::to_string(mbs)});
  if (cp > 1) {
    // ulysses (the default): DeepSpeed-Ulysses' all-to-all; ring: ring attention's p2p; kvallgather
    const std::string type = get("parallel.cp_type").value_or("ulysses");
    words.insert(words.end(), {"--cp-comm-type", type == "ring"          ? "p2p"
                                                 : type == "kvallgather" ? "all_gather"
                                                                         : "a2a"});
  }
  // The parameters are sharded over fsdp_size of the world / tp data- and context-parallel ranks (its
  // examples set fsdp_size to the world with cp 2 or 32), replicated over the rest (HSDP); the batch is split
  // over the world / (tp · cp) data-parallel ranks.
  words.push_back("--use-torch-fsdp2");
  // reshard_after_forward False (its 1.7B examples): the gathered parameters kept from forward to backward
  if (!truth(get("parallel.reshard_after_forward").value_or("True")))
    words.push_back("--torch-fsdp2-no-reshard-after-forward");
  if (world > 0) {
    const std::string fsdp_at =
        origin.count("parallel.fsdp_size") ? origin["parallel.fsdp_size"] : "parallel.fsdp_size";
    if (world % (tp * cp) != 0)
      throw InputError(origin.count("parallel.tp_size") ? origin["parallel.tp_size"] : "parallel.tp_size",
                       "tp " + std::to_string(tp) + " × cp " + std::to_string(cp) +
                           " does not divide the launch's " + std::to_string(world) + " processes");
    if ((world / tp) % fsdp != 0)
      throw InputError(fsdp_at, "fsdp " + std::to_string(fsdp) + " does not divide the launch's " +
                                    std::to_string(world / tp) + " data- and context-parallel ranks (" +
                                    std::to_string(world) + " processes / tp " + std::to_string(tp) + ")");
    int replicas = world / tp / fsdp;
    if (replicas > 1 && ep > 1 && world % ep == 0 && (world / ep) % replicas != 0) {
      // Megatron's instances divide the expert data-parallel group too: not expressible, the states are
      // priced sharded over the whole data-parallel group (memory on the low side), said
      notes.push_back(
          "MindSpeed FSDP2: fsdp_size " + std::to_string(fsdp) + " (HSDP, " + std::to_string(replicas) +
          " replicas) with ep " + std::to_string(ep) +
          ": the states are priced sharded over all data- and context-parallel ranks, fewer bytes a "
          "rank than the run holds");
      replicas = 1;
    }
    if (replicas > 1) {
      // HSDP: states sharded over fsdp_size ranks, replicated over the rest — Megatron's instances
      words.insert(words.end(), {"--num-distributed-optimizer-instances", std::to_string(replicas)});
      notes.push_back("MindSpeed FSDP2: fsdp_size " + std::to_string(fsdp) + " of " +
                      std::to_string(world / tp) +
                      " data- and context-parallel ranks: the states are sharded over " +
                      std::to_string(fsdp) + " and replicated " + std::to_string(replicas) + " times (HSDP)");
    }
    if (ep > 1 && world % (ep * ep_fsdp) != 0)
      throw InputError(origin.count("parallel.ep_size") ? origin["parallel.ep_size"] : "parallel.ep_size",
                       "ep " + std::to_string(ep) + " × ep_fsdp " + std::to_string(ep_fsdp) +
                           " does not divide the launch's " + std::to_string(world) + " processes");
    // experts with ep > 1: sharded over ep_fsdp_size, replicated over the rest (edp); priced as Megatron
    // shards them, over world / (ep · replicas) — said where the two differ
    if (ep > 1 && ep_fsdp != world / (ep * replicas))
      notes.push_back("MindSpeed FSDP2: the expert states are sharded over ep_fsdp_size " +
                      std::to_string(ep_fsdp) + " ranks; priced sharded over " +
                      std::to_string(world / (ep * replicas)) + " (Megatron's expert data-parallel group" +
                      (replicas > 1 ? " over the HSDP replicas" : std::string()) + ")");
    const int dp = world / (tp * cp);
    words.insert(words.end(), {"--global-batch-size", std::to_string(mbs * accumulation * dp)});
  } else if (accumulation > 1) {
    notes.push_back("MindSpeed FSDP2: the launch's size is not known here: gradient_accumulation_steps " +
                    std::to_string(accumulation) + " is left out (one micro batch a step)");
  }
  // Precision: FSDP2's MixedPrecisionPolicy — parameters gathered in param_dtype (bf16), gradients reduced
  // in reduce_dtype (fp32); the sharded parameters and AdamW's states stay fp32.
  const std::string param_dtype = get("parallel.param_dtype").value_or("bf16");
  if (param_dtype == "bf16")
    words.push_back("--bf16");
  else if (param_dtype == "fp16")
    words.push_back("--fp16");
  if (get("parallel.reduce_dtype").value_or("fp32") == "bf16") words.push_back("--grad-reduce-in-bf16");
  if (const auto q = get("model.quant_recipe_name"); q && *q == "mxfp8")
    words.insert(words.end(), {"--fp8-format", "e4m3", "--fp8-recipe", "mxfp8"});
  // Attention: a fused kernel whether or not optimization.use_flash_attn is set — it switches the NPU flash
  // kernel in MindSpeed's own model files; Hugging Face's models run their default sdpa, and context
  // parallelism its ring / Ulysses kernels (model_factory.py).
  words.insert(words.end(), {"--attention-backend", "flash"});
  if (!truth(get("optimization.use_flash_attn").value_or("False")))
    notes.push_back(
        "MindSpeed FSDP2: optimization.use_flash_attn is off: attention priced as a fused kernel "
        "(Hugging Face's sdpa); eager attention would also keep its scores");
  if (const auto o = get("training.optimizer"); o && *o == "muon")
    words.insert(words.end(), {"--optimizer", "muon"});
  // Recompute: the modules named (model.layers.{*}: whole layers, Megatron's full recompute of each layer)
  if (truth(get("parallel.recompute").value_or("False"))) {
    const auto it = lists.find("parallel.recompute_modules");
    const std::vector<std::string> modules =
        it == lists.end() ? std::vector<std::string>{"model.layers.{*}"} : it->second;
    const bool whole_layers = std::any_of(modules.begin(), modules.end(),
                                          [](const std::string& m) { return m.ends_with("layers.{*}"); });
    words.insert(words.end(), {"--recompute-granularity", "full", "--recompute-method", "uniform",
                               "--recompute-num-layers", "1"});
    if (!whole_layers) {
      std::string list;
      for (const std::string& m : modules) list += (list.empty() ? "" : ", ") + m;
      notes.push_back("MindSpeed FSDP2: recompute of " + list +
                      " is priced as the recompute of whole layers");
    }
  }
  if (truth(get("data.packing").value_or("False")) || truth(get("data.neat_packing").value_or("False")))
    notes.push_back("MindSpeed FSDP2: packed samples: each micro batch is priced as cutoff_len " +
                    std::to_string(seq) + " tokens with full causal attention, an upper bound");
  if (truth(get("parallel.enable_chunk_batch").value_or("False")))
    notes.push_back(
        "MindSpeed FSDP2: parallel.enable_chunk_batch (micro batches cut in chunks inside a layer) is "
        "not modelled");
  notes.push_back(
      "MindSpeed FSDP2 (train_fsdp2.py): priced as Megatron's torch FSDP2 run of the model — "
      "parameters, gradients and optimizer states sharded, bf16 compute with fp32 states");
  return words;
}

}  // namespace preflight::analyzer
