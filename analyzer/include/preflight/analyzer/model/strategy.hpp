#pragma once
/// @file strategy.hpp
/// Strategy: how a ModelSpec is trained — parallel layout, batch, precision, optimizer sharding,
/// recompute and kernels.  Megatron-LM semantics throughout (`megatron/training/arguments.py`,
/// `megatron/core/parallel_state.py`, `megatron/core/transformer/transformer_block.py`).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "preflight/analyzer/model/model_spec.hpp"

namespace preflight::analyzer {

/// Parameter / compute precision (`--fp16`, `--bf16`, default fp32).
enum class Precision { FP32, FP16, BF16 };
/// Low-precision GEMMs; None = off.  E4M3 / Hybrid: FP8 (`--fp8-format`).  E2M1: FP4 (`--fp4-format e2m1`,
/// NVFP4 on Blackwell: 4-bit elements with an e4m3 scale per 16), which Megatron runs through the same
/// Transformer Engine autocast as FP8 — every code path that treats "the fp8 GEMMs" treats these.
enum class Fp8Format { None, E4M3, Hybrid, E2M1 };
/// How low-precision tensors are scaled (`--fp8-recipe`, Megatron's default delayed): per tensor (delayed
/// or current, `tensorwise`), per 32-element block (`mxfp8`, Blackwell), per 128-element block
/// (`blockwise`), or a user's quantizer factory (`custom`); with FP4 (`--fp4-recipe`) NVFP4 block scaling
/// (`nvfp4`) or `custom`.  The cost model prices MXFP8 GEMMs with the system's `mxfp8_gemm_scale` and NVFP4
/// GEMMs with its `nvfp4_gemm_scale` (system_spec.hpp); the others as FP8.
enum class Fp8Recipe { Delayed, Tensorwise, Mxfp8, Blockwise, Custom, Nvfp4 };
/// `--recompute-granularity`.
enum class RecomputeGranularity { None, Full, Selective };
/// `--recompute-method` (only with full recompute).
enum class RecomputeMethod { Uniform, Block };
/// Core attention kernel: flash/fused (no s² tensors kept) or math/unfused (softmax kept).
enum class AttentionBackend { Flash, Math };
/// Optimizer (`--optimizer`): Adam keeps two fp32 moments, SGD one momentum buffer.  Muon (Megatron's
/// emerging optimizer, `core/optimizer/emerging_optimizers.py` TensorParallelMuon) keeps one momentum
/// buffer for each 2-D weight but the word embedding and the output layer (its "matrices",
/// `layer_wise_optimizer.py` is_managed_by_layer_wise_optimizer), orthogonalized by Newton-Schulz steps at
/// each step; the other parameters take its scalar optimizer (Adam by default).
enum class Optimizer { Adam, SGD, Muon };

/// Which implementation of the network runs (`--transformer-impl`).
///  - MegatronCore: Megatron-core modules with fused kernels (Transformer Engine or apex;
///  `transformer_engine`,
///    `local`), saving what Korthikanti et al. 2022 Table 2 lists.
///  - TorchCpu: the plain-PyTorch eager GPT of examples/torch_cpu_gpt (`torch_cpu`): math attention with
///    contiguous q/k/v copies, PyTorch's CPU dropout (a noise tensor in the activation dtype instead of a
///    1-byte mask), LayerNorm statistics in the activation dtype, SwiGLU keeping its SiLU output,
///    vocab-parallel cross entropy keeping fp32 softmax + target mask + masked targets,
///    torch.utils.checkpoint keeping the CPU RNG state.  See layer_graph.hpp.
enum class TransformerImpl { MegatronCore, TorchCpu };

/// Which pipeline schedule a stage runs.
enum class PipelineSchedule { OneFOneB, Interleaved };

/// How context parallelism exchanges keys/values (`--cp-comm-type`): ring send/recv (Megatron's
/// default), all-to-all of heads (Ulysses-style; SimuMax `cp_comm_type: a2a`), or all-gather of k/v.
enum class CpCommType { P2P, AllToAll, AllGather };

/// How MoE tokens reach their experts over expert parallelism (`--moe-token-dispatcher-type`):
/// - AllGather: Megatron's default — every rank all-gathers the ep group's tokens and keeps those routed to
///   its experts; the combine reduce-scatters (volume per rank: (ep − 1)/ep of ep · tokens · h, whatever
///   top-k is).
/// - AllToAll: each routed copy (tokens · top-k rows) is sent to the rank of its expert (SimuMax's only one).
/// - Flex: DeepEP / HybridEP (`flex` with `--moe-flex-dispatcher-backend`, or `--moe-enable-deepep`): as
///   AllToAll inside a node, but a token crosses to another node once per node hosting any of its experts
///   and is forwarded there over NVLink (DeepSeek-V3 report §3.2.2; deepseek-ai/DeepEP "normal kernels").
enum class MoeDispatcher { AllGather, AllToAll, Flex };

/// Which parts of a transformer layer are recomputed, at the granularity of SimuMax v1.2
/// (`StrategyConfig.recompute_granularity`, notes/simumax.md §4.2).  Megatron's
/// `--recompute-granularity/--recompute-method/--recompute-modules` map onto it
/// (Strategy::effective_layer_recompute).
enum class RecomputeScope {
  None,
  FullBlock,  ///< the whole layer (Megatron full recompute); only the layer input is kept
  AttnOnly,   ///< attention side except the input norm
  MlpOnly,    ///< pre-MLP norm and the whole MLP / MoE side
  SdpOnly,    ///< core attention only (Megatron selective `core_attn`)
  Selective,  ///< SimuMax's four switches, or Megatron `--recompute-modules` (megatron_modules)
};

/// Recompute of the first `layers` transformer layers of every pipeline chunk (SimuMax
/// `recompute_layer_num`: the count restarts in each stage and each virtual chunk).
struct LayerRecompute {
  RecomputeScope scope = RecomputeScope::None;
  int layers = 0;  ///< layers per chunk that recompute (from the chunk's first layer)
  int layers_per_checkpoint =
      1;                ///< FullBlock: consecutive layers sharing one checkpoint (Megatron uniform N)
  bool enabled = true;  ///< SimuMax `enable_recompute` master switch (false: nothing is discarded)
  // Selective switches (SimuMax `attn_recompute`, `mla_rms_recompute`, `mlp_recompute`, `mlp_rms_recompute`):
  bool attn = false;       ///< q/kv up projections, q/kv norms, rope, core attention
  bool attn_norm = false;  ///< + input norm and q/kv down projections (needs attn)
  bool mlp = false;        ///< fc1/activation/fc2, or the grouped expert GEMMs
  bool mlp_norm = false;   ///< + pre-MLP norm, router and shared expert (needs mlp)
  bool variance = false;   ///< SimuMax `recompute_variance`: the last op of each checkpoint is not re-run
  /// Megatron-core `--recompute-modules` semantics (SimuMax `megatron_recompute`): layernorm,
  /// mla_up_proj, mlp, moe, moe_act.  Non-empty selects this mode instead of the switches.
  std::vector<std::string> megatron_modules;
};

/// TransformerEngine version and the releases whose memory behaviour SimuMax models
/// (`te_version`, `te_*_min_version`): dummy wgrad buffers (2.3 linear, 2.10 grouped), CP a2a saving
/// the pre-all-to-all attention output (2.8).  Versions are "major.minor.patch" strings.
struct TransformerEngineVersions {
  std::string version;  ///< empty = unknown (none of the version-dependent effects apply)
  std::string dummy_wgrad_min = "2.3.0";
  std::string cp_a2a_save_pre_posta2a_min = "2.8.0";
  std::string grouped_linear_dummy_wgrad_min = "2.10.0";
};

/// Parallel layout and training settings.  Sizes are counts; lengths are tokens.
/// True when the dotted version `version` ("2.11.0", "2.3") is at least `min`, compared as numbers
/// (major, minor, patch); false when either has no digit.
bool version_at_least(const std::string& version, const std::string& min);

/// Megatron-LM's `--pipeline-model-parallel-layout`
/// (megatron/core/transformer/pipeline_parallel_layer_layout.py): stages split by '|', "(x)*n" and "c*n"
/// repeat, commas ignored; E = embedding, t = transformer layer, m = MTP layer, L = loss.  Segment i is
/// virtual chunk i / pp of rank i % pp, so the segment count must be a multiple of pp (vpp = segments / pp).
/// Checks as Megatron: E first and once, L last and once, as many t as `num_layers`, as many m as
/// `mtp_num_layers`, all after the last t.  MTP layers are modelled on the last chunk of the last rank only
/// (layer_graph.hpp), so a layout placing them elsewhere is refused.  `megatron_version` (a checkout date,
/// "" for current): before 2025-08-26 a layout named no MTP layer (Megatron raised "MTP layer is not
/// supported for flexible pipeline layout") and the MTP block sat on the last stage by itself, so a layout
/// without 'm' is read so there; since then Megatron asserts the layout's MTP count.
/// @returns transformer layers per chunk, [vpp][pp].
/// @throws InputError naming `--pipeline-model-parallel-layout`.
std::vector<std::vector<int>> parse_pipeline_layout(const std::string& layout, int pp, int num_layers,
                                                    int mtp_num_layers,
                                                    const std::string& megatron_version = "");

/// The `--pipeline-model-parallel-layout` text of transformer layers per chunk [vpp][pp] (what
/// parse_pipeline_layout reads back): 'E' opens the first segment, 'L' closes the last after the
/// `mtp_num_layers` MTP layers ('m'), runs of equal segments are written `(seg|)*k,`.
std::string format_pipeline_layout(const std::vector<std::vector<int>>& chunk_layers, int mtp_num_layers = 0);

/// A pipeline layout for `num_layers` transformer layers over pp · vpp chunks that they do not divide:
/// transformer layers per chunk [vpp][pp] (Megatron's chunk order: segment k is chunk k / pp of rank
/// k % pp) that make the chunks' weights as even as possible, weighing a transformer layer 1, the
/// embedding 0, the output layer with the loss 1 and each MTP depth 2 (a transformer layer plus its own
/// output layer and loss), the last chunk holding the loss and the MTP depths.  Rounding excess is taken
/// from the heaviest chunks, the first chunk first (it holds the most micro batches in flight), then the
/// last; shortfall is added to the lightest, the middle ones first.  These weights give NeMo's published
/// DeepSeek-V3 layouts exactly (61 layers, one MTP depth: "Et*4|(t*4|)*14tmL" over 16 chunks,
/// "Et*8|(t*8|)*6t*5mL" over 8, "Et|(tt|)*30mL" over 32; Megatron-Bridge's deepseek_v3 recipes).
/// @throws InputError (`--pipeline-model-parallel-layout`) when pp · vpp chunks exceed the layers.
std::vector<std::vector<int>> balanced_pipeline_layout(int num_layers, int pp, int vpp, int mtp_num_layers);

/// First transformer layer (global index) of virtual chunk `v` of pipeline rank `r` in a [vpp][pp] table of
/// layers per chunk (Strategy::layers_per_chunk): chunk 0 of every rank first, then ranks < r of chunk v.
int chunk_first_layer(const std::vector<std::vector<int>>& chunk_layers, int v, int r);

/// What would make `slots` (the layers, with the embedding / loss when the split counts them) split over `pp`
/// stages when they do not divide: the pipeline sizes that divide them, a
/// --decoder-first/last-pipeline-num-layers pair, and a layout of the `num_layers` transformer layers
/// (balanced_pipeline_layout) in their place (one sentence, for error messages).
std::string uneven_split_advice(int slots, int pp, int num_layers);

/// Forward passes pipeline rank `rank` runs before its first backward under Megatron's interleaved schedule
/// (pipeline_parallel/schedules.py get_pp_rank_microbatches): (pp − 1 − rank) · 2 + (vpp − 1) · group +
/// `extra` (1 with the expert-parallel overlap's combined 1F1B), at most `total` (micro batches · vpp).
/// The one count of it: Strategy::interleaved_warmup and the cost model's simulated programs call it.
int megatron_interleaved_warmup(int pp, int vpp, int rank, int group, int extra, int total);

/// One enabled matcher of a `--te-precision-config-file` (Megatron's core/quantization/quant_config.py
/// RecipeConfig; extensions/TransformerEngineMixedPrecision.md): a glob over a module's path and the config
/// it selects, with that config's training recipe.
struct PrecisionOverride {
  std::string matcher;  ///< its name in the file
  std::string pattern;  ///< fnmatch glob over the module path (`*` crosses dots)
  std::string config;   ///< the config it selects
  /// The config's training recipe: the fp8 / fp4 recipe it names, "" for none.
  std::string recipe;
  bool fp4 = false;  ///< `recipe` is an fp4_quantization_recipe
  /// A Transformer Engine config with an empty training recipe (`training_recipe: {}`): the module runs in 16
  /// bits.  False for another low-precision recipe and for configs that are not Transformer Engine training
  /// recipes (both priced at the run's recipe).
  bool sixteen_bit = false;
};

struct Strategy {
  // --- layout ---
  int world_size = 1;     ///< total ranks (torchrun nproc_per_node · nnodes)
  int gpus_per_node = 8;  ///< ranks per node (names devices n{node}_g{gpu})
  int tp = 1;             ///< tensor-parallel size
  int pp = 1;             ///< pipeline-parallel size
  int cp = 1;             ///< context-parallel size
  int ep = 1;             ///< expert-parallel size
  int etp = 0;            ///< expert tensor-parallel size; 0 = same as tp (Megatron default)
  int vpp = 1;            ///< virtual pipeline chunks per rank (interleaved 1F1B when > 1)
  /// MindSpore's sequence pipeline (MindFormers `parallel_config.seq_split_num`, "seqpipe"): each micro batch
  /// cut along the sequence into this many pipeline units of seq_length / seq_split tokens, each attending to
  /// the keys of the whole sequence (per-layer key / value caches of the full sequence, and the full-sequence
  /// keys and values each unit's flash attention saves); 1F1B over micro batches × seq_split units, stage s
  /// holding pp − s + seq_split − 1 units (MindFormers toolkit/pipeline_balance sapp_solver.py
  /// compute_activation_seq_nums).  1 = off; needs cp = 1 and vpp = 1.
  int seq_split = 1;
  bool sequence_parallel = false;
  /// Megatron's rank order; "tp-cp-ep-dp-pp" (default), "tp-cp-ep-pp-dp" (`--use-tp-pp-dp-mapping`), or the
  /// older releases' "tp-pp-dp" (cp = ep = 1 only, the same groups).
  std::string order = "tp-cp-ep-dp-pp";
  /// Transformer layers on the first / last pipeline stage (`--decoder-first/last-pipeline-num-layers`);
  /// -1 = even split of what remains.
  int first_stage_layers = -1;
  int last_stage_layers = -1;
  /// Explicit transformer layers per pipeline stage (SAPP offsets); overrides the two fields above.
  std::vector<int> stage_layers;
  /// Transformer layers of virtual chunk v on pipeline rank r, [vpp][pp], from Megatron's
  /// `--pipeline-model-parallel-layout` (parse_pipeline_layout); overrides every split above.
  std::vector<std::vector<int>> chunk_layout;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;

