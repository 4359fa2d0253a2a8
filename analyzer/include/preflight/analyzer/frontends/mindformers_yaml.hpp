#pragma once
/// @file mindformers_yaml.hpp
/// Front end: a MindSpore MindFormers training YAML (`run_mindformer.py --config X.yaml`, launched by msrun)
/// converted into ModelSpec + Strategy, with the layer split and recompute lists as MindFormers resolves
/// them.  Rules and citations: notes/mindformers.md (mindspore-lab/mindformers r1.5.0 and master).
///
/// Read:
///  - parallel_config: data_parallel (dp), model_parallel (tp), pipeline_stage (pp), context_parallel (cp),
///    expert_parallel (ep, carved out of dp as Megatron does), micro_batch_num, use_seq_parallel,
///    vocab_emb_dp (reset to False when pp > 1, `core/parallel_config.py`), seq_split_num (seqpipe: a
///    warning, not modelled).  world = dp·tp·cp·pp exactly (semi-auto parallel, `tools/check_rules.py`).
///  - top-level micro_batch_interleave_num (mbi), runner_config.batch_size (bs) and
///    gradient_accumulation_steps (GA; forced to 1 when pp > 1).  Megatron terms: micro batch size = bs·mbi,
///    micro batches = micro_batch_num when pp > 1 else GA, global batch = bs·mbi·dp·micro batches
///    (`BaseTrainer._check_global_batch_size_for_auto_parallel`).
///  - model.model_config `offset` (int, [pp] or [V][pp]) and `pp_interleave_num` V (only with
///    parallel.pipeline_config.pipeline_interleave): layers of chunk v on stage s = L // (pp·V) + offset,
///    chunk-major, with MindFormers' check sum(offset) == L % (pp·V) (`LayerSetting`, `models/utils.py`).
///    An int offset that passes that check but does not place L layers once broadcast is refused.
///    Legacy DeepSeek-V3 counts its `mtp_depth` MTP layers in the split (they sit at the end of the last
///    stage); the new style does not.
///  - recompute_config: `recompute` (full), `select_recompute` (default patterns: the MLP's activation and
///    gate multiply → our module "mlp_act"), `select_comm_recompute` (default `.*\.norm` → "layernorm"),
///    `*_exclude`; each bool / per-stage counts (dealt round-robin over the chunks of a stage, capped) /
///    [V][pp] counts / pattern list / {pattern: any of those}.  The first n layers of each (chunk, stage)
///    recompute; full recompute wins over select.  Patterns are classified by what they name (norm →
///    layernorm; feed_forward/mlp/w1/w2/w3/silu/mul → mlp_act; attention/softmax → core_attn); others are
///    reported as not modelled.
///  - model.model_config architecture, by `type` (legacy, `use_legacy` absent or True): LlamaConfig (and
///    its subclasses: num_layers, hidden_size, num_heads, n_kv_heads, intermediate_size or the FFN derived
///    from ffn_dim_multiplier / multiple_of, vocab_size, qkv_has_bias, attn_proj_has_bias,
///    tie_word_embeddings), TelechatConfig (+ out_proj_has_bias, default True, and the w2 bias),
///    ChatGLM2Config (num_attention_heads, kv_channels, multi_query_group_num with multi_query_attention,
///    ffn_hidden_size, padded_vocab_size, add_qkv_bias, add_bias_linear, rmsnorm), DeepseekV3Config (MLA:
///    q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; mtp_depth); MoE from the
///    top-level moe_config (expert_num, num_experts_chosen, moe_intermediate_size — DeepSeek; the LLaMA MoE
///    experts use the model's FFN —, shared_expert_num (float allowed), first_k_dense_replace — DeepSeek
///    only, default 1).  New style (`use_legacy: False`): Hugging Face / Megatron names and aliases
///    (`parallel_core/transformer_config_utils.py` COMMON_CONFIG_MAPPING), completed from the HF config.json
///    in `pretrained_model_dir` when the file lacks them (YAML keys override it), q/k norm for qwen3.
///  - numerics: param_init_type / params_dtype (stored parameter and gradient dtype, no master copy,
///    Strategy::param_bytes), compute_dtype (activations), fp32 Adam moments always,
///    parallel.enable_parallel_optimizer (weights and optimizer states sliced over dp,
///    Strategy::shard_weights), use_flash_attention, the vocabulary never padded and split over tp only
///    when tp divides it and vocab_emb_dp is off (Strategy::vocab_parallel).
///  - context.max_device_memory ("58GB", read as GiB = 2^30 bytes): the device budget.
///
/// Errors are InputError with `where` = "FILE:LINE: section.key" for a malformed, mistyped, unknown
/// (parallel_config, recompute_config) or inconsistent field, "FILE:LINE" for malformed YAML, and the file
/// for an unreadable one.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"

