#include "preflight/analyzer/tables/communication.hpp"

#include "preflight/analyzer/model/memory.hpp"

namespace preflight::analyzer {

CommReport communication(const LayerGraph& graph) {
  const Strategy& st = graph.strategy;
  const int m = st.num_microbatches();
  const int ranks_per_stage = st.world_size / st.pp;
  BytesPerParam bpp = bytes_per_param(st);
  CommReport report;
  for (int r = 0; r < st.pp; ++r) {
    StageComm sc;
    sc.pp_rank = r;
    std::int64_t dense = 0, expert = 0;
    for (const StageGraph* c : graph.stage(r)) {
      for (const Op& op : c->ops) {
        for (const CommOp& co : op.comms) {
          int times = (op.recompute && co.pass == Pass::Forward) ? 2 : 1;
          sc.per_microbatch[co.group] +=
              {static_cast<double>(co.count) * times, static_cast<double>(co.bytes) * co.count * times};
        }
      }
      for (const CommOp& co : c->p2p)
        sc.per_microbatch[co.group] +=
            {static_cast<double>(co.count), static_cast<double>(co.bytes) * co.count};
      // Trained parameters only: LoRA's frozen base weights are neither reduced nor gathered.
      expert += c->expert_param_numel() - c->frozen_param_numel(true);
      dense += c->param_numel() - c->expert_param_numel() - c->frozen_param_numel(false);
    }
    // The graph holds one pass of the schedule: a micro batch, or a unit of the sequence pipeline.
    const int passes = st.pipeline_units();
    for (const auto& [dim, v] : sc.per_microbatch)
      sc.per_iteration[dim] = {v.count * passes, v.bytes * passes};
    auto dp_sync = [&](ParallelDim dim, std::int64_t params, int group) {
      if (group <= 1 || params == 0) return;
      double grads = static_cast<double>(params) * bpp.grad;
      const int zero = st.effective_zero_stage();
      if (st.fsdp && zero >= 2) {
        // FSDP: the gradients reduce-scattered every micro batch; the parameters gathered for each forward
        // and backward (zero 3), else once after the optimizer step.
        const double weights = static_cast<double>(params) * bpp.weight;
        sc.per_iteration[dim] +=
            {m + (zero >= 3 ? 2.0 * m : 1.0), grads * m + weights * (zero >= 3 ? 2.0 * m : 1.0)};
      } else if (st.distributed_optimizer)
        sc.per_iteration[dim] += {2, grads + static_cast<double>(params) * bpp.weight};
      else
        sc.per_iteration[dim] += {1, grads};
    };
    dp_sync(ParallelDim::DP, dense, st.dp() * st.cp);
    dp_sync(ParallelDim::EDP, expert, st.expert_dp());
    for (const auto& [dim, v] : sc.per_iteration)
      report.cluster_per_iteration[dim] += {v.count * ranks_per_stage, v.bytes * ranks_per_stage};
    report.stages.push_back(std::move(sc));
  }
  return report;
}

}  // namespace preflight::analyzer
