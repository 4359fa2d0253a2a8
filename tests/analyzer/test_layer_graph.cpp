// The layer graph and the memory read off it, against hand-computed numbers and published formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/analyzer/model/memory_timeline.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;

namespace {

MegatronConfig parse(const Words& w) {
  return parse_megatron_args(w, {});
}

LayerGraph graph_of(const Words& w) {
  MegatronConfig c = parse(w);
  return build_layer_graph(c.model, c.strategy);
}

/// Kept bytes of transformer layer `layer`, without the fp32 norm statistics.
double layer_kept_without_stats(const LayerGraph& g, int layer) {
  double total = 0;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops) {
      if (op.layer != layer) continue;
      double stats = 0;
      if (op.kind == OpKind::Norm && !op.recompute)
        for (const auto& s : op.saved)
          if (s.name == "stats") stats = static_cast<double>(s.bytes);
      total += static_cast<double>(op.kept_bytes) - stats;
    }
  return total;
}

}  // namespace

TEST(LayerGraph, Gpt3_175bParameterCount) {
  // 96·(12h² + 13h) + v·h + 2048·h + 2h with h = 12288, v = 50304 (GPT-2 vocab padded to 128).
  ModelSpec m = parse({"--num-layers", "96", "--hidden-size", "12288", "--num-attention-heads", "96",
                       "--seq-length", "2048", "--max-position-embeddings", "2048", "--vocab-size", "50257"})
                    .model;
  std::int64_t h = 12288;
  std::int64_t expected = 96 * (12 * h * h + 13 * h) + 50304 * h + 2048 * h + 2 * h;
  EXPECT_EQ(count_parameters(m), expected);
  EXPECT_NEAR(static_cast<double>(count_parameters(m)) / 175e9, 1.0, 0.01);
}

TEST(LayerGraph, Llama3_8bParameterCount) {
  ModelSpec m = parse({"--num-layers",
                       "32",
                       "--hidden-size",
                       "4096",
                       "--ffn-hidden-size",
                       "14336",
                       "--num-attention-heads",
                       "32",
                       "--group-query-attention",
                       "--num-query-groups",
                       "8",
                       "--kv-channels",
                       "128",
                       "--seq-length",
                       "8192",
                       "--position-embedding-type",
                       "rope",
                       "--swiglu",
                       "--normalization",
                       "RMSNorm",
                       "--untie-embeddings-and-output-weights",
                       "--disable-bias-linear",
                       "--vocab-size",
                       "128256",
                       "--make-vocab-size-divisible-by",
                       "128"})
                    .model;
  // per layer: qkv 6144·4096 + proj 4096² + fc1 2·14336·4096 + fc2 14336·4096 + 2 norms = 218,112,000
  std::int64_t expected = 32LL * 218112000 + 2LL * 128256 * 4096 + 4096;
  EXPECT_EQ(count_parameters(m), expected);
  EXPECT_NEAR(static_cast<double>(count_parameters(m)) / 8.03e9, 1.0, 0.01);
}

TEST(LayerGraph, Mixtral8x7bParameterCount) {
  // Megatron's Mixtral example arguments (empty $TOKENIZER_MODEL included): per layer attention
  // 25,165,824 + 16,777,216, norms 8,192, router 8·4096, experts 8·3·14336·4096; untied 32000-token vocab.
  // Megatron's script also passes --no-position-embedding, --moe-grouped-gemm, an empty --tokenizer-model
  // and data flags the analysis ignores.
  MegatronConfig c =
      parse(preflight::test::words(preflight::test::mixtral_8x7b_megatron_args() +
                                   "--no-position-embedding --moe-grouped-gemm --tokenizer-model "
                                   "--data-path --split 99990,8,2"));
  std::int64_t per_layer = 25165824LL + 16777216 + 8192 + 8 * 4096 + 8LL * 3 * 14336 * 4096;
  std::int64_t expected = 32 * per_layer + 2LL * 32000 * 4096 + 4096;
  EXPECT_EQ(count_parameters(c.model), expected);
  EXPECT_NEAR(static_cast<double>(expected) / 46.7e9, 1.0, 0.01);
}

TEST(LayerGraph, KorthikantiTensorParallelSequenceParallelSelective) {
  // Korthikanti et al. 2022 Table 2: TP + SP + selective recompute keeps 34·s·b·h/t bytes per layer
  // (16-bit activations, 1-byte dropout masks, f = 4h).
  const std::int64_t s = 2048, b = 4, h = 4096, t = 4;
  LayerGraph g = graph_of({"--num-layers",
                           "8",
                           "--hidden-size",
                           "4096",
                           "--num-attention-heads",
                           "32",
                           "--seq-length",
                           "2048",
                           "--micro-batch-size",
                           "4",
                           "--vocab-size",
                           "50257",
                           "--bf16",
                           "--tensor-model-parallel-size",
                           "4",
                           "--sequence-parallel",
                           "--attention-backend",
                           "unfused",
                           "--recompute-granularity",
                           "selective",
                           "--world-size",
                           "4"});
  double expected = 34.0 * s * b * h / t;
  EXPECT_DOUBLE_EQ(layer_kept_without_stats(g, 3), expected);
}

TEST(LayerGraph, KorthikantiTensorParallelOnlyWithAttentionScores) {
  // TP without SP, math attention with dropout: s·b·h·(10 + 24/t + 5·a·s/(h·t)).
  const double s = 1024, b = 2, h = 2048, a = 16, t = 2;
  LayerGraph g =
      graph_of({"--num-layers", "4", "--hidden-size", "2048", "--num-attention-heads", "16", "--seq-length",
                "1024", "--micro-batch-size", "2", "--vocab-size", "50257", "--fp16",
                "--tensor-model-parallel-size", "2", "--attention-backend", "unfused", "--world-size", "2"});
  double expected = s * b * h * (10 + 24 / t + 5 * a * s / (h * t));
  EXPECT_DOUBLE_EQ(layer_kept_without_stats(g, 0), expected);
}