  // --- batch ---
  std::int64_t seq_length = 0;  ///< tokens per sample s
  int micro_batch_size = 1;     ///< b
  int global_batch_size = 0;    ///< samples per iteration; 0 = micro_batch_size · dp

  // --- numerics and optimizer ---
  Precision precision = Precision::FP32;
  Fp8Format fp8 = Fp8Format::None;            ///< low-precision GEMMs: FP8, or FP4 (E2M1)
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed;  ///< `--fp8-recipe` / `--fp4-recipe` (only with fp8 / fp4)
  bool fp4() const { return fp8 == Fp8Format::E2M1; }
  /// Bytes per element of a tensor quantized for the low-precision GEMMs, as the fraction num / den: 1 / 1
  /// for FP8 (the per-block scales of MXFP8 / blockwise, ≤ 3 %, are not counted), 9 / 16 for NVFP4 (half a
  /// byte per element and a 1-byte e4m3 scale per 16: Transformer Engine's NVFP4Tensor).
  std::pair<std::int64_t, std::int64_t> lowp_bytes_fraction() const {
    return fp4() ? std::pair<std::int64_t, std::int64_t>{9, 16} : std::pair<std::int64_t, std::int64_t>{1, 1};
  }
  double lowp_element_bytes() const {
    auto [n, d] = lowp_bytes_fraction();
    return static_cast<double>(n) / static_cast<double>(d);
  }
  /// `--first-last-layers-bf16` with `--num-layers-at-start-in-bf16` / `--num-layers-at-end-in-bf16`
  /// (Megatron's defaults 1 / 1; fp8 runs other than delayed scaling): that many transformer layers at each
  /// end of the model (global indices) run outside fp8 (core/fp8_utils.py is_first_last_bf16_layer); 0 / 0
  /// otherwise.
  int bf16_layers_at_start = 0, bf16_layers_at_end = 0;
  /// `--fp8-param-gather` (every Megatron-Bridge FP8 recipe sets it) / `--fp4-param-gather` (its NVFP4
  /// recipe): the low-precision GEMMs' weights are kept quantized, so the distributed optimizer's parameter
  /// all-gather moves lowp_element_bytes() per element of them (1 for FP8, 9/16 for NVFP4; 2 for the rest).
  /// Megatron asserts the distributed optimizer or FSDP for fp8 (not for fp4: without it nothing is
  /// gathered); it does nothing without fp8 / fp4.  Weight memory is left
  /// at 16 bits (TE keeps a transposed / column-wise fp8 copy beside the fp8 weight), and FSDP's per-layer
  /// gathers stay priced at 16 bits.
  bool fp8_param_gather = false;
  /// `--fp8-output-proj` (Megatron TransformerConfig.fp8_output_proj, MXFP8 only): the output layer (LM
  /// head, and MTP's call of it) runs as a Transformer Engine linear under the MXFP8 autocast, its GEMMs at
  /// the fp8 rate with their quantizers; without it the head is Megatron's own bf16 ColumnParallelLinear.
  bool fp8_output_proj = false;
  /// `--te-precision-config-file FILE` as given, and its enabled matchers in the file's order (Megatron's
  /// per-module quantization recipe).  A linear that runs quantized under the run's recipe and whose module
  /// path (inside its model chunk) first matches a matcher of a 16-bit config runs in 16 bits
  /// (Op::sixteen_bit); a matcher of another quantized recipe leaves it at the run's (said: one low-precision
  /// format per run is priced); modules already in 16 bits stay so, as Megatron leaves them.
  std::string precision_config_file;
  std::vector<PrecisionOverride> precision_overrides;
  /// The first matcher whose glob matches `module_path` (Python's fnmatch, which Megatron uses), or nullptr.
  const PrecisionOverride* precision_override_for(const std::string& module_path) const;
  /// Transformer layer `layer` (global, of `num_layers`) runs its GEMMs in 16 bits although the run is fp8.
  bool layer_in_bf16(int layer, int num_layers) const {
    return fp8 != Fp8Format::None &&
           (layer < bf16_layers_at_start || layer >= num_layers - bf16_layers_at_end);
  }
  Optimizer optimizer = Optimizer::Adam;
  bool distributed_optimizer = false;               ///< shard fp32 master weights + moments over DP (ZeRO-1)
  /// Muon (optimizer == Muon; Megatron `--muon-*`).  With `--use-distributed-optimizer` (or the deprecated
  /// `--optimizer dist_muon`) Megatron runs the layer-wise distributed optimizer: each data-parallel rank
  /// owns whole parameters (about 1/dp of them), keeps their master copy and states, runs their Newton-Schulz
  /// steps, and all-gathers the updated weights (distributed_optimizer is set: gradients reduce-scattered,
  /// states sharded).  muon_param_layout false (`--no-use-layer-wise-param-layout`): the legacy ping-pong
  /// assignment — parameters sorted by size and dealt to the ranks 0…dp−1, dp−1…0, …, so a rank may own
  /// the embedding's states whole; gradients are all-reduced.
  struct Muon {
    bool layer_wise = false;
    bool param_layout = true;
    int ns_steps = 5;       ///< `--muon-num-ns-steps`
    bool split_qkv = true;  ///< `--muon-no-split-qkv` clears: q, k and v orthogonalized apart
    /// `--muon-tp-mode`: duplicated (each tp rank gathers the whole matrix and runs its Newton-Schulz steps),
    /// blockwise (each rank its shard), distributed (the steps' products reduced over tp).
    std::string tp_mode = "duplicated";
    int scalar_states = 2;  ///< `--muon-scalar-optimizer`: adam 2 states per parameter, lion 1
  } muon;
  /// `--offload-optimizer-states` (Megatron's OptimizerStateOffloader, distributed optimizer only): the
  /// moments and fp32 master weights go to the host after each step and come back before the next, so the
  /// optimizer bytes are on the device only at the step — not at the forward / backward peak.
  bool offload_optimizer_states = false;
  /// `--optimizer-cpu-offload` with `--optimizer-offload-fraction F` (Megatron's HybridDeviceOptimizer, with
  /// --use-precision-aware-optimizer): the optimizer states (master weights and moments) of a fraction F of
  /// the parameters live and are updated on the host; the device holds the rest.  0 = none.
  double optimizer_cpu_offload_fraction = 0;
  bool grad_reduce_in_bf16 = false;                 ///< `--grad-reduce-in-bf16`: bf16 main grads
  /// Without sequence parallelism, a column linear's backward all-reduce of dgrad runs under its wgrad GEMM
  /// (Megatron's async tensor-parallel all-reduce, on by default); false: `--no-async-tensor-model-parallel-
  /// allreduce` (Megatron before 2024; ROCm/Megatron-LM's scripts pass it), the all-reduce after the GEMM.
  bool tp_async_allreduce = true;
  bool accumulate_allreduce_grads_in_fp32 = false;  ///< fp16 only; forced on for bf16 by Megatron
  /// Optimizer state bytes per parameter: the master copy (16-bit training) and Adam's two moments (SGD:
  /// the first only).  fp32 by default; `--use-precision-aware-optimizer` with `--main-params-dtype`,
  /// `--exp-avg-dtype`, `--exp-avg-sq-dtype` (TransformerEngine FusedAdam) sets 16- or 8-bit ones.
  int master_param_bytes = 4, exp_avg_bytes = 4, exp_avg_sq_bytes = 4;

