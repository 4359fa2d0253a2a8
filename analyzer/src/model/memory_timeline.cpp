#include "preflight/analyzer/model/memory_timeline.hpp"

#include <algorithm>
#include <map>
#include <vector>

#include "preflight/analyzer/model/memory.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {

/// Live bytes split as PeakPoint reports them, and the highest point seen.
struct Tracker {
  double static_bytes = 0;
  double act = 0;    // kept activations alive
  double trans = 0;  // everything else alive
  PeakPoint best;

  void candidate(double extra, const char* phase, const std::string& op) {
    double total = static_bytes + act + trans + extra;
    if (total > best.bytes) {
      best.bytes = total;
      best.static_bytes = static_bytes;
      best.activation_bytes = act;
      best.transient_bytes = trans + extra;
      best.phase = phase;
      best.op = op;
    }
  }
};

std::int64_t saved_input_bytes(const Op& op) {
  std::int64_t n = 0;
  for (const auto& t : op.saved)
    if (t.is_input) n += t.bytes;
  return n;
}

/// Input gradient an op's backward produces (none for the embedding lookups).
double grad_in_bytes(const Op& op) {
  if (op.kind == OpKind::Embedding || op.kind == OpKind::PositionEmbedding) return 0;
  return static_cast<double>(op.input_bytes);
}

bool closes_residual_branch(const Op& op) {
  return op.kind == OpKind::Norm && (op.role == OpRole::InputNorm || op.role == OpRole::PreMlpNorm);
}

}  // namespace