TEST(LayerGraph, FullRecomputeKeepsOnlyLayerInputs) {
  // uniform, 2 layers per checkpoint, 8 layers on one stage: 4 checkpoint inputs of 2·s·b·h/t.
  LayerGraph g = graph_of({"--num-layers",
                           "8",
                           "--hidden-size",
                           "1024",
                           "--num-attention-heads",
                           "8",
                           "--seq-length",
                           "512",
                           "--vocab-size",
                           "1000",
                           "--bf16",
                           "--recompute-granularity",
                           "full",
                           "--recompute-method",
                           "uniform",
                           "--recompute-num-layers",
                           "2",
                           "--tensor-model-parallel-size",
                           "2",
                           "--sequence-parallel",
                           "--world-size",
                           "2"});
  double per_input = 2.0 * 512 * 1 * 1024 / 2;
  double total = 0;
  for (int l = 0; l < 8; ++l) total += layer_kept_without_stats(g, l);
  EXPECT_DOUBLE_EQ(total, 4 * per_input);
}

TEST(LayerGraph, UnevenFirstAndLastStages) {
  LayerGraph g = graph_of({"--num-layers", "30", "--hidden-size", "256", "--num-attention-heads", "4",
                           "--seq-length", "128", "--vocab-size", "1000", "--pipeline-model-parallel-size",
                           "4", "--decoder-first-pipeline-num-layers", "6",
                           "--decoder-last-pipeline-num-layers", "6", "--world-size", "4"});
  ASSERT_EQ(g.chunks.size(), 4u);
  EXPECT_EQ(g.chunks[0].num_layers, 6);
  EXPECT_EQ(g.chunks[1].num_layers, 9);
  EXPECT_EQ(g.chunks[1].first_layer, 6);
  EXPECT_EQ(g.chunks[3].first_layer, 24);
  EXPECT_TRUE(g.chunks[0].has_embedding);
  EXPECT_TRUE(g.chunks[3].has_output_layer);
}

TEST(LayerGraph, LayersNotDivisibleByPipelineIsAnInputError) {
  try {
    graph_of({"--num-layers", "30", "--hidden-size", "256", "--num-attention-heads", "4", "--seq-length",
              "128", "--vocab-size", "1000", "--pipeline-model-parallel-size", "4", "--world-size", "4"});
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--num-layers");
  }
}

TEST(LayerGraph, InconsistentSizesAreInputErrors) {
  Words base = {"--num-layers", "4",   "--hidden-size", "256", "--num-attention-heads", "6",
                "--seq-length", "128", "--vocab-size",  "1000"};
  auto fails = [&](Words extra, const std::string& where) {
    Words w = base;
    w.insert(w.end(), extra.begin(), extra.end());
    try {
      graph_of(w);
      ADD_FAILURE() << "no error for " << where;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
    }
  };
  fails({"--tensor-model-parallel-size", "4", "--world-size", "4"}, "--tensor-model-parallel-size");
  fails({"--tensor-model-parallel-size", "2", "--world-size", "6", "--pipeline-model-parallel-size", "2"},
        "world size");
  fails({"--group-query-attention", "--num-query-groups", "4"}, "--num-query-groups");
  fails({"--global-batch-size", "3", "--world-size", "2"}, "--global-batch-size");
  fails({"--num-layers", "0"}, "--num-layers");
}

TEST(PipelineLayout, ReadsMegatronsGrammar) {
  // Megatron's documented DeepSeek-V3 layout with the MTP layer replaced by a decoder layer: 62 layers,
  // pp 16 → 32 segments, vpp 2 (segment i = chunk i / 16 of rank i % 16).
  const auto l = parse_pipeline_layout("Et*3|(tt|)*29,t|L", 16, 62, 0);
  ASSERT_EQ(l.size(), 2u);
  ASSERT_EQ(l[0].size(), 16u);
  EXPECT_EQ(l[0][0], 3);
  for (int r = 1; r < 16; ++r) EXPECT_EQ(l[0][r], 2) << r;
  for (int r = 0; r < 14; ++r) EXPECT_EQ(l[1][r], 2) << r;
  EXPECT_EQ(l[1][14], 1);
  EXPECT_EQ(l[1][15], 0);  // loss only (empty stages are legal)
  // The same with its MTP layer: modelled on the last stage only, so Megatron's placement is refused.
  try {
    parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 61, 1);
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("last stage only"), std::string::npos) << e.what();
  }
  // MTP with the loss on the last stage is modelled.
  const auto mtp = parse_pipeline_layout("Et*3|(tt|)*29,t|mL", 16, 62, 1);
  EXPECT_EQ(mtp[1][14], 1);
  EXPECT_EQ(mtp[1][15], 0);
  struct Bad {
    std::string layout, needle;
    int layers;
  };
  for (const Bad& b : std::vector<Bad>{{"Et*3|t*4L", "places 7 transformer layers", 8},
                                       {"t*3|Et*5L", "embedding E must be the first", 8},
                                       {"Et*3|t*5", "loss L must be the last", 8},
                                       {"Et*3|t*5L|t", "3 stages do not divide", 9},
                                       {"Et*3|x*5L", "unknown layer 'x'", 8},
                                       {"Et*3|(t*5L", "cannot read", 8}}) {
    try {
      parse_pipeline_layout(b.layout, 2, b.layers, 0);
      FAIL() << b.layout;
    } catch (const preflight::InputError& e) {
      EXPECT_EQ(e.where(), "--pipeline-model-parallel-layout");
      EXPECT_NE(std::string(e.what()).find(b.needle), std::string::npos) << b.layout << ": " << e.what();
    }
  }
}

TEST(LayerGraph, PipelineLayoutEqualsTheFirstStageFlagsItSpells) {
  const Words base = {"--num-layers", "30",  "--hidden-size", "256",  "--num-attention-heads",          "4",
                      "--seq-length", "128", "--vocab-size",  "1000", "--pipeline-model-parallel-size", "4",
                      "--world-size", "4"};
  Words a = base, b = base;
  a.insert(a.end(), {"--pipeline-model-parallel-layout", "Et*6|(t*9|)*2,t*6L"});
  b.insert(b.end(), {"--decoder-first-pipeline-num-layers", "6", "--decoder-last-pipeline-num-layers", "6"});
  const LayerGraph ga = graph_of(a), gb = graph_of(b);
  ASSERT_EQ(ga.chunks.size(), gb.chunks.size());
  for (std::size_t i = 0; i < ga.chunks.size(); ++i) {
    EXPECT_EQ(ga.chunks[i].num_layers, gb.chunks[i].num_layers);
    EXPECT_EQ(ga.chunks[i].first_layer, gb.chunks[i].first_layer);
    EXPECT_EQ(ga.chunks[i].param_numel(), gb.chunks[i].param_numel());
    EXPECT_EQ(ga.chunks[i].kept_activation_bytes(), gb.chunks[i].kept_activation_bytes());
  }
}

