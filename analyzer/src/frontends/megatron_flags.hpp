#pragma once
// Private to the Megatron front end: the flags it knows, as read off the command line, and one reader per
// group of flags.  megatron_args.cpp scans the words and calls the readers in order; the model readers
// are in megatron_args_model.cpp (architecture, vocabulary, MoE, MLA), the run readers in
// megatron_args_run.cpp (launcher, parallel sizes, pipeline split, numerics, recompute, kernels).  A new
// flag goes into its group's table and reader.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "preflight/analyzer/frontends/megatron_args.hpp"

namespace YAML {
class Node;
}

namespace preflight::analyzer::megatron {

using I64 = std::int64_t;

enum class Arity { Switch, One, Many };
struct FlagSpec {
  const char* name;  ///< canonical spelling (dashes)
  Arity arity;
};

/// Each destination → value as Megatron's flags (megatron_args_dump.cpp): a store-false destination's False
/// as its own flag (`add_bias_linear False` → --disable-bias-linear), True as the switch, other values (list
/// items one by one; an enum member without its class, `AttnBackend.auto` → auto) after the flag; None, empty
/// and skipped destinations dropped; `renamed` gives the command line's name of a destination spelled
/// otherwise.  Values as an argument dump prints them: True / False / None, lists as `[a, b]`.
void append_destinations_as_flags(const std::map<std::string, std::string>& dests,
                                  const std::set<std::string>& skip,
                                  const std::map<std::string, std::string>& renamed,
                                  std::vector<std::string>& words);

/// A YAML value as an argument dump prints a destination's (the input of append_destinations_as_flags): null
/// → None, a boolean → True / False, a list of scalars → `[a, b]`, a scalar as written; "" for a mapping.
/// @throws InputError naming `file` and the line for a list of lists.
std::string yaml_dest_value(const YAML::Node& n, const std::string& key, const std::string& file);

/// Flags of each group (their readers below).
const std::vector<FlagSpec>& launcher_flags();
const std::vector<FlagSpec>& model_flags();
const std::vector<FlagSpec>& parallel_flags();
const std::vector<FlagSpec>& training_flags();  ///< numerics, optimizer, recompute, kernels
const std::vector<FlagSpec>& mindspeed_flags();  ///< MindSpeed-LLM's own (megatron_args_mindspeed.cpp)

I64 parse_int(const std::string& flag, const std::string& v);
double parse_float(const std::string& flag, const std::string& v);

/// The known flags given, with typed access.  `seen` maps the canonical flag to its raw value ("" for a
/// switch).
class Flags {
 public:
  explicit Flags(const std::map<std::string, std::string>& seen) : seen_(seen) {}
  bool has(const char* f) const { return seen_.count(f) > 0; }
  const std::string& get(const char* f) const { return seen_.at(f); }
  I64 int_or(const char* f, I64 dflt) const { return has(f) ? parse_int(f, get(f)) : dflt; }
  double float_or(const char* f, double dflt) const { return has(f) ? parse_float(f, get(f)) : dflt; }
  /// @throws InputError when absent: "is required (the analysis cannot guess this size)".
  I64 require_int(const char* f) const;
  /// The values of a many-valued flag (Arity::Many, stored space-joined), in order; none when absent.
  std::vector<std::string> list(const char* f) const;

