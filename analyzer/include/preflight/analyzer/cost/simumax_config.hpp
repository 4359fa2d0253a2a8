#pragma once
/// @file simumax_config.hpp
/// Readers for SimuMax v1.2's three JSON config kinds (`simumax/core/config.py`: ModelConfig,
/// StrategyConfig, SystemConfig; field tables in notes/simumax.md §4) into the one model
/// (ModelSpec, Strategy, SystemSpec), and the bundled presets (SimuMax's shipped strategy and system
/// files, embedded at build time; see analyzer/data/simumax/README.md).
///
/// Accepted: every field SimuMax's dataclasses take, plus the derived keys SimuMax writes into its own
/// dumps (`dp_size`, `parallelism`, `param_numel`, `real_comm_bw`, …), which are checked for consistency
/// where they restate an input (`dp_size`, `edp_size`, `global_batch_size`) and otherwise ignored.
/// Rejected (InputError, exit 2, naming `FILE: field`): unknown keys, wrong JSON types, values SimuMax
/// asserts against (divisibility, enums), malformed JSON (`FILE:LINE`).

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer::cost {

/// A SimuMax strategy file as read: the Strategy plus the network names the file asked for
/// (`tp_net`, …).  SimuMax silently re-chooses every network in `run_estimate`; so do we, but the
/// estimate reports a warning for each requested name that differs from the chosen one.
struct SimuMaxStrategy {
  Strategy strategy;
  std::map<std::string, std::string> requested_networks;  ///< "tp_net" → name, only non-"auto" entries
};

/// Parses JSON text; a syntax error becomes InputError("FILE:LINE", …).
nlohmann::json parse_json_text(const std::string& text, const std::string& where);
/// Reads and parses a JSON file. @throws InputError naming the file (missing, unreadable, malformed).
nlohmann::json read_json_file(const std::filesystem::path& path);

/// True when the JSON object looks like a SimuMax model config (has `head_num` and `hidden_size`, as
/// opposed to a Hugging Face config.json with `num_attention_heads`).
bool is_simumax_model_json(const nlohmann::json& j);

/// SimuMax ModelConfig → ModelSpec (RMSNorm, no biases, rotary positions, untied embeddings, no
/// dropout: what SimuMax models).  `orig_vocab_size`, when present, is the tokenizer size (the dumps'
/// `vocab_size` is already padded).  `dense_layers` leading layers of a MoE model get dense MLPs.
/// `group_linear_mode: serial` is refused (SimuMax's per-expert mode is not modelled).
/// @param where  file name used in error messages
ModelSpec read_simumax_model(const nlohmann::json& j, const std::string& where);

/// SimuMax StrategyConfig → Strategy.  `micro_batch_num` becomes global_batch_size = mbs·mbc·dp;
/// recompute fields become Strategy::layer_recompute; `zero_state`, `mem_factor`, `te_version`, fused
/// kernel flags, CP/MoE/VPP knobs map onto the cost-model fields of Strategy.
SimuMaxStrategy read_simumax_strategy(const nlohmann::json& j, const std::string& where);

/// SimuMax SystemConfig → SystemSpec.  `intra_with_pcie` may sit in `networks` (SimuMax's input
/// files) or at the top level (SimuMax's dumps).  Requires `accelerator.op.default` and
/// `accelerator.bandwidth.default`.
SystemSpec read_simumax_system(const nlohmann::json& j, const std::string& where);

/// Names of the bundled strategy presets (SimuMax's `configs/strategy/*.json`, e.g. `tp1_pp2_dp4_mbs1`).
std::vector<std::string> strategy_preset_names();
/// Names of the bundled system presets (SimuMax's `configs/system/*.json`: `a100_pcie`, `b200_bf16_ceperm`).
std::vector<std::string> system_preset_names();
/// The JSON text of a bundled preset; empty when there is none of that name (system presets: any spelling
/// system_preset_for() resolves).
std::string strategy_preset_json(const std::string& name);
std::string system_preset_json(const std::string& name);

/// The system preset a name means: the exact name; else, case and '_' / '-' aside and without a vendor or
/// form-factor word (nvidia, dgx, hgx, sxm, sxm4, sxm5, nvl72, nvl, amd, instinct, huawei, gpu), the product
/// (`H100` and `h100_80gb` → h100-sxm, `DGX-B200` → b200, `GB200-NVL72` → gb200, `910B` → ascend-910b,
/// `a100-80gb` → a100-sxm-80gb, `a100-pcie` → SimuMax's a100_pcie, `MI300` → mi300x).  "" when none; a name
/// that fits several presets (`a100`: 40 or 80 GB) is "" too — system_preset_choices() lists them.
std::string system_preset_for(const std::string& name);
/// The presets an ambiguous name could mean (`a100` → a100-sxm-40gb, a100-sxm-80gb); empty otherwise.
std::vector<std::string> system_preset_choices(const std::string& name);

/// Names of the bundled SimuMax model configs (`configs/models/*.json`), used as `simumax:<name>`.
std::vector<std::string> simumax_model_preset_names();

/// `--model` resolution for the cost model: a SimuMax model JSON file (recognised by `head_num` /
/// `layer_num`), or `simumax:<name>` for a bundled SimuMax model config; any other file is read as a
/// Hugging Face config.json (hf_config.hpp); a folder, URL, `ORG/REPO` or preset name goes to
/// analyzer::load_model() (presets.hpp).
/// @param warnings  when non-null, receives the front end's warnings
/// @throws InputError naming the file or field, or "--model" listing what is known.
ModelSpec load_cost_model(const std::string& word, std::vector<std::string>* warnings = nullptr);

/// `--strategy` resolution: an existing file, else a bundled preset name.
/// @throws InputError("--strategy", …) listing the presets when the word is neither.
SimuMaxStrategy load_simumax_strategy(const std::string& path_or_name);
/// `--system` resolution: an existing file, else a bundled preset name.
SystemSpec load_simumax_system(const std::string& path_or_name);

}  // namespace preflight::analyzer::cost