TEST(LayerGraph, PipelineLayoutWithVirtualChunks) {
  // pp 2, 4 segments → vpp 2; chunk 0: ranks hold 1 and 3 layers, chunk 1: 2 and 2.
  const Words base = {"--num-layers",
                      "8",
                      "--hidden-size",
                      "256",
                      "--num-attention-heads",
                      "4",
                      "--seq-length",
                      "128",
                      "--vocab-size",
                      "1000",
                      "--pipeline-model-parallel-size",
                      "2",
                      "--world-size",
                      "2",
                      "--micro-batch-size",
                      "1",
                      "--global-batch-size",
                      "8"};
  auto with = [&](const Words& extra) {
    Words w = base;
    w.insert(w.end(), extra.begin(), extra.end());
    return w;
  };
  const LayerGraph g = graph_of(with({"--pipeline-model-parallel-layout", "Et|t*3|t*2|t*2L"}));
  EXPECT_EQ(g.strategy.vpp, 2);
  const auto r0 = g.stage(0), r1 = g.stage(1);
  ASSERT_EQ(r0.size(), 2u);
  EXPECT_EQ(r0[0]->num_layers, 1);
  EXPECT_EQ(r0[0]->first_layer, 0);
  EXPECT_EQ(r1[0]->num_layers, 3);
  EXPECT_EQ(r1[0]->first_layer, 1);
  EXPECT_EQ(r0[1]->num_layers, 2);
  EXPECT_EQ(r0[1]->first_layer, 4);  // after chunk 0 of both ranks
  EXPECT_EQ(r1[1]->first_layer, 6);
  EXPECT_TRUE(r0[0]->has_embedding);
  EXPECT_TRUE(r1[1]->has_output_layer);
  // Megatron refuses the layout next to the other split flags; so do we.
  try {
    graph_of(
        with({"--pipeline-model-parallel-layout", "Et*3|t*5L", "--decoder-first-pipeline-num-layers", "3"}));
    FAIL();
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "--pipeline-model-parallel-layout");
  }
}

namespace {
/// Megatron `compute_weight_and_optimizer_memory` (core_r0.8 dense form), bytes on the most loaded shard.
double megatron_weight_and_optimizer(double L, double h, double a, double g, double kv, double f, bool swiglu,
                                     double v_padded, bool untied, int t, int p, int d, bool dist_opt) {
  double gamma = swiglu ? 1.5 : 1.0;
  double transformer = 2 * L * h * h * ((1 + g / a) * (kv * a / h) + (f / h) * gamma + 2 / h + 1 / (L * h));
  double embedding = h * v_padded * (untied ? 2 : 1);
  double shard = (transformer / p + h * v_padded) / t;
  if (untied && p == 1) shard += h * v_padded / t;
  double bytes_per_param = dist_opt ? 6 + 12.0 / d : 18;
  (void)embedding;
  return shard * bytes_per_param;
}
}  // namespace

TEST(Memory, WeightAndOptimizerMatchMegatronTheoreticalFormula) {
  struct Case {
    int L, h, a, g, f, t, p, nodes;
    bool swiglu, untied, dist_opt;
  };
  const std::vector<Case> cases = {
      {32, 4096, 32, 32, 16384, 1, 1, 1, false, false, true},
      {32, 4096, 32, 8, 14336, 2, 1, 1, true, true, true},
      {80, 8192, 64, 8, 28672, 8, 4, 4, true, true, true},
      {96, 12288, 96, 96, 49152, 8, 8, 8, false, false, false},
      {40, 5120, 40, 40, 13824, 4, 2, 2, true, true, false},
      {24, 2048, 16, 4, 8192, 2, 2, 1, false, false, true},
  };
  for (const auto& cs : cases) {
    Words w = {"--num-layers",
               std::to_string(cs.L),
               "--hidden-size",
               std::to_string(cs.h),
               "--num-attention-heads",
               std::to_string(cs.a),
               "--group-query-attention",
               "--num-query-groups",
               std::to_string(cs.g),
               "--ffn-hidden-size",
               std::to_string(cs.f),
               "--seq-length",
               "4096",
               "--position-embedding-type",
               "rope",
               "--disable-bias-linear",
               "--vocab-size",
               "32000",
               "--bf16",
               "--tensor-model-parallel-size",
               std::to_string(cs.t),
               "--pipeline-model-parallel-size",
               std::to_string(cs.p),
               "--nproc_per_node",
               "8",
               "--nnodes",
               std::to_string(cs.nodes)};
    if (cs.swiglu) w.push_back("--swiglu");
    if (cs.untied) w.push_back("--untie-embeddings-and-output-weights");
    if (cs.dist_opt) w.push_back("--use-distributed-optimizer");
    LayerGraph g = graph_of(w);
    MemoryReport mem = stage_memory(g);
    int d = g.strategy.dp();
    double v = static_cast<double>(g.padded_vocab);
    double expected = megatron_weight_and_optimizer(cs.L, cs.h, cs.a, cs.g, cs.h / cs.a, cs.f, cs.swiglu, v,
                                                    cs.untied, cs.t, cs.p, d, cs.dist_opt);
    const auto& s0 = mem.stages[0];
    double ours = s0.weight_bytes + s0.grad_bytes + s0.optimizer_bytes;  // static_bytes() also has buffers
    EXPECT_NEAR(ours / expected, 1.0, 0.001) << "L" << cs.L << " h" << cs.h << " t" << cs.t << " p" << cs.p;
  }
}

TEST(Memory, OneFOneBInFlightMicrobatches) {
  LayerGraph g = graph_of({"--num-layers", "8", "--hidden-size", "256", "--num-attention-heads", "4",
                           "--seq-length", "128", "--vocab-size", "1000", "--pipeline-model-parallel-size",
                           "4", "--world-size", "8", "--micro-batch-size", "1", "--global-batch-size", "6"});
  MemoryReport mem = stage_memory(g);  // dp 2, 3 micro batches
  EXPECT_EQ(mem.stages[0].inflight_microbatches, 3);
  EXPECT_EQ(mem.stages[1].inflight_microbatches, 3);
  EXPECT_EQ(mem.stages[2].inflight_microbatches, 2);
  EXPECT_EQ(mem.stages[3].inflight_microbatches, 1);
}