 private:
  const std::map<std::string, std::string>& seen_;
};

// --- megatron_args_model.cpp -----------------------------------------------------------------------
/// Layers, hidden size, heads, kv groups, FFN, activation, norms, positions, biases, dropout, MTP.
/// Sizes are required unless `base` gives them; also the sequence length (st.seq_length, which
/// --max-position-embeddings defaults to).
void read_architecture(const Flags& f, const ModelSpec* base, ModelSpec& m, Strategy& st,
                       std::vector<std::string>& warnings);
/// Vocabulary: a readable --vocab-file, then --vocab-size (NullTokenizer: + 1), then the base model's,
/// then the tokenizer's known size.
void read_vocabulary(const Flags& f, const ModelSpec* base, ModelSpec& m, std::vector<std::string>& warnings);
/// Experts (--num-experts, top-k, FFN sizes, --moe-layer-freq, capacity) and multi-latent attention.
void read_moe_and_mla(const Flags& f, const ModelSpec* base, ModelSpec& m);
/// MegaBlocks's Megatron fork (databricks/megablocks: --moe-num-experts, --moe-top-k, --moe-capacity-factor,
/// --mlp-type mlp|glu, …) rewritten into Megatron's flags in `seen` before the readers run: its dMoE
/// (dropless) or MoE (padded to capacity) in every layer, top 1 by default, grouped GEMMs, all-to-all; the
/// notes in `warnings`.  @throws InputError for a flag of one dialect mixed with the other's, or a value
/// MegaBlocks does not take.
void translate_megablocks_moe(std::map<std::string, std::string>& seen, std::vector<std::string>& warnings);
/// Pai-Megatron-Patch's shared expert (also in ROCm/Megatron-LM's DeepSeek scripts), rewritten in `seen`:
/// --enable-shared-expert takes its FFN from --moe-shared-expert-intermediate-size (what their scripts pass;
/// a different --num-shared-experts × --moe-ffn-hidden-size is said), else --shared-moe-ffn-hidden-size, else
/// --num-shared-experts × --moe-ffn-hidden-size.  @throws InputError for the switch without any size, a
/// negative count, or a count without --moe-ffn-hidden-size.
void translate_pai_shared_expert(std::map<std::string, std::string>& seen,
                                 std::vector<std::string>& warnings);
/// After the world is known: MegaBlocks's --moe-expert-model-parallelism shards the experts over the
/// data-parallel group (ep = dp; ep = the experts when dp is a multiple of them, each expert's FFN then
/// sharded further, priced as replicas).  @throws InputError when neither divides the other.
void megablocks_expert_parallel(const Flags& f, MegatronConfig& cfg);

// --- megatron_args_mindspeed.cpp --------------------------------------------------------------------
/// MindSpeed-LLM's flags (Ascend/MindSpeed-LLM mindspeed_llm/features_manager) rewritten into Megatron's in
/// `seen` before the readers run: --first-k-dense-replace with --moe-layer-freq (its transformer_block.py
/// rule), --n-shared-experts, --shared-expert-gate, --noop-layers and --num-layer-list (as Megatron's
/// pipeline layout of the real layers), --context-parallel-algo (cp_comm_type), --moe-tp-extend-ep,
/// alltoall_seq, --geglu / --gelu-tanh (gated), --interleave-sliding-window, --full-attention-interval
/// (Qwen3-Next's gated delta nets), LoRA by --lora-target-modules with --lora-r; notes in `warnings`.
/// @throws InputError for DeepSeek sparse attention, hyper-connections, a --stage other than sft, and
/// inconsistent layer lists.
void translate_mindspeed(std::map<std::string, std::string>& seen, std::vector<std::string>& warnings);
/// After the readers: --swap-optimizer as the optimizer states on the host; --reuse-fp32-param as a main
/// parameter copy of 2 bytes (the bf16 parameter plus a 16-bit residual).
void mindspeed_after(const Flags& f, MegatronConfig& cfg);

// --- megatron_args_run.cpp -------------------------------------------------------------------------
/// torchrun's --nproc_per_node/--nnodes (or PET_*), --world-size, and the tp/pp/cp/ep/etp sizes.
void read_launcher_and_sizes(const Flags& f, const std::map<std::string, std::string>& env,
                             MegatronConfig& cfg);
/// After every other reader: a launch that starts fewer ranks than tp·pp·cp (·ep) needs is analysed on the
/// fewest it runs on (dp = 1), with a warning naming the flag to set and its value (`--nnodes 16`); no
/// launcher sizes at all: the same, as an assumption.
void fit_world_size(const Flags& f, const std::map<std::string, std::string>& env, MegatronConfig& cfg);
/// Megatron's rules for the interleaved schedule's micro-batch groups (schedules.py): the group lies in
/// [pp, micro batches] and the last group has 0 or >= pp micro batches.  @throws InputError otherwise.
void check_interleaved_groups(const Strategy& st);
/// `--cpu-offloading` / `--cpu-offloading-num-layers N` (N > 0 turns it on, as Megatron does), with
/// Megatron's rules (core/transformer/transformer_config.py): 0 <= N < layers, no pipeline parallelism, no
/// recompute.
/// @throws InputError naming the flag otherwise.
void read_cpu_offloading(const Flags& f, MegatronConfig& cfg);
/// `--defer-embedding-wgrad-compute` with `--wgrad-deferral-limit N` (Megatron's rules,
/// core/model_parallel_config.py: pp > 1, gradient-accumulation fusion on, N >= 0).
/// @throws InputError naming the flag otherwise.
void read_embedding_wgrad_deferral(const Flags& f, MegatronConfig& cfg);
/// Megatron-DeepSpeed (--deepspeed): DeepSpeed's ZeRO stage from the --deepspeed_config file (its
/// zero_optimization.stage) when it can be read, else --zero-stage (default 1), with a note when the file is
/// missing or empty.  ZeRO-1 is the distributed optimizer; ZeRO-2 / 3 shard gradients / parameters as FSDP
/// does.
/// @throws InputError naming the file when it is not JSON.
void read_deepspeed(const Flags& f, MegatronConfig& cfg);
/// --recompute-modules and the deprecated --moe-layer-recompute (part of read_recompute).
void read_recompute_modules(const Flags& f, Strategy& st);
/// Micro/global batch, sequence parallel, rank order, uneven and virtual pipeline splits, the layout.
void read_pipeline_split(const Flags& f, MegatronConfig& cfg);
/// Precision, fp8, optimizer and gradient reduction.
void read_numerics(const Flags& f, Strategy& st);
/// --recompute-granularity / -method / -num-layers / -modules (and the old --recompute-activations).
void read_recompute(const Flags& f, Strategy& st);
/// CUDA graphs (--cuda-graph-impl, --cuda-graph-modules / the older --cuda-graph-scope, --enable-cuda-graph,
/// --external-cuda-graph), as Megatron's arguments.py and TransformerConfig resolve them: sets
/// Strategy::moe_experts_cuda_graph.
/// @throws InputError naming the flag for an unknown implementation or module, or a combination Megatron
/// refuses (both deprecated switches, a deprecated switch with --cuda-graph-impl, --cuda-graph-scope with
/// --cuda-graph-modules, modules with --cuda-graph-impl full_iteration).
void read_cuda_graphs(const Flags& f, Strategy& st);
/// --transformer-impl, attention backend, cross-entropy fusion.
void read_kernels(const Flags& f, MegatronConfig& cfg);
/// --te-precision-config-file: Megatron's per-module quantization recipe (configs + ordered glob matchers)
/// into Strategy::precision_overrides; a file not on this machine is said and not applied.
/// @throws InputError naming FILE:LINE: key for a malformed file or a matcher Megatron would refuse
void read_precision_config(const Flags& f, MegatronConfig& cfg);

/// `--hybrid-layer-pattern` (or the deprecated `--hybrid-override-pattern`) as Megatron's
/// parse_hybrid_pattern reads it: "main/mtp/mtp…" — the main layers (M, *, -, E) in `|`-separated pipeline
/// segments, then one identical MTP depth per `/` (or the legacy `--mtp-hybrid-override-pattern` for
/// `--mtp-num-layers` depths).
struct HybridPatternFlag {
  const char* flag = nullptr;  ///< the flag given; nullptr when neither is
  std::string layers;          ///< the main pattern without its `|`
  std::vector<int> segments;   ///< layers per `|` segment (one entry without pipes)
  std::string mtp;             ///< one MTP depth's layers; empty without MTP
  int depths = 0;              ///< MTP depths
};
/// @throws InputError naming the flag for an unknown or unmodelled symbol, differing or unmodelled MTP
/// depths, pipes in a depth, or an empty main pattern.
HybridPatternFlag read_hybrid_pattern_flag(const Flags& f);

}  // namespace preflight::analyzer::megatron
