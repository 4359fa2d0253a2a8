// Megatron-Bridge's ConfigContainer YAML → Megatron-LM arguments (bridge_config.hpp).
#include "preflight/analyzer/frontends/bridge_config.hpp"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "config_section.hpp"
#include "preflight/analyzer/frontends/nemo2_config.hpp"
#include "preflight/analyzer/frontends/nemo_config.hpp"
#include "preflight/analyzer/frontends/presets.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {
namespace {

using detail::apply_override;
using detail::enum_member_name;
using detail::int_flag;
using detail::is_enum_member;
using detail::num_flag;
using detail::Section;

/// A Hydra-style override `section.field=value` of a ConfigContainer (apply_override over its sections —
/// megatron/bridge/training/config.py ConfigContainer's fields, those the analysis leaves out included: they
/// change neither memory nor time); false for a word that is none (a flag, an environment assignment).
/// @throws InputError (where = "override WORD") for a dotted key outside the container, as Bridge's override
///   parser refuses it (a misspelt section would otherwise be dropped silently), and as apply_override does
bool apply_container_override(YAML::Node& root, const std::string& word, const std::string& source) {
  static const std::set<std::string> sections = {"model",
                                                 "train",
                                                 "ddp",
                                                 "optimizer",
                                                 "dataset",
                                                 "tokenizer",
                                                 "scheduler",
                                                 "peft",
                                                 "checkpoint",
                                                 "logger",
                                                 "rng",
                                                 "dist",
                                                 "profiling",
                                                 "validation",
                                                 "comm_overlap",
                                                 "mixed_precision",
                                                 "rerun_state_machine",
                                                 "env_vars",
                                                 "ft",
                                                 "straggler",
                                                 "nvrx_straggler",
                                                 "tensor_inspect",
                                                 "inprocess_restart",
                                                 "optimizer_config_override_provider"};
  if (apply_override(root, word, source, sections)) return true;
  std::string key;
  if (word.rfind("-", 0) != 0 && RE2::FullMatch(word, R"(\+?([A-Za-z_]\w*)\.[A-Za-z_][\w.]*=.*)", &key))
    throw InputError("override " + word,
                     source + ": '" + key +
                         "' is not a section of Megatron-Bridge's ConfigContainer (model, "
                         "train, dataset, optimizer, ddp, mixed_precision, comm_overlap, …)");
  return false;
}

/// The YAML of a Megatron-Bridge log (the block after `------- Task Configuration -------`), or the text
/// itself; `first_line` the 1-based line of the log it starts at.
std::string yaml_block(const std::string& text, const std::string& source, int& first_line) {
  static const std::regex header(R"(^\s*-{3,}\s*Task Configuration\s*-{3,}\s*$)");
  static const std::regex rule(R"(^\s*-{10,}\s*$)");
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool inside = false, found = false;
  std::string block;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!inside) {
      if (std::regex_match(line, header)) {
        inside = found = true;
        first_line = n + 1;
        block.clear();
      }
      continue;
    }
    if (std::regex_match(line, rule)) {
      inside = false;
      break;  // the first configuration printed is the run's
    }
    block += line + "\n";
  }
  if (!found) {
    first_line = 1;
    return text;
  }
  if (inside)
    throw InputError(location(source, n),
                     "the log's Task Configuration block has no closing line of dashes: truncated log");
  return block;
}

/// Megatron's `--pipeline-model-parallel-layout` string from the field: the string itself, or the stages as
/// Bridge serialises a PipelineParallelLayerLayout (its input_data: a list of stages, each a list of layer
/// types — "E" / "embedding", "t" / "decoder", "m" / "mtp", "L" / "loss", or LayerType members by ordinal,
/// megatron/core/transformer/enums.py), joined as `Et|tt|…|mL`.
std::string layout_text(const Section& model) {
  const YAML::Node l = model.node()["pipeline_model_parallel_layout"];
  if (l.IsScalar()) return l.Scalar();
  const std::string field = model.field("pipeline_model_parallel_layout");
  if (!l.IsSequence()) throw InputError(field, "must be a layout string or a list of stages");
  static const std::map<std::string, char> symbol = {{"E", 'E'},    {"embedding", 'E'}, {"L", 'L'},
                                                     {"loss", 'L'}, {"t", 't'},         {"decoder", 't'},
                                                     {"m", 'm'},    {"mtp", 'm'}};
  std::string text;
  for (std::size_t i = 0; i < l.size(); ++i) {
    if (!l[i].IsSequence())
      throw InputError(field, "stage " + std::to_string(i) + " is not a list of layers");
    if (i) text += '|';
    for (const auto& layer : l[i]) {
      const std::string name = layer.IsScalar()        ? layer.Scalar()
                               : is_enum_member(layer) ? enum_member_name(layer)
                                                       : "";
      auto it = symbol.find(name);
      if (it == symbol.end())
        throw InputError(field,
                         "stage " + std::to_string(i) + ": '" + name + "' is not a layer type (E, t, m, L)");
      text += it->second;
    }
  }
  return text;
}

/// The mixed-precision recipe names of megatron/bridge/training/mixed_precision.py, as fp8 / fp4 settings.
struct PrecisionRecipe {
  const char* name;
  bool fp16;
  const char* fp8;         // --fp8-format, or nullptr
  const char* fp8_recipe;  // --fp8-recipe
  bool fp8_param_gather;
  const char* fp4;  // --fp4-format, or nullptr
};
constexpr PrecisionRecipe kRecipes[] = {
    {"bf16_mixed", false, nullptr, nullptr, false, nullptr},
    {"fp16_mixed", true, nullptr, nullptr, false, nullptr},
    {"bf16_with_fp8_delayed_scaling_mixed", false, "hybrid", "delayed", true, nullptr},
    {"fp16_with_fp8_delayed_scaling_mixed", true, "hybrid", "delayed", true, nullptr},
    {"bf16_with_fp8_current_scaling_mixed", false, "hybrid", "tensorwise", true, nullptr},
    {"fp16_with_fp8_current_scaling_mixed", true, "hybrid", "tensorwise", true, nullptr},
    {"bf16_with_mxfp8_mixed", false, "e4m3", "mxfp8", true, nullptr},
    {"fp16_with_mxfp8_mixed", true, "e4m3", "mxfp8", true, nullptr},
    {"bf16_with_fp8_subchannel_scaling_mixed", false, "e4m3", "blockwise", false, nullptr},
    {"fp16_with_fp8_subchannel_scaling_mixed", true, "e4m3", "blockwise", false, nullptr},
    {"bf16_with_nvfp4_mixed", false, nullptr, nullptr, false, "e2m1"},
};

}  // namespace