TEST(Memory, InterleavedFirstStageMatchesMegatronFactor) {
  // Megatron: first stage holds L·(1 + (p−1)/(p·m)) layers of activations with m virtual chunks.
  LayerGraph g = graph_of(preflight::test::words(
      "--num-layers 16 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size "
      "1000 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2 "
      "--world-size 4 --global-batch-size 64 --hidden-dropout 0 --position-embedding-type rope"));
  MemoryReport mem = stage_memory(g);
  double per_layer = layer_kept_without_stats(g, 5);
  double stats_per_layer = 2 * 2 * 128 * 4.0;  // two LayerNorms, mean + rstd fp32, 128 tokens
  double p = 4, m = 2, L = 16;
  double expected_layers = L * (1 + (p - 1) / (p * m));
  double embedding_ids = 8 * 128;  // int64 token ids kept by each forward pass of chunk 0
  // 16 micro batches: (p−1)·2 + (m−1)·p + 1 = 11 chunk passes in flight; forwards 0–3 and 8–10 run
  // chunk 0 (with the embedding), 4–7 chunk 1.
  double act = mem.stages[0].activation_bytes;
  double layers_bytes = expected_layers * (per_layer + stats_per_layer);
  EXPECT_DOUBLE_EQ(act, layers_bytes + 7 * embedding_ids);
}

// --offload-optimizer-states (Megatron's OptimizerStateOffloader): the distributed optimizer's moments and
// master weights live on the host between steps, so the forward / backward peak is the same without them and
// the step holds them with no activations (it was read past: the peak counted them).
TEST(Memory, OffloadedOptimizerStatesLeaveTheTrainingPeak) {
  const std::vector<std::string> base = preflight::test::words(
      "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --vocab-size "
      "32000 --pipeline-model-parallel-size 2 --world-size 4 --global-batch-size 8 "
      "--use-distributed-optimizer --swiglu --disable-bias-linear");
  std::vector<std::string> off = base;
  off.push_back("--offload-optimizer-states");
  const LayerGraph g0 = graph_of(base), g1 = graph_of(off);
  const MemoryReport m0 = stage_memory(g0), m1 = stage_memory(g1);
  for (int r = 0; r < 2; ++r) {
    const auto& s = m1.stages[static_cast<std::size_t>(r)];
    ASSERT_GT(s.optimizer_bytes, 0);
    EXPECT_DOUBLE_EQ(s.optimizer_bytes, m0.stages[static_cast<std::size_t>(r)].optimizer_bytes);
    const PeakPoint p0 = stage_peak(g0, r), p1 = stage_peak(g1, r);
    // Training peak without the optimizer bytes, or the step with them and nothing else.
    EXPECT_DOUBLE_EQ(p1.bytes, std::max(p0.bytes - s.optimizer_bytes, s.static_bytes())) << r;
    EXPECT_LT(p1.bytes, p0.bytes) << r;
    EXPECT_DOUBLE_EQ(s.total_bytes(),
                     m0.stages[static_cast<std::size_t>(r)].total_bytes() - s.optimizer_bytes);
  }
  // Megatron's offloader moves the distributed optimizer's shards: refused without it.
  std::vector<std::string> plain(base.begin(), base.end() - 3);
  plain.push_back("--offload-optimizer-states");
  EXPECT_THROW(graph_of(plain), preflight::InputError);
}

// --optimizer-cpu-offload (Megatron's HybridDeviceOptimizer, needs --use-precision-aware-optimizer): the
// states of --optimizer-offload-fraction of the parameters (default all) are on the host.  It was named as
// not modelled.
TEST(Memory, OptimizerCpuOffloadKeepsTheRestOnTheDevice) {
  const std::string base =
      "--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --vocab-size 32000 "
      "--pipeline-model-parallel-size 2 --world-size 4 --global-batch-size 8 --use-distributed-optimizer "
      "--swiglu --disable-bias-linear --bf16 --use-precision-aware-optimizer";
  const MemoryReport m0 = stage_memory(graph_of(preflight::test::words(base)));
  const MemoryReport all = stage_memory(graph_of(preflight::test::words(base + " --optimizer-cpu-offload")));
  const MemoryReport part = stage_memory(
      graph_of(preflight::test::words(base + " --optimizer-cpu-offload --optimizer-offload-fraction 0.25")));
  for (std::size_t r = 0; r < 2; ++r) {
    ASSERT_GT(m0.stages[r].optimizer_bytes, 0);
    EXPECT_DOUBLE_EQ(all.stages[r].optimizer_bytes, 0);
    EXPECT_DOUBLE_EQ(part.stages[r].optimizer_bytes, 0.75 * m0.stages[r].optimizer_bytes);
    EXPECT_DOUBLE_EQ(part.stages[r].grad_bytes, m0.stages[r].grad_bytes);  // gradients stay on the device
  }
  const std::string plain = base.substr(0, base.find(" --use-precision-aware-optimizer"));
  EXPECT_THROW(graph_of(preflight::test::words(plain + " --optimizer-cpu-offload")), preflight::InputError);
  EXPECT_THROW(
      graph_of(preflight::test::words(base + " --optimizer-cpu-offload --optimizer-offload-fraction 2")),
      preflight::InputError);
}

