#pragma once
/// @file presets.hpp
/// Built-in models by name, and the one entry point that turns `--model NAME|config.json|URL` into a
/// ModelSpec.
///
/// Each preset is written as the architecture fields of the model's published Hugging Face config.json
/// (or, for GPT-3, of its paper's Table 2.1 in config.json form) and converted by the same front end as a
/// user's file (hf_config.hpp), so a preset and the real config.json give the same ModelSpec.  The presets
/// are data: analyzer/data/models/<name>.json (the config.json) listed in analyzer/data/models/presets.json
/// (name, aliases, repository, source: returned by preset_source()), embedded into the binary at build.
///
/// Known names: llama2-7b, llama2-13b, llama2-70b, llama3-8b, llama3-70b, llama3-405b, gpt3-175b,
/// mistral-7b, mixtral-8x7b, mixtral-8x22b, qwen2.5-7b, qwen2.5-72b, qwen3-8b, qwen3-32b, qwen3-30b-a3b,
/// qwen3-235b-a22b, deepseek-v2-lite, deepseek-v2, deepseek-v3.  Names are matched case-insensitively,
/// with `_` read as `-`; the Hugging Face repository id (`meta-llama/Meta-Llama-3-8B`) and a few aliases
/// (`llama3.1-405b`, `gpt3`) also work.

#include <optional>
#include <string>
#include <vector>

#include "preflight/analyzer/model/model_spec.hpp"

namespace preflight::analyzer {

/// Canonical preset names, in the order `--help` lists them.
std::vector<std::string> preset_names();

/// True when `name` (or an alias / repository id) names a preset.
bool is_preset(const std::string& name);

/// The published architecture of a well-known model; ModelSpec::name is the canonical preset name.
/// @throws InputError("--model", …) for an unknown name; the message lists the known names.
ModelSpec preset_model(const std::string& name);

/// Where a preset's numbers come from (model card / paper), one line.
/// @throws InputError as preset_model().
std::string preset_source(const std::string& name);

/// The canonical name of the preset whose Hugging Face repository `repo` (ORG/REPO) is — or is a chat /
/// instruct / base / thinking / FP8 / dated variant of (deepseek-ai/DeepSeek-V3-Base,
/// Qwen/Qwen2.5-7B-Instruct), which share its architecture and tokenizer; "" when none is.
std::string preset_of_repository(const std::string& repo);

/// The canonical name of the preset whose repository `repo` (ORG/REPO) re-uploads under another organisation:
/// the same repository name, or a variant of it (NousResearch/Meta-Llama-3-8B, unsloth/Llama-3.1-8B-Instruct
/// — mirrors of gated repositories that launch scripts name as their tokenizer); "" when none does or when
/// preset_of_repository() already names one.  A mirror keeps the tokenizer; its config.json is not read here,
/// so callers say that they took the preset's.
std::string preset_of_reupload(const std::string& repo);

/// The embedding size (config.json `vocab_size`, tokens) of a Hugging Face repository that is no preset but
/// whose tokenizer launch scripts name (`--tokenizer-model Qwen/Qwen3-0.6B`, `nvidia/Nemotron-H-8B-Base-8K`):
/// analyzer/data/models/tokenizers.json, each family with its source.  Matched as preset_of_repository()
/// matches (the repository or a chat / instruct / base / dated variant), else by the repository's name under
/// another organisation (a re-upload, `by_name`).  nullopt when the table has none.
struct RepositoryVocab {
  long long vocab_size = 0;
  std::string repo;    ///< the table's repository matched
  std::string source;  ///< where the number comes from
  bool by_name = false;
};
std::optional<RepositoryVocab> tokenizer_vocab_of_repository(const std::string& repo);

/// The folder of the Hugging Face cache holding repository `repo`'s (ORG/REPO) config.json, as
/// `from_pretrained` finds it offline: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else
/// `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`; in it
/// `models--ORG--REPO/snapshots/<the revision refs/main names>/` (else the newest snapshot with a
/// config.json).
/// "" when it is not cached.
std::string hf_cached_snapshot(const std::string& repo);

/// `--model` resolution: an `http(s)://` URL of a config.json; else an existing config.json file or a
/// checkpoint directory holding one; else a preset name (or a preset's repository id); else a Hugging Face
/// repository id `ORG/REPO`: its config.json in the local Hugging Face cache (hf_cached_snapshot()), else
/// read from `<hf_endpoint()>/ORG/REPO/resolve/main/config.json` (with $HF_TOKEN for gated repositories, see
/// load_hf_config()) unless $HF_HUB_OFFLINE is set.
/// @param warnings  when non-null, receives the front end's warnings (simplifications it took)
/// @throws InputError naming the URL, file or field (see hf_config.hpp), or "--model" when the word is
///         neither an existing file nor a preset (the message lists the presets).
ModelSpec load_model(const std::string& name_path_or_url, std::vector<std::string>* warnings = nullptr);

}  // namespace preflight::analyzer
