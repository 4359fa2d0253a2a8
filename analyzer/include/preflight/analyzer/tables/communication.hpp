#pragma once
/// @file communication.hpp
/// What each parallel dimension communicates, read off the layer graph.
///
/// Per rank of each pipeline stage and per iteration (m micro batches):
///  - TP / CP / EP / ETP: the collectives of every op, once per micro batch, plus once more for the
///    forward collectives of recomputed ops (activation checkpointing re-runs the forward pass);
///  - PP: the stage's send/recv of [s/cp (/tp with SP), b, h] activations and gradients per micro batch;
///  - DP: once per iteration, the gradient reduce-scatter + parameter all-gather of the distributed
///    optimizer (all-reduce without it) over dp·cp ranks for dense parameters and expert-dp ranks for
///    expert parameters; gradients travel as main_grad bytes, parameters in the weight precision.
/// "bytes" is the payload of each collective on one rank (the full buffer being reduced / gathered),
/// not the bus traffic, which depends on the algorithm and group size; "count" counts operations.

#include <map>
#include <vector>

#include "preflight/analyzer/model/layer_graph.hpp"

namespace preflight::analyzer {

struct CommVolume {
  double count = 0;  ///< operations
  double bytes = 0;  ///< payload bytes
  CommVolume& operator+=(const CommVolume& o) {
    count += o.count;
    bytes += o.bytes;
    return *this;
  }
};

/// One rank of one pipeline stage.
struct StageComm {
  int pp_rank = 0;
  std::map<ParallelDim, CommVolume> per_microbatch;  ///< TP, CP, EP, ETP, PP
  std::map<ParallelDim, CommVolume> per_iteration;   ///< all of the above × m, plus DP / EDP
};

struct CommReport {
  std::vector<StageComm> stages;
  /// Summed over every rank of the cluster, per iteration.
  std::map<ParallelDim, CommVolume> cluster_per_iteration;
};

CommReport communication(const LayerGraph& graph);

}  // namespace preflight::analyzer