  /// Parameter storage other than Megatron's (16-bit weights, fp32 main grads, fp32 master copy): the bytes
  /// of a stored parameter, gradients in the same dtype and no master copy (MindSpore's param_init_type:
  /// fp32 in most bf16 recipes).  0 = Megatron's rule.
  int param_bytes = 0;
  /// Weights sliced over dp·cp like the optimizer states (MindSpore's optimizer parallel).
  bool shard_weights = false;
  /// Fully sharded data parallel (`--use-megatron-fsdp`, `--use-torch-fsdp2`): what is sharded over dp·cp
  /// (experts over their dp) is zero_stage — 1 optimizer states, 2 and gradients (reduce-scattered each micro
  /// batch), 3 and parameters (gathered layer by layer for each forward and backward, two layers' worth
  /// resident: the one computed and the one prefetched).
  bool fsdp = false;
  /// `--cpu-offloading-num-layers N` (Megatron's layer-level CPU offloading, pp 1 and no recompute only): the
  /// activations of the first N transformer layers go to host memory after their forward and come back for
  /// their backward, double-buffered (two layers' worth on the device); 0 = none.
  int cpu_offload_layers = 0;
  /// `--defer-embedding-wgrad-compute` (Megatron, pp > 1 with gradient-accumulation fusion): the output
  /// layer's weight-gradient GEMMs of its first `wgrad_deferral_limit` calls in an iteration (0: all) are
  /// held back and run on the last pipeline stage after its last backward, in the pipeline flush
  /// (schedules.py finish_embedding_wgrad_compute); until then each keeps its input and output gradient on
  /// the device (tensor_parallel/layers.py: embedding_activation_buffer, grad_output_buffer).
  bool defer_embedding_wgrad = false;
  int wgrad_deferral_limit = 0;  ///< `--wgrad-deferral-limit`, calls deferred per iteration; 0 = all
  /// Output-layer weight gradients deferred per iteration: min(limit, calls), calls = micro batches ×
  /// (1 + `mtp_layers`) — the multi-token-prediction heads call the same output layer; 0 without deferral.
  int deferred_output_wgrads(int mtp_layers) const {
    if (!defer_embedding_wgrad) return 0;
    const int calls = num_microbatches() * (1 + mtp_layers);
    return wgrad_deferral_limit > 0 ? std::min(wgrad_deferral_limit, calls) : calls;
  }
  /// `--num-distributed-optimizer-instances N` (Megatron's partial distributed optimizer): the optimizer
  /// states are sharded over dp·cp / N ranks (experts: their dp / N) and replicated over the N instances;
  /// gradients are reduce-scattered inside an instance and all-reduced across them.  1 = over the whole dp
  /// group.
  int dist_opt_instances = 1;
  /// Megatron-FSDP's `--outer-dp-sharding-strategy optim` (hybrid FSDP, with dist_opt_instances > 1): the
  /// optimizer states are sharded across the instances too — over the whole dp·cp group — while parameters
  /// and gradients stay sharded inside an instance.
  bool outer_dp_optim_shard = false;
  /// Megatron's gradient bucket, in parameters (elements): `--ddp-bucket-size N`, 0 = Megatron's default
  /// max(4e7, 1e6 · dp · cp) (core/distributed/distributed_data_parallel.py).  `--ddp-num-buckets N` (0 =
  /// not given) divides the rank's parameters into N buckets instead, whatever --ddp-bucket-size says
  /// (training/training.py resolve_ddp_bucket_size).  With --overlap-grad-reduce / --overlap-param-gather the
  /// last bucket of a stage's gradients (parameters) is the exposed one; the cost model counts a bucket's
  /// bytes at the gradient's element size (SimuMax: 4 bytes an element, kept under simumax_compat).
  std::int64_t ddp_bucket_elements = 0;
  int ddp_num_buckets = 0;
  /// MindSpore's `parallel_optimizer_config.optimizer_weight_shard_size`: a parameter's states (and, with
  /// shard_weights, its weights) are sliced over this many of its replicas when they divide by it, else over
  /// all of them (MindSpore docs, "Optimizer Parallel": the group size "will not take effect" otherwise).
  /// 0 = all replicas (MindSpore's -1).
  int shard_group_size = 0;
  /// dp·cp ranks the sharded states are divided over (dp·cp / dist_opt_instances, or shard_group_size).
  int dense_shard_group() const { return limited_shard_group(dp() * cp / std::max(1, dist_opt_instances)); }
  /// expert dp ranks the sharded expert states are divided over (expert_dp / dist_opt_instances, or
  /// shard_group_size).
  int expert_shard_group() const {
    return limited_shard_group(expert_dp() / std::max(1, dist_opt_instances));
  }
  /// `replicas`, or shard_group_size when that is set and divides them.
  int limited_shard_group(int replicas) const {
    return shard_group_size > 0 && replicas % shard_group_size == 0 ? shard_group_size : replicas;
  }
  /// Word embedding, output layer and loss split over tp (Megatron always; MindFormers not with
  /// vocab_emb_dp on one stage, or when tp does not divide the vocabulary).
  bool vocab_parallel = true;

