// Init yaml parsing and the memory decomposition against SAPP's unit-test goldens
// (mindformers tests/st/test_pipeline_balance/test_compute_memory.py) and the README Llama 175B case.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "preflight/analyzer/balance/decompose.hpp"
#include "preflight/analyzer/balance/init_config.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

namespace {

using namespace preflight::analyzer::balance;
namespace fs = std::filesystem;

fs::path data(const char* name) {
  return preflight::test::data_dir() / "balance" / name;
}

double act(const Decomposition& d, Recompute r) {
  return d.activation_mb[static_cast<int>(r)].value();
}
int trunc(double v) {
  return static_cast<int>(v);
}  // SAPP's int()

fs::path write_temp(const std::string& name, const std::string& text) {
  fs::path dir = fs::temp_directory_path() / ("preflight_balance_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

TEST(InitConfig, ReadsLlamaYamlAndConvertsRecomputeCounts) {
  const InitConfig cfg = read_init_config(data("init_llama175b.yaml"));
  EXPECT_EQ(cfg.stages, 16);
  EXPECT_EQ(cfg.layers, 96);
  EXPECT_EQ(cfg.rounds, 1);
  // offset [0, 0, -4, …]: stage 2 holds 6 - 4 = 2 layers, select 2, comm 0 → 2 select-only.
  EXPECT_EQ(cfg.stage_layers[0][2], 2);
  EXPECT_EQ(cfg.stage_classes[0][2][static_cast<int>(Recompute::Select)], 2);
  // stage 7: 16 layers, select 14, comm 2 → both 2, select 12, none 2.
  const auto& s7 = cfg.stage_classes[0][7];
  EXPECT_EQ(s7[static_cast<int>(Recompute::Both)], 2);
  EXPECT_EQ(s7[static_cast<int>(Recompute::Select)], 12);
  EXPECT_EQ(s7[static_cast<int>(Recompute::None)], 2);
  ASSERT_EQ(cfg.observations.size(), 16u);  // 14 body + head + tail
  EXPECT_EQ(cfg.observations[13].stage, 14);
  EXPECT_DOUBLE_EQ(cfg.observations[14].peak_mb, 96643);
  EXPECT_EQ(cfg.observations[15].stage, 15);
  ASSERT_TRUE(cfg.time_config.has_value());
  EXPECT_DOUBLE_EQ(cfg.time_config->tail_ms, 9);
}

TEST(Decompose, ReadmeLlama175bLeastSquares) {
  // Issue 7 / notes §6: c 1206.80, P 2217.49, a 1002.89/783.46/695.77/423.11, H 4614.75, T 5885.66.
  const InitConfig cfg = read_init_config(data("mem_lstsq.yaml"));
  const Decomposition d = decompose_memory(cfg.observations, cfg.stages, {}, "mem_lstsq.yaml");
  EXPECT_EQ(d.method, DecomposeMethod::LeastSquares);
  EXPECT_NEAR(*d.const_mb, 1206.80, 0.1);
  EXPECT_NEAR(d.param_mb, 2217.49, 0.1);
  EXPECT_NEAR(act(d, Recompute::None), 1002.89, 0.1);
  EXPECT_NEAR(act(d, Recompute::Select), 783.46, 0.1);
  EXPECT_NEAR(act(d, Recompute::Comm), 695.77, 0.1);
  EXPECT_NEAR(act(d, Recompute::Both), 423.11, 0.1);
  EXPECT_NEAR(d.head_mb, 4614.75, 0.1);
  EXPECT_NEAR(d.tail_mb, 5885.66, 0.1);
  EXPECT_FALSE(d.activation_mb[static_cast<int>(Recompute::Full)].has_value());
  // SAPP's unit test: the json integers.
  EXPECT_EQ(trunc(d.head_mb), 4614);
  EXPECT_EQ(trunc(d.tail_mb), 5885);
  // Residuals (measured - fitted), independently from numpy.linalg.lstsq: +1279.13 (stage 11), -556.32 (stage
  // 13).
  double lo = 0, hi = 0;
  for (const auto& f : d.fits) {
    lo = std::min(lo, f.residual_mb());
    hi = std::max(hi, f.residual_mb());
  }
  EXPECT_NEAR(hi, 1279.13, 0.01);
  EXPECT_NEAR(lo, -556.32, 0.01);
}

TEST(Decompose, MemYamlExactWithNegativeConstant) {
  const InitConfig cfg = read_init_config(data("mem.yaml"));
  const Decomposition d = decompose_memory(cfg.observations, cfg.stages, {}, "mem.yaml");
  EXPECT_EQ(d.method, DecomposeMethod::ExactWithConstant);
  EXPECT_EQ(trunc(d.head_mb), 4245);
  EXPECT_EQ(trunc(d.param_mb), 2141);
  EXPECT_EQ(trunc(act(d, Recompute::None)), 852);
  EXPECT_EQ(trunc(d.tail_mb), 1203);
  EXPECT_EQ(trunc(act(d, Recompute::Both)), 511);
  EXPECT_EQ(trunc(act(d, Recompute::Comm)), 535);
  EXPECT_EQ(trunc(act(d, Recompute::Select)), 767);
  EXPECT_EQ(trunc(*d.const_mb), -1896);
  // An exact solve reproduces every body stage.
  for (const auto& f : d.fits)
    if (f.stage != 0 && f.stage != 15) {
      EXPECT_NEAR(f.residual_mb(), 0.0, 1e-6);
    }
}

TEST(Decompose, TwoRoundsFullRecompute) {
  const InitConfig cfg = read_init_config(data("mem_pp4.yaml"));
  EXPECT_EQ(cfg.rounds, 2);
  const Decomposition d = decompose_memory(cfg.observations, cfg.stages, {}, "mem_pp4.yaml");
  EXPECT_EQ(trunc(d.head_mb), 1459);
  EXPECT_EQ(trunc(d.param_mb), 400);
  EXPECT_EQ(trunc(act(d, Recompute::None)), 743);
  EXPECT_EQ(trunc(act(d, Recompute::Full)), 131);
  EXPECT_EQ(trunc(d.tail_mb), 3329);
}

TEST(Decompose, HandBuiltStagesWithoutConstant) {
  // test_compute_memory: 16 stages of 6 layers, comm and full recompute, 4 body stages → no constant.
  auto obs = [](int stage, int comm, int full, double mem) {
    DryrunObservation o;
    o.stage = stage;
    o.layers = 6;
    o.classes[static_cast<int>(Recompute::Comm)] = comm;
    o.classes[static_cast<int>(Recompute::Full)] = full;
    o.classes[static_cast<int>(Recompute::None)] = 6 - comm - full;
    o.peak_mb = mem;
    return o;
  };
  const std::vector<DryrunObservation> stages = {obs(1, 0, 1, 71519), obs(2, 0, 1, 67376),
                                                 obs(3, 0, 2, 52962), obs(9, 2, 0, 39373),
                                                 obs(0, 1, 1, 80267), obs(15, 0, 1, 16386)};
  const Decomposition d = decompose_memory(stages, 16, {}, "hand-built");
  EXPECT_EQ(d.method, DecomposeMethod::ExactNoConstant);
  EXPECT_FALSE(d.const_mb.has_value());
  EXPECT_EQ(trunc(d.head_mb), 9785);
  EXPECT_EQ(trunc(d.param_mb), 1562);
  EXPECT_EQ(trunc(act(d, Recompute::None)), 822);
  EXPECT_EQ(trunc(d.tail_mb), 2868);
  EXPECT_EQ(trunc(act(d, Recompute::Full)), 32);
  EXPECT_EQ(trunc(act(d, Recompute::Comm)), 498);
}

TEST(Decompose, ModelFromDecompositionTruncatesLikeSapp) {
  const InitConfig cfg = read_init_config(data("init_llama175b.yaml"));
  const Decomposition d = decompose_memory(cfg.observations, cfg.stages, {}, "x");
  const LayerModel m = layer_model_from_decomposition(d, *cfg.time_config, cfg.layers, "llama175b");
  // SAPP's generated layers_llama175b.json (reference_outputs): 1206, 4614, 2217, 1002, 783, 695, 423, 5885.
  EXPECT_EQ(m.const_mb, 1206);
  EXPECT_EQ(m.head_mb, 4614);
  EXPECT_EQ(m.tail_mb, 5885);
  ASSERT_EQ(m.bodies.size(), 1u);
  EXPECT_EQ(m.bodies[0].param_mb, 2217);
  EXPECT_EQ(m.bodies[0].activation(Recompute::Both), 423);
  // Backward times: (1 + coef) · 2 · 18 ms (SAPP's stdout: 36, 37.44, 40.5, 41.94).
  EXPECT_DOUBLE_EQ(m.bodies[0].backward(Recompute::None), 36.0);
  EXPECT_NEAR(m.bodies[0].backward(Recompute::Select), 37.44, 1e-9);
  EXPECT_NEAR(m.bodies[0].backward(Recompute::Comm), 40.5, 1e-9);
  EXPECT_NEAR(m.bodies[0].backward(Recompute::Both), 41.94, 1e-9);
  EXPECT_FALSE(m.bodies[0].considered(Recompute::Full));
}

TEST(InitConfig, RefusesSappPp4DemoLayerCount) {
  // SAPP's own demo declares num_layer 62 but its offsets place 58 layers.
  try {
    read_init_config(data("init_demopp4.yaml"));
    FAIL() << "expected an InputError";
  } catch (const preflight::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("init_demopp4.yaml:5"), std::string::npos) << what;
    EXPECT_NE(what.find("place 58 layers"), std::string::npos) << what;
    EXPECT_NE(what.find("num_layer is 62"), std::string::npos) << what;
  }
}

TEST(Decompose, RefusesNegativeActivationUnlessAllowed) {
  // The pp=4 demo with num_layer fixed to 58: the fit gives a negative NONE activation, which SAPP drops
  // silently (and then crashes in its simulator).
  // Same stage layers as SAPP used (15 + [-3, 0, -1, 2]), written consistently: 58 layers, 14 + offset.
  const fs::path p = write_temp("demopp4_58.yaml", R"(pipeline_config:
  pipeline_num: 4
  num_layer: 58
  offset: [[-2,1,0,3],[-2,1,0,3]]
time_config: {head: 1, body: 1, tail: 2}
recompute_config:
  recompute: [false,false]
  select_recompute: [[1,2,2,5],[1,3,6,5]]
  select_comm_recompute: [false,false]
memory_usage:
  head_memory: 18799
  tail_memory: 16788
  body_memories:
    stage_id: [[1,2],[1]]
    memories: [[17546,16887],[17794]]
)");
  const InitConfig cfg = read_init_config(p);
  try {
    decompose_memory(cfg.observations, cfg.stages, {}, p.string());
    FAIL() << "expected an InputError";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("activation of recompute class 'none'"), std::string::npos)
        << e.what();
  }
  DecomposeOptions allow;
  allow.allow_negative = true;
  const Decomposition d = decompose_memory(cfg.observations, cfg.stages, allow, p.string());
  EXPECT_LT(act(d, Recompute::None), 0);
  EXPECT_EQ(trunc(act(d, Recompute::None)), -45);  // notes §10: a_NONE = -45
  EXPECT_EQ(trunc(d.tail_mb), -4510);              // T = -4510 (SAPP's code: head/tail from the last round)
}

TEST(InitConfig, RecomputeTrueMeansEveryLayer) {
  const fs::path p =
      write_temp("true.yaml", R"(pipeline_config: {pipeline_num: 4, num_layer: 8, offset: [1, -1, 1, -1]}
recompute_config: {recompute: true, select_recompute: false}
memory_usage: {head_memory: 100, tail_memory: 50, body_memories: {stage_id: [1, 2], memories: [80, 70]}}
)");
  const InitConfig cfg = read_init_config(p);
  EXPECT_EQ(cfg.stage_classes[0][0][static_cast<int>(Recompute::Full)], 3);
  EXPECT_EQ(cfg.stage_classes[0][1][static_cast<int>(Recompute::Full)], 1);
  EXPECT_EQ(cfg.stage_classes[0][1][static_cast<int>(Recompute::None)], 0);
}

TEST(InitConfig, ErrorsNameFileAndLine) {
  auto expect_error = [](const std::string& text, const std::string& needle) {
    const fs::path p = write_temp("bad.yaml", text);
    try {
      read_init_config(p);
      ADD_FAILURE() << "no error for:\n" << text;
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const std::string head = "pipeline_config: {pipeline_num: 4, num_layer: 8, offset: 0}\n";
  expect_error(head +
                   "recompute_config: {select_recompute: [1, 2, 9, 0]}\nmemory_usage: {head_memory: 1, "
                   "tail_memory: 1, body_memories: {stage_id: [1, 2], memories: [1, 1]}}\n",
               "stage 2 asks for 9 layers but the stage holds 2");
  expect_error(head +
                   "memory_usage: {head_memory: 1, tail_memory: 1, body_memories: {stage_id: [1, 3], "
                   "memories: [1, 1]}}\n",
               "is the head or tail stage");
  expect_error(head +
                   "memory_usage: {head_memory: 1, tail_memory: 1, body_memories: {stage_id: [1, 2], "
                   "memories: [1, -5]}}\n",
               "bad.yaml:2");
  expect_error(head +
                   "memory_usage: {head_memory: 1, tail_memory: 1, body_memories: {stage_id: [1, 2], "
                   "memories: [1, -5]}}\n",
               "positive number of MB");
  expect_error("pipeline_config: {pipeline_num: 4, num_layer: 8, offset: [1, 2]}\n",
               "has 2 entries, pipeline_num is 4");
  expect_error("pipeline_config: [1, 2\n", "malformed yaml");
  expect_error(head + "memory_usage: {head_memory: 1, body_memories: {stage_id: [1, 2], memories: [1, 1]}}\n",
               "missing 'memory_usage.tail_memory'");
}

TEST(Decompose, RefusesTooFewStagesFoldsAConstantItCannotSee) {
  const fs::path few =
      write_temp("few.yaml", R"(pipeline_config: {pipeline_num: 4, num_layer: 8, offset: [1, -1, 1, -1]}
recompute_config: {select_recompute: [1, 1, 0, 0]}
memory_usage: {head_memory: 100, tail_memory: 50, body_memories: {stage_id: [1, 2], memories: [80, 70]}}
)");
  const InitConfig cfg = read_init_config(few);
  EXPECT_THROW(decompose_memory(cfg.observations, cfg.stages, {}, "few"), preflight::InputError);
  const fs::path same =
      write_temp("same.yaml", R"(pipeline_config: {pipeline_num: 6, num_layer: 12, offset: 0}
memory_usage: {head_memory: 100, tail_memory: 50, body_memories: {stage_id: [1, 2, 3, 4], memories: [80, 70, 60, 50]}}
)");
  const InitConfig c2 = read_init_config(same);
  // SAPP refuses a constant when every stage holds the same layers; we fold it into P instead.
  const Decomposition d = decompose_memory(c2.observations, c2.stages, {}, "same");
  EXPECT_EQ(d.method, DecomposeMethod::LeastSquaresNoConstant);
  EXPECT_FALSE(d.const_mb.has_value());
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes.front().find("folded into the per-layer parameters"), std::string::npos);
  // 4 rows, 2 unknowns: M_i = 2 P + 2 (6 - i) a  →  80 = 2P + 10a, …, 50 = 2P + 4a: P = 15, a = 5 exactly.
  EXPECT_NEAR(d.param_mb, 15, 1e-9);
  EXPECT_NEAR(act(d, Recompute::None), 5, 1e-9);
}

}  // namespace
