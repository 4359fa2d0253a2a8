#pragma once
/// @file estimate.hpp
/// The SimuMax-class cost and memory model: per-stage peak memory, iteration time, MFU and throughput
/// of one training iteration, computed from the layer graph (layer_graph.hpp) of ModelSpec + Strategy
/// and the SystemSpec.  A port of SimuMax v1.2's analytical path (`PerfLLM.run_estimate`,
/// `analysis_mem`, `analysis_cost`; notes/simumax.md §2–§3), with its numbers (parity tests against
/// real SimuMax runs within 0.1 %) and its output keys (report.hpp).
///
/// Like SimuMax it prices one micro batch on one representative rank per stage kind: the first
/// pipeline stage, one middle stage (standing for ranks 1…pp−2) and the last stage, plus each virtual
/// chunk with an interleaved schedule.  Under Strategy::simumax_compat nothing is overlapped (TP/SP/CP/EP
/// and DP collectives fully exposed, as in SimuMax); by default Megatron's overlaps are priced where it
/// overlaps: the interleaved schedule's p2p (overlap_p2p_comm), --overlap-grad-reduce /
/// --overlap-param-gather (or --DDP-impl torch), and the column-parallel backward's TP communication by the
/// system's tp_overlap_exposed (1 = exposed, the default).  Dropout kernels and masks are priced by default
/// too.
///
/// Memory: the stage summary (StageEstimate::peak_bytes and the columns next to it) is by default the layer
/// graph walked along Megatron's schedule (memory.hpp, memory_timeline.hpp — what `preflight analyze`
/// prints); SimuMax's memory model under simumax_compat (Estimate::memory_model).  Per-chunk ModelMemory and
/// the activation cache of the leaves stay SimuMax's (SimuMax's mem_result.json detail).
///
/// Units: bytes (memory), milliseconds (time), FLOPs as counts, unless a name says otherwise.
/// Differences from SimuMax (bugs fixed, each noted where it is implemented): context parallelism
/// with `all_gather` is priced (SimuMax raises); ring `p2p` CP is priced as a2a with a warning.

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json_fwd.hpp>
#include <vector>

#include "preflight/analyzer/cost/primitives.hpp"
#include "preflight/analyzer/model/model_spec.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer::cost {

/// Static memory of a chunk (SimuMax ModuleMemoryInfo), bytes.  Dense parameters are sharded over
/// dp·cp by ZeRO, expert parameters over the expert-data-parallel group.
struct ModelMemory {
  double dense_weight_bytes = 0, dense_grad_bytes = 0, dense_state_bytes = 0;
  double moe_weight_bytes = 0, moe_grad_bytes = 0, moe_state_bytes = 0;
  /// TransformerEngine dummy wgrad buffers: one per distinct (rows, cols, element bytes) weight shape.
  std::vector<std::array<std::int64_t, 3>> te_dummy_wgrad_shapes;
  double te_dummy_wgrad_bytes = 0;
  double weight_numel = 0;      ///< dense parameters summed over the tp ranks (SimuMax's statistic)
  double moe_weight_numel = 0;  ///< expert parameters summed over ep·etp ranks
  double dense_bytes() const { return dense_weight_bytes + dense_grad_bytes + dense_state_bytes; }
  double moe_bytes() const { return moe_weight_bytes + moe_grad_bytes + moe_state_bytes; }
  double total_bytes() const { return dense_bytes() + moe_bytes() + te_dummy_wgrad_bytes; }
  double grad_bytes() const { return dense_grad_bytes + moe_grad_bytes; }
  double state_bytes() const { return dense_state_bytes + moe_state_bytes; }
};

/// Times of one micro batch, ms.  compute = roofline of the kernels; net = exposed collectives.
struct PassTimes {
  double fwd_compute_ms = 0, bwd_grad_act_ms = 0, bwd_grad_w_ms = 0, recompute_compute_ms = 0;
  double fwd_net_ms = 0, bwd_grad_act_net_ms = 0, bwd_grad_w_net_ms = 0, recompute_net_ms = 0;
  /// The expert-parallel token exchanges (dispatch and combine) inside fwd_net_ms / bwd_grad_act_net_ms:
  /// what `--overlap-moe-expert-parallel-comm` hides behind another micro batch's compute.
  double fwd_ep_net_ms = 0, bwd_ep_net_ms = 0;
  double bwd_compute_ms() const { return bwd_grad_act_ms + bwd_grad_w_ms; }
  double bwd_net_ms() const { return bwd_grad_act_net_ms + bwd_grad_w_net_ms; }
  /// Forward phase as the pipeline sees it: compute + its collectives.
  double forward_ms() const { return fwd_compute_ms + fwd_net_ms; }
  /// Backward phase: backward compute + collectives + recompute (forward re-run) + its collectives.
  double backward_ms() const {
    return bwd_compute_ms() + bwd_net_ms() + recompute_compute_ms + recompute_net_ms;
  }
  PassTimes& operator+=(const PassTimes& o);
};