BridgeConfigArgs bridge_config_text_to_megatron_args(const std::string& text, const std::string& source,
                                                     const std::vector<std::string>& extra) {
  // A NeMo 1 training configuration (megatron_gpt_config.yaml, hparams.yaml, a log printing one) rather than
  // a ConfigContainer.
  if (is_nemo1_config(text)) return nemo_config_text_to_megatron_args(text, source, extra);
  int first_line = 1;
  const std::string yaml = yaml_block(text, source, first_line);
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw InputError(e.mark.line >= 0 ? location(source, first_line + e.mark.line) : source,
                     "malformed yaml: " + e.msg);
  }
  // A NeMo 2 configuration (NeMo-Run's YAML of llm.pretrain / llm.finetune, a checkpoint's
  // context/model.yaml): classes by name, with only the arguments given written.
  if (is_nemo2_config(root)) return nemo2_config_to_megatron_args(root, source, extra);
  if (!root.IsMap() || !root["model"] || !root["model"].IsMap())
    throw InputError(
        source,
        "not a Megatron-Bridge run configuration: no `model` section (a ConfigContainer "
        "YAML: run_config.yaml, logger.save_config_filepath, or a log's Task Configuration), nor a "
        "NeMo 1 training configuration (a `model` section beside `trainer`), nor a NeMo 2 one (a model "
        "`_target_` of nemo.collections.llm)");
  std::vector<std::string> passed_on;
  for (const auto& w : extra)
    if (!apply_container_override(root, w, source)) passed_on.push_back(w);
  return detail::bridge_root_to_megatron_args(root, source, passed_on);
}

