#pragma once
/// @file simulator.hpp
/// Block-level pipeline simulator, the same model as SAPP's (mindformers
/// `toolkit/pipeline_balance/simulator/`, run without communication blocks as SAPP always runs it;
/// notes/sapp.md §8–9).
///
/// Every stage executes a fixed sequence of blocks (one forward or backward of one micro batch through
/// one chunk).  A block starts when the previous block on its stage and its data dependency have ended:
///   forward  (m, v, p):  after forward (m, v, p-1); on stage 0 after forward (m, v-1, S-1) (v > 0)
///   backward (m, v, p):  after backward (m, v, p+1); on stage S-1 after backward (m, v+1, 0), and for
///                        the last chunk after forward (m, V-1, S-1).
/// Memory of stage p starts at its static memory (c + parameters + head/tail) and moves by the chunk's
/// activation after each block (+ forward, − backward); it is sampled at block ends.
///
/// Bubble (SAPP's `_statistic_info`):
///   model    = (Σ forward + Σ backward without recompute) · m
///   hardware = (Σ forward + Σ backward) · m
///   ideal = (S-1) / V / m,  recompute = hardware / model - 1,  real = (S · end - model) / model,
///   imba = real - ideal - recompute.
/// The block order per stage is fixed by (S, V, m, schedule); ScheduleGraph builds it once so that a
/// candidate placement is evaluated in one pass over the blocks (O(S·V·m)).

#include <utility>
#include <vector>

#include "preflight/analyzer/balance/problem.hpp"

namespace preflight::analyzer::balance {

/// One block of the schedule.
struct Block {
  int stage = 0;
  bool forward = true;
  int micro = 0;
  int chunk = 0;     ///< real chunk index (SAPP's backward lists use V-1-chunk; this is already mapped)
  int left = -1;     ///< previous block on the same stage, -1 for the first
  int pre = -1;      ///< data dependency, -1 for forward (m, 0, 0)
  int position = 0;  ///< index in its stage's sequence
};

class ScheduleGraph {
 public:
  /// Builds the block sequences.  Throws InputError when m < S (SAPP's simulator cannot build them)
  /// or a size is < 1.
  explicit ScheduleGraph(const PipelineConfig& pipeline);

  const PipelineConfig& pipeline() const { return pipeline_; }
  /// All blocks, in an order where dependencies come first.
  const std::vector<Block>& blocks() const { return blocks_; }
  /// Block indices per stage in execution order.
  const std::vector<std::vector<int>>& stage_sequence() const { return stage_sequence_; }
  /// Distinct vectors of in-flight micro batches per chunk ([chunk] counts) that occur at block ends on
  /// a stage; the stage's peak is static + max over them of Σ_v count_v · activation(v, stage).
  const std::vector<std::vector<int>>& live_patterns(int stage) const { return live_patterns_[stage]; }

  /// Flat arrays for the fast path, per block: dependencies (-1 = none; both point to earlier blocks)
  /// and the index of its duration in [forward (v·S+s) …, backward (V·S + v·S+s) …].
  const std::vector<int>& left_of() const { return left_; }
  const std::vector<int>& pre_of() const { return pre_; }
  const std::vector<int>& duration_index() const { return dur_index_; }

 private:
  std::vector<int> left_, pre_, dur_index_;
  PipelineConfig pipeline_;
  std::vector<Block> blocks_;
  std::vector<std::vector<int>> stage_sequence_;
  std::vector<std::vector<std::vector<int>>> live_patterns_;
};

struct Bubbles {
  double real = 0, ideal = 0, imba = 0, recompute = 0;
  bool has_recompute = false;  ///< SAPP prints the recompute column only when Σ recompute > 1e-5
};

struct BlockTiming {
  double start_ms = 0, end_ms = 0;
};

struct SimulationResult {
  double end_time_ms = 0;       ///< makespan of one iteration
  std::vector<double> peak_mb;  ///< per stage
  Bubbles bubbles;
  /// Filled by simulate(…, detail = true): timing per block (same indexing as ScheduleGraph::blocks())
  /// and per stage the memory series (time ms, MB): (0, static memory), then one point per block end.
  std::vector<BlockTiming> timing;
  std::vector<std::vector<std::pair<double, double>>> memory_series;

  double max_peak_mb() const;
  bool fits(double limit_mb) const { return max_peak_mb() <= limit_mb + 1e-6; }
};

/// Full simulation.
SimulationResult simulate(const ScheduleGraph& graph, const ChunkCosts& costs, bool detail = false);

/// Makespan only (fast path).  `scratch` is reused between calls.
double simulate_makespan(const ScheduleGraph& graph, const ChunkCosts& costs, std::vector<double>& scratch);
/// Peak memory of one stage (fast path).
double simulate_stage_peak(const ScheduleGraph& graph, const ChunkCosts& costs, int stage);

/// The bubble statistics for a makespan.
Bubbles bubbles_for(const PipelineConfig& pipeline, const ChunkCosts& costs, double end_time_ms);

}  // namespace preflight::analyzer::balance
