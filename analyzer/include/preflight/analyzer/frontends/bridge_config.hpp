#pragma once
/// @file bridge_config.hpp
/// Front end: a Megatron-Bridge run configuration — the `ConfigContainer` YAML that Megatron-Bridge writes as
/// `run_config.yaml` into every checkpoint and to `logger.save_config_filepath`, and prints into its training
/// log between `------- Task Configuration -------` and a line of dashes — turned into the Megatron-LM
/// arguments the same run takes, for parse_megatron_args().
///
/// The YAML is `ConfigContainer.to_yaml()` (megatron/training/config/container.py): one mapping per section
/// (`model`, `train`, `ddp`, `optimizer`, `mixed_precision`, `dataset`, `comm_overlap`, …), dataclasses with
/// a
/// `_target_` key, torch dtypes and functions as `{_target_: torch.bfloat16, _call_: false}`, enums as
/// `{_target_: …AttnBackend, _args_: [n]}`.  The `model` section holds Megatron Core's TransformerConfig /
/// the model provider's fields, whose names are Megatron-LM's argument names (`num_moe_experts` ↔
/// `--num-experts`, `gated_linear_unit` + `activation_func` ↔ `--swiglu` / `--quick-geglu` /
/// `--squared-relu`, …; the mapping is Megatron-Bridge's `docs/megatron-lm-to-megatron-bridge.md` and
/// Megatron-LM's `core_transformer_config_from_args`).  The training sequence is `dataset.sequence_length`
/// (`seq_length` in older files), not `model.seq_length` (the model's context); `mixed_precision` (a
/// MixedPrecisionConfig or a recipe name such as `bf16_with_mxfp8_mixed`) is applied over the model's
/// precision fields, as Bridge does. The world size is not in the file: give torchrun's `--nproc_per_node` /
/// `--nnodes` among the extra arguments.
///
/// Hydra-style overrides (`model.tensor_model_parallel_size=2`, `train.global_batch_size=512`) change the
/// YAML before it is read, as Megatron-Bridge's recipe scripts apply them; every other extra argument is
/// passed on to parse_megatron_args() after the converted ones (Megatron's parser: the last value of a flag
/// wins).
///
/// Read: the architecture (dense, GQA, MLA, MoE with its dispatcher and capacity, LatentMoE, MTP, Mamba hybrid
/// patterns, gated delta nets and gated attention), the parallel layout (tp, pp, vpp, cp, ep, etp, sequence
/// parallelism, pipeline layouts and uneven stages), recompute, activation / CPU offloading, CUDA graphs, the
/// overlaps, precision (FP8 / MXFP8 / NVFP4 recipes, first/last layers in BF16), the optimizer's dtypes and
/// offload, FSDP, and the batch.  Other fields are not read (logging, checkpointing, data loading, seeds,
/// initialisation — and any field this list misses); heterogeneous layer specs and TE's kitchen quantization,
/// when set, are said in `warnings` as not priced.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/frontends/megatron_args.hpp"