namespace detail {

BridgeConfigArgs bridge_root_to_megatron_args(const YAML::Node& root, const std::string& source,
                                              const std::vector<std::string>& passed_on) {
  BridgeConfigArgs out;
  auto& a = out.args;
  auto put = [&](const std::string& flag) { a.push_back(flag); };
  auto put_value = [&](const std::string& flag, const std::string& v) {
    a.push_back(flag);
    a.push_back(v);
  };
  out.source = source;
  // The required sizes' fields, named even when the file lacks them; the rest as they are written below.
  out.field_of_flag = {{"--num-layers", "model.num_layers"},
                       {"--hidden-size", "model.hidden_size"},
                       {"--num-attention-heads", "model.num_attention_heads"},
                       {"--seq-length", "dataset.sequence_length"},
                       {"--vocab-size", "model.vocab_size"},
                       {"--micro-batch-size", "train.micro_batch_size"},
                       {"--global-batch-size", "train.global_batch_size"}};
  const Section model(root["model"], source, "model");
  out.override_file = !(root["model"] && root["model"].IsMap() && root["model"]["_target_"]);
  const Section train(root["train"], source, "train");
  const Section ddp(root["ddp"], source, "ddp");
  const Section opt(root["optimizer"], source, "optimizer");
  const Section data(root["dataset"], source, "dataset");
  const Section overlap(root["comm_overlap"], source, "comm_overlap");

  auto bool_flag = [&](const Section& s, const std::string& key, const std::string& flag) {
    if (s.flag(key)) put(flag);
  };
  // Tables of fields that map one to one onto a flag: whole numbers, and switches.
  using Fields = std::initializer_list<std::pair<const char*, const char*>>;
  auto int_flags = [&](const Section& s, Fields fields) {
    for (const auto& [key, flag] : fields) int_flag(out, s, key, flag);
  };
  auto bool_flags = [&](const Section& s, Fields fields) {
    for (const auto& [key, flag] : fields) bool_flag(s, key, flag);
  };

  // --- Architecture ---------------------------------------------------------------------------------------
  const auto pattern = model.set("hybrid_layer_pattern") ? model.text("hybrid_layer_pattern")
                                                         : model.text("hybrid_override_pattern");
  if (pattern) {
    put_value("--hybrid-layer-pattern", *pattern);
  } else {
    int_flag(out, model, "num_layers", "--num-layers");
  }
  int_flags(model, {{"hidden_size", "--hidden-size"},
                    {"ffn_hidden_size", "--ffn-hidden-size"},
                    {"num_attention_heads", "--num-attention-heads"},
                    {"kv_channels", "--kv-channels"}});
  if (auto g = model.integer("num_query_groups")) {
    if (*g != model.integer("num_attention_heads").value_or(-1)) {
      put("--group-query-attention");
      put_value("--num-query-groups", std::to_string(*g));
    }
  }
  if (auto n = model.text("normalization")) put_value("--normalization", *n);
  num_flag(out, model, "layernorm_epsilon", "--norm-epsilon");
  const bool gated = model.flag("gated_linear_unit");
  const std::string act = model.target("activation_func").value_or("torch.nn.functional.gelu");
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with(act, "squared_relu")) {
    put("--squared-relu");
    if (gated)
      out.warnings.push_back(model.field("activation_func") + ": a gated squared ReLU is priced ungated");
  } else if (ends_with(act, "silu")) {
    if (gated)
      put("--swiglu");
    else
      out.warnings.push_back(model.field("activation_func") + ": an ungated SiLU MLP is priced as GELU's");
  } else if (ends_with(act, "quick_gelu")) {
    if (gated) put("--quick-geglu");
  } else if (!ends_with(act, "gelu")) {
    out.warnings.push_back(model.field("activation_func") + ": '" + act + "' is priced as " +
                           (gated ? "SwiGLU" : "GELU"));
    if (gated) put("--swiglu");
  } else if (gated) {
    out.warnings.push_back(model.field("activation_func") + ": a gated GELU is priced as SwiGLU");
    put("--swiglu");
  }
  if (model.boolean("add_bias_linear") == false) put("--disable-bias-linear");
  bool_flag(model, "add_qkv_bias", "--add-qkv-bias");
  bool_flag(model, "qk_layernorm", "--qk-layernorm");
  if (auto p = model.text("position_embedding_type")) {
    put_value("--position-embedding-type", *p);
  }
  num_flag(out, model, "rotary_base", "--rotary-base");
  num_flag(out, model, "rotary_percent", "--rotary-percent");
  if (model.boolean("share_embeddings_and_output_weights") == false)
    put("--untie-embeddings-and-output-weights");
  int_flag(out, model, "vocab_size", "--vocab-size");
  if (model.boolean("should_pad_vocab") == false)
    put_value("--make-vocab-size-divisible-by", "1");
  else
    int_flag(out, model, "make_vocab_size_divisible_by", "--make-vocab-size-divisible-by");
  // The training sequence: the dataset's (the model's seq_length is its context).
  std::optional<long long> seq = data.integer("sequence_length");
  if (!seq) seq = data.integer("seq_length");
  const std::optional<long long> context = model.integer("seq_length");
  if (!seq) seq = context;
  if (seq) put_value("--seq-length", std::to_string(*seq));
  if (!data.set("sequence_length") && !data.set("seq_length") && context)
    out.field_of_flag["--seq-length"] = "model.seq_length";
  if (seq || context)
    put_value("--max-position-embeddings", std::to_string(std::max(seq.value_or(0), context.value_or(0))));
  num_flag(out, model, "attention_dropout", "--attention-dropout");
  num_flag(out, model, "hidden_dropout", "--hidden-dropout");
  if (auto w = model.node()["window_size"]; w && w.IsSequence() && w.size() == 2) {
    put_value("--window-size", "(" + w[0].Scalar() + "," + w[1].Scalar() + ")");
    if (auto f = model.int_or_list("window_attn_skip_freq")) put_value("--window-attn-skip-freq", *f);
  }
  // Multi-latent attention.
  if (model.flag("multi_latent_attention")) {
    put("--multi-latent-attention");
    int_flags(model, {{"q_lora_rank", "--q-lora-rank"},
                      {"kv_lora_rank", "--kv-lora-rank"},
                      {"qk_head_dim", "--qk-head-dim"},
                      {"qk_pos_emb_head_dim", "--qk-pos-emb-head-dim"},
                      {"v_head_dim", "--v-head-dim"}});
  }
  // Mamba (hybrid models).
  int_flag(out, model, "mamba_num_heads", "--mamba-num-heads");
  if (pattern)
    int_flags(model, {{"mamba_head_dim", "--mamba-head-dim"},
                      {"mamba_state_dim", "--mamba-state-dim"},
                      {"mamba_num_groups", "--mamba-num-groups"}});
  // Mixture of experts.  A model read from a Hugging Face repository (a recipe's AutoBridge) has its experts
  // there: the recipe's MoE fields (dispatcher, grouped GEMM, overlaps, …) are carried without the count.
  const auto experts = model.integer("num_moe_experts");
  const bool hf_model = root["model"] && root["model"].IsMap() && root["model"]["_target_"] &&
                        root["model"]["_target_"].IsScalar() &&
                        root["model"]["_target_"].Scalar().starts_with("megatron.bridge.AutoBridge(");
  if ((experts && *experts > 0) || (hf_model && !experts)) {
    if (experts) put_value("--num-experts", std::to_string(*experts));
    int_flags(model, {{"moe_router_topk", "--moe-router-topk"},
                      {"moe_ffn_hidden_size", "--moe-ffn-hidden-size"},
                      {"moe_shared_expert_intermediate_size", "--moe-shared-expert-intermediate-size"},
                      {"moe_latent_size", "--moe-latent-size"},
                      {"moe_hybridep_num_sms", "--moe-hybridep-num-sms"},
                      {"moe_router_num_groups", "--moe-router-num-groups"},
                      {"moe_router_group_topk", "--moe-router-group-topk"}});
    if (auto f = model.int_or_list("moe_layer_freq")) put_value("--moe-layer-freq", *f);
    const std::string dispatcher = model.text("moe_token_dispatcher_type")
                                       .value_or(experts ? "allgather" : "");  // (the repo's: Megatron's)
    if (!dispatcher.empty()) put_value("--moe-token-dispatcher-type", dispatcher);
    if (dispatcher == "flex")
      if (auto b = model.text("moe_flex_dispatcher_backend")) put_value("--moe-flex-dispatcher-backend", *b);
    num_flag(out, model, "moe_expert_capacity_factor", "--moe-expert-capacity-factor");
    // Bridge's model bridges (megatron/bridge/models/*/…_bridge.py provider_bridge) build their MoE providers
    // with grouped GEMMs (moe_grouped_gemm=True in 25 of them): a recipe on a Hugging Face model that does
    // not say otherwise has them.
    if (hf_model && !model.set("moe_grouped_gemm")) put("--moe-grouped-gemm");
    bool_flags(model, {{"moe_grouped_gemm", "--moe-grouped-gemm"},
                       {"moe_router_force_load_balancing", "--moe-router-force-load-balancing"},
                       {"moe_pad_expert_input_to_capacity", "--moe-pad-expert-input-to-capacity"},
                       {"moe_permute_fusion", "--moe-permute-fusion"},
                       {"moe_router_fusion", "--moe-router-fusion"},
                       {"moe_shared_expert_overlap", "--moe-shared-expert-overlap"},
                       {"moe_router_enable_expert_bias", "--moe-router-enable-expert-bias"}});
    if (auto f = model.text("moe_router_score_function")) put_value("--moe-router-score-function", *f);
  }
  // Linear attention (Qwen3-Next's gated delta net, …) and gated attention.
  if (auto v = model.text("experimental_attention_variant"))
    put_value("--experimental-attention-variant", *v);
  if (auto f = model.int_or_list("linear_attention_freq")) put_value("--linear-attention-freq", *f);
  if (auto t = model.text("linear_attention_type")) put_value("--linear-attention-type", *t);
  int_flags(model, {{"linear_conv_kernel_dim", "--linear-conv-kernel-dim"},
                    {"linear_key_head_dim", "--linear-key-head-dim"},
                    {"linear_value_head_dim", "--linear-value-head-dim"},
                    {"linear_num_key_heads", "--linear-num-key-heads"},
                    {"linear_num_value_heads", "--linear-num-value-heads"}});
  bool_flags(model, {{"attention_output_gate", "--attention-output-gate"},
                     {"moe_shared_expert_gate", "--moe-shared-expert-gate"},
                     {"moe_router_padding_for_fp8", "--moe-router-padding-for-fp8"},
                     {"moe_router_padding_for_quantization", "--moe-router-padding-for-quantization"},
                     {"use_transformer_engine_op_fuser", "--use-transformer-engine-op-fuser"},
                     {"moe_paged_stash", "--moe-paged-stash"},
                     {"fp32_residual_connection", "--fp32-residual-connection"},
                     {"distribute_saved_activations", "--distribute-saved-activations"}});
  if (model.flag("cpu_offloading")) {
    put("--cpu-offloading");
    int_flag(out, model, "cpu_offloading_num_layers", "--cpu-offloading-num-layers");
    bool_flag(model, "cpu_offloading_weights", "--cpu-offloading-weights");
  }
  // Multi-token prediction.
  if (auto d = model.integer("mtp_num_layers"); d && *d > 0) {
    put_value("--mtp-num-layers", std::to_string(*d));
    bool_flag(model, "mtp_use_repeated_layer", "--mtp-use-repeated-layer");
    if (auto p = model.text("mtp_hybrid_override_pattern")) put_value("--mtp-hybrid-override-pattern", *p);
  }
  if (auto impl = model.text("transformer_impl")) put_value("--transformer-impl", *impl);
  if (auto backend = model.enum_value("attention_backend")) {
    static const std::set<std::string> backends = {"flash", "fused", "unfused", "local", "auto"};
    if (!backends.count(*backend))
      throw InputError(model.field("attention_backend"),
                       "is not one of Megatron's AttnBackend values: '" + *backend + "'");
    put_value("--attention-backend", *backend);
  }
  bool_flag(model, "cross_entropy_loss_fusion", "--cross-entropy-loss-fusion");
  if (model.flag("cross_entropy_loss_fusion"))
    if (auto impl = model.text("cross_entropy_fusion_impl")) put_value("--cross-entropy-fusion-impl", *impl);
  for (const char* unpriced : {"heterogeneous_block_specs", "use_kitchen"})
    if (model.flag(unpriced)) out.warnings.push_back(model.field(unpriced) + ": not priced");

