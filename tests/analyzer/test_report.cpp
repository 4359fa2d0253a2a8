// preflight analyze end to end: communication counts, DP volumes, groups, verdicts and bad input.
#include <gtest/gtest.h>

#include <utility>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/tables/communication.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using preflight::test::run_preflight;

namespace {
LayerGraph graph_of(const std::vector<std::string>& w) {
  MegatronConfig c = parse_megatron_args(w, {});
  return build_layer_graph(c.model, c.strategy);
}
const std::string kSmall =
    "--nproc_per_node 4 --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 "
    "--vocab-size 1000 --bf16 --tensor-model-parallel-size 2 --use-distributed-optimizer --micro-batch-size "
    "2 "
    "--global-batch-size 8 --attention-backend flash";
}  // namespace

TEST(Communication, TensorParallelWithoutSequenceParallel) {
  // Per micro batch: 4 all-reduces per layer (qkv bwd, proj fwd, fc1 bwd, fc2 fwd) of s·b·h·2 bytes, the
  // embedding's forward all-reduce, the output layer's backward all-reduce, and 3 all-reduces of s·b·4
  // bytes in the vocab-parallel cross entropy.
  LayerGraph g =
      graph_of({"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "4", "--seq-length",
                "128", "--vocab-size", "1000", "--bf16", "--tensor-model-parallel-size", "2",
                "--micro-batch-size", "2", "--global-batch-size", "6", "--world-size", "2"});
  CommReport c = communication(g);
  const double sbh2 = 128.0 * 2 * 256 * 2;
  const CommVolume& mb = c.stages[0].per_microbatch.at(ParallelDim::TP);
  EXPECT_DOUBLE_EQ(mb.count, 4 * 4 + 1 + 1 + 3);
  EXPECT_DOUBLE_EQ(mb.bytes, (4 * 4 + 2) * sbh2 + 3 * 128 * 2 * 4.0);
  const CommVolume& it = c.stages[0].per_iteration.at(ParallelDim::TP);
  EXPECT_DOUBLE_EQ(it.count, 3 * mb.count);                         // 6 / (2 · 1) = 3 micro batches
  EXPECT_EQ(c.stages[0].per_iteration.count(ParallelDim::DP), 0u);  // dp = 1: no gradient sync
}

TEST(Communication, FullRecomputeRepeatsForwardCollectives) {
  LayerGraph g = graph_of({"--num-layers",
                           "2",
                           "--hidden-size",
                           "256",
                           "--num-attention-heads",
                           "4",
                           "--seq-length",
                           "128",
                           "--vocab-size",
                           "1000",
                           "--bf16",
                           "--tensor-model-parallel-size",
                           "2",
                           "--world-size",
                           "2",
                           "--recompute-granularity",
                           "full",
                           "--recompute-method",
                           "uniform",
                           "--recompute-num-layers",
                           "1"});
  CommReport c = communication(g);
  // 2 forward all-reduces per layer run twice: 6 per layer, + embedding 1 + output layer 1 + CE 3.
  EXPECT_DOUBLE_EQ(c.stages[0].per_microbatch.at(ParallelDim::TP).count, 6 * 2 + 5);
}

TEST(Communication, DistributedOptimizerDataParallelVolume) {
  // dp = 2: reduce-scatter of fp32 main grads (4 B/param) + all-gather of bf16 params (2 B/param).
  LayerGraph g = graph_of({"--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "4",
                           "--seq-length", "128", "--vocab-size", "1000", "--bf16", "--world-size", "4",
                           "--pipeline-model-parallel-size", "2", "--use-distributed-optimizer"});
  CommReport c = communication(g);
  MemoryReport mem = stage_memory(g);
  for (int s = 0; s < 2; ++s) {
    const CommVolume& dp = c.stages[s].per_iteration.at(ParallelDim::DP);
    EXPECT_DOUBLE_EQ(dp.count, 2);
    EXPECT_DOUBLE_EQ(dp.bytes, 6.0 * static_cast<double>(mem.stages[s].params));
    // first and last stage send/recv once per micro batch in each direction
    EXPECT_DOUBLE_EQ(c.stages[s].per_microbatch.at(ParallelDim::PP).count, 2);
  }
  // cluster: 2 ranks per stage
  EXPECT_DOUBLE_EQ(c.cluster_per_iteration.at(ParallelDim::DP).bytes,
                   2 * 6.0 * static_cast<double>(mem.stages[0].params + mem.stages[1].params));
}