namespace preflight::analyzer {

/// Layers per (chunk, stage) bucket, [V][pp].
using ChunkGrid = std::vector<std::vector<int>>;

/// Recompute as MindFormers resolves it: how many of the first layers of each (chunk, stage) bucket
/// recompute, per kind.  `select` and `comm` count layers before full recompute takes its own (a layer in
/// both is fully recomputed); pattern forms affecting only some modules are in Strategy::per_layer_recompute.
struct MindFormersRecompute {
  ChunkGrid full, select, comm;
};

/// What the YAML says, in MindFormers' terms, next to the converted model and strategy.
struct MindFormersConfig {
  std::string source;  ///< the file as given
  ModelSpec model;
  Strategy strategy;  ///< world = dp·tp·cp·pp; chunk_layout and per_layer_recompute always set
  bool legacy = true;  ///< `use_legacy` absent or True
  std::string model_type;  ///< model_config.type (legacy) or model_type / "new style"
  int batch_size = 1;                 ///< runner_config.batch_size (per dp rank, per micro step)
  int micro_batch_num = 1;            ///< parallel_config.micro_batch_num (as written)
  int micro_batch_interleave_num = 1;
  int gradient_accumulation_steps = 1;  ///< after MindFormers' reset to 1 when pp > 1
  int interleave = 1;                   ///< V: pp_interleave_num when pipeline_interleave is on, else 1
  int split_layers = 0;                 ///< layers the offset split places (L, + mtp_depth legacy)
  ChunkGrid offset;                     ///< [V][pp], broadcast as MindFormers does
  ChunkGrid layers;                     ///< [V][pp] layers per bucket (MTP included in the legacy split)
  MindFormersRecompute recompute;
  std::optional<double> max_device_memory_gib;  ///< context.max_device_memory
  std::vector<std::string> warnings;            ///< simplifications and fall-backs, one line each

  int world_size() const { return strategy.world_size; }
  /// Layers per stage (sum over chunks), MTP included as MindFormers counts it.
  std::vector<int> layers_per_stage() const;
  /// Layers per stage recomputing fully / with select / with comm (sum over chunks).
  std::vector<int> full_recompute_per_stage() const;
};

struct MindFormersOptions {
  /// Architecture to start from (`--model`): for a new-style file without numbers (or to replace a
  /// pretrained_model_dir that is not on this machine); the YAML's own keys still override it.
  const ModelSpec* base = nullptr;
  /// Workers the launch starts (msrun --worker_num); 0 = take dp·tp·cp·pp.  Must equal it.
  int world_size = 0;
  std::string world_source = "--world-size";  ///< how to name world_size in errors
  /// run_mindformer.py's --use_parallel as given on the command line (overrides the YAML's).
  std::optional<bool> use_parallel;
  /// Keys set on the command line before the file is interpreted, as run_mindformer.py does: its
  /// `--batch_size` (runner_config.batch_size), `--gradient_accumulation_steps` and `--options KEY=VALUE…`
  /// (dotted keys, YAML values).  Errors in them name `--options KEY`.
  std::vector<std::pair<std::string, std::string>> overrides;
  /// run_mindformer.py's other arguments, as given (its parse_known_args rest: `--KEY VALUE` or
  /// `--KEY=VALUE` pairs), set after the overrides when the yaml is read, as it sets them: a dotted KEY's
  /// parents must be in the yaml, a new top-level KEY is added (said: no training reads it); an unpaired
  /// or non-option word is an InputError then (not while reading the arguments: a Megatron launch's words
  /// pass through read_run_mindformer_args too).
  std::vector<std::string> rest_args;
  /// preflight's `--moe-load-imbalance F` among the run_mindformer.py arguments
  /// (Strategy::moe_load_imbalance; checked as check_moe_load_imbalance does).
  std::optional<double> moe_load_imbalance;
  /// run_mindformer.py's --run_mode (overrides the yaml's run_mode); predict and eval are refused.
  std::optional<std::string> run_mode;
};

/// What `python run_mindformer.py ARGS` passes that matters here: `--config` (returned; empty when
/// absent), `--run_mode`, `--use_parallel`, `--batch_size`, `--gradient_accumulation_steps`, `--options k=v …`, in
/// `--flag value` or `--flag=value` form.  Other arguments are ignored, as argparse's parse_known_args.
/// @throws InputError naming the flag for a missing value or an --options item without '='.
std::string read_run_mindformer_args(const std::vector<std::string>& args, MindFormersOptions& options);

/// Reads and converts a MindFormers YAML file (rules in the file comment).
/// @throws InputError (see the file comment).
MindFormersConfig load_mindformers_yaml(const std::filesystem::path& file, const MindFormersOptions& options = {});

/// The same from text; `source` names it in errors and resolves a relative pretrained_model_dir.
MindFormersConfig parse_mindformers_yaml(const std::string& text, const std::string& source,
                                         const MindFormersOptions& options = {});

/// True for a path ending in .yaml or .yml (how `--model X.yaml` is told from a preset or config.json).
bool is_yaml_path(const std::string& path);

/// A copy of the YAML text with model.model_config.offset and recompute_config's recompute,
/// select_recompute and select_comm_recompute replaced by the given [V][pp] lists (a [pp] list when V = 1);
/// every other byte is kept.  A key that is missing is added to its section (the section too).  With
/// V > 1 and pp_interleave_num absent, it is added next to offset.
/// @throws InputError naming the file when the YAML is malformed or the sections are not mappings.
std::string rewrite_mindformers_yaml(const std::string& text, const std::string& source,
                                     const ChunkGrid& offset, const ChunkGrid& recompute,
                                     const ChunkGrid& select_recompute, const ChunkGrid& select_comm_recompute);

}  // namespace preflight::analyzer
