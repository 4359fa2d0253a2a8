#pragma once
/// @file memory_timeline.hpp
/// The peak memory of a pipeline rank along its 1F1B schedule, transients included: what an allocator
/// would report as "max allocated", where memory.hpp's StageMemory gives the steady parts (static memory
/// plus the activations of the micro batches in flight).
///
/// One rank of stage r runs min(pp − r, m) forward passes before its first backward (Narayanan et al. 2021
/// §2.2; Megatron `forward_backward_pipelining_without_interleaving`), so its peak is either
///  - in the forward of the last micro batch before a backward: static + the kept activations of the earlier
///    in-flight micro batches + what this forward has kept so far + Op::fwd_transient_bytes of the running
///    op (and, at the end of a non-last stage, its output and the received output gradient); or
///  - in the backward of the oldest micro batch: static + all in-flight activations + the gradient flowing in
///    + Op::bwd_transient_bytes of the running op, walking the ops backwards and freeing each op's kept
///    tensors after its backward.  Autograd's bookkeeping is followed where it holds memory: the gradient of
///    a residual stream is held while its branch runs and summed into a new tensor at the branch's norm; the
///    weight gradient of tied embeddings (output layer on the embedding's stage) is held until the
///    embedding's backward; a checkpointed group re-runs its forward (the tensors its ops save, its output)
///    before its backward;
///  - or in the optimizer step (torch_cpu: static + one fp32 temporary of the largest parameter; Megatron with
///    16-bit main grads: static + the fp32 gradient copies of the mixed-precision optimizer).
/// Op transients (Op::fwd_transient_bytes / bwd_transient_bytes) come from the implementation's model:
/// torch_cpu_transients.cpp (checked against allocation traces) or megatron_transients.cpp (Megatron-LM's
/// code: the loss's logits and fp32 copies, weight gradients without gradient-accumulation fusion, the
/// sequence-parallel gathers, attention backward buffers); Megatron's persistent global memory buffer is
/// static (StageMemory::buffer_bytes).  The interleaved schedule (vpp > 1) is not walked op by op: its peak is
/// StageMemory::total_bytes() plus the largest transient of any op of the rank's chunks.

#include <string>

#include "preflight/analyzer/model/layer_graph.hpp"

namespace preflight::analyzer {

/// The highest point of one rank's memory, with its parts.  Bytes.
struct PeakPoint {
  double bytes = 0;             ///< live bytes at the peak
  double static_bytes = 0;      ///< weights + gradients + optimizer states
  double activation_bytes = 0;  ///< kept activations alive at the peak (all micro batches)
  double transient_bytes = 0;   ///< the rest: gradients in flight, unkept outputs, workspaces
  std::string phase;            ///< "forward", "backward", "optimizer" or "not simulated"
  std::string op;               ///< path of the op running at the peak ("" outside ops)
};

/// Peak of one rank of pipeline stage `pp_rank`.
/// @throws InputError if pp_rank is out of range.
PeakPoint stage_peak(const LayerGraph& graph, int pp_rank);

}  // namespace preflight::analyzer