  // --- recompute ---
  RecomputeGranularity recompute_granularity = RecomputeGranularity::None;
  RecomputeMethod recompute_method = RecomputeMethod::Uniform;
  int recompute_num_layers = 1;  ///< layers per checkpoint (uniform) or checkpointed layers per stage (block)
  /// Selective recompute modules (`--recompute-modules`): core_attn (default), mlp, moe, moe_act, layernorm.
  std::vector<std::string> recompute_modules = {"core_attn"};
  /// Megatron's fine-grained activation offloading (`--fine-grained-activation-offloading`, docs/user-guide/
  /// features/fine_grained_activation_offloading.md): each module of `offload_modules` ("attn_norm",
  /// "qkv_linear", "core_attn", "attn_proj", "mlp_norm", "expert_fc1", "moe_act", "fused_group_mlp") moves
  /// the input it saves for backward to the host in forward and back before its backward; tensors below
  /// `min_offloaded_tensor_elements` (Megatron's default 2^20) stay.  Empty: off.
  std::vector<std::string> offload_modules;
  std::int64_t min_offloaded_tensor_elements = 1 << 20;
  /// `--activation-offload-fraction`: of each micro batch's offload groups (one per module and layer, in
  /// forward order) the first fraction goes to the host, the last ⌊n · (1 − fraction)⌋ stay
  /// (fine_grained_activation_offload.py post_warmup_callback).  1 = all.
  double activation_offload_fraction = 1.0;
  /// `--delta-offload-bytes-across-pp-ranks`: pipeline rank r keeps r · this many offloadable bytes on the
  /// device (its oldest micro batches' first groups); 0 = none.
  std::int64_t delta_offload_bytes_across_pp_ranks = 0;
  /// Recompute chosen per transformer layer (index = global layer), replacing the four fields above when
  /// not empty: MindFormers' per-stage lists and SAPP answers.  `full`: the layer is one checkpoint keeping
  /// its input; else `modules` are selective modules as recompute_modules, plus "mlp_act" (the dense MLP's
  /// activation: its output is dropped and recomputed; MindSpore's select_recompute of feed_forward.mul and
  /// w1.activation.silu).
  struct LayerRecomputeChoice {
    bool full = false;
    std::vector<std::string> modules;
  };
  std::vector<LayerRecomputeChoice> per_layer_recompute;

