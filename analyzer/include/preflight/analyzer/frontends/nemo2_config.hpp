#pragma once
/// @file nemo2_config.hpp
/// Front end: a NeMo 2 configuration turned into the Megatron-LM arguments of the same run, for
/// parse_megatron_args() (through parse_bridge_args(), whose messages name the configuration's fields).
///
/// NeMo 2 (`nemo.collections.llm`, 2024–) trains from Python recipes; what a run leaves as YAML is
/// - NeMo-Run's serialisation of the task: `_target_: nemo.collections.llm.api.pretrain` (or `finetune`) with
///   `_partial_: true` and the sections `model` (`_target_: …LlamaModel`, its `config:` a model configuration
///   class such as `…llama.Llama3Config8B` with the arguments given to it), `trainer` (`devices`,
///   `num_nodes`, `strategy: MegatronStrategy` with the parallel sizes and `ddp`, `plugins:
///   MegatronMixedPrecision`, `callbacks`), `data` (batch sizes, `seq_length`, `tokenizer`), `optim` and
///   `peft`;
/// - a checkpoint's `context/model.yaml`: the model itself (`_target_: …LlamaModel`, `config:`,
/// `tokenizer:`).
///
/// Only the arguments given to a class are written; the rest are the class's defaults.  The model
/// configuration classes' defaults are data read from NeMo's source (analyzer/data/nemo2/model_configs.json,
/// written by scripts/nemo2_model_configs.py from nemo/collections/llm/gpt/model/*.py), laid under the file's
/// own fields.  The rest follows NeMo's code (nemo/lightning/pytorch/strategies/megatron_strategy.py,
/// plugins/mixed_precision.py, callbacks/megatron_comm_overlap.py):
/// - the strategy's sizes (tp, pp, vpp, cp, ep, etp, sequence parallelism, first / last stage layers) replace
///   the model configuration's, as MegatronStrategy does;
/// - `ddp: megatron` (the default) is Megatron Core's DistributedDataParallelConfig defaults: no overlaps,
/// and
///   gradients reduced in FP32 only when MegatronMixedPrecision's grad_reduce_in_fp32 (default true) is
///   there; `fsdp: megatron` is Megatron FSDP; the optimizer's use_distributed_optimizer is the DDP config's
///   too;
/// - MegatronMixedPrecision: `precision` 16-mixed / bf16-mixed, `fp8` with `fp8_recipe` (default "delayed"),
///   `fp8_param_gather` (or the older `fp8_params`), first / last layers in BF16, `fp4`;
/// - MegatronCommOverlapCallback: TP overlap when asked and tp ≥ 2 with sequence parallelism (NeMo turns it
///   off otherwise, and so is it priced); interleaved pipelines overlap their p2p (without the callback they
///   do not: ModelParallelConfig's default); with the distributed optimizer, gradient reduction and parameter
///   gathers overlap unless the callback says otherwise;
/// - the vocabulary is the configuration's `vocab_size` as it stands (NeMo does not pad a given one), else
///   the tokenizer's (`AutoTokenizer` pretrained_model_name, `SentencePieceTokenizer` model_path) padded;
/// - the world is trainer.devices × trainer.num_nodes, unless torchrun's sizes are among the extra words;
/// - PEFT LoRA / DoRA: `dim` (default 32) on its `target_modules` (default linear_qkv, linear_proj,
///   linear_fc1, linear_fc2), as preflight's --lora-rank / --lora-target-modules.
///
/// Hydra-style overrides among the extra words (`trainer.strategy.tensor_model_parallel_size=2`,
/// `model.config.num_layers=40`, `data.global_batch_size=512`) change the YAML first, as NeMo-Run's CLI does;
/// other words are passed on to parse_megatron_args() after the converted ones.

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "preflight/analyzer/frontends/bridge_config.hpp"

