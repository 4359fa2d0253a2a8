// Packed sequences (`--packed-seq-mean-length L`): samples of L tokens on average packed into each
// --seq-length row, the attention kernel attending within each sample (Megatron's THD format).  The core
// attention's FLOPs are those of row / L sequences of L tokens, its kernel priced at that shape; every other
// op, the memory and the model FLOPs (MFU) stay the row's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "input_error.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

using namespace preflight::analyzer;
using Words = std::vector<std::string>;
using preflight::test::input_error;

namespace {
// A Llama-like dense model: 2 layers, h 4096, 32 heads (GQA 8), 8192-token rows, one H100, flash attention.
Words dense(const Words& more) {
  Words a = preflight::test::words(
      "--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --group-query-attention --num-query-groups "
      "8 "
      "--ffn-hidden-size 14336 --swiglu --seq-length 8192 --max-position-embeddings 8192 "
      "--position-embedding-type "
      "rope --disable-bias-linear --normalization RMSNorm --untie-embeddings-and-output-weights --vocab-size "
      "32000 "
      "--micro-batch-size 1 --global-batch-size 4 --bf16 --use-flash-attn --world-size 1");
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

const cost::OpEstimate* op_of(const cost::Estimate& e, const std::string& name) {
  for (const auto& layer : e.layer_ops)
    if (layer.layer == 0)
      for (const auto& op : layer.ops)
        if (op.name == name) return &op;
  return nullptr;
}
}  // namespace

TEST(PackedSeq, FlagAndRefusals) {
  EXPECT_DOUBLE_EQ(parse_megatron_args(dense({})).strategy.packed_seq_mean_length, 0.0);
  EXPECT_DOUBLE_EQ(
      parse_megatron_args(dense({"--packed-seq-mean-length", "512"})).strategy.packed_seq_mean_length, 512.0);
  for (const char* bad : {"0", "x", "-3", "inf"})
    EXPECT_EQ(input_error([&] {
                parse_megatron_args(dense({"--packed-seq-mean-length", bad}));
              }).where(),
              "--packed-seq-mean-length")
        << bad;
  const auto longer = input_error([&] { parse_megatron_args(dense({"--packed-seq-mean-length", "9000"})); });
  EXPECT_NE(longer.detail().find("exceeds the sequence length 8192"), std::string::npos) << longer.detail();
  const auto unfused = input_error([&] {
    parse_megatron_args(dense({"--packed-seq-mean-length", "512", "--attention-backend", "unfused"}));
  });
  EXPECT_NE(unfused.detail().find("flash"), std::string::npos) << unfused.detail();
}

// 8192-token rows of 512-token samples: the attention's FLOPs are 512 / 8192 of the row's, exactly; its
// time falls (by less than the FLOPs: the short sequences' kernel runs less efficiently); the linears,
// memory and model FLOPs do not move; the step is shorter.  A sliding window below L still bounds the keys.
TEST(PackedSeq, AttentionWithinEachSample) {
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  cost::EstimateOptions eo;
  eo.layer_ops = true;
  const MegatronConfig row = parse_megatron_args(dense({}));
  const MegatronConfig packed = parse_megatron_args(dense({"--packed-seq-mean-length", "512"}));
  const cost::Estimate er = cost::estimate(row.model, row.strategy, sys, eo);
  const cost::Estimate ep = cost::estimate(packed.model, packed.strategy, sys, eo);
  const cost::OpEstimate *ar = op_of(er, "attention.attention"), *ap = op_of(ep, "attention.attention");
  ASSERT_TRUE(ar && ap);
  EXPECT_NEAR(ap->work.fwd_flops, ar->work.fwd_flops * 512 / 8192, 1e-6 * ar->work.fwd_flops);
  EXPECT_NEAR(ap->work.bwd_flops, ar->work.bwd_flops * 512 / 8192, 1e-6 * ar->work.bwd_flops);
  EXPECT_LT(ap->times.fwd_compute_ms, ar->times.fwd_compute_ms);
  EXPECT_GT(ap->times.fwd_compute_ms, ar->times.fwd_compute_ms * 512 / 8192);
  for (const char* name : {"attention.linear_qkv", "mlp.linear_fc1"}) {
    const cost::OpEstimate *r = op_of(er, name), *p = op_of(ep, name);
    ASSERT_TRUE(r && p) << name;
    EXPECT_DOUBLE_EQ(p->times.fwd_compute_ms, r->times.fwd_compute_ms) << name;
  }
  EXPECT_LT(ep.iteration_ms, er.iteration_ms);
  EXPECT_DOUBLE_EQ(ep.flops_per_token, er.flops_per_token);
  EXPECT_DOUBLE_EQ(ep.max_peak_bytes(false), er.max_peak_bytes(false));

  const MegatronConfig window =
      parse_megatron_args(dense({"--packed-seq-mean-length", "512", "--window-size", "255,0"}));
  const cost::Estimate ew = cost::estimate(window.model, window.strategy, sys, eo);
  const cost::OpEstimate* aw = op_of(ew, "attention.attention");
  ASSERT_TRUE(aw);
  EXPECT_NEAR(aw->work.fwd_flops, ar->work.fwd_flops * 256 / 8192, 1e-6 * ar->work.fwd_flops);
}

// The reports: estimate's text says the rows are packed, its JSON gives the mean length.
TEST(PackedSeq, EstimateReportsIt) {
  std::string args;
  for (const auto& w : dense({"--packed-seq-mean-length", "512"})) args += " " + w;
  const preflight::test::RunResult t = preflight::test::run_preflight("estimate --system h100-sxm --" + args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("packed sequences: samples of 512 tokens on average"), std::string::npos) << t.out;
  const preflight::test::RunResult j =
      preflight::test::run_preflight("estimate --json --system h100-sxm --" + args);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"packed_seq_mean_length\": 512"), std::string::npos);
}
