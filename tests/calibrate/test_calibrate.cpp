// Calibration: reading predictions, comparing with measurements, fitting and applying coefficients.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "preflight/analyzer/calibrate/calibrate.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/report.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/model/memory.hpp"
#include "preflight/analyzer/tables/report.hpp"
#include "preflight/common/error.hpp"
#include "torch_cpu_example.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;
using nlohmann::json;
using preflight::test::graph_of;
using preflight::test::torch_cpu_example_args;

namespace {

Prediction predict(const Words& w) {
  return read_prediction(analysis_json(graph_of(w), {}), "analyze.json");
}

json measurement(int rank, double weights, double grads, double optimizer, double kept,
                 const std::map<std::string, double>& by_module, double peak, int microbatches = 4) {
  return {{"format", "preflight-memory-measurement"},
          {"version", 1},
          {"file", "rank" + std::to_string(rank) + ".pftrace"},
          {"rank", rank},
          {"world_size", 4},
          {"min_bytes", 4096},
          {"microbatches", microbatches},
          {"static", {{"weights", weights}, {"gradients", grads}, {"optimizer", optimizer}}},
          {"activations", {{"per_microbatch", kept}, {"spread", 0}, {"by_module", by_module}}},
          {"peak", {{"bytes", peak}, {"phase", "backward"}, {"marker", ""}}}};
}

const CalibrationRow& row(const Comparison& c, int rank, const std::string& q) {
  for (const auto& r : c.rows)
    if (r.rank == rank && r.quantity == q) return r;
  throw std::runtime_error("no row " + q);
}

}  // namespace

TEST(Calibrate, ReadsAnalyzeJson) {
  Prediction p = predict(torch_cpu_example_args());
  EXPECT_EQ(p.implementation, "torch_cpu");
  EXPECT_EQ(p.pp, 2);
  EXPECT_EQ(p.num_microbatches, 4);
  // Megatron order tp-cp-ep-dp-pp: ranks 0, 1 are stage 0, ranks 2, 3 stage 1.
  EXPECT_EQ(p.stage_of_rank(1), 0);
  EXPECT_EQ(p.stage_of_rank(2), 1);
  EXPECT_THROW(p.stage_of_rank(4), preflight::InputError);
  ASSERT_EQ(p.stages.size(), 2u);
  EXPECT_EQ(p.stages[0].ops.front().path, "embedding.word_embeddings");
  EXPECT_EQ(p.stages[1].ops.back().path, "loss");
}

TEST(Calibrate, StaticAndActivationsOfARealRunMatchExactly) {
  // Measured by libpreflight_hook.so (PREFLIGHT_TRACE_MIN_BYTES=4096) on rank 0 of
  // `NPROC=4 TP=2 PP=2 bash examples/torch_cpu_gpt/pretrain_gpt_cpu.sh`: parameters 278,528 B (every
  // parameter of ≥ 4 KiB: word 256×64, position 64×64, per layer qkv 96×64, proj 64×32, fc1 128×64,
  // fc2 64×128, all fp32), one gradient buffer of all 70,848 parameters, two Adam moments per visible
  // parameter, 1,212,416 B kept per micro batch.
  Prediction p = predict(torch_cpu_example_args());
  MeasuredRank m = read_measured(measurement(0, 278528, 283392, 557056, 1212416,
                                             {{"embedding.embedding_dropout", 65536},
                                              {"decoder.layers.0.self_attention.core_attention", 262144}},
                                             3679024),
                                 "rank0");
  Comparison c = compare(p, {m});
  EXPECT_DOUBLE_EQ(row(c, 0, "weights").predicted, 278528);
  EXPECT_DOUBLE_EQ(row(c, 0, "gradients").predicted, 283392);
  EXPECT_DOUBLE_EQ(row(c, 0, "optimizer").predicted, 557056);
  EXPECT_DOUBLE_EQ(row(c, 0, "activations").predicted, 1212416);
  EXPECT_DOUBLE_EQ(row(c, 0, "embedding").predicted, 65536);
  // The peak is simulated along 1F1B; that run peaked at 3,679,024 B.
  EXPECT_LT(std::abs(row(c, 0, "peak").error()), 0.01);
  EXPECT_EQ(c.notes.size(), 3u);  // ranks 1, 2, 3 have no measurement
}

TEST(Calibrate, ProducerAttributionMovesInputsUpstream) {
  Prediction p = predict(torch_cpu_example_args());
  auto by = predicted_by_module(p.stages[1], 4096, true);
  // Stage 1 starts with layer 2's input norm: the received activations [s, b, h] fp32 are the stage input.
  EXPECT_DOUBLE_EQ(by["input"], 128.0 * 64 * 4);
  // fc1's kept input is the pre-MLP norm's output; the activation's input is fc1's output.
  EXPECT_DOUBLE_EQ(by["decoder.layers.2.pre_mlp_layernorm"], 128.0 * 64 * 4);
  EXPECT_DOUBLE_EQ(by["decoder.layers.2.mlp.linear_fc1"], 128.0 * 128 * 4);
  // The last layer's output is kept by the final norm, so it counts for mlp_bda (with the dropout noise).
  EXPECT_DOUBLE_EQ(by["decoder.layers.3.mlp_bda"], 2 * 128.0 * 64 * 4);
}

