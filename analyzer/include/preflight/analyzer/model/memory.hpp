#pragma once
/// @file memory.hpp
/// Megatron-style static + activation memory per pipeline stage, read off the layer graph.
///
/// Per parameter (Megatron `theoretical_memory_usage.py`, generalised to every precision and optimizer):
///   weight      = element bytes of the compute precision (fp32 4, fp16/bf16 2)
///   gradient    = Strategy::main_grad_bytes() (fp32 main_grad for bf16; fp16 grads unless
///                 --accumulate-allreduce-grads-in-fp32)
///   optimizer   = fp32 master copy (fp16/bf16 only, 4) + Adam moments (8) or SGD momentum (4),
///                 divided by the data-parallel size (dp·cp for dense, expert-dp for expert parameters)
///                 with --use-distributed-optimizer; --use-precision-aware-optimizer's dtypes
///                 (Strategy::master_param_bytes, exp_avg_bytes, exp_avg_sq_bytes) where given.
///   bf16 + Adam + distributed optimizer gives Megatron's 6 + 12/d bytes per parameter; without it 18.
/// Activations: Σ kept_bytes of the stage's ops (one micro batch) times the micro batches in flight:
///   1F1B (Narayanan et al. 2021 §2.2; Megatron `forward_backward_pipelining_without_interleaving`):
///   stage r keeps min(pp − r, m) micro batches;
///   interleaved (`forward_backward_pipelining_with_interleaving`): the first
///   min((pp − r − 1)·2 + (vpp − 1)·pp + 1, m·vpp) forward chunk passes are in flight, each holding the
///   activations of the chunk it ran (chunk = ⌊k / pp⌋ mod vpp for the k-th forward).
/// Not modelled: allocator fragmentation, CUDA context / NCCL buffers, transient op workspaces.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "preflight/analyzer/model/layer_graph.hpp"