// Megatron's fine-grained activation offloading: each listed module's saved input leaves the device between
// forward and backward (from --min-offloaded-tensor-size elements); the module checks Megatron makes are
// refused by name.  It was read past (the activations priced as kept).
TEST(Memory, FineGrainedActivationOffloadingFreesSavedInputs) {
  const std::vector<std::string> base = preflight::test::words(
      "--num-layers 2 --hidden-size 1024 --num-attention-heads 8 --seq-length 4096 --vocab-size "
      "32000 --world-size 8 --global-batch-size 8 --swiglu --disable-bias-linear --num-experts "
      "8 --expert-model-parallel-size 8 --moe-grouped-gemm --moe-token-dispatcher-type alltoall "
      "--use-flash-attn --bf16");
  auto graph = [&](std::vector<std::string> extra) {
    std::vector<std::string> w = base;
    w.insert(w.end(), extra.begin(), extra.end());
    return graph_of(w);
  };
  auto kept_input = [](const LayerGraph& g, OpRole role) {
    std::int64_t n = 0;
    for (const auto& chunk : g.chunks)
      for (const auto& op : chunk.ops)
        if (op.role == role)
          for (const auto& t : op.kept)
            if (t.is_input || t.name == "input" || t.name == "q" || t.name == "k" || t.name == "v")
              n += t.bytes;
    return n;
  };
  const LayerGraph plain = graph({});
  const LayerGraph off = graph(
      {"--fine-grained-activation-offloading", "--offload-modules", "expert_fc1", "core_attn", "attn_proj"});
  const std::int64_t fc1 = kept_input(plain, OpRole::ExpertsFc1),
                     attn = kept_input(plain, OpRole::CoreAttention),
                     proj = kept_input(plain, OpRole::AttnProj);
  // By hand: each of the 2 layers' experts take 4096 tokens × top-2 rows of hidden 1024 in bf16; core
  // attention saves q, k, v (8 heads of 128, no GQA) and the projection its 4096 × 1024 input.
  EXPECT_EQ(fc1, 2 * 4096LL * 2 * 1024 * 2);
  EXPECT_EQ(attn, 2 * 3 * 4096LL * 1024 * 2);
  EXPECT_EQ(proj, 2 * 4096LL * 1024 * 2);
  EXPECT_EQ(kept_input(off, OpRole::ExpertsFc1) + kept_input(off, OpRole::CoreAttention) +
                kept_input(off, OpRole::AttnProj),
            0);
  EXPECT_EQ(plain.stage(0).front()->kept_activation_bytes() - off.stage(0).front()->kept_activation_bytes(),
            fc1 + attn + proj);
  // Tensors below the size threshold stay (here: every one of them).
  const LayerGraph small = graph({"--fine-grained-activation-offloading", "--offload-modules", "expert_fc1",
                                  "--min-offloaded-tensor-size", "1000000000"});
  EXPECT_EQ(kept_input(small, OpRole::ExpertsFc1), fc1);
  // Megatron's checks.
  EXPECT_THROW(graph({"--fine-grained-activation-offloading", "--offload-modules", "attn_proj"}),
               preflight::InputError);
  EXPECT_THROW(
      graph({"--fine-grained-activation-offloading", "--offload-modules", "fused_group_mlp", "moe_act"}),
      preflight::InputError);
  EXPECT_THROW(graph({"--fine-grained-activation-offloading", "--offload-modules", "everything"}),
               preflight::InputError);
}

// Megatron's offload groups (one per module and layer, forward order): --activation-offload-fraction sends
// the first fraction of them to the host; the margin keeps the last group of each module name of the oldest
// micro batch on the device; --delta-offload-bytes-across-pp-ranks keeps rank · delta more
// (post_warmup_callback). Two layers per stage, three modules: six groups per micro batch.
TEST(Memory, FineGrainedOffloadFractionMarginAndDelta) {
  const std::string base =
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 4096 --vocab-size 32000 "
      "--world-size 16 --pipeline-model-parallel-size 2 --global-batch-size 64 --swiglu "
      "--disable-bias-linear "
      "--num-experts 8 --expert-model-parallel-size 8 --moe-grouped-gemm --moe-token-dispatcher-type "
      "alltoall "
      "--use-flash-attn --bf16 --fine-grained-activation-offloading --offload-modules expert_fc1 core_attn "
      "attn_proj";
  // One layer's groups by hand: the experts' 4096 × top-2 rows of 1024, q / k / v, the projection's input.
  const std::int64_t layer = 4096LL * 2 * 1024 * 2 + 3 * 4096LL * 1024 * 2 + 4096LL * 1024 * 2;
  const LayerGraph all = graph_of(preflight::test::words(base));
  EXPECT_EQ(all.chunks[0].offloaded_bytes, 2 * layer);
  EXPECT_EQ(all.chunks[0].offload_pinned_bytes, layer);  // layer 1's three groups: the last of each name
  const MemoryReport m = stage_memory(all);
  for (int r = 0; r < 2; ++r) {
    const auto& s = m.stages[static_cast<std::size_t>(r)];
    EXPECT_DOUBLE_EQ(s.activation_bytes - s.inflight_microbatches * s.activation_bytes_per_microbatch,
                     static_cast<double>(layer))
        << "rank " << r;
  }
  // Half of the six groups: layer 0's three go, layer 1's stay (their inputs kept as without offloading).
  const LayerGraph half = graph_of(preflight::test::words(base + " --activation-offload-fraction 0.5"));
  EXPECT_EQ(half.chunks[0].offloaded_bytes, layer);
  const LayerGraph plain = graph_of(preflight::test::words(base.substr(0, base.find(" --fine-grained"))));
  std::int64_t layer1_half = 0, layer1_plain = 0;
  for (const auto& op : half.chunks[0].ops)
    if (op.layer == 1) layer1_half += op.kept_bytes;
  for (const auto& op : plain.chunks[0].ops)
    if (op.layer == 1) layer1_plain += op.kept_bytes;
  EXPECT_EQ(layer1_half, layer1_plain);
  EXPECT_EQ(half.chunks[0].kept_activation_bytes(), plain.chunks[0].kept_activation_bytes() - layer);
  // The delta: rank 1 keeps 1 MiB more, rank 0 nothing more.
  const LayerGraph delta =
      graph_of(preflight::test::words(base + " --delta-offload-bytes-across-pp-ranks 1048576"));
  const MemoryReport md = stage_memory(delta);
  EXPECT_DOUBLE_EQ(md.stages[0].activation_bytes, m.stages[0].activation_bytes);
  EXPECT_DOUBLE_EQ(md.stages[1].activation_bytes, m.stages[1].activation_bytes + 1048576.0);
  EXPECT_GT(stage_peak(delta, 1).bytes, stage_peak(all, 1).bytes);
  EXPECT_THROW(graph_of(preflight::test::words(base + " --activation-offload-fraction 1.5")),
               preflight::InputError);
}

