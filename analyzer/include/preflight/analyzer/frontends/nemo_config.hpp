#pragma once
/// @file nemo_config.hpp
/// Front end: a NeMo 1.x ("NeMo Megatron", 2022–2024) training configuration — the Hydra YAML that NeMo's
/// examples/nlp/language_modeling/megatron_gpt_pretraining.py (and its SFT / PEFT scripts) takes:
/// conf/megatron_gpt_config.yaml, megatron_llama_config.yaml, NeMo-Framework-Launcher's
/// conf/training/<model>/<size>.yaml, or the `hparams.yaml` a NeMo run saves — turned into the Megatron-LM
/// arguments of the same run, for parse_megatron_args().
///
/// The file has a `trainer` section (PyTorch Lightning's: `devices` × `num_nodes` is the world, `precision`
/// 16 / bf16 / 32 the numerics) and a `model` section whose fields are NeMo's names for Megatron's:
/// `encoder_seq_length` (the sequence), `activations_checkpoint_granularity|method|num_layers` (recompute),
/// `activation: fast-swiglu`, `normalization: rmsnorm | layernorm1p`, `bias: False`,
/// `position_embedding_type: rope`, `share_embeddings_and_output_weights`, `num_query_groups`,
/// `virtual_pipeline_model_parallel_size`, `ub_tp_comm_overlap`, `fp8` / `fp8_hybrid`, `num_moe_experts`,
/// `optim.name: distributed_fused_adam` with `overlap_grad_sync` / `overlap_param_sync`, `tokenizer.library`
/// / `type` / `model` (the vocabulary: GPT2BPETokenizer's 50257, a SentencePiece model file, a Hugging Face
/// tokenizer), `peft.peft_scheme: lora`. OmegaConf interpolations that name another field
/// (`${.encoder_seq_length}`, `${model.encoder_seq_length}`, the launcher's `${training.model.…}`) are
/// resolved; resolvers (`${multiply:…}`) are not, and a field read that holds one is an error naming it.
/// Gated activations other than SwiGLU (GeGLU, ReGLU) are priced as SwiGLU (the same shapes), ALiBi-style
/// position biases as no position embedding, both said in `warnings`.
///
/// Hydra overrides (`model.tensor_model_parallel_size=2`, `trainer.num_nodes=16`, `+model.x=y`) change the
/// YAML first, as the training script applies them; other extra arguments are passed on after the converted
/// ones (torchrun's `--nproc_per_node` / `--nnodes` then replace the trainer's world).

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/frontends/bridge_config.hpp"

namespace preflight::analyzer {

/// Whether `text` is a NeMo 1 training configuration (a `model` mapping with NeMo's own field names —
/// encoder_seq_length, activations_checkpoint_*, megatron_amp_O2, mcore_gpt — or beside a `trainer`
/// section), a model configuration a run saved (`hparams.yaml`'s `cfg:`, a .nemo's `model_config.yaml` with
/// those fields at the top), or a NeMo 1 log printing one, rather than a Megatron-Bridge ConfigContainer.
/// False for text that is not YAML.
bool is_nemo1_config(const std::string& text);

/// Converts the NeMo 1 configuration `text` (`source` names it in messages); `extra` as above.  The result is
/// read by parse_bridge_args(), which names the file and field of a flag Megatron refuses.
/// @throws InputError naming the file and line (malformed YAML), or the file and field (a field of the wrong
///   type, an unresolved interpolation, a trainer size that is not a count).
BridgeConfigArgs nemo_config_text_to_megatron_args(const std::string& text, const std::string& source,
                                                   const std::vector<std::string>& extra);

/// The same from the file at `path`.
/// @throws InputError naming the file when it cannot be read, and as above.
BridgeConfigArgs nemo_config_to_megatron_args(const std::string& path, const std::vector<std::string>& extra);

/// True when `entry`'s file name is one of NeMo 1's Hydra training scripts: `megatron_*_pretraining.py`
/// (examples/nlp/language_modeling/megatron_gpt_pretraining.py, …_mamba_…, …_bert_…) or
/// `megatron_*_finetuning.py` (its tuning/ scripts).
bool is_nemo1_entry(const std::string& entry);

/// A launch of a NeMo 1 training script: the configuration file Hydra composes it from and the words left
/// for nemo_config_to_megatron_args() (the overrides and any launcher flags).
struct NemoLaunch {
  std::string config;             ///< the YAML file
  std::vector<std::string> rest;  ///< `words` without --config-path / --config-name (-cp / -cn)
};

/// The configuration a launch of `entry` with `words` reads, as Hydra finds it: `--config-path` (absolute,
/// else the working directory's, else beside the script) and `--config-name` (`.yaml` added), by default the
/// script's own `conf/` and the name its @hydra_runner gives (megatron_gpt_pretraining.py →
/// megatron_gpt_config, megatron_gpt_finetuning.py → megatron_gpt_finetuning_config).
/// @throws InputError (where = "--config-name") naming the places looked in when the file is not there.
NemoLaunch nemo1_launch(const std::string& entry, const std::vector<std::string>& words);

/// The NeMo 1 launch among Megatron-style `words` that name their training script with `--entry-point PATH`
/// (as preflight wrap and run pass it): nemo1_launch() of that script and the other words; nullopt when no
/// `--entry-point` names a NeMo 1 script.
/// @throws InputError as nemo1_launch().
std::optional<NemoLaunch> nemo1_launch_in(const std::vector<std::string>& words);

}  // namespace preflight::analyzer