  // --- Parallel layout ------------------------------------------------------------------------------------
  int_flags(model, {{"tensor_model_parallel_size", "--tensor-model-parallel-size"},
                    {"pipeline_model_parallel_size", "--pipeline-model-parallel-size"},
                    {"context_parallel_size", "--context-parallel-size"},
                    {"expert_model_parallel_size", "--expert-model-parallel-size"},
                    {"expert_tensor_parallel_size", "--expert-tensor-parallel-size"}});
  const std::optional<std::string> layout =
      model.set("pipeline_model_parallel_layout") ? std::optional(layout_text(model)) : std::nullopt;
  if (auto v = model.integer("virtual_pipeline_model_parallel_size"); v && *v > 1) {
    // With a layout Megatron Core takes the virtual stages from it (TransformerConfig); a recipe may give
    // both (Bridge's DeepSeek-V3 ones: 16 stages at pp 4, vp 4), which Megatron-LM's command line refuses.
    const auto pp = model.integer("pipeline_model_parallel_size").value_or(1);
    const long stages = layout ? 1 + std::count(layout->begin(), layout->end(), '|') : 0;
    if (!layout)
      put_value("--num-virtual-stages-per-pipeline-rank", std::to_string(*v));
    else if (layout->find('*') == std::string::npos && stages != *v * pp)
      throw InputError(model.field("virtual_pipeline_model_parallel_size"),
                       std::to_string(*v) + " virtual stages × pipeline_model_parallel_size " +
                           std::to_string(pp) + " is not the " + std::to_string(stages) +
                           " stages of pipeline_model_parallel_layout");
  }
  bool_flag(model, "sequence_parallel", "--sequence-parallel");
  if (layout) {
    put_value("--pipeline-model-parallel-layout", *layout);
    out.field_of_flag["--pipeline-model-parallel-layout"] = "model.pipeline_model_parallel_layout";
  }
  bool_flag(model, "account_for_embedding_in_pipeline_split", "--account-for-embedding-in-pipeline-split");
  bool_flag(model, "account_for_loss_in_pipeline_split", "--account-for-loss-in-pipeline-split");
  int_flag(out, model, "num_layers_in_first_pipeline_stage", "--decoder-first-pipeline-num-layers");
  int_flag(out, model, "num_layers_in_last_pipeline_stage", "--decoder-last-pipeline-num-layers");
  if (auto c = model.text("cp_comm_type")) put_value("--cp-comm-type", *c);
  if (model.boolean("overlap_p2p_comm") == false &&
      model.integer("virtual_pipeline_model_parallel_size").value_or(1) > 1)
    put("--no-overlap-p2p-communication");
  int_flag(out, model, "microbatch_group_size_per_vp_stage",
           "--microbatch-group-size-per-virtual-pipeline-stage");
  // The output layer's deferred weight gradients: the model's field, or CommOverlapConfig's, which Bridge's
  // setup copies onto the model.
  if ((model.flag("defer_embedding_wgrad_compute") || overlap.flag("defer_embedding_wgrad_compute")) &&
      model.integer("pipeline_model_parallel_size").value_or(1) > 1) {  // Bridge sets it with pp only
    put("--defer-embedding-wgrad-compute");
    const Section& from = overlap.set("wgrad_deferral_limit") ? overlap : model;
    int_flag(out, from, "wgrad_deferral_limit", "--wgrad-deferral-limit");
  }