  // --- kernels ---
  TransformerImpl transformer_impl = TransformerImpl::MegatronCore;
  /// Date (YYYY-MM-DD) of the Megatron-LM checkout, for behaviour that changed over time; "" = current
  /// (`--megatron-version`).  Memory: before 2024-06-13 the vocab-parallel cross entropy made a second fp32
  /// copy of the logits (`cross_entropy.py`, commit 9634c0e).
  std::string megatron_version;
  /// tp may be a multiple of the kv heads (each rank keeping one): Megatron-LM since 2025-12-06
  /// (SelfAttention's QKV all-gather, f7dfb99795; refused for an older megatron_version).  MindFormers clears
  /// it: its attention needs the kv heads divisible by model_parallel.
  bool tp_beyond_kv_heads = true;
  /// tp may exceed the kv heads here (tp_beyond_kv_heads, the checkout's date, tp a multiple of `kv_heads`).
  bool allows_tp_beyond(int kv_heads, int tp_size) const {
    return tp_beyond_kv_heads && kv_heads > 0 && tp_size % kv_heads == 0 &&
           (megatron_version.empty() || megatron_version >= "2025-12-06");
  }
  bool fp16_lm_cross_entropy = false;  ///< `--fp16-lm-cross-entropy`: the loss on 16-bit logits
  /// Megatron's pre-core model code (`megatron/model`, `--use-legacy-models`; the only one before 2024 and
  /// the default until 2024-05).  Activations it keeps beyond Megatron-core's: the SwiGLU's SiLU output
  /// (an unfused `F.silu(x[0]) * x[1]`) and, with flash attention, the kernel's output next to its
  /// rearranged contiguous copy (`ParallelAttention` rearranges q, k, v and the context).
  bool legacy_model = false;
  /// The transformer layers' linears are TransformerEngine modules (`--transformer-impl transformer_engine`,
  /// the default; `local` clears).  With gradient-accumulation fusion, TE >= 2.3 returns one cached dummy
  /// weight gradient per weight shape (persistent); Megatron's own linears (`local`, the legacy model, every
  /// output layer) return a fresh `torch.empty` weight gradient each backward since 2023-08-07
  /// (`grad_added_to_main_grad`, tensor_parallel/layers.py).
  bool transformer_engine = true;
  /// Allocator-visible memory of the CUDA runtime a Megatron rank holds besides its tensors (cuBLAS/cuBLASLt
  /// workspaces of the forward and autograd threads, tensors kept alive by asynchronous NCCL work), MiB.
  /// -1 = the default: 64 MiB for Megatron, fitted on the GPT-2 345M pipeline logs of the corpus
  /// (docs/memory_fidelity.md; `--runtime-overhead-mib`), 0 for TorchCpu.
  double runtime_overhead_mib = -1;
  AttentionBackend attention_backend = AttentionBackend::Flash;
  bool cross_entropy_loss_fusion = false;

