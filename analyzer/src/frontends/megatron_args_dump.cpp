// The argument dump of a Megatron log back to the command line that produced it.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include "megatron_flags.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

std::string dashed(std::string name) {
  for (auto& c : name)
    if (c == '_') c = '-';
  return "--" + name;
}

/// `[a, b]`, `['core_attn', 'mlp']`, `(1, 2)` → items without quotes; a plain value → itself.
std::vector<std::string> items(const std::string& v) {
  if (v.size() < 2 || !((v.front() == '[' && v.back() == ']') || (v.front() == '(' && v.back() == ')')))
    return {v};
  std::vector<std::string> out;
  std::string cur;
  for (std::size_t i = 1; i + 1 < v.size(); ++i) {
    const char c = v[i];
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\'' && c != '"' && c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

/// Destinations whose False is a flag of its own (argparse store_false), by the flag.
const std::map<std::string, std::string>& store_false_flags() {
  static const std::map<std::string, std::string> flags = {
      {"add_bias_linear", "--disable-bias-linear"},
      {"add_position_embedding", "--no-position-embedding"},
      {"gradient_accumulation_fusion", "--no-gradient-accumulation-fusion"},
      {"masked_softmax_fusion", "--no-masked-softmax-fusion"},
      {"overlap_p2p_comm", "--no-overlap-p2p-communication"},
      {"bias_gelu_fusion", "--no-bias-gelu-fusion"},
      {"bias_dropout_fusion", "--no-bias-dropout-fusion"},
      {"bias_swiglu_fusion", "--no-bias-swiglu-fusion"},
      {"apply_rope_fusion", "--no-rope-fusion"},
      {"persist_layer_norm", "--no-persist-layer-norm"},
      {"async_tensor_model_parallel_allreduce", "--no-async-tensor-model-parallel-allreduce"},
      // TransformerEngine's userbuffers overlaps, on by default with --tp-comm-overlap
      {"tp_comm_overlap_ag", "--disable-tp-comm-overlap-ag"},
      {"tp_comm_overlap_rs", "--disable-tp-comm-overlap-rs"},
      {"tp_comm_bulk_dgrad", "--disable-tp-comm-bulk-dgrad"},
      {"tp_comm_bulk_wgrad", "--disable-tp-comm-bulk-wgrad"},
      {"tp_comm_split_ag", "--disable-tp-comm-split-ag"},
      {"tp_comm_split_rs", "--disable-tp-comm-split-rs"},
  };
  return flags;
}

/// Destinations whose 0 is Megatron's default and means the feature is off (T5's sentinel tokens, the
/// encoder's own parallel sizes of an encoder-decoder model): dropped when 0, as they change nothing.
const std::set<std::string>& off_when_zero() {
  static const std::set<std::string> dests = {"vocab_extra_ids", "encoder_pipeline_model_parallel_size",
                                              "encoder_tensor_model_parallel_size"};
  return dests;
}

}  // namespace

namespace megatron {

void append_destinations_as_flags(const std::map<std::string, std::string>& dests,
                                  const std::set<std::string>& skip,
                                  const std::map<std::string, std::string>& renamed,
                                  std::vector<std::string>& words) {
  const auto& store_false = store_false_flags();
  for (const auto& [raw_name, value] : dests) {
    if (skip.count(raw_name) || value == "None" || value.empty()) continue;
    if (off_when_zero().count(raw_name) && (value == "0" || value == "0.0")) continue;
    // argparse destinations named otherwise than their flags (training/arguments.py `dest=`): --fp8-format
    // is `fp8`, --fp4-format `fp4`, --output-logit-dtype `logit_dtype`, --use-nccl-ub `nccl_ub`.
    static const std::map<std::string, std::string> dest_of_flag = {{"fp8", "fp8_format"},
                                                                    {"fp4", "fp4_format"},
                                                                    {"logit_dtype", "output_logit_dtype"},
                                                                    {"nccl_ub", "use_nccl_ub"}};
    const auto rn = renamed.find(raw_name);
    const auto df = dest_of_flag.find(raw_name);
    const std::string name = rn != renamed.end()        ? rn->second
                             : df != dest_of_flag.end() ? df->second
                                                        : raw_name;
    if (auto sf = store_false.find(name); sf != store_false.end()) {
      if (value == "False") words.push_back(sf->second);
      continue;
    }
    if (value == "True") {
      words.push_back(dashed(name));
    } else if (value != "False") {
      std::vector<std::string> v = items(value);
      if (std::all_of(v.begin(), v.end(), [](const std::string& x) { return x == "None"; })) continue;
      words.push_back(dashed(name));
      for (auto& x : v) {
        if (auto dot = x.find('.');
            dot != std::string::npos && dot > 0 && std::isupper(static_cast<unsigned char>(x[0])) &&
            std::all_of(x.begin(), x.begin() + static_cast<long>(dot),
                        [](char c) { return std::isalpha(static_cast<unsigned char>(c)); }))
          x = x.substr(dot + 1);
        words.push_back(x);
      }
    }
  }
}

std::string yaml_dest_value(const YAML::Node& n, const std::string& key, const std::string& file) {
  if (n.IsNull()) return "None";
  if (n.IsSequence()) {
    std::string out = "[";
    for (std::size_t i = 0; i < n.size(); ++i) {
      if (!n[i].IsScalar())
        throw InputError(file + ":" + std::to_string(n.Mark().line + 1), key + ": a list of lists");
      out += (i ? ", " : "") + n[i].Scalar();
    }
    return out + "]";
  }
  if (!n.IsScalar()) return "";
  const std::string v = n.Scalar();
  if (n.Tag() != "!" && (v == "true" || v == "True" || v == "TRUE")) return "True";
  if (n.Tag() != "!" && (v == "false" || v == "False" || v == "FALSE")) return "False";
  if (v == "null" || v == "~" || v == "None") return "None";
  return v;
}

}  // namespace megatron

using megatron::append_destinations_as_flags;

std::vector<std::string> megatron_words_from_args_dump(const std::map<std::string, std::string>& args,
                                                      const std::string& source) {
  auto get = [&](const char* k) -> std::string {
    auto it = args.find(k);
    return it == args.end() ? std::string() : it->second;
  };
  if (args.empty())
    throw InputError(source, "no argument dump (`---- arguments ----` block): the run's settings are unknown; "
                             "log with Megatron's default verbosity (rank 0 prints it at start-up)");
  const std::string world = get("world_size");
  if (world.empty() || world == "None")
    throw InputError(source, "the argument dump has no world_size");
  int w = 0;
  try {
    w = std::stoi(world);
  } catch (const std::exception&) {
    throw InputError(source, "world_size '" + world + "' is not a number");
  }
  std::vector<std::string> words;
  const int per_node = w % 8 == 0 ? 8 : w;
  words.insert(words.end(), {"--nproc_per_node", std::to_string(per_node), "--nnodes", std::to_string(w / per_node)});

  // Not passed: the vocabulary (given exactly below), files, and run bookkeeping.
  static const std::set<std::string> skip = {"vocab_size", "padded_vocab_size", "vocab_file", "merge_file",
                                             "tokenizer_type", "tokenizer_model", "world_size", "rank",
                                             "local_rank", "data_path", "save", "load", "megatron_version"};
  append_destinations_as_flags(args, skip, {}, words);
  const std::string padded = get("padded_vocab_size");
  if (!padded.empty() && padded != "None") {
    words.insert(words.end(), {"--vocab-size", padded, "--make-vocab-size-divisible-by", "1"});
  } else {
    for (const char* k : {"vocab_size", "vocab_file", "tokenizer_type", "tokenizer_model"})
      if (!get(k).empty() && get(k) != "None") words.insert(words.end(), {dashed(k), get(k)});
  }
  // The model code: legacy `megatron/model` unless the dump says Megatron-core (`use_mcore_models`, opt-in
  // from 2023-12; `use_legacy_models`, the switch back once core became the default in 2024-05).
  if ((get("use_legacy_models").empty() && get("use_mcore_models") != "True") || get("use_legacy_models") == "True")
    if (get("use_legacy_models") != "True") words.push_back("--use-legacy-models");
  if (get("overlap_p2p_comm") == "True") words.push_back("--overlap-p2p-communication");
  // A checkout without the key predates the overlapped interleaved p2p (2023): blocking.
  if (get("overlap_p2p_comm").empty()) words.push_back("--no-overlap-p2p-communication");
  // The checkout's age where memory behaviour changed: `cross_entropy_loss_fusion` arrived on 2024-06-14, a
  // day after the in-place cross entropy (Strategy::megatron_version).
  if (get("cross_entropy_loss_fusion").empty() && !args.count("megatron_version"))
    words.insert(words.end(), {"--megatron-version", "2024-06-12"});
  // Before --attention-backend (2024) a run without flash attention used the math path.
  if (get("attention_backend").empty() && get("use_flash_attn") != "True")
    words.insert(words.end(), {"--attention-backend", "unfused"});
  return words;
}

std::vector<std::string> megatron_words_from_yaml_cfg(const std::string& path,
                                                      std::vector<std::string>& notes) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw InputError("--yaml-cfg", "cannot read '" + path + "'");
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1), "malformed YAML: " + e.msg);
  }
  if (!root.IsMap()) throw InputError(path, "not a Megatron YAML config (a mapping of argument names)");
  // The namespace Megatron builds (training/yaml_arguments.py): the top level's keys, then model_parallel's,
  // then language_model's (the TransformerConfig fields), each a destination as in an argument dump.
  std::map<std::string, std::string> dests;
  std::vector<std::string> skipped_sections;
  auto take = [&](const YAML::Node& map) {
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (kv.second.IsMap()) {
        if (key != "language_model" && key != "model_parallel") skipped_sections.push_back(key);
        continue;
      }
      const std::string v = megatron::yaml_dest_value(kv.second, key, path);
      if (!v.empty()) dests[key] = v;
    }
  };
  take(root);
  for (const char* section : {"model_parallel", "language_model"})
    if (root[section] && root[section].IsMap()) take(root[section]);
  if (!root["language_model"] || !root["language_model"].IsMap())
    throw InputError(path,
                     "no language_model: section (Megatron's YAML config puts the TransformerConfig "
                     "fields there: num_layers, hidden_size, num_attention_heads, …)");
  auto get = [&](const char* k) -> std::string {
    auto it = dests.find(k);
    return it == dests.end() ? std::string() : it->second;
  };
  // TransformerConfig's names where the command line's differ, and its activation by name
  // (core_transformer_config_from_yaml: swiglu | squaredrelu | gelu).
  static const std::map<std::string, std::string> renamed = {{"layernorm_epsilon", "norm_epsilon"},
                                                             {"num_moe_experts", "num_experts"}};
  static const std::set<std::string> skip = {"world_size",
                                             "rank",
                                             "local_rank",
                                             "data_path",
                                             "save",
                                             "load",
                                             "yaml_cfg",
                                             "activation_func",
                                             "gated_linear_unit",
                                             "params_dtype",
                                             "pipeline_dtype",
                                             "autocast_dtype",
                                             "timers",
                                             "spec",
                                             "init_method",
                                             "output_layer_init_method",
                                             "finalize_model_grads_func",
                                             "grad_scale_func",
                                             "no_sync_func",
                                             "grad_sync_func",
                                             "param_sync_func",
                                             "_cpu_offloading_context",
                                             "bias_activation_fusion",
                                             "perform_initialization",
                                             "barrier_with_L1_time",
                                             "batch_p2p_comm",
                                             "batch_p2p_sync",
                                             "bert_binary_head",
                                             "tp_comm_split_ag",
                                             "tp_comm_atomic_ag",
                                             "tp_comm_split_rs",
                                             "tp_comm_atomic_rs",
                                             "tp_comm_bulk_wgrad",
                                             "tp_comm_bulk_dgrad",
                                             "clone_scatter_output_in_embedding",
                                             "check_for_nan_in_loss_and_grad",
                                             "deallocate_pipeline_outputs",
                                             "fp8_wgrad",
                                             "variable_seq_lengths",
                                             "enable_autocast",
                                             "data_parallel_random_init",
                                             "exit_signal_handler",
                                             "use_checkpoint_opt_param_scheduler",
                                             "override_opt_param_scheduler",
                                             "cpu_offloading_activations"};
  std::vector<std::string> words;
  append_destinations_as_flags(dests, skip, renamed, words);
  const std::string act = get("activation_func");
  if (act == "swiglu") {
    words.push_back("--swiglu");
  } else if (act == "squaredrelu") {
    words.push_back("--squared-relu");
  } else if (!act.empty() && act != "gelu" && act != "None") {
    throw InputError(path, "language_model.activation_func '" + act +
                               "': Megatron's YAML config takes swiglu, squaredrelu or gelu");
  }
  // The local implementation's attention is the unfused (math) path.
  if (get("transformer_impl") == "local" && get("attention_backend").empty())
    words.insert(words.end(), {"--attention-backend", "unfused"});
  if (!skipped_sections.empty()) {
    std::string list;
    for (const auto& k : skipped_sections) list += (list.empty() ? "" : ", ") + k;
    notes.push_back("--yaml-cfg " + path +
                    ": sections other than language_model and model_parallel are not "
                    "read (" +
                    list + ")");
  }
  return words;
}

}  // namespace preflight::analyzer