/// Work of one micro batch: FLOPs and bytes moved per pass.
struct PassWork {
  double fwd_flops = 0, bwd_flops = 0, recompute_flops = 0;
  double fwd_bytes = 0, bwd_bytes = 0, recompute_bytes = 0;
  PassWork& operator+=(const PassWork& o);
};

/// Activation memory of one micro batch on a chunk (SimuMax LLMModel.compute_activations).
/// The four peaks are transient maxima of forward, backward, recompute-forward and
/// recompute-backward (each recorded when it reached the running maximum, as SimuMax does).
struct ActivationPeak {
  double cache_bytes = 0;  ///< kept from forward to backward (fwd_activation_cache_per_micro_batch)
  double forward_bytes = 0, backward_bytes = 0, recompute_forward_bytes = 0, recompute_backward_bytes = 0;
  std::string forward_path, backward_path, recompute_forward_path, recompute_backward_path;
  double peak_bytes() const;
  /// "forward" / "backward" / "recompute_forward" / "recompute_backward" (ties: in that order).
  const char* peak_stage() const;
  const std::string& peak_path() const;
};

/// One transformer layer of a chunk (for SAPP body terms and per-layer reports).
struct LayerEstimate {
  int layer = 0;  ///< global index
  bool moe = false;
  bool recompute = false;  ///< within the strategy's recompute_layer_num
  PassTimes times;
  PassWork work;
  double activation_cache_bytes =
      0;  ///< kept per micro batch by this layer (checkpoint inputs when recomputed)
  ModelMemory memory;
};

/// One priced op of a transformer layer (a SimuMax leaf: a linear, its fp8 quantizer, core attention, a
/// norm, the token permutation with its expert-parallel exchange, …) for one micro batch on its rank.
/// `times` are the op's kernels (roofline of FLOPs and bytes) and the collectives it issues, exposed as
/// the chunk prices them (before the overlaps priced per chunk: DP, p2p,
/// `--overlap-moe-expert-parallel-comm`).
struct OpEstimate {
  std::string name;  ///< attribute path inside the layer ("attention.linear_qkv.linear")
  std::string kind;  ///< the leaf's kind ("LinearCol", "GroupLinearCol", "CoreAttention", "Permutation", …)
  PassTimes times;   ///< ms
  PassWork work;     ///< FLOPs and bytes
};

/// The ops of one transformer layer (EstimateOptions::layer_ops): the first layer of each distinct kind
/// (dense / MoE, sliding window, kept in bf16, recompute variant) in chunk order, and the embedding and the
/// head (final norm, output layer, loss, MTP layers).  A layer's ops sum to its LayerEstimate::times.
struct LayerOps {
  std::string chunk;  ///< ChunkEstimate::name of the chunk it was found in
  int layer = 0;      ///< global layer index; -1 the embedding, -2 the head
  bool moe = false;
  bool recompute = false;
  std::vector<OpEstimate> ops;
};

/// One model chunk as SimuMax builds it: `first_stage_chunk`, `middle_stage_chunk`,
/// `last_stage_chunk`, or a virtual chunk `<stage>_v<k>` with an interleaved schedule.
struct ChunkEstimate {
  std::string name;
  int pp_rank = 0;  ///< the rank it stands for (middle: 1)
  int vchunk = -1;  ///< virtual chunk, -1 for a physical stage chunk
  int first_layer = 0, num_layers = 0;
  bool embedding = false, head = false;
  ModelMemory memory;
  PassTimes times;
  PassWork work;
  ActivationPeak activation;
  /// Pipeline phases of one micro batch (SimuMax _compute_single_batch_phase_inputs), ms.
  double fwd_recv_ms = 0, fwd_send_ms = 0, bwd_recv_ms = 0, bwd_send_ms = 0;
  /// `--overlap-moe-expert-parallel-comm`: time a forward paired with a backward of this chunk saves, ms.
  /// Per MoE layer Megatron's fine-grained schedule (combined_1f1b.py, schedule_layer_1f1b) runs four
  /// pairs side by side — backward combine ‖ forward attention, forward dispatch ‖ backward experts,
  /// backward dispatch ‖ forward experts, forward combine ‖ backward attention — so each pair saves the
  /// shorter of its two; "attention" is everything of the layer outside the experts.
  double ep_overlap_saving_ms = 0;
  /// `--moe-shared-expert-overlap`: time one micro batch's forward / backward of this chunk saves by running
  /// each MoE layer's shared expert beside its token exchanges (the shorter of each pair), ms.
  double shared_expert_overlap_fwd_ms = 0, shared_expert_overlap_bwd_ms = 0;
  /// The output layer's weight-gradient GEMM of one micro batch (with its sequence-parallel gather), ms; 0
  /// on a chunk without the output layer (what `--defer-embedding-wgrad-compute` moves to the flush).
  double output_wgrad_ms = 0;
  PassTimes embedding_times;  ///< SAPP "head": the embedding
  PassTimes head_times;       ///< SAPP "tail": final norm + output layer + loss
  std::vector<LayerEstimate> layers;
  /// Forward + backward of one micro batch including its pipeline send/recv (SimuMax chunk_time).
  double chunk_ms() const;
};

