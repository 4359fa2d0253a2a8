#pragma once
/// @file hf_config.hpp
/// Front end: a Hugging Face `config.json` (a file, a checkpoint directory, or an http(s) URL) → ModelSpec.
///
/// Understood `model_type`s and the fields read (names as in
/// `transformers/models/<type>/configuration_*.py`):
///  - every type: `hidden_size`, `num_hidden_layers`, `num_attention_heads`, `num_key_value_heads`
///    (GQA; default = heads), `head_dim` (default hidden / heads; Qwen3, Mistral-Nemo set it),
///    `intermediate_size`, `vocab_size`, `max_position_embeddings`, `tie_word_embeddings` (default false, as
///    these classes declare), `attention_dropout`.  All are RMSNorm + rotary + gated MLP (SwiGLU; a gated
///    GeLU has the same sizes) without dropout on the residual stream.
///  - `llama`, `mistral`: `attention_bias` (q, k, v and o biases), `mlp_bias`.
///  - `qwen2`: q, k and v biases always (Qwen2Attention); `qwen3`: `attention_bias`, and q/k RMSNorm per head
///    (ModelSpec::qk_layernorm).
///  - `mixtral`: `num_local_experts`, `num_experts_per_tok`; `intermediate_size` is the expert FFN; every
///    layer is MoE.
///  - `gpt_oss`: as mixtral, with `attention_bias`; `sliding_window` on the layers `layer_types` marks
///    "sliding_attention" (every other one).  Expert and router biases and the attention sinks are not
///    counted.
///  - `sliding_window` (Mistral, Mixtral, GPT-OSS; Qwen with `use_sliding_window`), per layer by
///  `layer_types`
///    when given (ModelSpec::layer_has_window).
///  - `qwen2_moe`, `qwen3_moe`: `num_experts`, `num_experts_per_tok`, `moe_intermediate_size`,
///    `shared_expert_intermediate_size` (qwen2_moe), `decoder_sparse_step`, `mlp_only_layers`; layer i is MoE
///    when i ∉ mlp_only_layers and (i + 1) % decoder_sparse_step == 0 (Qwen2MoeDecoderLayer).  The
///    shared-expert gate of qwen2_moe (hidden_size weights per layer) is not modelled.
///  - `deepseek`, `deepseek_v2`, `deepseek_v3`: `n_routed_experts` (null = dense), `n_shared_experts` (shared
///  FFN
///    = n_shared_experts · moe_intermediate_size, as Megatron's `--moe-shared-expert-intermediate-size`),
///    `moe_intermediate_size`, `num_experts_per_tok`, `first_k_dense_replace`, `moe_layer_freq`; layer i is
///    MoE when i ≥ first_k_dense_replace and i % moe_layer_freq == 0 (DeepseekV3DecoderLayer).  V2/V3 use
///    MLA: `q_lora_rank` (null = no query compression), `kv_lora_rank`, `qk_nope_head_dim`,
///    `qk_rope_head_dim`, `v_head_dim`.  The multi-token-prediction layers of V3
///    (`num_nextn_predict_layers`) are left out (a warning says so; ModelSpec::mtp_num_layers, Megatron's
///    `--mtp-num-layers`, includes them), and so is the router's score-correction bias (n_routed_experts
///    per layer).
///  - `nemotron_h` (Nemotron-H, Nemotron-3): `hybrid_override_pattern` (M / * / - / E per layer),
///    `mamba_num_heads`, `mamba_head_dim`, `ssm_state_size`, `n_groups`, `conv_kernel`, `chunk_size`,
///    `mlp_hidden_act` (relu2 = squared ReLU), `n_routed_experts`, `num_experts_per_tok`,
///    `moe_intermediate_size`, `moe_shared_expert_intermediate_size`, `moe_latent_size` (LatentMoE), and the
///    multi-token prediction as Megatron-Bridge's NemotronH bridge maps it: `num_nextn_predict_layers` depths
///    of `mtp_hybrid_override_pattern`, one repeated layer unless `mtp_use_repeated_layer` is false.
///  - `gpt2` (also how the GPT-3 preset is written): `n_embd`, `n_layer`, `n_head`, `n_inner` (null =
///  4·n_embd),
///    `n_positions` (learned position table), `vocab_size`, `attn_pdrop`, `resid_pdrop`; LayerNorm, GeLU,
///    biases everywhere, tied embeddings by default.
///  - `sarvam_mla` (Sarvam-105B): DeepSeek-V3's MLA fields with Sarvam's MoE names (`num_experts`,
///    `num_shared_experts`, `moe_intermediate_size`, `first_k_dense_replace`); `exaone_moe` (K-EXAONE) and
///    `hy_v3` (Hy3): GQA with q / k norms and the same MoE names (Hy3's older `expert_hidden_dim`), layer i
///    MoE as `mlp_layer_types` ("dense" / "sparse") or `is_moe_layer` (true / false) says when given;
///    EXAONE's windows from `sliding_windows` (0 = full attention) or `sliding_window` on the layers of
///    `layer_types` / `sliding_window_pattern` ("LLLG"); layers with different windows are refused.
///  - `minimax_m3` (MiniMax-M3's text_config, read by its architecture): `num_local_experts` of
///    `intermediate_size`, dense layers of `dense_intermediate_size`, `n_shared_experts` of
///    `shared_intermediate_size`, a 0 / 1 `moe_layer_freq` list (also accepted for the DeepSeek layout).
///  - `exaone4`, `olmo2`, `olmo3`: Llama's fields with q / k norms; their post-norm layers are priced as
///    pre-norm ones (a warning says so); windows as `exaone_moe` reads them.
/// A config without `model_type` is recognised by its `architectures` entry (`LlamaForCausalLM`, …).
/// The Megatron-only field ModelSpec::make_vocab_size_divisible_by keeps its default (128): the analysis
/// pads the vocabulary as Megatron would when training this model.
///
/// Errors are InputError with `where` = "<source>: <field>" (e.g. `config.json: num_attention_heads`) for
/// a missing, mistyped or inconsistent field, "<source>:<line>" for malformed JSON, and the path or URL for
/// an unreadable file or a failed download.

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/common/http.hpp"