  // --- Recompute, offloading, CUDA graphs -----------------------------------------------------------------
  // Selective recompute of an empty module list recomputes nothing (TransformerConfig takes the list as
  // given; only None means its default, core_attn).
  const bool nothing_recomputed = model.text("recompute_granularity") == "selective" &&
                                  model.set("recompute_modules") &&
                                  model.strings("recompute_modules").empty();
  if (auto g = model.text("recompute_granularity"); g && !nothing_recomputed) {
    put_value("--recompute-granularity", *g);
    if (*g == "full") {
      if (auto m = model.text("recompute_method")) put_value("--recompute-method", *m);
      int_flag(out, model, "recompute_num_layers", "--recompute-num-layers");
    } else if (*g == "selective") {
      const auto modules = model.strings("recompute_modules");
      if (!modules.empty()) {
        put("--recompute-modules");
        for (const auto& m : modules) put(m);
      }
    }
  }
  if (model.flag("fine_grained_activation_offloading")) {
    put("--fine-grained-activation-offloading");
    const auto modules = model.strings("offload_modules");
    if (!modules.empty()) {
      put("--offload-modules");
      for (const auto& m : modules) put(m);
    }
  }
  if (auto impl = model.text("cuda_graph_impl"); impl && *impl != "none") {
    put_value("--cuda-graph-impl", *impl);
    // Megatron's current field is cuda_graph_modules (CudaGraphModule members); cuda_graph_scope before.
    const auto scope = model.set("cuda_graph_modules") ? model.strings("cuda_graph_modules")
                                                       : model.strings("cuda_graph_scope");
    if (!scope.empty() && !(scope.size() == 1 && scope[0] == "full")) {
      put("--cuda-graph-scope");
      for (const auto& s : scope) put(s);
    }
  }
  bool_flag(model, "delay_wgrad_compute", "--delay-wgrad-compute");
  const bool ep_overlap =
      model.flag("overlap_moe_expert_parallel_comm") || overlap.flag("overlap_moe_expert_parallel_comm");
  if (ep_overlap) put("--overlap-moe-expert-parallel-comm");
  if (!model.flag("delay_wgrad_compute") && overlap.flag("delay_wgrad_compute")) put("--delay-wgrad-compute");
  // CommOverlapConfig's TP overlap is turned off by Bridge's setup without tp ≥ 2 and sequence parallelism
  // (megatron/bridge/training/comm_overlap.py), as NeMo's callback does; the model's own field is what setup
  // left.
  const bool tp_overlap_possible =
      model.integer("tensor_model_parallel_size").value_or(1) >= 2 && model.flag("sequence_parallel");
  if (model.flag("tp_comm_overlap") || (overlap.flag("tp_comm_overlap") && tp_overlap_possible))
    put("--tp-comm-overlap");
  else if (overlap.flag("tp_comm_overlap"))
    out.warnings.push_back(overlap.field("tp_comm_overlap") +
                           ": off, as Megatron-Bridge's setup turns it off without tp ≥ 2 and sequence "
                           "parallelism");

  // --- Precision: the model's fields, with mixed_precision over them ------------------------------------
  const YAML::Node mp_node = root["mixed_precision"];
  // Gradient reduction: the DDP config's, unless mixed_precision sets it (Bridge's setup copies
  // MixedPrecisionConfig.grad_reduce_in_fp32 onto the DDP config).
  bool fp16 = model.flag("fp16"), grad_fp32 = ddp.boolean("grad_reduce_in_fp32").value_or(true);
  std::optional<std::string> fp8 = model.text("fp8"), fp8_recipe = model.text("fp8_recipe"),
                             fp4 = model.text("fp4"), fp4_recipe = model.text("fp4_recipe");
  bool fp8_param = model.flag("fp8_param"), first_last_bf16 = model.flag("first_last_layers_bf16"),
       fp8_dpa = model.flag("fp8_dot_product_attention"), fp4_param = model.flag("fp4_param");
  std::optional<long long> bf16_start = model.integer("num_layers_at_start_in_bf16"),
                           bf16_end = model.integer("num_layers_at_end_in_bf16");
  if (mp_node && mp_node.IsScalar() && !mp_node.IsNull()) {
    const std::string name = mp_node.Scalar();
    const PrecisionRecipe* r = nullptr;
    for (const auto& k : kRecipes)
      if (name == k.name) r = &k;
    // a model's own variant of one (nemotron_h_bf16_with_fp8_current_scaling_mixed): its base recipe
    for (const auto& k : kRecipes)
      if (!r && name.size() > std::strlen(k.name) && name.ends_with(std::string("_") + k.name)) {
        r = &k;
        out.warnings.push_back(source + ": mixed_precision '" + name + "' is priced as " + k.name +
                               " (the model's variant of it: settings of its own, such as layers kept in "
                               "BF16, are not read)");
      }
    if (!r)
      throw InputError(source + ": mixed_precision",
                       "'" + name +
                           "' is not one of Megatron-Bridge's mixed-precision recipes (bf16_mixed, "
                           "bf16_with_fp8_current_scaling_mixed, bf16_with_mxfp8_mixed, …)");
    fp16 = r->fp16;
    fp8 = r->fp8 ? std::optional<std::string>(r->fp8) : std::nullopt;
    fp8_recipe = r->fp8_recipe ? std::optional<std::string>(r->fp8_recipe) : std::nullopt;
    fp8_param = r->fp8_param_gather;
    fp4 = r->fp4 ? std::optional<std::string>(r->fp4) : std::nullopt;
  } else if (mp_node && mp_node.IsMap()) {
    const Section mp(mp_node, source, "mixed_precision");
    if (mp.set("fp16")) fp16 = mp.flag("fp16");
    auto given = [&](const char* key) { return mp_node[key].IsDefined(); };  // null included: "off"
    if (given("fp8")) fp8 = mp.text("fp8");
    if (mp.set("fp8_recipe")) fp8_recipe = mp.text("fp8_recipe");
    if (given("fp4")) fp4 = mp.text("fp4");
    if (mp.set("fp4_recipe")) fp4_recipe = mp.text("fp4_recipe");
    if (mp.set("fp8_param_gather")) fp8_param = mp.flag("fp8_param_gather");
    if (mp.set("fp8_param")) fp8_param = fp8_param || mp.flag("fp8_param");
    if (mp.set("fp4_param_gather")) fp4_param = mp.flag("fp4_param_gather");
    if (mp.set("fp4_param")) fp4_param = fp4_param || mp.flag("fp4_param");
    if (mp.set("first_last_layers_bf16")) first_last_bf16 = mp.flag("first_last_layers_bf16");
    if (mp.set("fp8_dot_product_attention")) fp8_dpa = mp.flag("fp8_dot_product_attention");
    if (mp.set("num_layers_at_start_in_bf16")) bf16_start = mp.integer("num_layers_at_start_in_bf16");
    if (mp.set("num_layers_at_end_in_bf16")) bf16_end = mp.integer("num_layers_at_end_in_bf16");
    if (auto g = mp.boolean("grad_reduce_in_fp32")) grad_fp32 = *g;
  }
  put(fp16 ? "--fp16" : "--bf16");
  if (fp4) {
    put_value("--fp4-format", *fp4);
    put_value("--fp4-recipe", fp4_recipe.value_or("nvfp4"));
  } else if (fp8) {
    put_value("--fp8-format", *fp8);
    if (fp8_recipe) put_value("--fp8-recipe", *fp8_recipe);
  }
  if ((fp8 || fp4) && fp8_param) put("--fp8-param-gather");
  if (fp4 && fp4_param) put("--fp4-param-gather");
  if ((fp8 || fp4) && first_last_bf16) {
    put("--first-last-layers-bf16");
    if (bf16_start) put_value("--num-layers-at-start-in-bf16", std::to_string(*bf16_start));
    if (bf16_end) put_value("--num-layers-at-end-in-bf16", std::to_string(*bf16_end));
  }
  if (fp8 && fp8_dpa) put("--fp8-dot-product-attention");
  if (fp8 && model.flag("fp8_output_proj")) put("--fp8-output-proj");

