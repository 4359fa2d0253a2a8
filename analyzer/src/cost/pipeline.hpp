#pragma once
// Private to the cost model: SimuMax v1.2's pipeline schedules (simumax/core/perf_llm.py
// calculate_1f1b_bubble with stage phases, _compute_interleaved_sync_schedule_from_ppschedule over
// transformer/pipeline_schedule.py PpSchedule's blocking interleaved job list, and
// _analysis_sync_vpp_stage_mem_impl).
#include <string>
#include <vector>

#include "preflight/analyzer/cost/estimate.hpp"

namespace preflight::analyzer::cost::detail {

/// One micro batch of one stage (or virtual chunk), ms.
struct StagePhases {
  double fwd_recv = 0, fwd_compute = 0, fwd_send = 0;
  double bwd_recv = 0, bwd_compute = 0, bwd_send = 0;
};

/// Non-interleaved 1F1B: event replay with explicit, matched send/recv (a pair ends at
/// max(start_a, start_b) + max(dur_a, dur_b)); odd ranks send before receiving in the steady state.
/// Returns the finish time of the slowest rank.  `stages` has pp entries.
/// `events` (optional) receives every compute block and transfer with its start and duration.
/// `rank_tail_ms` (optional, pp entries): work a rank runs after its last pass (the deferred output-layer
/// weight gradients on the last rank), ms — in the schedule's events as "deferred wgrad".
double one_f_one_b_time(int pp, int micro_batches, const std::vector<StagePhases>& stages,
                        std::vector<ScheduleEvent>* events = nullptr,
                        const std::vector<double>* rank_tail_ms = nullptr);

/// Interleaved (virtual pipeline) schedule with blocking, batched p2p (Megatron's sync VPP):
/// `chunks[rank][v]` gives the compute phases of virtual chunk v on that rank; `p2p_ms` each
/// transfer.  `events` (optional) receives every compute block ("F<mb>.<chunk>", "B<mb>.<chunk>") and
/// every batched transfer ("p2p": from the rank reaching it to its completion, waits included).
/// @throws std::runtime_error on a schedule deadlock (a bug, not an input problem).
double interleaved_sync_time(int pp, int vpp, int micro_batches, int group_size,
                             const std::vector<std::vector<StagePhases>>& chunks, double p2p_ms,
                             std::vector<ScheduleEvent>* events = nullptr,
                             const std::vector<double>* rank_tail_ms = nullptr);

/// One pass of a rank's interleaved program: forward or backward of micro batch `mb` on its virtual chunk.
struct PassItem {
  bool fwd = true;
  int mb = 0, chunk = 0;
};
/// Megatron's per-rank order of passes (schedules.py forward_backward_pipelining_with_interleaving): the
/// warm-up forwards (2·(pp − rank − 1) + (vpp − 1)·group + `extra_warmup`, at most all — Megatron adds one
/// with --overlap-moe-expert-parallel-comm), then one forward and one backward at a time, then the cool-down
/// backwards; micro batches in groups of `group_size` through every chunk.
std::vector<PassItem> interleaved_program(int pp, int vpp, int rank, int micro_batches, int group_size,
                                          int extra_warmup = 0);

/// Interleaved schedule with asynchronous p2p (Megatron's `overlap_p2p_comm`): each rank runs its program
/// order, a pass starting when the rank is free and the pass feeding it (previous virtual stage's forward,
/// next virtual stage's backward, of the same micro batch) has finished plus `p2p_ms`; no send waits for its
/// receiver.  The schedule of Megatron's default interleaving; interleaved_sync_time is the blocking one
/// (`--no-overlap-p2p-communication`, SimuMax), which has no schedule for groups of more than pp micro batches.
/// @throws std::runtime_error when the ranks' orders wait on each other (a bug, not an input problem).
double interleaved_async_time(int pp, int vpp, int micro_batches, int group_size,
                              const std::vector<std::vector<StagePhases>>& chunks, double p2p_ms,
                              std::vector<ScheduleEvent>* events = nullptr,
                              const std::vector<double>* rank_tail_ms = nullptr, int extra_warmup = 0);

struct VppMemory {
  double peak_bytes = 0;  ///< activation peak over the local interleaved order
  int max_live_entries = 0;
  std::string peak_path, peak_stage;
};
/// Activation memory of pp rank `rank` walking its interleaved forward/backward order.
VppMemory interleaved_memory(int pp, int vpp, int rank, int micro_batches, int group_size,
                             const std::vector<const ChunkEstimate*>& chunks);

}  // namespace preflight::analyzer::cost::detail