PeakPoint stage_peak(const LayerGraph& graph, int pp_rank) {
  const Strategy& st = graph.strategy;
  if (pp_rank < 0 || pp_rank >= st.pp)
    throw InputError("stage", "no pipeline stage " + std::to_string(pp_rank));
  MemoryReport mem = stage_memory(graph);
  const StageMemory& sm = mem.stages[pp_rank];
  // --offload-optimizer-states: the optimizer bytes are on the device at the step only.
  const double offloaded = sm.optimizer_offloaded ? sm.optimizer_bytes : 0.0;
  if (st.vpp > 1) {
    // Interleaved schedule: not walked op by op; the steady total (static + the in-flight chunks'
    // activations) plus the largest transient any op of the rank's chunks allocates.
    PeakPoint p;
    double transient = 0;
    std::string where;
    for (const StageGraph* c : graph.stage(pp_rank))
      for (const Op& op : c->ops) {
        const double t = static_cast<double>(std::max(op.fwd_transient_bytes, op.bwd_transient_bytes));
        if (t > transient) {
          transient = t;
          where = op.path;
        }
      }
    p.bytes = sm.static_bytes() - offloaded + sm.activation_bytes + transient;
    p.static_bytes = sm.static_bytes() - offloaded;
    p.activation_bytes = sm.activation_bytes;
    p.transient_bytes = transient;
    p.phase = "interleaved (steady total + largest op transient)";
    p.op = where;
    if (offloaded > 0 && sm.static_bytes() > p.bytes) {
      p = PeakPoint{};
      p.bytes = p.static_bytes = sm.static_bytes();
      p.phase = "optimizer";
      p.op = "optimizer states reloaded";
    }
    return p;
  }
  const StageGraph& chunk = *graph.stage(pp_rank).front();
  const std::vector<Op>& ops = chunk.ops;
  const bool torch_cpu = st.transformer_impl == TransformerImpl::TorchCpu;
  const bool full_recompute = st.recompute_granularity == RecomputeGranularity::Full;
  const bool last_stage = pp_rank == st.pp - 1;
  const int n = static_cast<int>(ops.size());
  const double kept_mb = static_cast<double>(chunk.kept_activation_bytes());
  const int inflight = st.one_f_one_b_inflight(pp_rank);  // units of the sequence pipeline, if any
  const double stage_output = n > 0 && !last_stage ? static_cast<double>(ops.back().output_bytes) : 0;

  Tracker t;
  t.static_bytes = sm.static_bytes() - offloaded;
  // Offloadable bytes kept on the device (the margin, the pp-rank delta): alive through the first backward.
  const double offload_kept = offload_kept_bytes(graph, pp_rank, inflight);

  // ---- forward of the last micro batch before the first backward ----
  t.act = (inflight - 1) * kept_mb + (n > 0 ? static_cast<double>(ops.front().kept_input_bytes()) : 0) +
          offload_kept;
  for (int i = 0; i < n; ++i) {
    const Op& op = ops[i];
    double next_input = i + 1 < n ? static_cast<double>(ops[i + 1].kept_input_bytes()) : 0;
    double produced = static_cast<double>(op.kept_bytes - op.kept_input_bytes()) + next_input;
    double transient = static_cast<double>(op.fwd_transient_bytes);
    if (full_recompute && op.checkpoint >= 0) transient += static_cast<double>(op.output_bytes);  // no_grad
    t.candidate(produced + transient, "forward", op.path);
    t.act += produced;
  }
  // A non-last stage holds its output until it is sent, and receives the output gradient meanwhile.
  if (!last_stage) t.candidate(2 * stage_output, "forward", n > 0 ? ops.back().path : "");

  // ---- backward of the oldest micro batch ----
  t.act = inflight * kept_mb + offload_kept;
  // The expert-parallel overlap without pipelining (Megatron's combined_1f1b_schedule_for_no_pipelining):
  // the next micro batch's forward runs layer by layer beside this backward, layer j beside layer L − 1 − j,
  // so about one layer more is alive than one micro batch's (the largest layer taken).
  if (st.pp == 1 && st.overlap_moe_expert_parallel_comm && !st.simumax_compat && st.num_microbatches() > 1)
    t.act += static_cast<double>(chunk.largest_layer_kept_bytes());
  t.trans = stage_output;       // the received output gradient
  double g = stage_output;      // gradient flowing into the current op
  bool g_shared = false;        // g is also held for a residual stream (no dropout: the same tensor)
  std::vector<double> held;     // residual-stream gradients held while their branch runs
  double tied_weight_grad = 0;  // output-layer gradient of a tied embedding, until the embedding's backward
  double group_output = 0;      // re-run output of the checkpoint group being backpropagated
  int group = -1;
  for (int i = n - 1; i >= 0; --i) {
    const Op& op = ops[i];
    double freed_kept = static_cast<double>(op.kept_bytes);
    if (full_recompute && op.checkpoint >= 0 && op.checkpoint != group) {
      // Entering a checkpoint group from its end: its forward is re-run with grad.
      group = op.checkpoint;
      int first = i;
      while (first > 0 && ops[first - 1].checkpoint == group) --first;
      // The re-run forward, op by op: what each op saves (the front's saved input is the checkpoint's input,
      // kept already) and its forward transients.
      double saved = 0;
      for (int k = first; k <= i; ++k) {
        double s = static_cast<double>(ops[k].saved_bytes());
        if (k == first) s -= static_cast<double>(saved_input_bytes(ops[k]));
        t.candidate(saved + s + static_cast<double>(ops[k].fwd_transient_bytes), "backward", ops[k].path);
        saved += s;
      }
      group_output = static_cast<double>(op.output_bytes);
      t.trans += saved + group_output;
    }
    bool in_group = full_recompute && op.checkpoint >= 0;
    double transient = static_cast<double>(op.bwd_transient_bytes);
    bool tied_output =
        op.kind == OpKind::LinearColumn && op.layer < 0 && op.params.empty() && chunk.has_embedding;
    if (tied_output) {
      // The weight gradient of the shared embedding waits in autograd for the embedding's contribution.
      for (const auto& o : ops)
        if (o.kind == OpKind::Embedding)
          tied_weight_grad = static_cast<double>(o.param_numel()) * st.element_bytes();
      t.candidate(transient + tied_weight_grad, "backward", op.path);
      t.trans += tied_weight_grad;
    } else if (op.kind == OpKind::Embedding && tied_weight_grad > 0) {
      t.candidate(transient + tied_weight_grad, "backward", op.path);  // the two gradients summed
      t.trans -= tied_weight_grad;
      tied_weight_grad = 0;
    } else {
      t.candidate(transient, "backward", op.path);
    }

    double grad_in = grad_in_bytes(op);
    if (op.kind == OpKind::BiasDropoutAdd) {
      // The residual path keeps the incoming gradient until the branch's norm; the branch gets the dropout
      // gradient (a new tensor) or, without dropout, the same one.
      held.push_back(g_shared ? 0 : g);
      bool dropout = graph.model.hidden_dropout > 0;
      if (dropout) {
        t.trans += torch_cpu ? static_cast<double>(op.bwd_transient_bytes) : grad_in;
        g = torch_cpu ? static_cast<double>(op.bwd_transient_bytes) : grad_in;
        g_shared = false;
      } else {
        g_shared = true;
      }
      t.act -= freed_kept;
      continue;
    }
    // The op's input gradient replaces the gradient flowing in; its kept tensors go.
    t.trans += grad_in - (g_shared ? 0 : g);
    g = grad_in;
    g_shared = false;
    t.act -= freed_kept;  // in a checkpoint group: its input and RNG state, at the group's front
    if (in_group) {
      bool group_front = i == 0 || ops[i - 1].checkpoint != group;
      // The re-run tensors this op saved go; the front's saved input is the checkpoint's input itself.
      t.trans -= static_cast<double>(op.saved_bytes()) -
                 (group_front ? static_cast<double>(saved_input_bytes(op)) : 0);
      if (group_front) {
        t.trans -= group_output;  // the re-run output, released when the group's backward returns
        group = -1;
      }
    }
    if (closes_residual_branch(op) && !held.empty()) {
      // grad(residual) + grad(branch) → a new tensor; both inputs go.
      double h = held.back();
      held.pop_back();
      double sum = static_cast<double>(op.input_bytes);
      t.candidate(sum, "backward", op.path);
      t.trans += sum - h - g;
      g = sum;
    }
  }

  // ---- optimizer step ----
  if (offloaded > 0) {  // the states back on the device, the activations gone
    t.static_bytes += offloaded;
    t.act = 0;
    t.trans = 0;
    t.candidate(0, "optimizer", "optimizer states reloaded");
  }
  if (!torch_cpu && st.param_bytes == 0 && st.precision != Precision::FP32 && st.main_grad_bytes() < 4) {
    // 16-bit main grads: the mixed-precision optimizer gives each fp32 main parameter an fp32 copy of its
    // gradient for the step (`_copy_model_grads_to_main_grads`: `main_param.grad = main_grad.float()`; the
    // distributed optimizer for its shard), alive until the step ends.  With fp32 main grads (bf16 default,
    // --accumulate-allreduce-grads-in-fp32) `.float()` is the buffer itself.
    t.act = 0;
    t.trans = 0;
    const bool sharded = st.distributed_optimizer || st.effective_zero_stage() >= 1;
    // Trained parameters only (LoRA's frozen base weights have no gradient).
    const double expert = static_cast<double>(sm.trained_expert_params());
    const double dense = static_cast<double>(sm.trained_dense_params());
    double copies = 4.0 * (dense / (sharded ? static_cast<double>(st.dense_shard_group()) : 1.0) +
                           expert / (sharded ? static_cast<double>(st.expert_shard_group()) : 1.0));
    if (st.zero3_sub_group_elements >= 0) {
      // DeepSpeed ZeRO-3: one sub group's copy at a time.  A sub group closes once it holds sub_group_size
      // elements, so it is at least one parameter's partition (sub_group_size 0: each parameter alone).
      double largest = 0;
      for (const auto& op : ops)
        for (const auto& p : op.params)
          largest = std::max(
              largest, static_cast<double>(p.numel()) /
                           static_cast<double>(p.expert ? st.expert_shard_group() : st.dense_shard_group()));
      copies = std::min(copies, 4.0 * std::max(static_cast<double>(st.zero3_sub_group_elements), largest));
    }
    t.candidate(copies, "optimizer", "fp32 gradient copies");
  }
  if (torch_cpu) {
    t.act = 0;
    t.trans = 0;
    double largest = 0;
    for (const auto& op : ops)
      for (const auto& p : op.params) largest = std::max(largest, static_cast<double>(p.numel()) * 4);
    t.candidate(largest, "optimizer", "");
  }
  return t.best;
}

}  // namespace preflight::analyzer