  // --- Data parallelism, optimizer, batch -----------------------------------------------------------------
  if (ddp.flag("use_megatron_fsdp")) {
    put("--use-megatron-fsdp");
    if (auto s = ddp.text("data_parallel_sharding_strategy"))
      put_value("--data-parallel-sharding-strategy", *s);
  }
  if (ddp.flag("use_distributed_optimizer") || opt.flag("use_distributed_optimizer"))
    put("--use-distributed-optimizer");
  // With a CommOverlapConfig and the distributed optimizer, Bridge's setup sets the DDP overlaps for data
  // parallel > 1 (comm_overlap.py _get_optimizer_overlap_cfgs, over the DDP config's own fields) unless the
  // CommOverlapConfig itself gives them; at data parallel 1 they change nothing.
  const bool setup_overlaps =
      root["comm_overlap"] && root["comm_overlap"].IsMap() && ddp.flag("use_distributed_optimizer");
  for (const auto& [key, flag] : {std::pair{"overlap_grad_reduce", "--overlap-grad-reduce"},
                                  std::pair{"overlap_param_gather", "--overlap-param-gather"}}) {
    const bool on = setup_overlaps ? overlap.boolean(key).value_or(true) : ddp.flag(key);
    if (on) put(flag);
  }
  if (!grad_fp32) put("--grad-reduce-in-bf16");
  if (auto o = opt.text("optimizer")) put_value("--optimizer", *o);
  if (opt.flag("use_precision_aware_optimizer")) {
    put("--use-precision-aware-optimizer");
    for (const auto& [key, flag] :
         std::vector<std::pair<std::string, std::string>>{{"main_grads_dtype", "--main-grads-dtype"},
                                                          {"main_params_dtype", "--main-params-dtype"},
                                                          {"exp_avg_dtype", "--exp-avg-dtype"},
                                                          {"exp_avg_sq_dtype", "--exp-avg-sq-dtype"}})
      if (auto d = opt.dtype(key)) put_value(flag, *d);
  }
  if (opt.flag("optimizer_cpu_offload")) {
    put("--optimizer-cpu-offload");
    num_flag(out, opt, "optimizer_offload_fraction", "--optimizer-offload-fraction");
  }
  int_flag(out, train, "micro_batch_size", "--micro-batch-size");
  int_flag(out, train, "global_batch_size", "--global-batch-size");
  if (root["peft"] && root["peft"].IsMap() && !root["peft"].IsNull())
    out.warnings.push_back(source +
                           ": peft: the adapters are not read from a Bridge configuration (priced as "
                           "full fine-tuning; preflight's --lora-rank / --lora-target-modules price LoRA)");

  for (const auto& w : passed_on) a.push_back(w);
  return out;
}

}  // namespace detail

namespace {

const nlohmann::json& bridge_recipe_table() {
  static const nlohmann::json table = detail::embedded_json("bridge/recipes.json");
  return table;
}

/// A recipe of the table: its section ("recipes": megatron.bridge.recipes, what run_recipe.py resolves;
/// "perf_recipes": megatron.bridge.perf_recipes, what scripts/performance resolves) and function.
struct RecipeRef {
  std::string section, function;
  /// For `perf:NAME` naming a GPU count no recipe has: NAME, resolved to `function` as scripts/performance
  /// does (the default recipe of that model, task, GPU and precision); "" otherwise.
  std::string requested;
};

/// scripts/performance's recipe for a launch whose `-ng` has none of its own (utils.py
/// _first_matching_perf_recipe_name / _select_default_recipe_name): the recipes of the same model, task, GPU,
/// precision and variant at any GPU count, the one _DEFAULT_GPU_COUNT_OVERRIDES names, else the largest; ""
/// when there are none.
std::string default_perf_recipe(const nlohmann::json& t, const std::string& name) {
  std::string stem, rest;
  int n = 0;
  if (!RE2::FullMatch(name, R"((.+)_(\d+)gpu_(.+))", &stem, &n, &rest)) return "";
  std::map<int, std::string> counts;
  for (const auto& [f, cfg] : t.at("perf_recipes").items()) {
    std::string s2, r2;
    int k = 0;
    if (RE2::FullMatch(f, R"((.+)_(\d+)gpu_(.+))", &s2, &k, &r2) && s2 == stem && r2 == rest) counts[k] = f;
  }
  if (counts.empty()) return "";
  const std::string key = stem + "|" + rest.substr(0, rest.size() - std::string("_config").size());
  if (const auto& d = t.at("perf_default_gpus"); d.contains(key) && counts.count(d.at(key).get<int>()))
    return counts.at(d.at(key).get<int>());
  return counts.rbegin()->second;
}

/// The recipe `name` names, as Megatron-Bridge's unified runner (scripts/training/recipe_runner.py
/// load_recipe) resolves it: a function of megatron.bridge.perf_recipes (the benchmark definition wins where
/// both packages export a name: ten do, with other layouts), else of megatron.bridge.recipes or one of its
/// top-level aliases (`deepseek_v3_pretrain_config`: the library definition); `perf:NAME` only the former.
/// An empty function when none.
RecipeRef bridge_recipe_function(const std::string& name) {
  const auto& t = bridge_recipe_table();
  const bool perf_only = name.starts_with("perf:");
  const std::string f = perf_only ? name.substr(5) : name;
  if (t.at("perf_recipes").contains(f)) return {"perf_recipes", f, ""};
  if (perf_only) {
    const std::string d = f.ends_with("_config") ? default_perf_recipe(t, f) : "";
    return d.empty() ? RecipeRef{} : RecipeRef{"perf_recipes", d, f};
  }
  if (t.at("recipes").contains(f)) return {"recipes", f, ""};
  if (t.at("aliases").contains(f)) return {"recipes", t.at("aliases").at(f).get<std::string>(), ""};
  return {};
}

/// The GPUs Megatron-Bridge's recipe names are for (`…_8gpu_gb200_…`): the system preset and the GPUs per
/// node scripts/performance launches them with (argument_parser.py's NUM_GPUS_PER_NODE_MAP).
struct RecipeGpu {
  const char* gpu;
  const char* preset;  ///< "" when preflight has no preset for it
  int gpus_per_node;
};
constexpr RecipeGpu kRecipeGpus[] = {{"h100", "h100-sxm", 8}, {"b200", "b200", 8},   {"b300", "b300", 8},
                                     {"gb200", "gb200", 4},   {"gb300", "gb300", 4}, {"vr200", "", 4},
                                     {"r100", "", 1}};

}  // namespace