TEST(Communication, FsdpDataParallelVolumeRunsEveryMicroBatch) {
  // dp = 2, 4 micro batches: optim_grads_params reduce-scatters the fp32 grads (4 B/param) and gathers the
  // bf16 params (2 B/param) twice in every micro batch; optim_grads gathers the params once, after the step.
  // Megatron-FSDP's default main gradients are the parameters' bf16 (2 B/param) since 2026-07.
  auto dp_of = [](const std::string& strategy, const std::string& grads_dtype = "fp32") {
    LayerGraph g = graph_of(preflight::test::words(
        "--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 1000 --bf16 "
        "--world-size 2 --global-batch-size 8 --use-megatron-fsdp --data-parallel-sharding-strategy " +
        strategy + " --megatron-fsdp-main-grads-dtype " + grads_dtype));
    const double p = static_cast<double>(stage_memory(g).stages[0].params);
    return std::pair{communication(g).stages[0].per_iteration.at(ParallelDim::DP), p};
  };
  const auto [full, p] = dp_of("optim_grads_params");
  EXPECT_DOUBLE_EQ(full.count, 4 + 8);
  EXPECT_DOUBLE_EQ(full.bytes, 4 * 4 * p + 8 * 2 * p);
  const auto [grads, p2] = dp_of("optim_grads");
  EXPECT_DOUBLE_EQ(grads.count, 4 + 1);
  EXPECT_DOUBLE_EQ(grads.bytes, 4 * 4 * p2 + 2 * p2);
  const auto [bf16, p3] = dp_of("optim_grads_params", "auto");
  EXPECT_DOUBLE_EQ(bf16.bytes, 4 * 2 * p3 + 8 * 2 * p3);
}

TEST(AnalyzeCli, PrintsEverySectionAndGroupsByDeviceName) {
  auto r = run_preflight("analyze " + kSmall + " --pipeline-model-parallel-size 2 --nproc_per_node 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* section : {"Full model without parallelism", "Cluster communication per iteration",
                              "Memory on each GPU, by pipeline stage", "Pipeline parallel communication",
                              "Data parallel communication", "Tensor parallel"})
    EXPECT_NE(r.out.find(section), std::string::npos) << section;
  EXPECT_NE(r.out.find("[n0_g0 n0_g1]"), std::string::npos);     // first tp group
  EXPECT_NE(r.out.find("[n0_g0 n0_g4]"), std::string::npos);     // first pp group: stride world/pp = 4
  EXPECT_EQ(r.out.find("Context parallel"), std::string::npos);  // cp = 1
}

// --defer-embedding-wgrad-compute: the memory table's last stage grows by the deferred calls' buffers, and
// the footnote says whose they are.
TEST(AnalyzeCli, DeferredOutputLayerWgradsAreNamedInTheMemoryTable) {
  const std::string launch = kSmall + " --pipeline-model-parallel-size 2 --nproc_per_node 8";
  auto plain = run_preflight("analyze --json " + launch);
  auto deferred = run_preflight("analyze --json " + launch + " --defer-embedding-wgrad-compute");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(deferred.exit_code, 0) << deferred.err;
  const auto p = nlohmann::json::parse(plain.out)["memory"]["stages"];
  const auto d = nlohmann::json::parse(deferred.out)["memory"]["stages"];
  EXPECT_DOUBLE_EQ(d[0]["total_bytes"].get<double>(), p[0]["total_bytes"].get<double>());
  EXPECT_GT(d[1]["total_bytes"].get<double>(), p[1]["total_bytes"].get<double>());
  auto text = run_preflight("analyze " + launch + " --defer-embedding-wgrad-compute");
  EXPECT_NE(text.out.find("deferred output-layer wgrad inputs and output gradients"), std::string::npos);
  EXPECT_EQ(run_preflight("analyze " + launch).out.find("deferred output-layer"), std::string::npos);
}