  // --- cost-model knobs (SimuMax v1.2 `StrategyConfig`, notes/simumax.md §4.2) ---
  /// Layer-granular recompute; unset = derived from the Megatron fields above.
  std::optional<LayerRecompute> layer_recompute;
  CpCommType cp_comm_type = CpCommType::P2P;  ///< `--cp-comm-type`
  /// `--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes A R` (TransformerEngine's hierarchical
  /// context parallelism, Megatron requires A · R = cp): an all-to-all of heads among A adjacent cp ranks,
  /// then a ring of k/v among the R groups (cp_comm_type stays P2P: the ring).  1 = no all-to-all level.
  int cp_a2a_size = 1;
  bool cp_a2a_sync = false;  ///< SimuMax `cp_a2a_mode: sync_cp` (only changes helper-buffer peaks)
  int zero_stage = -1;       ///< 0..3 (SimuMax `zero_state`); -1 = 1 with distributed_optimizer, else 0
  /// DeepSpeed ZeRO-3 (`zero_optimization.sub_group_size`, default 1e9 elements): the optimizer steps its
  /// partition one sub group at a time — parameters taken in order until they hold this many elements —
  /// each sub group's fp32 gradient copy made before its step and freed after it (runtime/zero/stage3.py
  /// step, _create_fp16_sub_groups, _prepare_fp32_grad_for_sub_group, _release_sub_group), so the copy at
  /// the step is min(partition, max(this, the largest parameter's partition)) × 4 bytes.  −1 = the whole
  /// partition at once (Megatron's optimizers, DeepSpeed's ZeRO-1/2).
  std::int64_t zero3_sub_group_elements = -1;
  bool fp32_grad_accumulation = true;  ///< SimuMax `use_fp32_accum_grad`: false forces 2-byte main grads
  /// wgrad GEMM accumulates into main_grad (`--no-gradient-accumulation-fusion` clears): no weight-shaped
  /// gradient tensor in backward.
  bool gradient_accumulation_fusion = true;
  bool fused_norm = true;                    ///< fused RMSNorm kernel (no fp32 intermediates kept)
  bool fused_swiglu = true;                  ///< fused SwiGLU kernel
  bool weight_in_linear_peak =
      false;  ///< count a weight copy in linear transient peaks (SimuMax !use_accm_weight)
  double attention_sparse_ratio = 0.0;  ///< fraction of the s² attention skipped (0.5 ≈ causal kernel)
  /// Packed sequences (preflight's `--packed-seq-mean-length L`; Megatron-Bridge's packed fine-tuning data,
  /// Megatron's THD format with cu_seqlens): each --seq-length row holds samples of L tokens on average
  /// (for uneven samples Σ s² / Σ s, what attention's work follows), and the flash / TE attention kernel
  /// attends within each sample, so the core attention is priced as seq_length / L sequences of L tokens
  /// (its FLOPs and its kernel's efficiency; its memory is per token either way).  0 = one sequence per row.
  /// The model FLOPs (MFU) are Megatron's, over the whole row.
  double packed_seq_mean_length = 0.0;
  bool moe_dispatch_probs = false;      ///< Megatron ≥ 0.14 probs path: probs all-to-all + weighted SiLU
  /// Token dispatcher; AllToAll for SimuMax strategies and under `--simumax-compat`, Megatron's default
  /// (AllGather) for launch arguments without `--moe-token-dispatcher-type`.
  MoeDispatcher moe_dispatcher = MoeDispatcher::AllToAll;
  /// `--overlap-moe-expert-parallel-comm` (Megatron's combined 1F1B, pipeline_parallel/combined_1f1b.py):
  /// in the steady state one micro batch's forward runs layer by layer with another's backward, each one's
  /// expert-parallel token exchanges hidden behind the other's compute; the first forward and the last
  /// backward of a rank run alone.  Needs ep > 1, the alltoall or flex dispatcher, and virtual pipeline
  /// stages when pp > 1 (Megatron asserts all three).
  bool overlap_moe_expert_parallel_comm = false;
  /// `--moe-shared-expert-overlap` (Megatron's SharedExpertMLP on its own stream, moe/shared_experts.py): a
  /// MoE layer's shared expert runs beside its token exchanges — fc1 and the activation beside the dispatch,
  /// fc2 beside the combine, and their backwards beside the exchanges' backwards.  Needs the alltoall or flex
  /// dispatcher and not --overlap-moe-expert-parallel-comm (Megatron asserts both).
  bool moe_shared_expert_overlap = false;
  /// Routing imbalance: the routed token copies the busiest expert-parallel rank receives ÷ the mean over
  /// the ep group (preflight's `--moe-load-imbalance F`; Megatron has no such flag).  1 = balanced routing,
  /// what NeMo's and Megatron-LM's benchmarks force (`--moe-router-force-load-balancing`) and what the
  /// published runs measured.  A trained router is not balanced: the busiest rank sets every MoE layer's pace
  /// (the token exchanges synchronise the ep group) and holds the most activations, so its experts' GEMMs,
  /// activation, quantizers, received exchanges and kept activations are priced at F times the mean (see
  /// moe_busiest_rank_factor).  The model FLOPs (MFU) stay the mean.
  double moe_load_imbalance = 1.0;
  /// SMs the token exchanges' kernels occupy while they overlap compute (the flex dispatcher's
  /// `--moe-flex-dispatcher-num-sms`, or its backend's older `--moe-deepep-num-sms` /
  /// `--moe-hybridep-num-sms`; other dispatchers ignore them); 0 = 20, DeepEP's default (NCCL's all-to-all
  /// takes a similar number of channels).  The overlapped compute runs on the rest.
  int moe_comm_sms = 0;
  /// The flex dispatcher's library (`--moe-flex-dispatcher-backend`: deepep, Megatron's default, hybridep or
  /// ncclep); priced alike, told apart where they run differently (DeepEP's normal kernels stop at one host's
  /// NVLink, 8 GPUs at most: a warning on NVL72 systems).
  std::string moe_flex_backend = "deepep";
  /// The routed experts run inside a CUDA graph: `--cuda-graph-impl full_iteration` (older spelling
  /// `--cuda-graph-scope full_iteration`), or a per-layer graph (`local` / `transformer_engine`, older
  /// `--enable-cuda-graph` / `--external-cuda-graph`) that captures the whole layer (no
  /// `--cuda-graph-modules`, Megatron's default) or its `moe` module.  The experts' host time
  /// (SystemSpec::moe_host_us_per_expert: the tokens-per-expert copy to the host, then a launch per local
  /// expert) is then not paid.  Graphs of `attn`, `moe_router`, `moe_preprocess` alone leave the experts
  /// eager (the runs the host time was fitted on used them).  Other launch gaps a graph removes are not
  /// modelled (the efficiencies include them).
  bool moe_experts_cuda_graph = false;
  /// Any CUDA graph of the training step (`--cuda-graph-impl local / transformer_engine / full_iteration`, or
  /// the older switches): some of the host's kernel launches are replayed from a graph.  Only silences the
  /// host-bound note of the estimate (a graph's launch savings are not priced, see above).
  bool cuda_graphs = false;
  /// The run launches its kernels from PyTorch's eager mode, layer by layer from Python (Megatron-LM and what
  /// runs it: NeMo, Megatron-Bridge): set by the Megatron frontend.  false for MindSpore's graph mode (the
  /// step is compiled and sunk to the device) and SimuMax's files.
  bool pytorch_eager = false;
  /// Experts as one grouped GEMM per linear (`--moe-grouped-gemm`: TEGroupedMLP; SimuMax's and MindSpore's
  /// only form).  false: Megatron's default SequentialMLP, one dense GEMM per local expert, each priced at
  /// the dense GEMM efficiency of its own rows (Megatron launch arguments without the flag).
  bool moe_grouped_gemm = true;
  bool cache_grouped_gemm_fp8_inputs = false;  ///< fp8: keep fc1 expert inputs in fp8
  bool offload_grouped_gemm_inputs = false;    ///< fc1 expert inputs offloaded (not kept on device)
  int microbatch_group_size_per_vp_stage = 0;  ///< interleaved schedule grouping; 0 = pp
  /// Micro batches per group of the interleaved schedule: microbatch_group_size_per_vp_stage, else pp
  /// (`--microbatch-group-size-per-virtual-pipeline-stage`'s default).
  int microbatch_group() const {
    return microbatch_group_size_per_vp_stage > 0 ? microbatch_group_size_per_vp_stage : pp;
  }
  bool pp_comm_overlap =
      true;  ///< SimuMax `pp_comm_async`; interleaved timing models the blocking (false) case
  bool straggler_model = true;       ///< SimuMax straggler factor on the pipeline time
  /// `--overlap-grad-reduce`: gradient buckets are reduced while the last micro batch's backward runs (the
  /// cost model hides up to that backward, all but the last bucket); `--overlap-param-gather` (distributed
  /// optimizer): parameters are gathered under the next iteration's first forward.
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  /// `--tp-comm-overlap` (TransformerEngine userbuffers, needs sequence parallelism): every linear's
  /// tensor-parallel all-gather / reduce-scatter is pipelined with its own GEMM in forward and backward; the
  /// cost model leaves exposed only what the GEMM cannot cover (no published run validates it yet).
  bool tp_comm_overlap = false;
  /// SimuMax v1.2's timing exactly (`--simumax-compat`, and SimuMax strategy files): DP fully exposed whatever
  /// the overlap flags, the interleaved schedule only with blocking p2p (async is refused), p2p never split
  /// over tp, SimuMax's fractional expert capacity.  Default: Megatron's behaviour (see estimate.hpp).
  bool simumax_compat = false;
  /// peak allocated / peak reserved assumed by the allocator model (SimuMax `mem_factor`, 0.94; Megatron's
  /// logs in tests/data/memory_corpus: 0.90 … 0.996, median 0.95).  0.99 for Megatron launches with
  /// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, where the reserve is a few partial 2 MiB pages.
  double allocated_to_reserved_ratio = 0.94;
  TransformerEngineVersions te;