bool is_bridge_recipe(const std::string& name) {
  return !bridge_recipe_function(name).function.empty();
}

BridgeConfigArgs bridge_recipe_to_megatron_args(const std::string& name,
                                                const std::vector<std::string>& extra) {
  const auto [section, function, requested] = bridge_recipe_function(name);
  if (function.empty())
    throw InputError(
        "Megatron-Bridge recipe " + name,
        "not one of Megatron-Bridge's recipes (megatron.bridge.recipes: llama3_8b_pretrain_config, "
        "qwen3_30b_a3b_pretrain_config, deepseek_v3_pretrain_config, …; megatron.bridge.perf_recipes: "
        "llama3_8b_pretrain_8gpu_gb200_fp8cs_config, …, also as perf:NAME)");
  const bool perf = section == "perf_recipes";
  const std::string source =
      std::string(perf ? "Megatron-Bridge performance recipe " : "Megatron-Bridge recipe ") + function +
      (function == name || "perf:" + function == name ? "" : " (" + name + ")");
  std::vector<std::string> notes;
  if (!requested.empty())
    notes.push_back(
        source + ": no performance recipe is " + requested +
        "; scripts/performance runs this one, its default for that model, task, GPU and precision, on "
        "the GPUs asked for");
  YAML::Node root = detail::yaml_tree(bridge_recipe_table().at(section).at(function));
  std::vector<std::string> passed_on;
  // the recipe's own layout and batch, before overrides: what Bridge's runner weak-scales from
  const Section recipe_model(root["model"], source, "model"), recipe_train(root["train"], source, "train");
  const long long recipe_ranks = recipe_model.integer("tensor_model_parallel_size").value_or(1) *
                                 recipe_model.integer("pipeline_model_parallel_size").value_or(1) *
                                 recipe_model.integer("context_parallel_size").value_or(1);
  const long long recipe_batch = recipe_train.integer("global_batch_size").value_or(0);
  bool batch_given = false;
  for (const auto& w : extra) {
    if (!apply_container_override(root, w, source)) {
      passed_on.push_back(w);
      batch_given = batch_given || w.rfind("--global-batch-size", 0) == 0;
    } else {
      const std::string key = w.substr(w.find_first_not_of("+~"), w.find('=') - w.find_first_not_of("+~"));
      batch_given = batch_given || key == "train" || key == "train.global_batch_size";
    }
  }
  YAML::Node model = root["model"];
  std::string repo;
  if (model.IsMap() && model["_hf_"] && model["_hf_"].IsScalar()) {
    repo = model["_hf_"].Scalar();
    model.remove("_hf_");
    model["_target_"] = "megatron.bridge.AutoBridge(" + repo + ")";
  }
  std::vector<std::string> tail;
  // PEFT: the recipe's LoRA / DoRA adapters (megatron.bridge.peft: dim, target_modules) as preflight's LoRA.
  if (const YAML::Node peft = root["peft"]; peft && peft.IsMap()) {
    const std::vector<std::string> lora = detail::lora_words(Section(peft, source, "peft"));
    tail.insert(tail.end(), lora.begin(), lora.end());
    root.remove("peft");
  }
  // The vocabulary: the tokenizer's when the recipe asks for it (pre-training from scratch), else the
  // model's as it stands (Bridge's _validate_and_set_vocab_size: a preset vocabulary is not padded).
  const Section tok(root["tokenizer"], source, "tokenizer");
  // (vocab_size None — a provider class's default — is unset, as Bridge reads it.)
  const bool model_vocab = model["vocab_size"] && !model["vocab_size"].IsNull();
  const bool from_tokenizer = tok.flag("use_tokenizer_vocab_size") || (repo.empty() && !model_vocab);
  if (from_tokenizer) {
    const std::string type = tok.text("tokenizer_type").value_or("");
    if (type == "NullTokenizer") {
      tail.insert(tail.end(), {"--tokenizer-type", "NullTokenizer", "--vocab-size",
                               std::to_string(tok.integer("vocab_size").value_or(32000))});
    } else if (auto m = tok.text("tokenizer_model")) {
      tail.insert(tail.end(), {"--tokenizer-type", type.empty() ? "HuggingFaceTokenizer" : type,
                               "--tokenizer-model", *m});
    } else if (!repo.empty()) {
      tail.insert(tail.end(), {"--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", repo});
    }
  } else if (!repo.empty() && !model_vocab) {
    tail.insert(tail.end(), {"--make-vocab-size-divisible-by", "1"});
  }
  // The GPUs the recipe is named for (`…_8gpu_gb200_…`): its system, and the world when torchrun gives none
  // (the count asked for, where scripts/performance's default recipe stands in for a missing one).
  int n = 0, asked = 0;
  std::string gpu;
  const RecipeGpu* named = nullptr;
  if (RE2::PartialMatch(function, R"(_(\d+)gpu_([a-z0-9]+)_)", &n, &gpu))
    for (const auto& g : kRecipeGpus)
      if (gpu == g.gpu) named = &g;
  if (requested.empty() || !RE2::PartialMatch(requested, R"(_(\d+)gpu_)", &asked)) asked = n;
  std::string system;
  if (named && *named->preset) system = named->preset;
  if (asked > 0 && !detail::world_given(passed_on)) {
    const int per_node = named ? named->gpus_per_node : 8;
    const int nproc = std::min(asked, per_node);
    tail.insert(tail.end(), {"--nproc_per_node", std::to_string(nproc), "--nnodes",
                             std::to_string((asked + nproc - 1) / nproc)});
    notes.push_back(source + ": " + std::to_string(asked) + " GPUs, as the recipe's name says (" +
                    (named && asked > nproc ? std::to_string(nproc) +
                                                  " a node, as Megatron-Bridge's scripts/performance "
                                                  "launches " +
                                                  named->gpu + "; "
                                            : "") +
                    "give torchrun's --nproc_per_node / --nnodes for another world)");
  }
  tail.insert(tail.end(), passed_on.begin(), passed_on.end());
  BridgeConfigArgs out = detail::bridge_root_to_megatron_args(root, source, tail);
  out.base_model = repo;
  out.system = system;
  out.gpu = named ? named->gpu : "";
  if (perf && n > 0 && recipe_batch > 0 && recipe_ranks > 0 && n % recipe_ranks == 0 && !batch_given)
    out.weak_scaling = BridgeConfigArgs::WeakScaling{n, n / recipe_ranks, recipe_batch};
  out.warnings.insert(out.warnings.begin(), notes.begin(), notes.end());
  out.warnings.insert(out.warnings.begin(),
                      source + ": the ConfigContainer the recipe returns with its default arguments" +
                          (repo.empty() ? "" : ", its model " + repo + "'s architecture") + " (" +
                          bridge_recipe_table().at("source").get<std::string>() + ")");
  if (from_tokenizer) out.field_of_flag["--vocab-size"] = "tokenizer.vocab_size";
  return out;
}

