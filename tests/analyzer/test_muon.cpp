// Muon (Megatron's emerging optimizer): which parameters it manages, the states it keeps, the layer-wise
// distributed optimizer's deal of whole parameters, and the Newton-Schulz FLOPs of its step — each checked
// against numbers computed here by hand from the model's shapes.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {
// 2 layers, h 256, 4 heads of 64 in 2 query groups, SwiGLU ffn 512, rope, untied, no biases.
Words small(const Words& more) {
  Words a = {"--num-layers",
             "2",
             "--hidden-size",
             "256",
             "--num-attention-heads",
             "4",
             "--group-query-attention",
             "--num-query-groups",
             "2",
             "--ffn-hidden-size",
             "512",
             "--swiglu",
             "--seq-length",
             "128",
             "--max-position-embeddings",
             "128",
             "--position-embedding-type",
             "rope",
             "--disable-bias-linear",
             "--normalization",
             "RMSNorm",
             "--untie-embeddings-and-output-weights",
             "--vocab-size",
             "1024",
             "--micro-batch-size",
             "1",
             "--bf16",
             "--world-size",
             "4",
             "--optimizer",
             "muon"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
LayerGraph graph_of(const Words& a) {
  const MegatronConfig c = parse_megatron_args(a);
  return build_layer_graph(c.model, c.strategy);
}
// Quintic Newton-Schulz, 5 steps, of an r × c matrix.
double ns(double r, double c, int steps = 5) {
  const double m = std::min(r, c), n = std::max(r, c);
  return steps * (4 * m * m * n + 2 * m * m * m);
}
}  // namespace

// Per layer: q 256 × 256, k 128 × 256, v 128 × 256 (split_qkv), the projection 256 × 256, fc1 1024 × 256,
// fc2 256 × 512; the word embedding and the output layer are not Muon's.
TEST(Muon, NewtonSchulzFlopsOfEachMatrix) {
  const double layer = ns(256, 256) + 2 * ns(128, 256) + ns(256, 256) + ns(1024, 256) + ns(256, 512);
  const LayerGraph plain = graph_of(small({}));
  EXPECT_DOUBLE_EQ(muon_newton_schulz(plain, 0).ns_flops, 2 * layer);
  EXPECT_DOUBLE_EQ(muon_newton_schulz(plain, 0).tp_gather_bytes, 0);

  // The qkv weight whole (512 × 256) without the split.
  const double unsplit = ns(512, 256) + ns(256, 256) + ns(1024, 256) + ns(256, 512);
  EXPECT_DOUBLE_EQ(muon_newton_schulz(graph_of(small({"--muon-no-split-qkv"})), 0).ns_flops, 2 * unsplit);

  // The layer-wise distributed optimizer: a quarter on each of the 4 data-parallel ranks.
  const LayerGraph dist = graph_of(small({"--use-distributed-optimizer"}));
  EXPECT_DOUBLE_EQ(muon_newton_schulz(dist, 0).ns_flops, 2 * layer / 4);

  // tp 2: duplicated gathers each split matrix (fp32 momentum) and runs it whole; blockwise runs the shard —
  // column-parallel weights cut by rows (q 128 × 256, k 64 × 256, v 64 × 256, fc1 512 × 256), row-parallel
  // ones by columns (projection 256 × 128, fc2 256 × 256); distributed splits the whole matrices' FLOPs.
  const Words tp2 = {"--tensor-model-parallel-size", "2", "--sequence-parallel"};
  const LayerGraph dup = graph_of(small(tp2));
  EXPECT_DOUBLE_EQ(muon_newton_schulz(dup, 0).ns_flops, 2 * layer);
  const double gathered = 2 * (512.0 * 256 + 256.0 * 256 + 1024.0 * 256 + 256.0 * 512) * 4;
  EXPECT_DOUBLE_EQ(muon_newton_schulz(dup, 0).tp_gather_bytes, gathered);
  Words block = tp2;
  block.insert(block.end(), {"--muon-tp-mode", "blockwise"});
  const double shard = ns(128, 256) + 2 * ns(64, 256) + ns(256, 128) + ns(512, 256) + ns(256, 256);
  EXPECT_DOUBLE_EQ(muon_newton_schulz(graph_of(small(block)), 0).ns_flops, 2 * shard);
  EXPECT_DOUBLE_EQ(muon_newton_schulz(graph_of(small(block)), 0).tp_gather_bytes, 0);
  Words distributed = tp2;
  distributed.insert(distributed.end(), {"--muon-tp-mode", "distributed"});
  EXPECT_DOUBLE_EQ(muon_newton_schulz(graph_of(small(distributed)), 0).ns_flops, 2 * layer / 2);
}

// Muon's matrices keep their fp32 master copy and one momentum (8 bytes an element), the others Adam's
// master copy and two moments (12); Lion as the scalar optimizer keeps one moment (8).
TEST(Muon, StatesPerParameter) {
  const double matrices = 2 * (512.0 * 256 + 256.0 * 256 + 1024.0 * 256 + 256.0 * 512);
  const double others = 2 * 1024.0 * 256 + 2 * 2 * 256 + 256;  // embedding + output, 4 norms, final norm
  const StageMemory muon = stage_memory(graph_of(small({}))).stages[0];
  EXPECT_EQ(muon.muon_params, static_cast<std::int64_t>(matrices));
  EXPECT_EQ(muon.params, static_cast<std::int64_t>(matrices + others));
  EXPECT_DOUBLE_EQ(muon.optimizer_bytes, matrices * 8 + others * 12);
  const StageMemory lion = stage_memory(graph_of(small({"--muon-scalar-optimizer", "lion"}))).stages[0];
  EXPECT_DOUBLE_EQ(lion.optimizer_bytes, matrices * 8 + others * 8);
  Words adam = small({});
  adam.insert(adam.end(), {"--optimizer", "adam"});
  const StageMemory a = stage_memory(graph_of(adam)).stages[0];
  EXPECT_DOUBLE_EQ(a.optimizer_bytes, (matrices + others) * 12);
  EXPECT_EQ(a.muon_params, 0);
  // The layer-wise optimizer with its layout: states sharded over the 4 data-parallel ranks.
  EXPECT_DOUBLE_EQ(stage_memory(graph_of(small({"--use-distributed-optimizer"}))).stages[0].optimizer_bytes,
                   (matrices * 8 + others * 12) / 4);
}

// The legacy layer-wise deal (_shard_params_ping_pong): 15 parameters sorted by size — 5 norms of 256,
// k and v (in the qkv weight, one parameter) …: here the ranks' shares are computed by dealing the sorted
// list 0, 1, 2, 3, 3, 2, 1, 0, 0, … by hand.  Every byte is dealt once; stage_memory counts the largest.
TEST(Muon, LegacyPingPongDealsWholeParameters) {
  const LayerGraph g = graph_of(small({"--optimizer", "dist_muon", "--no-use-layer-wise-param-layout"}));
  // Sorted (numel, bytes/element): 5 norms (256, 12), 2 projections (65536, 8), 2 fc2 (131072, 8),
  // 2 qkv (131072, 8), 2 fc1 (262144, 8), embedding and output (262144, 12).
  std::vector<std::pair<double, double>> sorted;
  for (int i = 0; i < 5; ++i) sorted.push_back({256, 12});
  for (int i = 0; i < 2; ++i) sorted.push_back({65536, 8});
  for (int i = 0; i < 4; ++i) sorted.push_back({131072, 8});
  // Equal sizes keep the layer graph's order: layer 0's fc1, layer 1's fc1, then the output layer — the
  // embedding comes first of all in the graph, so it precedes them.
  sorted.push_back({262144, 12});
  for (int i = 0; i < 2; ++i) sorted.push_back({262144, 8});
  sorted.push_back({262144, 12});
  const int loop[8] = {0, 1, 2, 3, 3, 2, 1, 0};
  std::vector<double> rank(4, 0.0);
  for (std::size_t i = 0; i < sorted.size(); ++i) rank[loop[i % 8]] += sorted[i].first * sorted[i].second;
  double total = 0;
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(muon_ping_pong_optimizer_bytes(g, 0, r, 0), rank[r]) << "dp rank " << r;
    total += rank[r];
  }
  EXPECT_DOUBLE_EQ(total, stage_memory(graph_of(small({}))).stages[0].optimizer_bytes);
  EXPECT_DOUBLE_EQ(stage_memory(g).stages[0].optimizer_bytes, *std::max_element(rank.begin(), rank.end()));
  EXPECT_THROW(muon_ping_pong_optimizer_bytes(g, 0, 4, 0), std::out_of_range);
}
