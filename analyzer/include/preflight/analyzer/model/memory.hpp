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
struct BytesPerParam {
  double weight = 0, grad = 0, optimizer = 0;
};
BytesPerParam bytes_per_param(const Strategy& st);

/// Memory of every stage.
MemoryReport stage_memory(const LayerGraph& graph);

/// Bytes Megatron's fine-grained activation offloading keeps on pipeline rank `pp_rank` beyond each micro
/// batch's kept activations: the offload margin's groups (StageGraph::offload_pinned_bytes, once) and
/// `--delta-offload-bytes-across-pp-ranks` · rank, at most what the `inflight_microbatches` offload.  0
/// without offloading.
double offload_kept_bytes(const LayerGraph& graph, int pp_rank, double inflight_microbatches);

}  // namespace preflight::analyzer