MegatronConfig parse_bridge_args(const BridgeConfigArgs& b, const std::map<std::string, std::string>& env,
                                 const ModelSpec* base) {
  std::optional<ModelSpec> recipe_model;
  if (!base && !b.base_model.empty()) {
    std::vector<std::string> model_warnings;
    recipe_model = load_model(b.base_model, &model_warnings);
    base = &*recipe_model;
  }
  auto parse = [&](const std::vector<std::string>& args) {
    try {
      return parse_megatron_args(args, env, base);
    } catch (const InputError& e) {
      auto it = b.field_of_flag.find(e.where());
      if (it == b.field_of_flag.end()) throw;
      std::string detail = e.detail() + " (" + e.where() + " in Megatron's terms)";
      if (b.override_file && e.detail().rfind("is required", 0) == 0)
        detail +=
            "; its model section names no provider (_target_), as a recipe script's override file "
            "(--config-file) does: the recipe's own values are not in it — pass the configuration the run "
            "saved (run_config.yaml of its checkpoint, logger.save_config_filepath, or its log, which "
            "prints it after '------- Task Configuration -------')";
      throw InputError(b.source + ": " + it->second, detail);
    }
  };
  MegatronConfig cfg = parse(b.args);
  // A performance recipe on another data-parallel size (another world, or a layout overridden): Bridge's
  // runner keeps each rank's samples, scaling the global batch (scripts/training/run_recipe.py
  // _apply_benchmark_weak_scaling); the world and layout are the parsed strategy's.
  if (const auto& w = b.weak_scaling; w && cfg.strategy.dp() != w->data_parallel) {
    const long long dp = cfg.strategy.dp(), gbs = w->global_batch * dp / w->data_parallel;
    if (w->global_batch * dp % w->data_parallel != 0)
      throw InputError(
          b.source + ": train.global_batch_size",
          "weak scaling " + std::to_string(w->global_batch) + " from data parallel " +
              std::to_string(w->data_parallel) + " to " + std::to_string(dp) +
              " is not a whole batch, as Bridge's runner refuses it: give train.global_batch_size");
    std::vector<std::string> args = b.args;
    args.insert(args.end(), {"--global-batch-size", std::to_string(gbs)});
    cfg = parse(args);
    cfg.warnings.insert(cfg.warnings.begin(),
                        b.source + ": global batch " + std::to_string(w->global_batch) + " → " +
                            std::to_string(gbs) + ", weak-scaled from the recipe's " +
                            std::to_string(w->gpus) + " GPUs (data parallel " +
                            std::to_string(w->data_parallel) + ") to " +
                            std::to_string(cfg.strategy.world_size) + " (" + std::to_string(dp) +
                            "), as Megatron-Bridge's runner does (give train.global_batch_size for another)");
  }
  return cfg;
}

BridgeConfigArgs bridge_config_to_megatron_args(const std::string& path,
                                                const std::vector<std::string>& extra) {
  // A checkpoint: NeMo 2's folder (its context/model.yaml), or NeMo 1's .nemo or unpacked folder.
  std::error_code ec;
  std::string file = path;
  if (std::filesystem::is_directory(path, ec)) {
    file = nemo2_checkpoint_model_yaml(path);
    if (file.empty()) return nemo_config_to_megatron_args(path, extra);
  } else if (path.ends_with(".nemo")) {
    return nemo_config_to_megatron_args(path, extra);
  } else if (path.rfind(kNemo2PerfPrefix, 0) == 0) {
    return nemo2_perf_script_to_megatron_args(path, extra);  // NeMo 2's scripts/performance/llm launchers
  } else if (!std::filesystem::exists(path, ec) && is_nemo2_recipe(path)) {
    return nemo2_recipe_to_megatron_args(path, extra);  // `nemo llm pretrain --factory NAME`'s task
  } else if (!std::filesystem::exists(path, ec) &&
             (is_bridge_recipe(path) || path.starts_with("perf:") ||
              (path.ends_with("_config") && path.find('/') == std::string::npos))) {
    return bridge_recipe_to_megatron_args(path, extra);  // `run_recipe.py --recipe NAME`'s configuration
  }
  std::ifstream f(file, std::ios::binary);
  if (!f) throw InputError(path, "cannot read the Megatron-Bridge configuration");
  std::ostringstream s;
  s << f.rdbuf();
  return bridge_config_text_to_megatron_args(s.str(), file, extra);
}

}  // namespace preflight::analyzer