/// DP gradient synchronisation of one stage (SimuMax _compute_dp_time), fully exposed.
struct DpComm {
  struct Group {
    double time_ms = 0;
    double rs_bytes = 0, ag_bytes = 0;                ///< payloads (0 when the group has one rank)
    int num_gather = 1;                               ///< 2 for MoE models (Megatron gathers twice)
    double reduce_scatter_ms = 0, all_gather_ms = 0;  ///< ZeRO ≥ 1 (else one all-reduce in time_ms)
    bool sharded = true;                              ///< ZeRO ≥ 1
    double buckets = 1;                               ///< gradient buckets reduced
  };
  Group dense, moe;
  /// Hidden under compute by --overlap-grad-reduce / --overlap-param-gather (0 with simumax_compat).
  double overlapped_ms = 0;
  /// First and last stage of a pipeline sharing a word embedding (tied embeddings, or MTP's copy on the last
  /// stage): the all-reduce of its gradient over those two ranks after the data-parallel sync (Megatron
  /// finalize_model_grads), never overlapped; 0 elsewhere and with simumax_compat.
  double embedding_sync_ms = 0;
  double exposed_ms() const {
    return std::max(0.0, dense.time_ms + moe.time_ms - overlapped_ms) + embedding_sync_ms;
  }
};

/// Optimizer step of one stage (SimuMax _compute_optim_time, Megatron-style, memory bound).
struct OptimizerTime {
  double zero_grad_buffer_ms = 0, l2_norm_before_reduce_ms = 0, mul_before_reduce_ms = 0;
  double l2_norm_after_reduce_ms = 0, grads_clip_after_reduce_ms = 0, adam_ms = 0, copy_main_params_ms = 0;
  /// Muon (Optimizer::Muon): the rank's Newton-Schulz GEMMs at the system's matmul rate (their FLOPs:
  /// model/memory.hpp muon_newton_schulz) and, in the duplicated tensor-parallel mode, the all-gathers of
  /// the tp-split matrices' momenta.  The launches of these small GEMMs (tens per matrix and step) are not
  /// priced: on small models the step is host-bound and slower than this.
  double muon_newton_schulz_ms = 0, muon_tp_gather_ms = 0;
  double total_ms() const;
};

/// Per-stage results: memory (mem_result entry) and the stage's share of the iteration.
struct StageEstimate {
  std::string key;  ///< "first_stage", "middle_stage", "last_stage" (or "pp_stage_<r>" with VPP)
  int pp_rank = 0;
  std::vector<int> chunks;  ///< indices into Estimate::chunks (one, or vpp virtual chunks)
  int physical_chunk = 0;   ///< index of the physical stage chunk (time breakdown, DP, optimizer)
  ModelMemory memory;
  int cached_micro_batches = 0;  ///< micro batches whose cache is alive at the peak, besides the current one
  double activation_peak_bytes = 0;     ///< peak_activation_mem_in_1F1B
  double peak_bytes = 0;                ///< peak_mem: model + cached micro batches + activation peak
  double peak_with_reserved_bytes = 0;  ///< peak_bytes / allocated_to_reserved_ratio
  /// Muon's work on this stage's rank at each step (StageMemory::muon_ns_flops / muon_tp_gather_bytes).
  double muon_ns_flops = 0, muon_tp_gather_bytes = 0;
  std::string peak_path;                ///< "<leaf>: <module path>, stage=[<phase>]"
  std::string
      activation_cache_text;  ///< fwd_activation_cache_per_micro_batch as SimuMax prints it ("8.5039 GB")
  /// The memory columns of the summary, from Estimate::memory_model: static bytes (weights, gradients,
  /// optimizer states, and with the Megatron model its persistent buffers) and the activations one micro
  /// batch keeps (the largest chunk with an interleaved schedule).
  double model_bytes = 0;
  double activation_cache_bytes = 0;
  DpComm dp;
  OptimizerTime optimizer;
  double duration_ms = 0;  ///< straggler·T_pp + DP + optimizer
};