// The expert-parallel overlap without pipelining (combined_1f1b_schedule_for_no_pipelining): the next micro
// batch's forward runs layer by layer beside the backward, so one layer more is alive in the backward.
TEST(Memory, ExpertParallelOverlapWithoutPipeliningHoldsOneLayerMore) {
  const std::string base =
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 4096 --vocab-size 32000 "
      "--world-size 8 --global-batch-size 16 --swiglu --disable-bias-linear --num-experts 8 "
      "--expert-model-parallel-size 8 --moe-grouped-gemm --moe-token-dispatcher-type alltoall "
      "--use-flash-attn "
      "--bf16";
  const LayerGraph eager = graph_of(preflight::test::words(base));
  const LayerGraph paired = graph_of(preflight::test::words(base + " --overlap-moe-expert-parallel-comm"));
  double layer = 0;
  for (const auto& op : eager.chunks.front().ops)
    if (op.layer == 0) layer += static_cast<double>(op.kept_bytes);
  ASSERT_GT(layer, 0);
  const PeakPoint p0 = stage_peak(eager, 0), p1 = stage_peak(paired, 0);
  EXPECT_EQ(p1.phase, "backward") << p0.phase << " " << p0.op << " / " << p1.op;
  EXPECT_GT(p1.bytes, p0.bytes);
  EXPECT_LE(p1.bytes - p0.bytes, layer + 1.0);
  // One micro batch per iteration pairs nothing.
  const LayerGraph single = graph_of(
      preflight::test::words(base.substr(0, base.find("--global-batch-size")) + "--global-batch-size 8" +
                             base.substr(base.find(" --swiglu")) + " --overlap-moe-expert-parallel-comm"));
  const LayerGraph single_eager =
      graph_of(preflight::test::words(base.substr(0, base.find("--global-batch-size")) +
                                      "--global-batch-size 8" + base.substr(base.find(" --swiglu"))));
  EXPECT_DOUBLE_EQ(stage_peak(single, 0).bytes, stage_peak(single_eager, 0).bytes);
}

// Megatron's interleaved warm-up with --microbatch-group-size-per-virtual-pipeline-stage g: (p − 1 − r) · 2 +
// (m − 1) · g forwards, chunk (k mod g·m) / g for the k-th; with --overlap-moe-expert-parallel-comm one more
// forward alone, after which every step pairs a forward with the oldest backward layer by layer
// (schedules.py: warm-up f only, then combined f / b): the warm-up's passes and about one layer of the paired
// forward are alive, not one whole pass more than without the overlap (priced so until stop 35; Megatron-LM's
// CI measured its interleaved MoE runs with the overlap 11 … 22 % below that).
TEST(Memory, InterleavedWarmupFollowsTheGroupSizeAndTheExpertParallelOverlap) {
  const std::vector<std::string> base = preflight::test::words(
      "--num-layers 16 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size "
      "1000 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2 "
      "--world-size 4 --global-batch-size 64 --hidden-dropout 0 --position-embedding-type rope "
      "--disable-bias-linear");
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> w = base;
    w.insert(w.end(), extra.begin(), extra.end());
    return stage_memory(graph_of(w));
  };
  const MemoryReport plain = with({});
  // Rank 3 (last): warm-up (m − 1) · p = 4 forwards, 5 in flight, all of chunk 0.
  EXPECT_DOUBLE_EQ(plain.stages[3].inflight_microbatches, 5.0 / 2);
  // Group 6: (m − 1) · 6 = 6 forwards, 7 in flight (chunk 0 for the first 6, then chunk 1).
  const MemoryReport grouped = with({"--microbatch-group-size-per-virtual-pipeline-stage", "6"});
  EXPECT_DOUBLE_EQ(grouped.stages[3].inflight_microbatches, 7.0 / 2);
  EXPECT_GT(grouped.stages[3].activation_bytes, plain.stages[3].activation_bytes);
  // The expert-parallel overlap (MoE, ep 2): one layer (of the chunk's two) more in flight on every rank —
  // a quarter of a micro batch of 2 chunks, a little less against the last rank's last chunk, which also
  // keeps the loss's tensors.
  const std::vector<std::string> moe = preflight::test::words(
      "--num-experts 4 --expert-model-parallel-size 2 --moe-token-dispatcher-type alltoall "
      "--world-size 8 --moe-grouped-gemm");
  std::vector<std::string> overlap = moe;
  overlap.push_back("--overlap-moe-expert-parallel-comm");
  const MemoryReport eager = with(moe), paired = with(overlap);
  for (std::size_t r = 0; r < 4; ++r) {
    const double more = paired.stages[r].inflight_microbatches - eager.stages[r].inflight_microbatches;
    EXPECT_GT(more, 0.2) << r;
    EXPECT_LE(more, 0.25 + 1e-9) << r;
  }
  EXPECT_GT(paired.stages[0].activation_bytes, eager.stages[0].activation_bytes);
}