namespace preflight::analyzer {

/// True when `root` is a NeMo 2 configuration: a task or model whose `_target_` is in
/// `nemo.collections.llm`, or a `model` section whose `_target_` (or its `config`'s) is.
bool is_nemo2_config(const YAML::Node& root);

/// Converts a loaded NeMo 2 configuration (see the file comment).  `source` names the file in messages;
/// field_of_flag names the NeMo fields (`trainer.strategy.tensor_model_parallel_size`,
/// `model.config.num_layers`, `data.global_batch_size`) a flag came from.
/// @throws InputError naming the file and field: a model configuration class of a family preflight does not
///   price (Hyena / Evo 2), a field of the wrong type, an override that is not YAML.
BridgeConfigArgs nemo2_config_to_megatron_args(YAML::Node root, const std::string& source,
                                               const std::vector<std::string>& extra);

/// True when `spec` names one of NeMo 2's recipes (`llama3_8b`, `pretrain:deepseek_v3`,
/// `finetune:llama3_8b(num_nodes=2)`): a recipe of analyzer/data/nemo2/recipes.json.
bool is_nemo2_recipe(const std::string& spec);

/// The recipes' names, sorted.
std::vector<std::string> nemo2_recipe_names();

/// A NeMo 2 recipe as `nemo llm pretrain --factory NAME` (or `finetune`) builds it: the task its
/// `pretrain_recipe()` / `finetune_recipe()` returns with their default arguments — evaluated from NeMo's
/// source by scripts/nemo2_recipes.py into analyzer/data/nemo2/recipes.json — converted as
/// nemo2_config_to_megatron_args() converts a task YAML, with `extra` (NeMo-Run's overrides such as
/// `trainer.strategy.tensor_model_parallel_size=4`, then Megatron / torchrun words).  `spec` is
/// `[pretrain:|finetune:]NAME[(ARGS)]`; of the factory's ARGS num_nodes, num_gpus_per_node, seq_length,
/// (fine-tuning) peft_scheme and performance_mode (True: the task with the recipe's performance
/// optimisations, as NeMo's performance scripts build it) are read — the last two choose the task the recipe
/// builds, each a task of its own in the table — name / dir ignored.
/// @throws InputError naming the recipe: an unknown name, a task the recipe lacks, a factory argument not
/// read.
BridgeConfigArgs nemo2_recipe_to_megatron_args(const std::string& spec,
                                               const std::vector<std::string>& extra);

/// The prefix of a NeMo 2 performance script's spec: `nemo2-perf:pretrain_llama3_70b`.
inline constexpr const char* kNemo2PerfPrefix = "nemo2-perf:";

/// The run one of NeMo 2's performance scripts submits (`python -m
/// scripts.performance.llm.pretrain_llama3_70b -a ACCOUNT -p PARTITION -g h100 -c fp8 -ng 64 …`, NVIDIA/NeMo
/// scripts/performance/llm: the launchers of NeMo 2.0's published performance tables).  `spec` is
/// `nemo2-perf:SCRIPT` (the script's file name without .py); `cli` the script's own command line (its
/// argument_parser.py).  The task is the script's `override_recipe_configs()` as
/// scripts/nemo2_perf_scripts.py evaluated it into analyzer/data/nemo2/perf_scripts.json for the recommended
/// configuration of the GPU (-g), precision (-c, -fr), task (-f for fine-tuning scripts) and GPU count (-ng;
/// the first of the CSV's when not given), with the command line's sizes and switches on top as helpers.py's
/// set_primary_perf_configs() sets them: -ng / -gn (the world; GB200 nodes hold 4), -tp (sequence parallel
/// when > 1), -pp, -cp, -vp, -ep, -et, -mb, -gb, -cg, -fsdp, -rl, -ol, -rm.  Slurm, container, profiling and
/// logging options are left out (said).  Words after a `--` inside `cli` are Megatron flags for the result
/// (`--megatron-version 2025-07-01`).  BridgeConfigArgs::system is the GPU's preset (h100-sxm, b200, gb200).
/// @throws InputError naming the script or the option: an unknown script or option, a malformed value, no -g,
///   no recommended configuration for the GPU, task, precision and GPU count without the sizes to build one.
BridgeConfigArgs nemo2_perf_script_to_megatron_args(const std::string& spec,
                                                    const std::vector<std::string>& cli);

/// The path of a NeMo 2 checkpoint's model configuration when `dir` is one (`dir/context/model.yaml`, or
/// `dir/model.yaml` for its context folder); "" otherwise.
std::string nemo2_checkpoint_model_yaml(const std::string& dir);

}  // namespace preflight::analyzer