TEST(Calibrate, FitRecoversKnownCoefficients) {
  // Two runs (different micro batch, so different transients); measurements built from the predictions
  // with module scale 1.1 and 2,048 bytes per module, transient scale 0.8 and 50,000 bytes of overhead.
  std::vector<CalibrationRun> runs;
  for (const char* mb : {"1", "2"}) {
    Prediction p = predict(torch_cpu_example_args({"--micro-batch-size", mb, "--global-batch-size", "4"}));
    CalibrationRun run{p, {}};
    for (int rank : {0, 2}) {
      const PredictedStage& s = p.stages[p.stage_of_rank(rank)];
      std::map<std::string, double> by;
      for (const auto& op : s.ops) by[op.path] = 0;
      for (const auto& [k, v] : predicted_by_module(s, 4096, true)) by[k] = v;
      double kept = 0, kept_all = 0;
      for (auto& [k, v] : by) {
        v = 1.1 * v + 2048;
        kept += v;
      }
      for (const auto& op : s.ops)
        for (const auto& t : op.kept) kept_all += t.bytes >= 4096 ? t.bytes : 0;
      MeasuredRank tmp = read_measured(measurement(rank, 0, 0, 0, 0, {}, 1, p.num_microbatches), "tmp");
      Comparison c0 = compare(p, {tmp});
      double static_vis = row(c0, rank, "weights").predicted + row(c0, rank, "gradients").predicted +
                          row(c0, rank, "optimizer").predicted;
      double act_vis = s.peak_activation_bytes * kept_all / [&] {
        double a = 0;
        for (const auto& op : s.ops)
          for (const auto& t : op.kept) a += t.bytes;
        return a;
      }();
      double peak = static_vis + act_vis * kept / kept_all + 0.8 * s.peak_transient_bytes + 50000;
      run.measured.push_back(
          read_measured(measurement(rank, 0, 0, 0, kept, by, peak, p.num_microbatches), "m"));
    }
    runs.push_back(run);
  }
  Calibration cal = fit_calibration(runs);
  ASSERT_TRUE(cal.modules.count("decoder.layers.*.mlp.linear_fc1"));
  EXPECT_NEAR(cal.modules["decoder.layers.*.mlp.linear_fc1"].scale, 1.1, 1e-9);
  EXPECT_NEAR(cal.modules["decoder.layers.*.mlp.linear_fc1"].bytes_per_op, 2048, 1e-6);
  EXPECT_NEAR(cal.transient_scale, 0.8, 1e-6);
  EXPECT_NEAR(cal.overhead_bytes, 50000, 1e-3);
  EXPECT_LT(cal.rms_peak_error_after, 1e-9);
  // Round trip through the file format.
  Calibration back = read_calibration(calibration_json(cal), "cal.json");
  EXPECT_DOUBLE_EQ(back.transient_scale, cal.transient_scale);
  EXPECT_EQ(back.modules.size(), cal.modules.size());
}

TEST(Calibrate, AppliedToTheGraph) {
  LayerGraph g = graph_of(torch_cpu_example_args());
  double before = static_cast<double>(g.stage(0).front()->kept_activation_bytes());
  double total_before = stage_memory(g).stages[0].total_bytes();
  Calibration cal;
  cal.implementation = "torch_cpu";
  cal.modules["decoder.layers.*.mlp.activation_func"] = {2.0, 100, 1};
  cal.overhead_bytes = 1e6;
  apply_calibration(g, cal);
  // The activation allocates its output (fc2's kept input, [128, 128] fp32) in each of the stage's 2 layers.
  double after = static_cast<double>(g.stage(0).front()->kept_activation_bytes());
  EXPECT_DOUBLE_EQ(after - before, 2 * (128.0 * 128 * 4 + 100));
  StageMemory s = stage_memory(g).stages[0];
  EXPECT_DOUBLE_EQ(s.total_bytes() - total_before, 1e6 + 2 * (after - before));  // 2 micro batches in flight
  cal.implementation = "megatron_core";
  EXPECT_THROW(apply_calibration(g, cal), preflight::InputError);
}

TEST(Calibrate, BadInputNamesTheField) {
  auto where = [](auto f) -> std::string {
    try {
      f();
    } catch (const preflight::InputError& e) {
      return e.where();
    }
    return "";
  };
  json a = analysis_json(graph_of(torch_cpu_example_args()), {});
  json no_strategy = a;
  no_strategy.erase("strategy");
  EXPECT_EQ(where([&] { read_prediction(no_strategy, "a.json"); }), "a.json");
  json bad_tp = a;
  bad_tp["strategy"]["tp"] = "two";
  EXPECT_EQ(where([&] { read_prediction(bad_tp, "a.json"); }), "a.json: strategy.tp");
  json m = measurement(0, 1, 1, 1, 1, {}, 1);
  m["format"] = "something else";
  EXPECT_EQ(where([&] { read_measured(m, "m.json"); }), "m.json");
  Prediction p = read_prediction(a, "a.json");
  MeasuredRank wrong_mb = read_measured(measurement(0, 1, 1, 1, 1, {}, 1, 2), "rank0");
  EXPECT_EQ(where([&] { compare(p, {wrong_mb}); }), "rank0.pftrace");
  MeasuredRank outside = read_measured(measurement(7, 1, 1, 1, 1, {}, 1), "rank7");
  EXPECT_EQ(where([&] { compare(p, {outside}); }), "rank7.pftrace");
  json cal = {{"format", "preflight-calibration"},
              {"version", 1},
              {"implementation", "torch_cpu"},
              {"modules", json::object()},
              {"peak", {{"transient_scale", "x"}, {"overhead_bytes", 0}}}};
  EXPECT_EQ(where([&] { read_calibration(cal, "c.json"); }), "c.json.peak.transient_scale");
}