// Every op carries the role of its Megatron-core module: the suffix of its path says which module it
// is (a table written from Megatron-core's module names, not from the graph builder), and MTP ops are
// exactly those under mtp.layers.<k>.
TEST(LayerGraph, EveryOpHasTheRoleOfItsModulePath) {
  const std::map<OpRole, std::string> suffix = {
      {OpRole::WordEmbedding, "embedding.word_embeddings"},
      {OpRole::PositionEmbedding, "embedding.position_embeddings"},
      {OpRole::EmbeddingDropout, "embedding.embedding_dropout"},
      {OpRole::InputNorm, ".input_layernorm"},
      {OpRole::Qkv, ".self_attention.linear_qkv"},
      {OpRole::QNorm, ".self_attention.q_layernorm"},
      {OpRole::KNorm, ".self_attention.k_layernorm"},
      {OpRole::QDownProj, ".self_attention.linear_q_down_proj"},
      {OpRole::QDownNorm, ".self_attention.q_layernorm"},
      {OpRole::QUpProj, ".self_attention.linear_q_up_proj"},
      {OpRole::QProj, ".self_attention.linear_q_proj"},
      {OpRole::KvDownProj, ".self_attention.linear_kv_down_proj"},
      {OpRole::KvDownNorm, ".self_attention.kv_layernorm"},
      {OpRole::KvUpProj, ".self_attention.linear_kv_up_proj"},
      {OpRole::CoreAttention, ".self_attention.core_attention"},
      {OpRole::AttnProj, ".self_attention.linear_proj"},
      {OpRole::AttnBda, ".self_attn_bda"},
      {OpRole::PreMlpNorm, ".pre_mlp_layernorm"},
      {OpRole::Fc1, ".mlp.linear_fc1"},
      {OpRole::Act, ".mlp.activation_func"},
      {OpRole::Fc2, ".mlp.linear_fc2"},
      {OpRole::MlpBda, ".mlp_bda"},
      {OpRole::Router, ".mlp.router"},
      {OpRole::SharedFc1, ".mlp.shared_experts.linear_fc1"},
      {OpRole::SharedAct, ".mlp.shared_experts.activation_func"},
      {OpRole::SharedFc2, ".mlp.shared_experts.linear_fc2"},
      {OpRole::Dispatch, ".mlp.token_dispatcher.dispatch"},
      {OpRole::ExpertsFc1, ".mlp.experts.linear_fc1"},
      {OpRole::ExpertsAct, ".mlp.experts.activation_func"},
      {OpRole::ExpertsFc2, ".mlp.experts.linear_fc2"},
      {OpRole::Combine, ".mlp.token_dispatcher.combine"},
      {OpRole::FinalNorm, "decoder.final_layernorm"},
      {OpRole::OutputLayer, "output_layer"},
      {OpRole::Loss, "loss"},
      {OpRole::MtpEmbedding, ".embedding.word_embeddings"},
      {OpRole::MtpENorm, ".enorm"},
      {OpRole::MtpHNorm, ".hnorm"},
      {OpRole::MtpEhProj, ".eh_proj"},
      {OpRole::MtpFinalNorm, ".final_layernorm"},
      {OpRole::MtpOutputLayer, ".output_layer"},
      {OpRole::MtpLoss, ".loss"},
  };
  const std::string base =
      "--num-layers 4 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --max-position-embeddings 32 "
      "--vocab-size 1000 --micro-batch-size 1 --global-batch-size 8 --bf16 --tensor-model-parallel-size 2 "
      "--sequence-parallel --pipeline-model-parallel-size 2 --nproc_per_node 4 ";
  const std::vector<std::string> variants = {
      // GPT: learned positions, dropout, LayerNorm, biases, two MTP layers, selective recompute.
      "--mtp-num-layers 2 --recompute-granularity selective",
      // Llama-style MoE with shared experts, qk norms, full recompute.
      "--swiglu --normalization RMSNorm --no-position-embedding --disable-bias-linear --qk-layernorm "
      "--num-experts 4 --moe-router-topk 2 --moe-shared-expert-intermediate-size 128 "
      "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
      // Multi-latent attention with and without a q latent (tp 1 as MLA allows).
      "--swiglu --normalization RMSNorm --no-position-embedding --multi-latent-attention --q-lora-rank 32 "
      "--kv-lora-rank 16 --tensor-model-parallel-size 1 --mtp-num-layers 1 --qk-layernorm",
      "--swiglu --normalization RMSNorm --no-position-embedding --multi-latent-attention --kv-lora-rank 16 "
      "--tensor-model-parallel-size 1",
  };
  std::set<OpRole> seen;
  for (const auto& v : variants) {
    LayerGraph g = graph_of(preflight::test::words(base + v));
    for (const auto& c : g.chunks)
      for (const auto& op : c.ops) {
        SCOPED_TRACE(op.path + " (" + to_string(op.role) + ")");
        seen.insert(op.role);
        const std::string& want = suffix.at(op.role);
        EXPECT_TRUE(op.path.size() >= want.size() &&
                    op.path.compare(op.path.size() - want.size(), want.size(), want) == 0);
        bool under_mtp = op.path.rfind("mtp.layers.", 0) == 0;
        EXPECT_EQ(op.mtp_layer >= 0, under_mtp);
        if (under_mtp) {
          EXPECT_EQ(op.path.substr(11, op.path.find('.', 11) - 11), std::to_string(op.mtp_layer));
        }
        EXPECT_EQ(op.layer >= 0, op.path.rfind("decoder.layers.", 0) == 0);
      }
  }
  EXPECT_EQ(seen.size(), suffix.size());  // every role is built by one of the variants
}

// tp a multiple of the kv heads (Megatron-LM since 2025-12-06, SelfAttention.get_query_key_value_tensors): 8
// heads in 2 groups on tp 4 — each rank keeps 2 query heads and 1 kv head; the QKV projection stays
// column-parallel over tp and its output (T · (8 + 2·2) · 32 · 2 bytes) is all-gathered forward and
// reduce-scattered backward.  Megatron-LM's Nemotron-3 Super examples run tp 8 on its 2 kv heads; it had been
// refused.  An older checkout (--megatron-version) still refuses it, as tp 3 is refused everywhere.
TEST(LayerGraph, TensorParallelBeyondTheKvHeads) {
  const std::int64_t T = 128;
  const std::string base =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 8 --group-query-attention --num-query-groups 2 "
      "--swiglu --normalization RMSNorm --disable-bias-linear --position-embedding-type rope --seq-length "
      "128 "
      "--max-position-embeddings 128 --vocab-size 1024 --micro-batch-size 1 --bf16 --world-size 4 "
      "--tensor-model-parallel-size 4";
  LayerGraph g = graph_of(preflight::test::words(base));
  const Op *qkv = nullptr, *attn = nullptr;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == 0 && op.role == OpRole::Qkv)
        qkv = &op;
      else if (op.layer == 0 && op.role == OpRole::CoreAttention)
        attn = &op;
  ASSERT_TRUE(qkv && attn);
  EXPECT_EQ(attn->heads, 2);
  EXPECT_EQ(attn->kv_heads, 1);
  EXPECT_EQ(qkv->out_features, (8 + 2 * 2) * 32 / 4);
  std::int64_t gathered = 0, scattered = 0;
  for (const auto& cm : qkv->comms) {
    if (cm.kind == Collective::AllGather && cm.pass == Pass::Forward) gathered += cm.bytes;
    if (cm.kind == Collective::ReduceScatter && cm.pass == Pass::Backward) scattered += cm.bytes;
  }
  EXPECT_EQ(gathered, T * (8 + 2 * 2) * 32 * 2);
  EXPECT_EQ(scattered, gathered);
  EXPECT_THROW(graph_of(preflight::test::words(base + " --megatron-version 2025-11-01")),
               preflight::InputError);
  EXPECT_THROW(graph_of(preflight::test::words(
                   "--num-layers 2 --hidden-size 384 --num-attention-heads 12 --group-query-attention "
                   "--num-query-groups 2 --seq-length 128 --vocab-size 1024 --world-size 3 "
                   "--tensor-model-parallel-size 3")),
               preflight::InputError);
}