namespace preflight::analyzer {

/// Memory of one rank of one pipeline stage.  Bytes unless the name says otherwise.
struct StageMemory {
  int pp_rank = 0;
  int first_layer = 0;      ///< first transformer layer (global index) of its first chunk
  int num_layers = 0;       ///< transformer layers over all its virtual chunks
  std::int64_t params = 0;  ///< parameters held (elements)
  std::int64_t expert_params = 0;
  /// Of params / expert_params: frozen (LoRA's base weights) — weights only, no gradient or optimizer state.
  std::int64_t frozen_params = 0, frozen_expert_params = 0;
  /// The trained (not frozen) dense and expert parameters: what has gradients, optimizer states and
  /// data-parallel traffic.
  std::int64_t trained_dense_params() const {
    return params - expert_params - (frozen_params - frozen_expert_params);
  }
  std::int64_t trained_expert_params() const { return expert_params - frozen_expert_params; }
  /// Of params / expert_params: the matrices Muon orthogonalizes (Optimizer::Muon; 0 otherwise) — each
  /// 2-D weight but the word embedding's and the output layer's, each expert's weight of a grouped linear.
  std::int64_t muon_params = 0, muon_expert_params = 0;
  /// Muon's Newton-Schulz FLOPs of this rank at each optimizer step (muon_newton_schulz(); 0 otherwise).
  double muon_ns_flops = 0;
  /// Bytes of momentum Muon's duplicated tensor-parallel mode all-gathers over tp at each step (fp32).
  double muon_tp_gather_bytes = 0;
  double weight_bytes = 0;
  double grad_bytes = 0;
  double optimizer_bytes = 0;  ///< master weights + moments on the device, after sharding and CPU offload
  /// All chunks, one micro batch each (one unit of it under the sequence pipeline, Strategy::seq_split > 1).
  double activation_bytes_per_microbatch = 0;
  /// Micro batches (sequence-pipeline units) whose activations are alive at the peak.
  double inflight_microbatches = 0;
  double activation_bytes = 0;                 ///< activations alive at the peak
  double overhead_bytes = 0;  ///< calibrated constant per rank (StageGraph::overhead_bytes); 0 uncalibrated
  double buffer_bytes = 0;    ///< Megatron's persistent buffers (StageGraph::runtime_buffer_bytes)
  /// Strategy::offload_optimizer_states: the optimizer bytes are on the device at the step only, when no
  /// activations are.
  bool optimizer_offloaded = false;
  /// Steady total: static + activations; with the optimizer offloaded the larger of the training phase
  /// (without the optimizer bytes) and the step (static, no activations).
  double total_bytes() const {
    const double training = weight_bytes + grad_bytes + activation_bytes + overhead_bytes + buffer_bytes;
    return optimizer_offloaded ? std::max(training, static_bytes()) : training + optimizer_bytes;
  }
  double static_bytes() const {
    return weight_bytes + grad_bytes + optimizer_bytes + overhead_bytes + buffer_bytes;
  }
};

struct MemoryReport {
  std::vector<StageMemory> stages;  ///< one per pipeline rank
  int peak_stage = 0;               ///< stage with the largest total
};

/// Bytes per parameter for weight, gradient and (unsharded) optimizer state.
/// `optimizer` is the scalar optimizer's (Adam: master copy + two moments); `muon_optimizer` the bytes of
/// a Muon-managed matrix element (master copy + one fp32 momentum buffer), 0 unless Optimizer::Muon.
struct BytesPerParam {
  double weight = 0, grad = 0, optimizer = 0, muon_optimizer = 0;
};
BytesPerParam bytes_per_param(const Strategy& st);

/// Memory of every stage.
MemoryReport stage_memory(const LayerGraph& graph);

/// Muon's work on the matrices of one pipeline rank at each optimizer step (Optimizer::Muon).
/// Per matrix of r × c elements, m = min(r, c), n = max(r, c), each quintic Newton-Schulz step forms
/// A = X Xᵀ (2m²n FLOPs), A² (2m³) and (bA + cA²) X (2m²n): ns_steps · (4m²n + 2m³) FLOPs
/// (emerging_optimizers' newton_schulz; Jordan et al. 2024, "Muon").  The qkv weight is three matrices
/// (q, k, v of all query groups) under split_qkv; an expert weight of a grouped linear is one matrix per
/// expert.  Tensor parallelism (Strategy::Muon::tp_mode): duplicated gathers each tp-split matrix whole
/// (its fp32 momentum, `tp_gather_bytes`) and every tp rank runs the whole matrix; blockwise runs the
/// rank's shard; distributed the whole matrix's FLOPs split over tp.  The layer-wise distributed optimizer
/// runs a rank's share: 1/dp of the dense matrices' FLOPs (and gathers), 1/expert-dp of the experts'.
/// Experts' weights split over expert tp (etp > 1) are orthogonalized as their shards.
struct MuonStepWork {
  double ns_flops = 0;         ///< FLOPs of this rank
  double tp_gather_bytes = 0;  ///< bytes of momentum all-gathered over tp (fp32), duplicated mode
};
MuonStepWork muon_newton_schulz(const LayerGraph& graph, int pp_rank);

/// Optimizer bytes (master copies and states) of one rank of pipeline stage `pp_rank` under Megatron's
/// legacy layer-wise assignment (Muon with `--use-distributed-optimizer --no-use-layer-wise-param-layout`,
/// LayerWiseDistributedOptimizer._shard_params_ping_pong): the stage's parameters sorted by size, smallest
/// first, dealt to the data-parallel ranks 0 … dp−1, dp−1 … 0, 0 … (experts' parameters over the expert
/// data-parallel ranks the same way); a rank keeps the states of what it was dealt.  `dp_rank` in
/// [0, dense_shard_group()), `edp_rank` in [0, expert_shard_group()).  Ties keep the layer graph's order.
/// stage_memory() counts the largest such rank.
/// @throws std::out_of_range for a rank outside its group.
double muon_ping_pong_optimizer_bytes(const LayerGraph& graph, int pp_rank, int dp_rank, int edp_rank);

/// Bytes Megatron's fine-grained activation offloading keeps on pipeline rank `pp_rank` beyond each micro
/// batch's kept activations: the offload margin's groups (StageGraph::offload_pinned_bytes, once) and
/// `--delta-offload-bytes-across-pp-ranks` · rank, at most what the `inflight_microbatches` offload.  0
/// without offloading.
double offload_kept_bytes(const LayerGraph& graph, int pp_rank, double inflight_microbatches);

}  // namespace preflight::analyzer