/// Priced layers kept between estimates that share the model, the system and every strategy field
/// except tp, pp, ep, etp, global batch and recompute (what a search varies) — and the fields the layers'
/// pricing does not read or that follow tp (the expert-parallel overlap, the deferred output-layer
/// gradients; sequence parallelism and TP overlap, which the search sets by tp).  Makes repeated
/// estimates of one search several times faster.  Not thread-safe: one per thread.
class EstimateCache {
 public:
  EstimateCache();
  ~EstimateCache();
  EstimateCache(const EstimateCache&) = delete;
  EstimateCache& operator=(const EstimateCache&) = delete;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct EstimateOptions {
  bool names = true;               ///< build peak paths (off in searches for speed)
  bool per_layer = true;           ///< fill ChunkEstimate::layers
  EstimateCache* cache = nullptr;  ///< reuse priced layers (searches); see EstimateCache
  /// An op of the layer graph that the cost model has no formula for (a learned position table and dropout
  /// under simumax_compat, an op kind added to the graph but not to the cost model) is an InputError (where "--strict")
  /// instead of a "not priced: <op path> (<role>): <why>" line in Estimate::warnings.
  bool strict = false;
  /// Record the simulated schedule (Estimate::schedule): 1F1B and interleaved pipelines, then each stage's
  /// DP synchronisation and optimizer step.
  bool schedule = false;
  /// Record the ops of one layer of each kind (Estimate::layer_ops).
  bool layer_ops = false;
};

/// One block of the simulated schedule of a pipeline rank, ms from the start of the iteration.
struct ScheduleEvent {
  int pp_rank = 0;
  std::string name;      ///< "F3" (forward of micro batch 3), "B3", "send", "recv", "dp", "optimizer";
                         ///< interleaved: "F3.1" (micro batch 3, virtual chunk 1), "B3.1", "p2p"
  std::string category;  ///< "compute", "p2p", "dp", "optimizer"
  int micro_batch = -1;
  double start_ms = 0, duration_ms = 0;
};

/// The whole estimate.
struct Estimate {
  ModelSpec model;
  Strategy strategy;
  std::string system_name;
  std::string system_preset;     ///< SystemSpec::preset: the embedded preset priced on ("" for a file)
  double peak_tflops = 0;        ///< accelerator.op.default.tflops (MFU denominator)
  double device_memory_gib = 0;  ///< accelerator.mem_gbs
  NetworkChoice networks;
  LayerRecompute recompute;
  std::int64_t padded_vocab = 0;
  int micro_batches =
      0;  ///< passes of the pipeline schedule per iteration: micro batches (mbc) × Strategy::seq_split
  std::vector<ChunkEstimate> chunks;
  std::vector<StageEstimate> stages;  ///< first, [middle], [last] (VPP: one per pp rank)
  double pipeline_ms = 0;             ///< T_pp: the 1F1B (or interleaved) schedule without straggler
  double straggler_ratio = 1;
  double iteration_ms = 0;  ///< duration_time_per_iter = max over stages
  std::int64_t tokens_per_iteration = 0;
  double flops_per_token = 0;  ///< SimuMax ModelConfig.flops_per_token(seq, with_attn=True)
  double theory_flops = 0;     ///< per GPU per iteration
  double tflops_per_gpu = 0;
  double tokens_per_second_per_gpu = 0;
  double mfu = 0;
  double dense_params = 0, moe_params = 0;  ///< parameters (SimuMax statistic over all stages)
  std::vector<std::string> warnings;
  std::vector<ScheduleEvent> schedule;  ///< with EstimateOptions::schedule
  std::vector<LayerOps> layer_ops;      ///< with EstimateOptions::layer_ops
  /// Where the stages' memory (peak, model, activations, cached micro batches, peak path) comes from:
  /// "megatron" — the layer graph walked along Megatron's schedule with its transients, the model
  /// `preflight analyze` prints (memory.hpp, memory_timeline.hpp; validated on published runs,
  /// docs/memory_fidelity.md), the default; "simumax" — SimuMax v1.2's (under simumax_compat, for SimuMax's
  /// own selective recompute switches, or where the layer graph refuses the run, with a warning).
  std::string memory_model = "simumax";