// Megatron's MLASelfAttention with tp 2 and sequence parallelism: the down projections (TELinear
// "duplicated") run on the rank's T/2 tokens with the full weight and no collective, keep their T/2 input;
// the latent norms are on T/2 rows; the up projections are column-parallel (all-gather of the latent in
// forward, T·rank·2 bytes); the rotary key part (T·16·2 bytes) is gathered after kv_down.
TEST(LayerGraph, TensorParallelMultiLatentAttention) {
  const std::int64_t T = 128, h = 256;
  LayerGraph g = graph_of(preflight::test::words(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --multi-latent-attention --qk-layernorm "
      "--q-lora-rank 64 --kv-lora-rank 32 --qk-head-dim 32 --qk-pos-emb-head-dim 16 --v-head-dim 32 "
      "--swiglu --normalization RMSNorm --disable-bias-linear --position-embedding-type rope "
      "--seq-length 128 --max-position-embeddings 128 --vocab-size 1024 --micro-batch-size 1 --bf16 "
      "--tensor-model-parallel-size 2 --sequence-parallel --world-size 2"));
  std::map<OpRole, const Op*> by_role;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == 0) by_role[op.role] = &op;
  auto gathered = [](const Op& op) {
    std::int64_t bytes = 0;
    for (const auto& cm : op.comms)
      if (cm.kind == Collective::AllGather && cm.pass == Pass::Forward) bytes += cm.bytes;
    return bytes;
  };
  const Op& qd = *by_role.at(OpRole::QDownProj);
  EXPECT_EQ(qd.tokens, T / 2);
  EXPECT_EQ(qd.params.at(0).numel(), h * 64);  // full weight on the rank
  EXPECT_TRUE(qd.comms.empty());
  EXPECT_EQ(qd.kept_bytes, T / 2 * h * 2);
  EXPECT_DOUBLE_EQ(qd.fwd_flops, 2.0 * (T / 2) * h * 64);
  EXPECT_EQ(by_role.at(OpRole::QDownNorm)->tokens, T / 2);
  EXPECT_EQ(gathered(*by_role.at(OpRole::QUpProj)), T * 64 * 2);
  EXPECT_EQ(by_role.at(OpRole::QUpProj)->out_features, 2 * 48);  // 2 of the 4 heads
  EXPECT_EQ(gathered(*by_role.at(OpRole::KvDownProj)), T * 16 * 2);
  EXPECT_EQ(gathered(*by_role.at(OpRole::KvUpProj)), T * 32 * 2);
  // Without --qk-layernorm Megatron's spec has IdentityOp for the latent norms.
  LayerGraph bare = graph_of(preflight::test::words(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --multi-latent-attention --q-lora-rank 64 "
      "--kv-lora-rank 32 --seq-length 128 --max-position-embeddings 128 --vocab-size 1024 --bf16 "
      "--world-size 1"));
  for (const auto& c : bare.chunks)
    for (const auto& op : c.ops)
      EXPECT_TRUE(op.role != OpRole::QDownNorm && op.role != OpRole::KvDownNorm) << op.path;
}

// Megatron's MoE layer takes the sequence-parallel shard: with expert tp 1 under tp 2 each rank's experts
// process the top-k copies of its own T/2 tokens (NeMo's DeepSeek-V3 H100 layout: tp 2, etp 1, ep 64); with
// etp = tp (Megatron's default) the etp group's T tokens.  And recompute of the MLA up projections
// (`--recompute-modules mla_up_proj`, CheckpointWithoutOutput) discards the q, k, v the attention kernel
// saved: the core attention keeps only its softmax statistics.
TEST(LayerGraph, ExpertRowsFollowExpertTensorParallelAndMlaUpProjRecompute) {
  const std::int64_t T = 128, h = 256, k = 2;
  const std::string base =
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --multi-latent-attention --qk-layernorm "
      "--q-lora-rank 64 --kv-lora-rank 32 --qk-head-dim 32 --qk-pos-emb-head-dim 16 --v-head-dim 32 "
      "--swiglu --normalization RMSNorm --disable-bias-linear --position-embedding-type rope "
      "--num-experts 4 --moe-router-topk 2 --moe-ffn-hidden-size 64 "
      "--seq-length 128 --max-position-embeddings 128 --vocab-size 1024 --micro-batch-size 1 --bf16 "
      "--use-flash-attn --tensor-model-parallel-size 2 --sequence-parallel --expert-model-parallel-size 2 "
      "--world-size 4 ";
  auto op_of = [](const LayerGraph& g, OpRole role) {
    for (const auto& c : g.chunks)
      for (const auto& op : c.ops)
        if (op.layer == 0 && op.role == role) return op;
    throw std::logic_error("no such op");
  };
  const LayerGraph etp1 = graph_of(preflight::test::words(base + "--expert-tensor-parallel-size 1"));
  const LayerGraph etp2 = graph_of(preflight::test::words(base));
  EXPECT_EQ(op_of(etp1, OpRole::ExpertsFc1).tokens, T / 2 * k);
  EXPECT_EQ(op_of(etp2, OpRole::ExpertsFc1).tokens, T * k);
  EXPECT_EQ(op_of(etp1, OpRole::ExpertsFc1).kept_bytes, T / 2 * k * h * 2);
  const Op plain = op_of(etp2, OpRole::CoreAttention);
  const Op up = op_of(
      graph_of(preflight::test::words(base + "--recompute-granularity selective --recompute-modules mla_up_proj")),
      OpRole::CoreAttention);
  std::int64_t qkv = 0;
  for (const auto& t : plain.kept)
    if (t.name == "q" || t.name == "k" || t.name == "v") qkv += t.bytes;
  EXPECT_GT(qkv, 0);
  EXPECT_EQ(up.kept_bytes, plain.kept_bytes - qkv);
}