TEST(AnalyzeCli, JsonCarriesGroupsAndPerStageMemory) {
  auto r = run_preflight("analyze --json " + kSmall + " --context-parallel-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["strategy"]["cp"], 2);
  EXPECT_EQ(j["strategy"]["dp"], 1);
  EXPECT_EQ(j["groups"]["cp"][0], (std::vector<std::string>{"n0_g0", "n0_g2"}));
  EXPECT_EQ(j["memory"]["stages"].size(), 1u);
  EXPECT_GT(j["memory"]["stages"][0]["total_bytes"].get<double>(), 0);
  EXPECT_TRUE(j["communication"]["cluster_per_iteration"].contains("cp"));
}

TEST(AnalyzeCli, DeviceMemoryVerdictSetsExitStatus) {
  auto fits = run_preflight("analyze " + kSmall + " --device-memory 80");
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_NE(fits.out.find("fits in 80.0 GiB"), std::string::npos);
  auto tight = run_preflight("analyze " + kSmall + " --device-memory 0.001");
  EXPECT_EQ(tight.exit_code, 1);
  EXPECT_NE(tight.out.find("DOES NOT FIT"), std::string::npos);
}

// --system: the same launch priced by the cost model after the tables — what `preflight estimate` gives for
// the same arguments, not a second reading of them.
TEST(AnalyzeCli, SystemAddsTheEstimateOfTheSameLaunch) {
  const std::string launch = kSmall + " --pipeline-model-parallel-size 2 --nproc_per_node 8";
  auto j = run_preflight("analyze --json --system h100-sxm " + launch);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  auto e = run_preflight("estimate --json --system h100-sxm -- " + launch);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const double analyzed = nlohmann::json::parse(j.out)["estimate"]["iteration_ms"].get<double>();
  EXPECT_GT(analyzed, 0);
  EXPECT_DOUBLE_EQ(analyzed, nlohmann::json::parse(e.out)["summary"]["iteration_ms"].get<double>());
  auto text = run_preflight("analyze --system=h100-sxm " + launch);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("*** Iteration time on h100-sxm (preflight estimate) ***"), std::string::npos);
  EXPECT_NE(text.out.find("Memory on each GPU, by pipeline stage"), std::string::npos);
  EXPECT_EQ(run_preflight("analyze " + launch).out.find("Iteration time"), std::string::npos);
  auto bad = run_preflight("analyze --system h999 " + launch);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("h999"), std::string::npos) << bad.err;
  EXPECT_TRUE(bad.out.empty()) << bad.out;  // nothing printed before the error
}

TEST(AnalyzeCli, BadInputExitsTwoWithTheFlagNamed) {
  auto r =
      run_preflight("analyze --hidden-size 256 --num-attention-heads 4 --seq-length 128 --vocab-size 10");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --num-layers: is required"), std::string::npos) << r.err;
  auto pp = run_preflight("analyze " + kSmall +
                          " --num-layers 30 --pipeline-model-parallel-size 4 --nproc_per_node 8");
  EXPECT_EQ(pp.exit_code, 2);
  EXPECT_NE(pp.err.find("do not divide by the pipeline-parallel size 4"), std::string::npos) << pp.err;
  auto world = run_preflight("analyze " + kSmall + " --nproc_per_node 5");
  EXPECT_EQ(world.exit_code, 2);
  EXPECT_NE(world.err.find("world size 5 is not divisible"), std::string::npos) << world.err;
}