  /// Highest stage peak, bytes (with or without the reserved ratio).
  double max_peak_bytes(bool with_reserved) const;

  /// Whether the highest stage peak fits `device_memory_gib` (GiB = 2^30 bytes):
  /// - Fits: the peak with the caching allocator's usual reserve (allocated / allocated_to_reserved_ratio)
  ///   is within the device.
  /// - Tight: only the allocated peak is.  PyTorch's caching allocator, when cudaMalloc fails, frees every
  ///   cached block that is not split and retries (c10/cuda/CUDACachingAllocator.cpp), so the reserve
  ///   shrinks under pressure: the run goes on with cudaMalloc retries and some risk of a fragmentation
  ///   OOM.  20 of the published runs in tests/data/time_corpus are here (allocated 0.94 … 0.99 of the
  ///   device) and all ran; expandable_segments (ratio 0.99) makes the band narrow.
  /// - DoesNotFit: the allocated peak itself is more than the device.
  enum class MemoryVerdict { Fits, Tight, DoesNotFit };
  MemoryVerdict memory_verdict() const;
};

/// "fits", "tight", "does_not_fit" (the JSON summary's `memory_verdict`).
const char* memory_verdict_name(Estimate::MemoryVerdict v);

/// Device memory compared with the stages' peaks, GiB: the system's `mem_gbs`, except SimuMax v1.2's
/// `b200_bf16_ceperm` file, whose 80 is a bug (a B200 has 179.06 GiB usable), kept only under simumax_compat.
double device_memory_gib(const SystemSpec& system, bool simumax_compat);

/// Runs the model.  Validates the model and strategy (InputError for inconsistent sizes, as
/// ModelSpec::validate / Strategy::validate) plus the cost model's own limits: CP all-to-all needs heads
/// (and kv heads) divisible by cp; a stage kind stands for equal middle stages (chunk by chunk with an
/// interleaved schedule); the system file must have the chosen networks.  Under simumax_compat also SimuMax's:
/// MLA with tp = 1 only, the interleaved schedule only with pp_comm_overlap = false (its sync VPP), expert rows
/// divisible over the local experts, core_attn recompute not combined with other modules.
/// @throws InputError naming the flag or field.
Estimate estimate(const ModelSpec& model, const Strategy& strategy, const SystemSpec& system,
                  const EstimateOptions& options = {});

/// Ops of the layer graph of `model` under `strategy` that the cost model has no formula for: the lines
/// estimate() reports as "not priced: <line>" (or refuses under EstimateOptions::strict), from the
/// embedding, one layer of each kind and the head (with its MTP layers).  Does not validate.
std::vector<std::string> unpriced_ops(const ModelSpec& model, const Strategy& strategy,
                                      const SystemSpec& system);

/// The simulated schedule as a Chrome / Perfetto trace (`preflight estimate --trace FILE`): one process per
/// pipeline rank, a compute and a communication thread, complete events in microseconds.
nlohmann::json schedule_trace_json(const Estimate& est);

/// @throws InputError (where "--strict") listing `lines` (from unpriced_ops()) when there are any.
void refuse_unpriced(const std::vector<std::string>& lines);

/// What of `model` lies outside SimuMax's layer model (Llama-style: RMSNorm, rotary, no biases, untied
/// embeddings, no dropout) and is priced as the nearest Llama-style layer: one line per feature (linear
/// biases, LayerNorm's bias, tied embeddings, attention dropout).  Empty for every SimuMax model config.
/// estimate() adds these lines to Estimate::warnings.  Ops the cost model does not price at all (a
/// learned position table and dropout under simumax_compat) are named op by op instead (EstimateOptions::strict).  With a `strategy` that is
/// not --simumax-compat, attention dropout is modelled (math attention: its kernels and mask; flash: inside
/// the kernel) and not listed.
std::vector<std::string> unmodelled_features(const ModelSpec& model, const Strategy* strategy = nullptr);

/// A hybrid (Mamba) model: Megatron's hybrid_flops (training.py) per token instead.
/// SimuMax ModelConfig.flops_per_token(seq, with_attn=True): the "6ND with attention" FLOPs per token
/// used for MFU (non-causal s², one vocabulary matrix, all layers as MoE layers when the model is MoE).
double flops_per_token(const ModelSpec& model, std::int64_t padded_vocab, std::int64_t seq);

}  // namespace preflight::analyzer::cost