namespace preflight::analyzer {

struct BridgeConfigArgs {
  std::vector<std::string> args;      ///< Megatron-LM arguments: the file's, then the caller's extra ones
  std::vector<std::string> warnings;  ///< what the conversion could not carry
  std::string source;                 ///< the file read
  std::map<std::string, std::string> field_of_flag;  ///< `--num-layers` → `model.num_layers`, for messages
  /// The file's `model` section names no provider class (`_target_`): every saved ConfigContainer does, so
  /// this is an override file of a recipe script (its `--config-file`), not a run's whole configuration.
  bool override_file = false;
  /// The Hugging Face model (ORG/REPO) the configuration's model starts from — a Megatron-Bridge recipe's
  /// `AutoBridge.from_hf_pretrained(REPO).get_model_config()` — read by parse_bridge_args() as the base
  /// ModelSpec (load_model(): a preset, a local folder or the Hub); "" when the configuration has it all.
  std::string base_model;
  /// The system preset (`gb200`, `h100-sxm`, …) a recipe is named for (`…_8gpu_gb200_fp8cs_config`): the
  /// default of `--system` for the commands that price time; "" when the name gives none or preflight has no
  /// preset for it.
  std::string system;
  /// The GPU a recipe's name gives (`gb200`, `vr200`, …), with or without a preset; "" when none.
  std::string gpu;
  /// A performance recipe's own GPUs, data-parallel size (GPUs ÷ tp·pp·cp) and global batch, for
  /// parse_bridge_args()'s weak scaling; nullopt when not a performance recipe or the batch is given.
  struct WeakScaling {
    int gpus = 0;
    long long data_parallel = 1, global_batch = 0;
  };
  std::optional<WeakScaling> weak_scaling;
};

/// Reads `path` (a ConfigContainer YAML, or a Megatron-Bridge log holding one after its
/// `------- Task Configuration -------` line) and converts it.  `extra`: Hydra overrides (`a.b=value`)
/// applied to the YAML, and Megatron / torchrun arguments appended to the result.
/// @throws InputError naming the file and line (malformed YAML; no configuration block in a log), the file
/// and
///   field (a section or field of the wrong type, a value Megatron would refuse), or the override.
BridgeConfigArgs bridge_config_to_megatron_args(const std::string& path,
                                                const std::vector<std::string>& extra);

/// True when `name` names one of Megatron-Bridge's recipes: a function of `megatron.bridge.recipes`, such as
/// `llama3_8b_pretrain_config` or `qwen3_30b_a3b_pretrain_16gpu_h100_bf16_config`, or of its flat performance
/// recipes `megatron.bridge.perf_recipes` (`llama3_8b_pretrain_8gpu_gb200_fp8cs_config`, chosen where both
/// packages export a name, as Bridge's runner does; `perf:NAME` for only these): one of
/// analyzer/data/bridge/recipes.json.
bool is_bridge_recipe(const std::string& name);

/// A Megatron-Bridge recipe as `run_recipe.py --recipe NAME` trains it: the ConfigContainer the function
/// returns with its default arguments — evaluated from Megatron-Bridge's source by scripts/bridge_recipes.py
/// into analyzer/data/bridge/recipes.json — converted as a saved run_config.yaml is, with `extra` (Hydra
/// overrides such as `model.tensor_model_parallel_size=2`, then Megatron / torchrun words).  The model is
/// the recipe's Hugging Face repository (BridgeConfigArgs::base_model) with the recipe's fields over it; the
/// vocabulary the tokenizer's when the recipe sets use_tokenizer_vocab_size (its NullTokenizer's size, plus
/// its end-of-document token, for mock-data pre-training), else the model's as it stands.  Without
/// torchrun's sizes the world is the GPU count the recipe's name gives (`…_2gpu_h100_…`; 4 per node on
/// GB200 / GB300 as scripts/performance launches them), said; its GPU names BridgeConfigArgs::system.
/// A performance recipe (megatron.bridge.perf_recipes) is what scripts/performance/setup_experiment.py
/// `-mr MODEL --task TASK -ng N -g GPU -c PRECISION [--config_variant V]` trains; on a torchrun world other
/// than its name's, its global batch is weak-scaled by parse_bridge_args() to keep each data-parallel rank's
/// samples, as Bridge's runner does (scripts/training/run_recipe.py), unless the batch is given
/// (train.global_batch_size, --global-batch-size): BridgeConfigArgs::weak_scaling.
/// @throws InputError naming the recipe (unknown, or a value Megatron would refuse).
BridgeConfigArgs bridge_recipe_to_megatron_args(const std::string& name,
                                                const std::vector<std::string>& extra);

/// parse_megatron_args() on `b.args` — a performance recipe on a data-parallel size other than its own with
/// its global batch weak-scaled (BridgeConfigArgs::weak_scaling), said; its errors about a flag the file gave
/// are said in the configuration's terms: the file and the field the flag came from (or, for a required size
/// the file lacks, would come from), then the flag; when the file is an override file
/// (BridgeConfigArgs::override_file), a missing size says so and names the files that hold a run's whole
/// configuration.  Errors about other flags (the caller's own) are rethrown as they are.
/// @throws InputError as parse_megatron_args() does.
MegatronConfig parse_bridge_args(const BridgeConfigArgs& b,
                                 const std::map<std::string, std::string>& env = {},
                                 const ModelSpec* base = nullptr);

/// The same from the YAML text itself; `source` names it in messages.
BridgeConfigArgs bridge_config_text_to_megatron_args(const std::string& text, const std::string& source,
                                                     const std::vector<std::string>& extra);

}  // namespace preflight::analyzer
