#pragma once
// The README Llama 175B case and SAPP's answers to it, as recorded in
// ../shared/data/reference_outputs/sapp/ (llama175b_latestpatched_s16_i3_mb16_mem56000_lm1_t120 and
// demo_naive_s16_i3_mb16_mem62000_t150): the layer model SAPP generated and the yaml it printed.
#include <array>

#include "preflight/analyzer/balance/decompose.hpp"
#include "preflight/analyzer/balance/init_config.hpp"
#include "preflight/analyzer/balance/problem.hpp"
#include "test_support.hpp"

namespace sapp_cases {

using namespace preflight::analyzer::balance;

/// SAPP's layers_llama175b.json (from the init yaml, times 3/18/9 ms) with SAPP's memory model.
inline BalanceProblem llama_problem(double limit_mb, bool less_memory) {
  const InitConfig cfg = read_init_config(preflight::test::data_dir() / "balance" / "init_llama175b.yaml");
  const Decomposition d = decompose_memory(cfg.observations, cfg.stages, {}, "init_llama175b.yaml");
  BalanceProblem p;
  p.model = layer_model_from_decomposition(d, *cfg.time_config, cfg.layers, "llama175b");
  p.pipeline = {16, 3, 16, less_memory};
  p.memory_limit_mb = limit_mb;
  p.constant = ConstantMemory::SappTwiceAtEnds;
  return p;
}

/// SAPP's answer for -s 16 -i 3 -mb 16 -mem 56000 -lm 1 (bubble 0.5318 = 0.3125 + 0.1266 + 0.0927).
inline YamlStrategy llama_sapp_answer() {
  YamlStrategy y;
  y.offset = {{-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
              {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
              {0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}};
  y.recompute.assign(3, std::vector<int>(16, 0));
  y.select_recompute = {{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 2},
                        {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
                        {2, 2, 2, 2, 1, 1, 2, 3, 2, 1, 0, 0, 2, 0, 2, 2}};
  y.select_comm_recompute = {{1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 2, 1, 2},
                             {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 2, 1},
                             {2, 2, 2, 2, 2, 2, 1, 3, 1, 0, 0, 0, 0, 0, 2, 2}};
  return y;
}

/// Placement from counts per chunk {none, select, comm, both}, [chunk][stage].
inline Assignment from_counts(const std::vector<std::vector<std::array<int, 4>>>& c) {
  Assignment a(1, static_cast<int>(c.size()), static_cast<int>(c[0].size()));
  for (std::size_t v = 0; v < c.size(); ++v)
    for (std::size_t s = 0; s < c[v].size(); ++s)
      for (int r = 0; r < 4; ++r)
        a.at(0, static_cast<Recompute>(r), static_cast<int>(v), static_cast<int>(s)) = c[v][s][r];
  return a;
}

/// What SAPP actually solved and simulated for the Llama case (its "Assign BODY: …" lines).  Chunk 0 of
/// stage 14 holds one select-only and one comm-only layer, which its yaml cannot express.
inline Assignment llama_sapp_internal() {
  return from_counts({{{0, 0, 0, 1},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 1, 0, 1},
                       {0, 0, 0, 2},
                       {0, 1, 1, 0},
                       {0, 0, 0, 2}},
                      {{0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 1, 0, 1},
                       {0, 0, 0, 2},
                       {0, 1, 0, 1}},
                      {{0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 1, 1},
                       {0, 0, 1, 1},
                       {0, 1, 0, 1},
                       {0, 0, 0, 3},
                       {0, 1, 0, 1},
                       {1, 1, 0, 0},
                       {2, 0, 0, 0},
                       {2, 0, 0, 0},
                       {0, 2, 0, 0},
                       {2, 0, 0, 0},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2}}});
}

/// Same for the demo (-mem 62000, -lm off).
inline Assignment demo_sapp_internal() {
  return from_counts({{{0, 0, 0, 1},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 1, 1},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 1, 0, 0},
                       {0, 1, 0, 1},
                       {0, 1, 0, 1},
                       {0, 1, 1, 0}},
                      {{0, 0, 1, 0},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 1, 1},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 1, 0, 1},
                       {0, 0, 1, 1},
                       {0, 1, 0, 1},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2}},
                      {{0, 1, 0, 2},
                       {0, 1, 0, 1},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {0, 0, 0, 2},
                       {1, 0, 0, 1},
                       {0, 1, 0, 1},
                       {3, 0, 0, 0},
                       {1, 1, 1, 0},
                       {3, 0, 0, 0},
                       {0, 0, 1, 0}}});
}

}  // namespace sapp_cases