  // --- derived (validate() first) ---
  int dp() const { return world_size / (tp * pp * cp); }
  /// The fewest ranks this layout runs on: tp·pp·cp·dp with the smallest dp ≥ 1 that leaves the experts
  /// a whole expert-data-parallel group (world divisible by etp·ep·pp).
  int min_world_size(const ModelSpec& model) const;
  int expert_tp() const { return etp > 0 ? etp : tp; }
  /// Expert data-parallel size: world / (etp · ep · pp).
  int expert_dp() const { return world_size / (expert_tp() * ep * pp); }
  int global_batch() const { return global_batch_size > 0 ? global_batch_size : micro_batch_size * dp(); }
  /// Micro batches per iteration per pipeline (gradient-accumulation steps): global / (b · dp).
  int num_microbatches() const { return global_batch() / (micro_batch_size * dp()); }
  /// Passes of the pipeline schedule per iteration: micro batches × seq_split (the sequence pipeline's
  /// units).
  int pipeline_units() const { return num_microbatches() * std::max(1, seq_split); }
  /// Units a non-interleaved 1F1B stage holds at its peak: pp − rank (+ seq_split − 1 with the sequence
  /// pipeline, whose units of a micro batch run their backward last to first), at most pipeline_units().
  int one_f_one_b_inflight(int rank) const {
    return std::max(1, std::min(pp - rank + std::max(1, seq_split) - 1, pipeline_units()));
  }
  PipelineSchedule schedule() const {
    return vpp > 1 ? PipelineSchedule::Interleaved : PipelineSchedule::OneFOneB;
  }
  /// Forward passes (virtual-chunk passes) pipeline rank `rank` runs before its first backward under the
  /// interleaved schedule, at most `total` (micro batches · vpp): Megatron's (pp − 1 − rank) · 2 + (vpp − 1)
  /// · group (group = microbatch_group_size_per_vp_stage, pp by default), one more with the expert-parallel
  /// overlap's combined 1F1B (pipeline_parallel/schedules.py get_pp_rank_microbatches; not under
  /// simumax_compat).
  int interleaved_warmup(int rank, int total) const;
  /// Bytes of one parameter / activation element in the compute precision (fp8 is not counted here).
  int element_bytes() const { return precision == Precision::FP32 ? 4 : 2; }
  /// Bytes per element of the gradient buffer Megatron's DDP reduces (main_grad).
  int main_grad_bytes() const;
  /// ZeRO stage of the optimizer: zero_stage when set, else 1 with distributed_optimizer, else 0.
  int effective_zero_stage() const { return zero_stage >= 0 ? zero_stage : (distributed_optimizer ? 1 : 0); }
  /// Layer-granular recompute: layer_recompute when set; with per_layer_recompute, FullBlock of as many
  /// layers per chunk as the chunk with the most fully recomputed layers (the first ones of each chunk), else
  /// Selective with the most common set of Megatron modules (mlp_act and core_attn are left out); else
  /// derived from the Megatron fields:
  /// full+block N → FullBlock of the first N layers; full+uniform N → FullBlock of every layer with
  /// checkpoints of N layers; selective core_attn → SdpOnly of every layer; other selective modules →
  /// Selective with megatron_modules.
  /// @throws InputError when the modules combine core_attn with others (not modelled).
  LayerRecompute effective_layer_recompute(const ModelSpec& model) const;