TEST(Calibrate, EstimateJsonIsComparedPerStage) {
  // `preflight estimate --json` output (SimuMax's figures per stage), pp 3 × dp 2: SimuMax lists first,
  // middle and last stage; the middle entry stands for stage 1.  Megatron order: rank 3 = dp 1 of stage 1.
  json est = {{"summary",
               {{"parallelism", "seq64.mbs2.mbc4.gbs8 tp1.cp1.ep1.pp3.dp2.etp1.edp2, world_size:6"},
                {"stages",
                 {{{"stage", "first_stage"},
                   {"pp_rank", 0},
                   {"model_bytes", 1000.0},
                   {"activation_cache_bytes_per_micro_batch", 300.0},
                   {"peak_bytes", 2500.0}},
                  {{"stage", "middle_stage"},
                   {"pp_rank", 1},
                   {"model_bytes", 800.0},
                   {"activation_cache_bytes_per_micro_batch", 200.0},
                   {"peak_bytes", 1500.0}},
                  {{"stage", "last_stage"},
                   {"pp_rank", 2},
                   {"model_bytes", 900.0},
                   {"activation_cache_bytes_per_micro_batch", 250.0},
                   {"peak_bytes", 1800.0}}}}}}};
  Prediction p = read_prediction(est, "estimate.json");
  EXPECT_EQ(p.tool, "estimate");
  EXPECT_EQ(p.world_size, 6);
  EXPECT_EQ(p.tp, 1);  // not etp
  EXPECT_EQ(p.dp, 2);  // not edp
  EXPECT_EQ(p.num_microbatches, 4);
  json m3 = measurement(3, 400, 100, 300, 250, {}, 1200);
  m3["world_size"] = 6;
  Comparison c = compare(p, {read_measured(m3, "rank3")});
  EXPECT_EQ(row(c, 3, "static").stage, 1);
  EXPECT_DOUBLE_EQ(row(c, 3, "static").error(), 0.0);        // 800 vs 400 + 100 + 300
  EXPECT_DOUBLE_EQ(row(c, 3, "activations").error(), -0.2);  // 200 vs 250
  EXPECT_DOUBLE_EQ(row(c, 3, "peak").error(), 0.25);         // 1500 vs 1200
  EXPECT_THROW(row(c, 3, "weights"), std::runtime_error);    // no split of the static memory
  EXPECT_NE(render_comparison(c).find("largest |error|: static +0.00 %, activations +20.00 %, peak +25.00 %"),
            std::string::npos)
      << render_comparison(c);
  // No ops: nothing to fit or to apply a calibration to.
  EXPECT_THROW(fit_calibration({{p, {read_measured(m3, "rank3")}}}), preflight::InputError);
  EXPECT_THROW(apply_calibration(p, Calibration{}), preflight::InputError);
  // Sizes that do not multiply to the world are refused, naming the field.
  json bad = est;
  bad["summary"]["parallelism"] = "seq64.mbs2.mbc4.gbs8 tp2.cp1.ep1.pp3.dp2, world_size:6";
  try {
    read_prediction(bad, "estimate.json");
    ADD_FAILURE() << "accepted tp 2 × pp 3 × dp 2 = 6";
  } catch (const preflight::InputError& e) {
    EXPECT_EQ(e.where(), "estimate.json: summary.parallelism");
  }
}

TEST(Calibrate, ReadsTheCostModelsOwnSummary) {
  // The summary as `preflight estimate --json` writes it, for the example's arguments.
  MegatronConfig mc = parse_megatron_args(torch_cpu_example_args(), {});
  cost::Estimate e = cost::estimate(mc.model, mc.strategy, cost::load_simumax_system("a100_pcie"));
  json j = {{"summary", json::parse(cost::summary_json(e).dump())}};
  Prediction p = read_prediction(j, "estimate.json");
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.pp, 2);
  EXPECT_EQ(p.world_size, 4);
  EXPECT_EQ(p.num_microbatches, 4);
  ASSERT_EQ(p.stages.size(), 2u);
  for (int s = 0; s < 2; ++s) {
    EXPECT_DOUBLE_EQ(p.stages[s].peak_bytes, e.stages[s].peak_bytes);
    EXPECT_DOUBLE_EQ(p.stages[s].model_bytes, e.stages[s].model_bytes);
  }
}
