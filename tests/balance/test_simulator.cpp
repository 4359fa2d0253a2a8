// The schedule simulator against SAPP's own simulator outputs (reference runs, unit-test golden) and
// hand-computed small schedules.
#include <gtest/gtest.h>

#include "preflight/analyzer/balance/layer_model.hpp"
#include "preflight/analyzer/balance/simulator.hpp"
#include "preflight/analyzer/balance/svg.hpp"
#include "preflight/common/error.hpp"
#include "sapp_cases.hpp"

namespace {

using namespace preflight::analyzer::balance;

std::vector<double> llama_sapp_peaks() {
  return {50745, 54270, 53424, 52578, 54996, 53878, 53640, 55218,
          51228, 54075, 53604, 51600, 53604, 53352, 53384, 54071};
}

TEST(Simulator, ReproducesSappLlamaAnswer) {
  const BalanceProblem p = sapp_cases::llama_problem(56000, true);
  const Assignment a = sapp_cases::llama_sapp_internal();
  EXPECT_FALSE(yaml_representable(a));  // see SappYamlIsNotWhatSappSimulated
  EXPECT_EQ(check_assignment(p, yaml_normalized(a)), "");
  const ScheduleGraph g(p.pipeline);
  const SimulationResult r = simulate(g, chunk_costs(p, a));
  EXPECT_EQ(static_cast<int>(r.end_time_ms), 7995);  // SAPP: total_time: 7995
  EXPECT_NEAR(r.bubbles.real, 0.5318, 5e-5);
  EXPECT_NEAR(r.bubbles.ideal, 0.3125, 5e-5);
  EXPECT_NEAR(r.bubbles.imba, 0.1266, 5e-5);
  EXPECT_NEAR(r.bubbles.recompute, 0.0927, 5e-5);
  const auto peaks = llama_sapp_peaks();
  ASSERT_EQ(r.peak_mb.size(), peaks.size());
  for (std::size_t s = 0; s < peaks.size(); ++s) EXPECT_DOUBLE_EQ(r.peak_mb[s], peaks[s]) << "stage " << s;
}

TEST(Simulator, SappYamlIsNotWhatSappSimulated) {
  // SAPP prints select 1 / comm 1 for chunk 0 of stage 14, which MindFormers (and SAPP's own reader)
  // apply as one layer with both and one with none: same time here, 53 MB less per micro batch in flight.
  const BalanceProblem p = sapp_cases::llama_problem(56000, true);
  const Assignment yaml = assignment_from_yaml(p, sapp_cases::llama_sapp_answer(), "sapp");
  const Assignment internal = sapp_cases::llama_sapp_internal();
  EXPECT_NE(yaml, internal);
  EXPECT_EQ(yaml.at(0, Recompute::Both, 0, 14), 1);
  EXPECT_EQ(yaml.at(0, Recompute::None, 0, 14), 1);
  EXPECT_EQ(internal.at(0, Recompute::Select, 0, 14), 1);
  EXPECT_EQ(internal.at(0, Recompute::Comm, 0, 14), 1);
  EXPECT_EQ(yaml_normalized(internal), yaml);
  const ScheduleGraph g(p.pipeline);
  const SimulationResult r = simulate(g, chunk_costs(p, yaml));
  EXPECT_DOUBLE_EQ(r.peak_mb[14], 53384 - 16 * (783 + 695 - 423 - 1002));
  EXPECT_EQ(static_cast<int>(r.end_time_ms), 7995);
}

TEST(Simulator, ReproducesSappDemoRuns) {
  BalanceProblem p = sapp_cases::llama_problem(62000, false);  // the demo: same memories, -lm off
  const ScheduleGraph g(p.pipeline);
  // SAPP's answer: 0.5722 = 0.3125 + 0.1701 + 0.0896, total_time 8206.
  const Assignment a = sapp_cases::demo_sapp_internal();
  SimulationResult r = simulate(g, chunk_costs(p, a));
  EXPECT_EQ(static_cast<int>(r.end_time_ms), 8206);
  EXPECT_NEAR(r.bubbles.real, 0.5722, 5e-5);
  EXPECT_NEAR(r.bubbles.imba, 0.1701, 5e-5);
  EXPECT_NEAR(r.bubbles.recompute, 0.0896, 5e-5);
  const std::vector<double> peaks = {60857, 60876, 55116, 55116, 59468, 55116, 55116, 55116,
                                     58622, 58338, 61607, 58194, 61614, 61957, 58575, 56055};
  for (std::size_t s = 0; s < peaks.size(); ++s) EXPECT_DOUBLE_EQ(r.peak_mb[s], peaks[s]) << "stage " << s;
  // Naive all recompute: 0.5572 = 0.3125 + 0.1354 + 0.1092, peaks 59730, 55116 ×7, 54270 … 44118, 48311.
  r = simulate(g, chunk_costs(p, naive_all_recompute(p)));
  EXPECT_NEAR(r.bubbles.real, 0.5572, 5e-5);
  EXPECT_NEAR(r.bubbles.imba, 0.1354, 5e-5);
  EXPECT_NEAR(r.bubbles.recompute, 0.1092, 5e-5);
  EXPECT_DOUBLE_EQ(r.peak_mb[0], 59730);
  EXPECT_DOUBLE_EQ(r.peak_mb[7], 55116);
  EXPECT_DOUBLE_EQ(r.peak_mb[8], 54270);
  EXPECT_DOUBLE_EQ(r.peak_mb[14], 44118);
  EXPECT_DOUBLE_EQ(r.peak_mb[15], 48311);
  // Naive no recompute: 0.4138 = 0.3125 + 0.1013, no recompute column, peak 115314.
  r = simulate(g, chunk_costs(p, naive_no_recompute(p)));
  EXPECT_NEAR(r.bubbles.real, 0.4138, 5e-5);
  EXPECT_NEAR(r.bubbles.imba, 0.1013, 5e-5);
  EXPECT_FALSE(r.bubbles.has_recompute);
  EXPECT_DOUBLE_EQ(r.max_peak_mb(), 115314);
}

TEST(Simulator, SappUnitTestVpp3Golden) {
  // tests/st/test_pipeline_balance/test_sapp_solver.py::test_sapp_simulate_vpp3 (lists cut to the 16
  // stages SAPP reads; its sum of layers is 189).  Golden 51394.8 with the Feb-2025 time semantics
  // (time = forward + backward), 3 × 51394.8 = 154184.4 with the latest (time = forward).
  BalanceProblem p;
  p.model = read_layer_json(preflight::test::data_dir() / "balance" / "sim.json");
  p.pipeline = {16, 3, 16, true};
  p.memory_limit_mb = 53000;
  p.constant = ConstantMemory::SappTwiceAtEnds;
  YamlStrategy y;
  y.offset = {{-2, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
              {1, 0, 0, -2, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0},
              {1, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, -1, 0, 0}};
  y.recompute = {{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                 {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                 {0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
  y.select_recompute = {{1, 3, 3, 0, 3, 3, 3, 3, 3, 3, 3, 2, 2, 1, 0, 0},
                        {3, 3, 3, 1, 3, 3, 3, 3, 3, 3, 3, 1, 2, 2, 1, 0},
                        {3, 3, 3, 1, 3, 3, 3, 3, 3, 3, 3, 1, 2, 2, 1, 0}};
  y.select_comm_recompute = {{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                             {0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
                             {0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
  const Assignment a = assignment_from_yaml(p, y, "vpp3");
  const ScheduleGraph g(p.pipeline);
  EXPECT_NEAR(simulate(g, chunk_costs(p, a)).end_time_ms, 154184.4, 1e-6);
  // Feb-2025 semantics: every time a third.
  p.model.head_forward_ms /= 3;
  p.model.tail_forward_ms /= 3;
  for (auto& b : p.model.bodies) {
    b.forward_ms /= 3;
    for (auto& t : b.backward_ms) t /= 3;
  }
  EXPECT_NEAR(simulate(g, chunk_costs(p, a)).end_time_ms, 51394.8, 1e-6);
}

ChunkCosts costs_2x1(double f0, double b0, double f1, double b1) {
  ChunkCosts c;
  c.stages = 2;
  c.chunks = 1;
  c.forward_ms = {f0, f1};
  c.backward_ms = {b0, b1};
  c.recompute_ms = {0, 0};
  c.activation_mb = {5, 3};
  c.static_mb = {10, 7};
  return c;
}

TEST(Simulator, OneFOneBByHand) {
  // S 2, m 2: stage 0 runs f0 f1 b0 b1 (one warm-up forward), stage 1 f0 b0 f1 b1.  With stage 0 f 1 / b 2
  // and stage 1 f 3 / b 4: s0 f0 [0,1]; s1 f0 [1,4]; s1 b0 [4,8]; s0 f1 [1,2]; s1 f1 [8,11]; s0 b0 [8,10];
  // s1 b1 [11,15]; s0 b1 [15,17].
  const ScheduleGraph g({2, 1, 2, false});
  std::vector<std::string> order;
  for (int id : g.stage_sequence()[0]) {
    const Block& b = g.blocks()[id];
    order.push_back(std::string(b.forward ? "f" : "b") + std::to_string(b.micro));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"f0", "f1", "b0", "b1"}));
  const SimulationResult r = simulate(g, costs_2x1(1, 2, 3, 4), true);
  EXPECT_DOUBLE_EQ(r.end_time_ms, 17);
  // Memory: stage 0 = 10 + 5 per micro batch in flight → peak 20; stage 1 → 10.
  EXPECT_DOUBLE_EQ(r.peak_mb[0], 20);
  EXPECT_DOUBLE_EQ(r.peak_mb[1], 10);
  // model time (4 + 6) · 2 = 20: real (2 · 17 - 20) / 20 = 0.7, ideal 1 / 2.
  EXPECT_DOUBLE_EQ(r.bubbles.real, 0.7);
  EXPECT_DOUBLE_EQ(r.bubbles.ideal, 0.5);
  EXPECT_NEAR(r.bubbles.imba, 0.2, 1e-12);
  // Stage 1's memory series: (0, 7) then after f0 10, b0 7, f1 10, b1 7 at their ends 4, 8, 11, 15.
  const std::vector<std::pair<double, double>> s1 = {{0, 7}, {4, 10}, {8, 7}, {11, 10}, {15, 7}};
  EXPECT_EQ(r.memory_series[1], s1);
}

TEST(Simulator, InterleavedOrderFollowsSappBuilder) {
  // S 2, V 2, m 2 ("vpp"): warm-up (V+1)S - 2p - 2 = 4 forwards on stage 0, 2 on stage 1.
  const ScheduleGraph g({2, 2, 2, false});
  auto seq = [&](int stage) {
    std::string s;
    for (int id : g.stage_sequence()[stage]) {
      const Block& b = g.blocks()[id];
      s += std::string(b.forward ? "f" : "b") + std::to_string(b.micro) + "c" + std::to_string(b.chunk) + " ";
    }
    return s;
  };
  EXPECT_EQ(seq(0), "f0c0 f1c0 f0c1 f1c1 b0c1 b1c1 b0c0 b1c0 ");
  EXPECT_EQ(seq(1), "f0c0 f1c0 f0c1 b0c1 f1c1 b1c1 b0c0 b1c0 ");
  // Less memory ("vpp2"): warm-up VS - p - 1 = 3 and 2.
  const ScheduleGraph lm({2, 2, 2, true});
  std::string s0;
  for (int id : lm.stage_sequence()[0]) {
    const Block& b = lm.blocks()[id];
    s0 += std::string(b.forward ? "f" : "b") + std::to_string(b.micro) + "c" + std::to_string(b.chunk) + " ";
  }
  EXPECT_EQ(s0, "f0c0 f1c0 f0c1 f1c1 b0c1 b1c1 b0c0 b1c0 ");  // 3 warm-up forwards, then f1c1, b0c1, …
}

TEST(Simulator, RejectsFewerMicroBatchesThanStages) {
  EXPECT_THROW(ScheduleGraph(PipelineConfig{4, 1, 3, false}), preflight::InputError);
}

TEST(Svg, DrawsEveryBlockAndTheLimit) {
  const ScheduleGraph g({2, 1, 2, false});
  const ChunkCosts c = costs_2x1(1, 2, 3, 4);
  const SimulationResult r = simulate(g, c, true);
  const std::string svg = render_schedule_svg(g, c, r, {"test <1>", 15});
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("test &lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("limit 15 MB"), std::string::npos);
  // 8 blocks + background + 6 legend swatches + 1 odd-row band.
  std::size_t rects = 0;
  for (std::size_t pos = 0; (pos = svg.find("<rect", pos)) != std::string::npos; ++pos) ++rects;
  EXPECT_GE(rects, 8u + 1u);
  // Stage 0 peaks at 20 > 15: its legend entry is marked.
  EXPECT_NE(svg.find("font-weight=\"bold\">stage 0: 20"), std::string::npos);
}

TEST(Simulator, LessMemoryScheduleWithAPartialRoundIsAnInputError) {
  // SAPP's vpp2 order deadlocks when the micro batches are not a multiple of the stages.
  for (int m : {17, 24, 31}) {
    try {
      ScheduleGraph g(PipelineConfig{16, 2, m, true});
      FAIL() << m << " micro batches were accepted";
    } catch (const preflight::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("multiple of the stages"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(ScheduleGraph(PipelineConfig{16, 2, 32, true}));
  EXPECT_NO_THROW(ScheduleGraph(PipelineConfig{16, 2, 24, false}));  // normal interleaving is fine
}

}  // namespace
