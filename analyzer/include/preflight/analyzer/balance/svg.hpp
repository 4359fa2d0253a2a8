#pragma once
/// @file svg.hpp
/// One picture of a simulated iteration, like SAPP's matplotlib figure but drawn directly as SVG:
/// on top the schedule timeline (one row per stage; forward blocks blue, backward orange, darker the
/// earlier chunks, the recompute part of a backward block hatched, micro-batch ids in wide blocks); below
/// the memory of every stage over the same time axis with the memory limit as a dashed line, and a legend
/// with each stage's peak.  The caption gives the bubble split (real = ideal + imba + recompute).

#include <string>

#include "preflight/analyzer/balance/simulator.hpp"

namespace preflight::analyzer::balance {

struct SvgOptions {
  std::string title;           ///< first line of the header
  double memory_limit_mb = 0;  ///< drawn when > 0
};

/// `sim` must come from simulate(graph, costs, /*detail=*/true).  Returns a standalone SVG document.
std::string render_schedule_svg(const ScheduleGraph& graph, const ChunkCosts& costs,
                                const SimulationResult& sim, const SvgOptions& options);

}  // namespace preflight::analyzer::balance