namespace preflight::analyzer {

/// Converts a parsed config.json.
/// @param config    the top-level JSON object
/// @param source    how errors and the model name refer to it ("config.json", a path or a URL)
/// @param warnings  when non-null, receives one line per simplification taken (a vision tower not counted, …;
/// a
///                  checkpoint's MTP layers left out go to ModelSpec::checkpoint_mtp_note instead)
/// @throws InputError naming `<source>: <field>` for an unsupported model_type or a missing, mistyped
///         (non-integer, non-positive) or inconsistent field.
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& source,
                               std::vector<std::string>* warnings = nullptr);

/// Parses config.json text, then converts it as model_from_hf_config().
/// @throws InputError `<source>:<line>` with the JSON parser's message for malformed JSON.
ModelSpec parse_hf_config(const std::string& text, const std::string& source,
                          std::vector<std::string>* warnings = nullptr);

/// Reads a config.json from a file path, a directory holding `config.json` (a checkpoint), or an
/// http(s) URL (fetched with http_get(); Hugging Face `/blob/` page links are accepted).  For a URL on the
/// Hub (huggingface.co, hf.co, `$HF_ENDPOINT`) the token in `$HF_TOKEN` (else `$HUGGING_FACE_HUB_TOKEN`)
/// is sent, unless `http.bearer_token` is already set, so gated repositories (meta-llama/…) can be read.
/// ModelSpec::name is the Hugging Face repository when the URL names one, else `_name_or_path`, else the
/// checkpoint directory's name.
/// @throws InputError for a missing or unreadable file, a failed download (see http_get) or bad content.
ModelSpec load_hf_config(const std::string& path_or_url, std::vector<std::string>* warnings = nullptr,
                         const HttpOptions& http = {});

/// The note of a checkpoint's MTP layers left out (ModelSpec::checkpoint_mtp_note) when `final_model` — the
/// model after the launch's flags — builds none; empty when it builds them (`--mtp-num-layers N`) or the
/// checkpoint has none.  Each command adds it to its warnings.
std::string mtp_left_out_note(const ModelSpec& final_model);

/// The `model_type` values understood, sorted.
const std::vector<std::string>& supported_hf_model_types();

}  // namespace preflight::analyzer