  /// Why context parallelism over `cp_size` ranks cannot run with this strategy's model code and attention
  /// kernel ("" when it can, and for cp_size 1): Megatron's legacy model has none (DeepSpeed-Ulysses'
  /// all-to-all, read as the legacy model with cp_comm_type a2a, gathers the sequence before any kernel and
  /// is allowed); Megatron-core's unfused attention asserts context_parallel_size == 1
  /// (megatron/core/transformer/dot_product_attention.py), as MindFormers refuses context_parallel without
  /// flash attention (tools/check_rules.py).
  std::string context_parallel_problem(int cp_size) const;

  /// Number of transformer layers on each pipeline rank (size pp), Megatron's
  /// `get_num_layers_to_build` semantics (even split, uneven first/last stage, explicit list,
  /// embedding/loss counted as a layer).
  /// @throws InputError when the layers cannot be split as asked.
  std::vector<int> layers_per_stage(int num_layers) const;

  /// Transformer layers of each virtual chunk, [vpp][pp]: chunk_layout when given, else each rank's
  /// layers_per_stage split evenly over its vpp chunks.  Layer ids run chunk 0 of every rank first.
  /// @throws InputError as layers_per_stage.
  std::vector<std::vector<int>> layers_per_chunk(int num_layers) const;

  /// Checks sizes against each other and against the model: world divisible by tp·pp·cp and by
  /// etp·ep·pp, heads and kv groups divisible by tp, experts by ep, global batch by b·dp,
  /// vpp dividing each stage's layers, seq by cp (2·cp with causal load balancing is not required).
  /// TorchCpu runs only what the example implements: fp32/bf16, LayerNorm, learned or no position embedding,
  /// math attention, dense MLP, no cp/ep/vpp/sequence parallelism/distributed optimizer/fp8, Adam, selective
  /// recompute of core_attn only.
  /// @throws InputError naming the offending flag.
  void validate(const ModelSpec& model) const;
};

/// Checks a routing imbalance (Strategy::moe_load_imbalance) against the model and layout, whichever front
/// end set it (`flag` names it in messages: `--moe-load-imbalance`).  Throws InputError for a factor below
/// 1 or not finite, for a model without experts and for a factor above ep (every token on one rank);
/// returns, one line each, why a factor above 1 has no or less effect (ep 1, padding to capacity, a
/// dropping capacity factor below it).
std::vector<std::string> check_moe_load_imbalance(const ModelSpec& model, const Strategy& st,
                                                  const std::string& flag);

/// Checks packed sequences (Strategy::packed_seq_mean_length; 0 = none): a mean length of at least 1 token
/// and at most --seq-length, on the flash / TransformerEngine attention kernels (Megatron's THD format runs
/// on those only).  Strategy::validate calls it; front ends call it to refuse early.
/// @throws InputError naming `--packed-seq-mean-length`
void check_packed_seq_mean_length(const Strategy& st);

/// The factor on the busiest expert-parallel rank's routed rows (Strategy::moe_load_imbalance): 1 for a
/// dense model, at ep 1 (one rank holds every expert: its total does not change), and when the experts'
/// inputs are padded to capacity (every rank holds the capacity, MoESpec::pad_expert_input_to_capacity);
/// capped at the capacity factor when tokens beyond it are dropped (MoESpec::capacity_drop); else
/// moe_load_imbalance, at most ep (every token on one rank).
inline double moe_busiest_rank_factor(const MoESpec& moe, const Strategy& st) {
  if (!moe.enabled() || st.ep <= 1 || moe.pad_expert_input_to_capacity) return 1.0;
  const double f = std::min(std::max(1.0, st.moe_load_imbalance), static_cast<double>(st.ep));
  return moe.capacity_drop ? std::min(f, std::max(1.0, moe.capacity_factor)) : f;
}

const char* to_string(Precision p);
const char* to_string(RecomputeGranularity g);
const char* to_string(RecomputeMethod m);
const char* to_string(AttentionBackend b);
const char* to_string(CpCommType c);
const char* to_string(MoeDispatcher d);  ///< Megatron's name: allgather, alltoall, flex
const char* to_string(Fp8Format f);      ///< none, e4m3, hybrid (fp8), e2m1 (fp4)
/// Megatron's name: delayed, tensorwise, mxfp8, blockwise, custom, nvfp4.
const char* to_string(Fp8Recipe r);
const char* to_string(RecomputeScope s);
const char* to_string(TransformerImpl i);

}  // namespace preflight::analyzer
