#pragma once
/// @file megatron_args.hpp
/// Front end: the command line a launch script passes to `torchrun … pretrain_gpt.py`, i.e. torchrun's
/// own flags followed by Megatron-LM's, converted into ModelSpec + Strategy.
///
/// Defaults and derived values follow `megatron/training/arguments.py` (Megatron-LM core_r0.x, 2024–2026):
/// ffn = 4h, or ⌊(4h·2/3)/64⌋·64 with `--swiglu`; kv_channels = h / heads; `--num-query-groups` only
/// counts with `--group-query-attention`; sequence parallelism is switched off when tp = 1; the
/// NullTokenizer adds one EOD token to `--vocab-size`.  Unknown flags (and their values) are accepted
/// and ignored, as a drop-in replacement for the training script must.  Both `--flag-name` and
/// `--flag_name` spellings are accepted, as are `--flag=value` and array items holding
/// `"--flag value"` in one word.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"

namespace preflight::analyzer {

/// Result of parsing a launch command line.
struct MegatronConfig {
  ModelSpec model;
  Strategy strategy;
  int nnodes = 1;                           ///< torchrun --nnodes (upper bound of a min:max range)
  int nproc_per_node = 1;                   ///< torchrun --nproc_per_node
  std::vector<std::string> warnings;        ///< one line each: assumptions and fall-backs taken
  std::vector<std::string> ignored;         ///< flags not used by the analysis (in order of appearance)
  std::map<std::string, std::string> seen;  ///< canonical flag → raw value ("" for switches) of known flags
};

/// True when the launch's words use MindSpeed-LLM's own flags (megatron_args_mindspeed.cpp's table) or its
/// layer specs (`--spec mindspeed_llm.…`): a run on Ascend NPUs.
bool is_mindspeed_launch(const std::vector<std::string>& args);

/// Parses torchrun + Megatron arguments.
/// @param args  the words after the subcommand, as a shell passes them
/// @param env   environment lookup for torchrun's PET_* variables (PET_NPROC_PER_NODE, PET_NNODES) and,
///              without torchrun sizes, the ranks a launcher set (WORLD_SIZE / LOCAL_WORLD_SIZE, else srun's
///              SLURM_NTASKS or SLURM_NNODES × SLURM_NTASKS_PER_NODE); pass an empty map to ignore it
/// @param base  a model from a preset or config.json; when given, architecture flags are optional and
///              override its fields (--num-layers 2 on a preset gives a 2-layer cut of that model)
/// @throws InputError naming the flag for a missing required size (--num-layers, --hidden-size,
///         --num-attention-heads, --seq-length), a malformed number, or an undeterminable vocab size.
///         Consistency checks (divisibility, …) are left to build_layer_graph().
MegatronConfig parse_megatron_args(const std::vector<std::string>& args,
                                   const std::map<std::string, std::string>& env = {},
                                   const ModelSpec* base = nullptr);

/// The command line behind the argument dump a Megatron-LM / Megatron-DeepSpeed log prints
/// (`------------------------ arguments ------------------------`, then `  name ........ value` per
/// argparse destination, 2023 and current layouts alike): each destination back to its flag (`num_layers` →
/// `--num-layers VALUE`; True → the switch; the store-false ones such as `add_bias_linear False` →
/// `--disable-bias-linear`), the vocabulary as the log's `padded_vocab_size` exactly, math attention when
/// the dump says `use_flash_attn False` and names no attention backend, and the world from `world_size`
/// (nodes of 8 devices when it divides).  None values and lists of None are dropped.
/// @param args    destination → value as printed (log_parse MegatronLog::args)
/// @param source  the log, for errors
/// @throws InputError naming the log when the dump lacks world_size or a size the analysis needs.
std::vector<std::string> megatron_words_from_args_dump(const std::map<std::string, std::string>& args,
                                                      const std::string& source);

/// The command line behind Megatron-LM's experimental YAML config (`--yaml-cfg FILE`,
/// megatron/training/yaml_arguments.py), which replaces every argparse flag: the top level's keys, then
/// `model_parallel:`'s and `language_model:`'s (TransformerConfig names: `layernorm_epsilon` →
/// `--norm-epsilon`, `num_moe_experts` → `--num-experts`, `activation_func: swiglu` → `--swiglu`), each
/// as an argument-dump destination back to its flag (see megatron_words_from_args_dump; the tokenizer and
/// vocabulary keys are passed as written).  The world size is not in the file: the launch gives it.
/// @param notes receives what was not read (other nested sections)
/// @throws InputError naming the file (and line) when it cannot be read, is malformed, has no
///         `language_model:` section, or names an activation Megatron's YAML path refuses.
std::vector<std::string> megatron_words_from_yaml_cfg(const std::string& path,
                                                      std::vector<std::string>& notes);

/// `torchrun … train_fsdp2.py CONFIG.yaml [--section.key value …]` as Megatron's words for `preflight
/// analyze` (mindspeed_llm/fsdp2/utils/arguments.py fsdp2_parse_args: the YAML's sections model / data /
/// parallel / training / optimization, the command line's dotted keys winning).  model.model_name_or_path →
/// --model; data.cutoff_len → --seq-length; per_device_train_batch_size → --micro-batch-size;
/// parallel.tp_size / cp_size (cp_type ulysses → a2a, ring → p2p, kvallgather → all_gather) / ep_size;
/// --use-torch-fsdp2, and when fsdp_size shards fewer ranks than the data-parallel group
/// (models/model_factory.py: replicas = world / (tp · fsdp · cp)) --num-distributed-optimizer-instances
/// replicas; the global batch per_device_train_batch_size × gradient_accumulation_steps × world / (tp · cp);
/// param_dtype / reduce_dtype; recompute of whole layers (recompute_modules model.layers.{*}) → full
/// recompute; use_flash_attn off → unfused attention.
/// @param world the launch's processes (0 when not known: gradient accumulation is then left out, said)
/// @throws InputError naming the file and line (or the command-line key) for an unreadable YAML, a size that
///   is no positive number, sizes that do not divide `world`, or no model.model_name_or_path
std::vector<std::string> megatron_words_from_mindspeed_fsdp2(const std::vector<std::string>& args, int world,
                                                             std::vector<std::string>& notes);

/// True when `path` is a Megatron-LM functional test case
/// (tests/functional_tests/test_cases/…/model_config.yaml: a top-level `MODEL_ARGS:` mapping of flags).
bool is_megatron_test_case(const std::string& path);

/// The command line of a Megatron-LM functional test case, as tests/functional_tests/shell_test_utils/
/// _run_training.sh builds it from MODEL_ARGS: `true` → the flag alone, `"[a b]"` → the words inside, `""` →
/// left out, other values as they are; `${VAR}` from `env` where it has VAR (envsubst), else as written.  A
/// `false` is left out, said in `notes`.  The world size is not in the file (its recipe's, under
/// tests/test_utils/recipes): the launch's.
/// @throws InputError naming the file (and line) for an unreadable or malformed YAML, no MODEL_ARGS mapping,
///         a key that is not a flag.
std::vector<std::string> megatron_words_from_test_case(const std::string& path,
                                                       const std::map<std::string, std::string>& env,
                                                       std::vector<std::string>& notes);

/// True when `path` is an AMD Primus experiment YAML (AMD-AGI/Primus `examples/megatron/configs/…`: a
/// top-level `modules:` mapping).
bool is_primus_experiment(const std::string& path);

/// The command line behind an AMD Primus experiment's Megatron trainer module (`modules.pre_trainer`, else
/// `post_trainer`): its module preset (`primus/configs/modules/megatron/<config>`) with the model preset's
/// keys where the module has none (`primus/configs/models/megatron/<model>`), the experiment's `overrides:`
/// and then `overrides` (Primus's command-line overrides: `--key value`, `--key=value`, `key=value`) on top —
/// each file with its `${VAR:default}` from `env` and its `extends:` presets merged under it, as Primus's
/// parser builds it — each key as an argument-dump destination back to its flag.  The presets are found in
/// `$PRIMUS_PATH/primus/configs`, else above the experiment.  Primus's own schedules (zero bubble, its
/// pipeline algorithms), per-layer recompute ids and manual pipeline splits are said in `notes` as not
/// priced.  The world size is the launch's.
/// @param preset_default_flags when non-null, receives the flags (`--loss-scale-window`) whose value is the
///        module preset's own (Primus's defaults of every Megatron argument, which the experiment did not
///        set)
/// @throws InputError naming the file (and line) for an unreadable or malformed YAML, a missing preset, an
///         unset `${VAR}` without a default, no trainer module, or a framework other than megatron.
std::vector<std::string> megatron_words_from_primus_experiment(
    const std::string& path, const std::vector<std::string>& overrides,
    const std::map<std::string, std::string>& env, std::vector<std::string>& notes,
    std::set<std::string>* preset_default_flags = nullptr);

/// Where `args` name an AMD Primus experiment: the word of `--config` / `--exp` (flag_at), the word holding
/// the path (value_at: the next word, or flag_at itself for `--config=PATH`) and the path; nullopt when no
/// `--config` / `--exp` of `args` is a Primus experiment.
struct PrimusConfigArg {
  std::size_t flag_at = 0, value_at = 0;
  std::string path;
};
std::optional<PrimusConfigArg> find_primus_config_arg(const std::vector<std::string>& args);

/// The GPU folder an AMD Primus experiment of `args` (`--config` / `--exp`) sits in —
/// `examples/megatron/configs/MI300X/llama3.1_8B-BF16-pretrain.yaml` → "MI300X" — for the commands that price
/// time to default their system to it; "" when `args` name no Primus experiment or it is elsewhere.
std::string primus_experiment_gpu(const std::vector<std::string>& args);

/// The process environment as a map (for the `env` parameter above).
std::map<std::string, std::string> process_environment();

/// Vocabulary size Megatron's tokenizer of `tokenizer_type` reports, when it does not depend on a file
/// (GPT2BPETokenizer 50257, Llama2Tokenizer 32000, ...); 0 when unknown.
std::int64_t known_tokenizer_vocab_size(const std::string& tokenizer_type);

}  // namespace preflight::analyzer
