// Timing against measured iteration times: the B200 corpus (tests/data/time_corpus), the two-factor fit of
// `calibrate --fit-time`, and the simulated schedule `estimate --trace` writes.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/calibrate/time_fit.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/cost/primitives.hpp"
#include "preflight/analyzer/cost/report.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/common/error.hpp"
#include "test_support.hpp"

namespace preflight::analyzer {
namespace {

using preflight::test::data_dir;

std::vector<TimedRun> corpus_runs(const std::string& file) {
  return read_time_corpus((data_dir() / "time_corpus" / file).string());
}

std::vector<TimedRun> b200_runs() {
  return corpus_runs("b200_llama3.json");
}

/// A corpus file's runs and their fit on a system preset.
struct CorpusFit {
  std::vector<TimedRun> runs;
  TimeFit fit;
};
CorpusFit fit_corpus(const std::string& file, const std::string& preset) {
  CorpusFit c;
  c.runs = corpus_runs(file);
  c.fit = fit_time(c.runs, cost::load_simumax_system(preset));
  return c;
}

TEST(TimeFit, B200CorpusBeforeAndAfterTheFit) {
  const auto runs = b200_runs();
  ASSERT_EQ(runs.size(), 31u);
  const SystemSpec b200 = cost::load_simumax_system("b200_bf16_ceperm");
  const TimeFit fit = fit_time(runs, b200);
  // As given (SimuMax's B200 calibration): systematically low, worst -11.4 % (tp8).
  EXPECT_GT(fit.max_abs_before(), 0.10);
  for (const auto& r : fit.runs) EXPECT_LT(r.error_before(), 0.01) << r.name;
  // Fitted: both parts slower than calibrated, the errors centred and smaller, also held out.
  EXPECT_GT(fit.compute_scale, 1.0);
  EXPECT_GT(fit.network_scale, 1.0);
  EXPECT_LT(fit.max_abs_fitted(), 0.06);
  EXPECT_LT(fit.max_abs_held_out(), 0.08);
  EXPECT_LT(fit.max_abs_fitted(), fit.max_abs_before() / 1.8);
  // The fitted system prices close to the linear fit (latencies are not scaled).
  const SystemSpec fitted = scaled_system(b200, fit.compute_scale, fit.network_scale);
  for (std::size_t i = 0; i < runs.size(); i += 5) {
    const double t = cost::estimate(runs[i].model, runs[i].strategy, fitted).iteration_ms;
    EXPECT_NEAR(t / fit.runs[i].fitted_ms, 1.0, 0.03) << runs[i].name;
  }
}

// Korthikanti et al. 2022, Table 5 (GPT 22B…1T on Selene's A100s): the a100-sxm-80gb preset, fitted on them
// (analyzer/data/systems/README.md), prices every run within 5 %, also held out; and the model prices full
// recompute against sequence parallelism + selective recompute as measured (the ratio, which no
// calibration of the system can fix: dropout, math attention's kernels, the recomputed forward).
TEST(TimeFit, A100MegatronGptTable) {
  const auto [runs, fit] = fit_corpus("a100_megatron_gpt.json", "a100-sxm-80gb");
  ASSERT_EQ(runs.size(), 8u);
  EXPECT_LT(fit.max_abs_before(), 0.05);
  EXPECT_LT(fit.max_abs_fitted(), 0.05);
  EXPECT_LT(fit.max_abs_held_out(), 0.05);
  const TimeFit two = fit_time({runs[0], runs[1]}, cost::load_simumax_system("h100-sxm"));
  EXPECT_EQ(two.compute_scale, two.network_scale);
  EXPECT_NEAR(fit.compute_scale, 1.0, 0.03);  // the preset carries the fit (of both A100 tables)
  for (std::size_t i = 0; i + 1 < runs.size(); i += 2) {
    const double measured = runs[i].measured_ms / runs[i + 1].measured_ms;
    const double predicted = fit.runs[i].predicted_ms / fit.runs[i + 1].predicted_ms;
    EXPECT_NEAR(predicted / measured, 1.0, 0.045) << runs[i].name;  // SimuMax v1.2: -6 … +63 %
  }
}

// Narayanan et al. 2021, Table 1 (GPT 1.7B…1T on 32…3072 A100s): with PyTorch DDP's overlapped all-reduce
// (--DDP-impl torch) and the interleaved schedule, every run within 7 % on the fitted preset and all but one
// within 3 %.  Without the DDP overlap the data-parallel runs are priced slower.
TEST(TimeFit, A100Sc21Table) {
  const auto [runs, fit] = fit_corpus("a100_megatron_gpt_sc21.json", "a100-sxm-80gb");
  ASSERT_EQ(runs.size(), 10u);
  EXPECT_LT(fit.max_abs_before(), 0.07);
  int beyond = 0;
  for (const auto& r : fit.runs) beyond += std::fabs(r.error_before()) > 0.03;
  EXPECT_LE(beyond, 1);
  EXPECT_LT(fit.max_abs_held_out(), 0.07);
  ASSERT_TRUE(runs[0].strategy.overlap_grad_reduce);  // --DDP-impl torch
  auto exposed = runs[0].strategy;
  exposed.overlap_grad_reduce = false;
  EXPECT_GT(cost::estimate(runs[0].model, exposed, cost::load_simumax_system("a100-sxm-80gb")).iteration_ms,
            fit.runs[0].predicted_ms * 1.005);
}

// SimuMax's B200 DeepSeek-V2/V3 rows (MLA, MoE with ep 4/8, 4 layers): SimuMax's own calibration prices
// them low (its table: -13.5 … +0.1 %; ours within 15 %, and within 8 % after the fit); the b200 preset,
// fitted per group on all 43 B200 runs, within 7.5 % as given.
TEST(TimeFit, B200DeepSeekRows) {
  const auto runs = corpus_runs("b200_deepseek.json");
  ASSERT_EQ(runs.size(), 12u);
  for (const auto& r : runs) {
    ASSERT_TRUE(r.model.mla.enabled) << r.name;
    ASSERT_EQ(r.strategy.effective_layer_recompute(r.model).layers, 0) << r.name;  // block, 0 layers
  }
  const TimeFit simumax = fit_time(runs, cost::load_simumax_system("b200_bf16_ceperm"));
  EXPECT_LT(simumax.max_abs_before(), 0.15);
  EXPECT_LT(simumax.max_abs_fitted(), 0.08);
  const TimeFit ours = fit_time(runs, cost::load_simumax_system("b200"));
  EXPECT_LT(ours.max_abs_before(), 0.075);  // 9.4 % before the preset's per-group fit
  EXPECT_LT(ours.max_abs_held_out(), 0.075);
}

// The per-group fit (GEMM, attention, memory-bound, each collective): on the DeepSeek rows it finds what the
// two-factor fit cannot — the multi-latent attention kernels run slower than SimuMax's B200 calibration says
// (attention × 1.5 or more, GEMMs within 10 %) — and the held-out error drops from 8 % to under 6.5 %.  The
// system it writes prices the runs as the linear fit says, within 3 %.
TEST(TimeFit, PerGroupFitSeparatesAttentionFromGemms) {
  const auto runs = corpus_runs("b200_deepseek.json");
  const SystemSpec sys = cost::load_simumax_system("b200_bf16_ceperm");
  const TimeFit two = fit_time(runs, sys);
  const TimeFit groups = fit_time_groups(runs, sys);
  // BF16 runs: every group but the FP8 GEMMs', which is left to follow the GEMMs'.
  ASSERT_EQ(groups.group_scales.size(), std::size(kTimeFitGroups) - 1);
  std::map<std::string, double> scale(groups.group_scales.begin(), groups.group_scales.end());
  EXPECT_EQ(scale.count("fp8_gemm"), 0u);
  EXPECT_GT(scale.at("attention"), 1.5);
  EXPECT_NEAR(scale.at("gemm"), 1.0, 0.1);
  EXPECT_LT(groups.max_abs_held_out(), 0.065);
  EXPECT_LT(groups.max_abs_held_out(), two.max_abs_held_out());
  const SystemSpec fitted = scaled_system_groups(sys, groups.group_scales);
  for (std::size_t i = 0; i < runs.size(); i += 3)
    EXPECT_NEAR(cost::estimate(runs[i].model, runs[i].strategy, fitted).iteration_ms, groups.runs[i].fitted_ms,
                0.03 * groups.runs[i].fitted_ms)
        << runs[i].name;
}

// --tp-comm-overlap (userbuffers): every linear's TP collective hides behind its own GEMM in forward and
// backward, so with large GEMMs nearly no TP time is left; it needs sequence parallelism, as in Megatron.
TEST(TimeFit, TpCommOverlapHidesTpCollectivesBehindTheirGemms) {
  const std::string args =
      "--num-layers 4 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64 --seq-length 8192 "
      "--max-position-embeddings 8192 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 8 --bf16 "
      "--use-flash-attn --swiglu --disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
      "--transformer-impl transformer_engine --nproc_per_node 8 --tensor-model-parallel-size 8";
  const auto plain = parse_megatron_args(preflight::test::words(args + " --sequence-parallel"));
  const auto ub = parse_megatron_args(preflight::test::words(args + " --sequence-parallel --tp-comm-overlap"));
  const SystemSpec sys = cost::load_simumax_system("h100-sxm");
  const auto a = cost::estimate(plain.model, plain.strategy, sys);
  const auto b = cost::estimate(ub.model, ub.strategy, sys);
  const auto& ta = a.chunks.front().times;
  const auto& tb = b.chunks.front().times;
  EXPECT_GT(ta.fwd_net_ms, 0);
  EXPECT_LT(tb.fwd_net_ms, 0.25 * ta.fwd_net_ms);  // the loss/embedding collectives stay
  EXPECT_LT(tb.bwd_net_ms(), 0.25 * ta.bwd_net_ms());
  EXPECT_DOUBLE_EQ(tb.fwd_compute_ms, ta.fwd_compute_ms);
  EXPECT_LT(b.iteration_ms, a.iteration_ms);
  const auto no_sp = parse_megatron_args(preflight::test::words(args + " --tp-comm-overlap"));
  try {
    no_sp.strategy.validate(no_sp.model);
    ADD_FAILURE() << "--tp-comm-overlap without sequence parallelism accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--sequence-parallel"), std::string::npos) << e.what();
  }
}

// NeMo's published Llama-3 FP8 runs on H100 (70B tp-comm-overlap pp 8 vp 5; 405B ring-p2p cp 2 pp 8 vp 8 with
// the embedding and loss counted in the split), gradients reduced in bf16 as the recipes set, over every
// release that published them: the 70B rows (six releases, 2.6 % apart) +3.5 … +6.3 %, the 405B rows on 1024
// GPUs (five releases, 292 … 328 tokens/s/GPU: 12 % apart) −8.2 … +1.4 % (the ring priced as an all-to-all
// made them +15 … +19 %; the Hopper FP8 GEMM scale is least squares over these 11 rows, with the recipes'
// fp8 parameter gather).  NeMo's B200 FP8 rows (Llama-3-8B and 3.1-405B) within 5 % / 6.5 % with the b200
// preset's FP8 GEMM scale fitted on them (8.0 / 9.5 % at the BF16 efficiencies; the 405B rows −4.0 / −4.5 %
// before the recipes' fp8 parameter gather was read, −5.6 / −6.1 % with it, the scale not refitted); NeMo's
// GB200 rows (Llama-3-8B, 3.1-405B on 256 GPUs over six releases) within 7 % on the gb200 preset, which no
// GB200 run was fitted on.
TEST(TimeFit, H100NemoRows) {
  const auto runs = corpus_runs("h100_nemo_llama3.json");
  ASSERT_EQ(runs.size(), 11u);
  for (const auto& r : runs) ASSERT_TRUE(r.strategy.tp_comm_overlap) << r.name;
  for (const auto& r : runs) ASSERT_TRUE(r.strategy.grad_reduce_in_bf16) << r.name;
  const TimeFit fit = fit_time(runs, cost::load_simumax_system("h100-sxm"));
  for (const auto& r : fit.runs)
    EXPECT_LT(std::abs(r.error_before()), r.name.find("70b") != std::string::npos ? 0.065 : 0.09) << r.name;
  // One layout per model: leave-one-out cannot be better than the releases' own spread.
  EXPECT_LT(fit.max_abs_held_out(), 0.06);
  for (const char* corpus : {"b200_nemo_llama31.json", "b200_nemo_llama3_8b.json"}) {
    const TimeFit b200 = fit_time(corpus_runs(corpus), cost::load_simumax_system("b200"));
    EXPECT_LT(b200.max_abs_before(), std::string(corpus) == "b200_nemo_llama31.json" ? 0.065 : 0.08)
        << corpus;
  }
  // GB200 (never fitted on; the gb200 preset carries the b200 preset's fits): every row within 7 % (5.3 %
  // before the NVIDIA presets' straggler factor: the 405B FP8 rows on 256 GPUs +1.4 % with it) — the
  // 405B rows' six releases spread 56.9 … 62.0 s, the Llama-3-70B MXFP8 rows' four 8.5 … 9.1 s (added after
  // every fit; at the FP8 rate they were −6 … −12 %), the 405B MXFP8 rows' five (tp 4 pp 16 with 8 virtual
  // stages of one layer slot, 26.02 … 26.06) 61.4 … 63.4 s (added after every fit: −0.1 … +3.1 %).  With
  // SimuMax's raw B200 calibration on GB200 peaks: up to 6.7 %.
  const auto gb = corpus_runs("gb200_nemo_llama.json");
  ASSERT_EQ(gb.size(), 17u);
  const TimeFit gb200 = fit_time(gb, cost::load_simumax_system("gb200"));
  EXPECT_LT(gb200.max_abs_before(), 0.07);
}

// GB300 (Blackwell Ultra): B200's fits at GB300's peak rates priced NeMo's Llama rows +20 … +29 % slow: the
// gb300 preset runs the GEMMs 1 / 0.7473 faster (fitted on the 13 Llama rows), the grouped ones on the same
// tensor cores too, attention and the memory-bound ops as on B200.  Its Qwen3-30B-A3B rows (micro batch 8,
// the peak at the memory's limit) −6.8 … −2.6 % with the FP8 grouped GEMMs at their published rate, the
// experts' host time (× 1.43 on a Grace host, fitted on the GB200 / GB300 MoE rows) and the flex dispatchers'
// one local permute (+0.4 … +4.9 % with the grouped GEMMs at B200's efficiency, as until stop 31; −10.6 …
// −6.6 % with B200's x86 host time).  The same Qwen3 layout on 8 GB200s −1.8 … −0.5 % (−8.2 … −7.0 % with the
// x86 host time: GB200 ran it no faster than B200 although its peaks are 11 % higher).  GPT-OSS-120B BF16 at
// ep 64 (26.04.01, the alltoall dispatcher): GB300, exchanges exposed, +1.1 %; GB200 with the expert-parallel
// overlap −9.9 % (+5.9 % priced without the overlap: that run gained little from it).
TEST(TimeFit, Gb300DenseGemmsFitAndMoeRowsHeldOut) {
  const auto llama = corpus_runs("gb300_nemo_llama.json");
  ASSERT_EQ(llama.size(), 13u);
  SystemSpec transferred = cost::load_simumax_system("b200");
  const SystemSpec gb300 = cost::load_simumax_system("gb300");
  // The b200 preset at GB300's peak rates: what the preset was before its fit.
  for (auto& [name, op] : transferred.op) op.tflops = gb300.op.at(name).tflops;
  transferred.mem_gib = gb300.mem_gib;
  transferred.num_per_node = gb300.num_per_node;
  transferred.networks = gb300.networks;
  const TimeFit before = fit_time(llama, transferred);
  for (const auto& r : before.runs) EXPECT_GT(r.error_before(), 0.15) << r.name;  // the miss the fit corrects
  const TimeFit fitted = fit_time(llama, gb300);
  EXPECT_LT(fitted.max_abs_before(), 0.055);
  // The Qwen3 rows, and the GPT-OSS row apart.
  auto split = [](const std::vector<TimedRun>& runs) {
    std::pair<std::vector<TimedRun>, std::vector<TimedRun>> qwen_other;
    for (const auto& r : runs)
      (r.name.find("qwen3") != std::string::npos ? qwen_other.first : qwen_other.second).push_back(r);
    return qwen_other;
  };
  const auto [moe, gb300_gpt_oss] = split(corpus_runs("gb300_nemo_moe.json"));
  ASSERT_EQ(moe.size(), 4u);
  ASSERT_EQ(gb300_gpt_oss.size(), 1u);
  for (const auto& r : fit_time(moe, gb300).runs) {
    EXPECT_LT(r.error_before(), -0.02) << r.name;
    EXPECT_GT(r.error_before(), -0.075) << r.name;
  }
  // A scale on every compute op instead (0.80 fits the Llama rows within 3.6 %) prices them 8 … 13 % fast.
  const TimeFit all_ops = fit_time(moe, scaled_system(transferred, 0.80, 1.0));
  for (const auto& r : all_ops.runs) EXPECT_LT(r.error_before(), -0.06) << r.name;
  const auto [gb200_moe, gb200_gpt_oss] = split(corpus_runs("gb200_nemo_moe.json"));
  ASSERT_EQ(gb200_moe.size(), 4u);
  ASSERT_EQ(gb200_gpt_oss.size(), 1u);
  const SystemSpec gb200 = cost::load_simumax_system("gb200");
  for (const auto& r : fit_time(gb200_moe, gb200).runs) {
    EXPECT_LT(r.error_before(), 0.0) << r.name;
    EXPECT_GT(r.error_before(), -0.025) << r.name;
  }
  auto error = [](const TimedRun& r, const SystemSpec& sys) {
    return cost::estimate(r.model, r.strategy, sys).iteration_ms / r.measured_ms - 1;
  };
  // (Since stop 33 16-bit grouped GEMMs pay no experts' host time: −2.7 → +1.1 % and −14.8 → −9.9 %.)
  EXPECT_NEAR(error(gb300_gpt_oss[0], gb300), 0.011, 0.015);
  ASSERT_TRUE(gb200_gpt_oss[0].strategy.overlap_moe_expert_parallel_comm);
  EXPECT_NEAR(error(gb200_gpt_oss[0], gb200), -0.099, 0.015);
  TimedRun eager = gb200_gpt_oss[0];
  eager.strategy.overlap_moe_expert_parallel_comm = false;
  EXPECT_NEAR(error(eager, gb200), 0.059, 0.015);
}

// B300 (Blackwell Ultra, the b200 preset's fits transferred; no run fitted on): NeMo's Qwen3-30B-A3B MXFP8
// (micro batch 8, HybridEP inside the node, exchanges exposed), GPT-OSS-120B BF16 (HybridEP, ep 8) and
// DeepSeek-V3 MXFP8 (256 GPUs, ep 8 inside the node, pp 16 / pp 8) rows, held out: Qwen3 −3.6 … +0.6 %,
// GPT-OSS −6.7 … −5.4 %, DeepSeek-V3 −5.4 … −0.7 % (before stop 31's experts' host time and flex permute:
// Qwen3 +5.5 … +10 % with the intra-node HybridEP rate fitted on B200's micro batch 4 rows, +32 … +37 % as
// NCCL's all-to-all of every routed copy; GPT-OSS −3.7 … −5.0 %).  Qwen3-30B-A3B of 26.06 (full-iteration
// CUDA graph, expert-parallel overlap, FP8 attention: 6.43 s where 26.04.01 ran 8.53 s) −1.8 %.  GPT-OSS-120B
// in MXFP8 (26.06, the BF16 recipe otherwise: 1.22× the BF16 rows' speed) −11.2 %: its experts (2880 wide,
// not a multiple of 128) take Transformer Engine's generic MXFP8 path (the presets'
// mxfp8_grouped_unaligned_scale, fitted on the five GPT-OSS MXFP8 rows; −38 % at the published aligned rate
// before stop 37).
TEST(TimeFit, B300MoeRowsHeldOut) {
  const auto runs = corpus_runs("b300_nemo_moe.json");
  ASSERT_EQ(runs.size(), 13u);
  for (const auto& r : runs) ASSERT_EQ(r.strategy.moe_dispatcher, MoeDispatcher::Flex) << r.name;
  const TimeFit fit = fit_time(runs, cost::load_simumax_system("b300"));
  for (const auto& r : fit.runs) {
    const bool qwen = r.name.find("qwen3") != std::string::npos;
    const bool deepseek = r.name.find("deepseek") != std::string::npos;
    if (r.name.find("gpt-oss-120b mxfp8") != std::string::npos) {
      EXPECT_GT(r.error_before(), -0.14) << r.name;
      EXPECT_LT(r.error_before(), -0.08) << r.name;
      continue;
    }
    EXPECT_LT(std::abs(r.error_before()), qwen ? 0.105 : deepseek ? 0.085 : 0.07) << r.name;
  }
}

// NeMo 2.0's early-2025 tables (25.02 on DGX-B200, 25.04 on DGX-GB200; GPT-3 175B, Llama-3 8B / 70B / 405B,
// Nemotron-4 15B / 340B, Mixtral 8x7B / 8x22B), held out from every fit.  Mixtral ran Megatron's
// SequentialMLP (NeMo's Mixtral config sets no moe_grouped_gemm): priced as dense GEMMs per expert the four
// rows are −14.4 … −2.6 % (−13 … +12 % before stop 51 gave every FP8 row of those releases the FP8 parameter
// gather their precision plugins set), as one grouped GEMM at its unmeasured-shape default the 8x7B rows were
// +30 … +36 % (within 10 % at the FP8 grouped GEMMs' published rate). The rest are regression guards of
// measured misses: the 25.02 software ran Llama-3-8B 13 % below 25.09 on the same layout (those rows −9 … −13
// %); Nemotron-4 (256k vocabulary: its bf16 output layer priced at the FP8 rate, see docs/time_fidelity.md)
// −11 … −22 %; GB200's 405B −16.5 % (it ran no faster than B200's 25.09 row).
TEST(TimeFit, NemoFramework2025RowsHeldOut) {
  for (const auto& [file, preset, rows] :
       {std::tuple{"b200_nemo2_2502.json", "b200", 8u}, std::tuple{"gb200_nemo2_2504.json", "gb200", 7u}}) {
    auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), rows) << file;
    const SystemSpec sys = cost::load_simumax_system(preset);
    const TimeFit fit = fit_time(runs, sys);
    for (const auto& r : fit.runs) {
      const bool mixtral = r.name.find("mixtral") != std::string::npos;
      EXPECT_LT(std::abs(r.error_before()), mixtral ? 0.15 : 0.225) << r.name;
    }
    for (auto& r : runs) {
      if (r.name.find("mixtral-8x7b") == std::string::npos) continue;
      ASSERT_FALSE(r.strategy.moe_grouped_gemm) << r.name;
      // Priced as TEGroupedMLP: +30 … +36 % at SimuMax's unmeasured-shape default; at the FP8 grouped GEMMs'
      // published rate with the experts' host time (since stop 31) −8.2 … +7.5 %, B200's −13.7 % with the FP8
      // parameter gather (stop 51).
      r.strategy.moe_grouped_gemm = true;
      const double grouped = cost::estimate(r.model, r.strategy, sys).iteration_ms;
      EXPECT_LT(std::abs(grouped / r.measured_ms - 1), 0.15) << r.name;
    }
  }
}

// FP8 GEMMs are a group of their own in the per-group fit.  Runs priced on a system whose FP8 GEMMs are
// 1.25× slower than the one fitted (and nothing else changed) give back ~1.25 for them (1.22: the split is
// linear around the system as given, and the ridge pulls towards 1) and 1 for the GEMMs; on NVIDIA's DGX
// Cloud H100 rows (BF16 and FP8 pairs of 2024 software, the preset's FP8 fitted on 2025-26) the fit finds the
// FP8 GEMMs 1.13× slower where the BF16 ones stay at 1.02, and the held-out error drops from 15.0 % to 12.0
// %.
TEST(TimeFit, PerGroupFitSeparatesFp8GemmsFromBf16) {
  const auto all = corpus_runs("h100_dgxc_nemo.json");
  const SystemSpec h100 = cost::load_simumax_system("h100-sxm");
  std::vector<TimedRun> runs;
  for (std::size_t i = 0; i < 8; ++i) runs.push_back(all[i]);  // 8B and 70B, BF16 and FP8
  const SystemSpec truth = scaled_system_groups(h100, {{"fp8_gemm", 1.25}});
  for (auto& r : runs) r.measured_ms = cost::estimate(r.model, r.strategy, truth).iteration_ms;
  const TimeFit synthetic = fit_time_groups(runs, h100);
  std::map<std::string, double> s(synthetic.group_scales.begin(), synthetic.group_scales.end());
  EXPECT_NEAR(s.at("fp8_gemm"), 1.25, 0.04);
  EXPECT_NEAR(s.at("gemm"), 1.0, 0.02);
  EXPECT_LT(synthetic.max_abs_fitted(), 0.005);
  // A system file written from it carries both, and FP8 runs follow the FP8 scale.
  const SystemSpec fitted = scaled_system_groups(h100, synthetic.group_scales);
  EXPECT_NEAR(fitted.op.at("fp8_matmul").efficient_factor * s.at("fp8_gemm"),
              h100.op.at("fp8_matmul").efficient_factor, 1e-12);
  EXPECT_NEAR(fitted.op.at("matmul").efficient_factor * s.at("gemm"), h100.op.at("matmul").efficient_factor,
              1e-12);
  const TimeFit measured = fit_time_groups(all, h100);
  std::map<std::string, double> m(measured.group_scales.begin(), measured.group_scales.end());
  EXPECT_GT(m.at("fp8_gemm"), m.at("gemm") + 0.05);
  EXPECT_LT(measured.max_abs_held_out(), fit_time(all, h100).max_abs_held_out());
}

// NeMo's long-context table (Llama-2-7B FP8 on H100, 4K … 1M tokens, context parallel 1 … 32; NeMo 24.03),
// held out: priced fast throughout, more as the context grows (−1.8 % at 16K without CP, −11.3 % at 1M over
// cp 32) — attention and ring exchanges at these lengths, on 2024 software, run slower than the transferred
// efficiencies say (a per-group fit puts attention 1.11x slower and fits every row within 2.6 %).
TEST(TimeFit, LongContextRowsHeldOut) {
  const auto runs = corpus_runs("h100_nemo_long_context.json");
  ASSERT_EQ(runs.size(), 9u);
  const TimeFit fit = fit_time(runs, cost::load_simumax_system("h100-sxm"));
  for (const auto& r : fit.runs) {
    EXPECT_LT(r.error_before(), 0) << r.name;
    EXPECT_GT(r.error_before(), -0.12) << r.name;
  }
  EXPECT_LT(fit.runs.back().error_before(), fit.runs[2].error_before());  // 1M over cp 32 vs 16K without CP
  const TimeFit groups = fit_time_groups(runs, cost::load_simumax_system("h100-sxm"));
  double attention = 0;
  for (const auto& [group, scale] : groups.group_scales)
    if (group == "attention") attention = scale;
  EXPECT_GT(attention, 1.05);
  EXPECT_LT(groups.max_abs_fitted(), 0.03);
}

// MindFormers' published Atlas 800T A2 throughputs (tokens/s/p) with the yamls they ran
// (ascend910b_mindformers.json, 19 runs of MindSpore's own framework, read through the MindFormers front
// end). The ascend-910b preset's compute scale was fitted on its first 6 rows (the r1.5.0 model cards):
// undoing it gives the transferred B200 efficiencies, which price every run slow (+2.6 … +44.7 %); refitting
// those 6 rows there recovers the preset's scale, and the 13 other rows, held out, stay within 23 %.  The
// 910B's HCCS is a full mesh (FC8): a tp 2 / tp 4 group drives 1 / 3 of each NPU's 7 links.  Its four tp 2 /
// tp 4 rows are within 9 %; priced as behind a switch (every subset at the full rate) each is ≥ 9 % faster.
TEST(TimeFit, AscendMindFormersRowsFitOnTheModelCards) {
  const auto runs = corpus_runs("ascend910b_mindformers.json");
  ASSERT_EQ(runs.size(), 19u);
  const SystemSpec preset = cost::load_simumax_system("ascend-910b");
  const auto fitted = nlohmann::json::parse(cost::system_preset_json("ascend-910b"))["preflight"]["time_fit"];
  const double compute = fitted["compute_scale"].get<double>(),
               network = fitted["network_scale"].get<double>();
  const SystemSpec transferred = scaled_system(preset, 1 / compute, 1 / network);
  const TimeFit before = fit_time(runs, transferred);
  for (const auto& r : before.runs) EXPECT_GT(r.error_before(), 0.02) << r.name;
  const std::vector<TimedRun> cards(runs.begin(), runs.begin() + 6);
  const TimeFit refit = fit_time(cards, transferred);
  EXPECT_NEAR(refit.compute_scale, compute, 0.01);
  EXPECT_LT(refit.max_abs_fitted(), 0.12);
  const TimeFit after = fit_time(runs, preset);
  EXPECT_LT(after.max_abs_before(), 0.6 * before.max_abs_before());
  for (std::size_t i = 0; i < 6; ++i)
    EXPECT_LT(std::abs(after.runs[i].error_before()), 0.055) << after.runs[i].name;
  for (std::size_t i = 6; i < after.runs.size(); ++i)
    EXPECT_LT(std::abs(after.runs[i].error_before()), 0.23) << after.runs[i].name;
  ASSERT_TRUE(preset.fc8);
  SystemSpec switched = preset;
  switched.fc8 = false;
  const TimeFit no_mesh = fit_time(runs, switched);
  int small_tp = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].strategy.tp != 2 && runs[i].strategy.tp != 4) continue;
    ++small_tp;
    EXPECT_LT(std::abs(after.runs[i].error_before()), 0.09) << runs[i].name;
    EXPECT_LT(no_mesh.runs[i].predicted_ms, 0.91 * after.runs[i].predicted_ms) << runs[i].name;
  }
  EXPECT_EQ(small_tp, 4);
}

// NVIDIA's DGX Cloud benchmarking recipes on H100 (NeMo 24.09 / 24.05): five models each in BF16 and FP8 on
// the same layout, at their smallest and largest published scale.  With the compute scale fitted on FP8 runs
// every BF16 row was 7 … 12 % slow; the Hopper presets' BF16 dense-GEMM scale (0.89, fitted on the five
// smallest-scale BF16 rows) is the best of its neighbours on them, and prices the five BF16 rows at 128 …
// 2304 GPUs, held out, within 3.5 %.  The FP8 rows (2024 software; the FP8 fits are on 2025-26 releases) stay
// 2 … 13 % fast (with their recipes' fp8 parameter gather, half the bytes), bounded here as a measured miss.
TEST(TimeFit, DgxcH100Bf16RowsOnTheBf16GemmScale) {
  const auto runs = corpus_runs("h100_dgxc_nemo.json");
  ASSERT_EQ(runs.size(), 20u);
  const SystemSpec preset = cost::load_simumax_system("h100-sxm");
  const double k =
      nlohmann::json::parse(cost::system_preset_json("h100-sxm"))["preflight"]["time_fit"]["bf16_gemm_scale"]
          .get<double>();
  auto with_bf16_gemm_scale = [&](double scale) {  // the preset with its BF16 GEMM scale replaced
    SystemSpec s = preset;
    auto& op = s.op.at("matmul");
    op.efficient_factor *= k / scale;
    for (auto& [shape, eff] : op.accurate_efficient_factor) eff *= k / scale;
    return s;
  };
  std::vector<TimedRun> fit_rows, held_out, fp8;
  for (const auto& r : runs) {
    if (r.name.find(" fp8 ") != std::string::npos) {
      fp8.push_back(r);
      continue;
    }
    const bool smallest =
        r.name.find(" 8 GPUs") != std::string::npos || r.name.find(" 64 GPUs") != std::string::npos ||
        r.name.find(" 576 GPUs") != std::string::npos || r.name.find(" 16 GPUs") != std::string::npos ||
        r.name.find(" 128 GPUs gbs256") != std::string::npos;
    (smallest ? fit_rows : held_out).push_back(r);
  }
  ASSERT_EQ(fit_rows.size(), 5u);
  ASSERT_EQ(held_out.size(), 5u);
  auto rms = [](const TimeFit& f) {
    double s = 0;
    for (const auto& r : f.runs) s += r.error_before() * r.error_before();
    return std::sqrt(s / f.runs.size());
  };
  const TimeFit without = fit_time(fit_rows, with_bf16_gemm_scale(1.0));
  for (const auto& r : without.runs) EXPECT_GT(r.error_before(), 0.07) << r.name;
  const TimeFit at_k = fit_time(fit_rows, preset);
  EXPECT_LT(at_k.max_abs_before(), 0.03);
  EXPECT_LT(rms(at_k), rms(fit_time(fit_rows, with_bf16_gemm_scale(k * 0.97))));
  EXPECT_LT(rms(at_k), rms(fit_time(fit_rows, with_bf16_gemm_scale(k * 1.03))));
  EXPECT_LT(fit_time(held_out, preset).max_abs_before(), 0.035);
  for (const auto& r : fit_time(fp8, preset).runs) {
    EXPECT_LT(r.error_before(), 0.03) << r.name;
    EXPECT_GT(r.error_before(), -0.14) << r.name;
  }
}

// The recipes' NeMo 25.04 tables (held out, added after the BF16 GEMM fit): BF16 / FP8 pairs of
// Llama-3.1-405B and Nemotron-4 on H100 and GB200.  BF16 holds on both systems (within 9 %: GB200's
// Nemotron-4 340B is −5.8 / −8.3 % with its recipe's deferred output-layer wgrads, −4.3 / −6.8 % without);
// FP8 of that release is priced fast on GB200 (−16 … −24 %: it ran 1.44 … 1.52× faster than BF16 where the
// model, fitted on 2025-26 releases, says 1.7 … 1.9×; the same 405B layout on B200 with NeMo 25.09 is within
// 0.5 %) — bounded as a measured miss.
//
// Their DeepSeek-V3 BF16 rows (MTP, alltoall dispatcher, token drop): on H100 (ep 64 across nodes) −3.6 /
// +0.2 %
// (+5 / +11 % while grouped GEMMs of more rows per expert than measured took the efficiency measured at
// 1024); on GB200 −53 %: that release ran DeepSeek-V3 at 1.4× H100's per-GPU throughput where it ran the
// dense 405B at 2.1×, so something of its MoE path on GB200 (kernels; not a host-synchronising dispatch:
// drop-and-pad has none) that the model does not price took half the step — bounded as a measured miss.
TEST(TimeFit, DgxcNemo2504Bf16HoldsFp8OfThatReleaseIsSlower) {
  for (const char* file : {"h100_dgxc_nemo2504.json", "gb200_dgxc_nemo2504.json"}) {
    const auto runs = corpus_runs(file);
    const bool h100 = std::string(file).rfind("h100", 0) == 0;
    ASSERT_EQ(runs.size(), h100 ? 8u : 10u) << file;
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const TimeFit fit = fit_time(runs, cost::load_simumax_system(j["system"].get<std::string>()));
    for (const auto& r : fit.runs) {
      if (r.name.find("deepseek") != std::string::npos) {
        EXPECT_GT(r.error_before(), h100 ? -0.05 : -0.6) << r.name;
        EXPECT_LT(r.error_before(), h100 ? 0.05 : -0.45) << r.name;
      } else if (r.name.find(" bf16 ") != std::string::npos) {
        EXPECT_LT(std::abs(r.error_before()), 0.09) << r.name;
      } else if (std::string(file).rfind("gb200", 0) == 0) {
        EXPECT_LT(r.error_before(), -0.14) << r.name;
        EXPECT_GT(r.error_before(), -0.25) << r.name;
      } else {
        // Nemotron-4 340B FP8 −9.5 % (−7.1 % before stop 51 carried its release's FP8 parameter gather)
        EXPECT_LT(std::abs(r.error_before()), 0.10) << r.name;
      }
    }
  }
}

// NeMo's Llama-3-70B FP8 rows with Megatron-FSDP (optim_grads_params over 64 GPUs, tp 1 pp 1, 4 releases each
// on GB200 and GB300; held out): within 7 % (the GB200 releases spread 8 %), with no data-parallel
// synchronisation left at the iteration's end (the gathers and reduce-scatters run every micro batch).
TEST(TimeFit, NemoFsdpRowsHeldOut) {
  for (const char* file : {"gb200_nemo_fsdp.json", "gb300_nemo_fsdp.json"}) {
    const auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), 4u) << file;
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const SystemSpec sys = cost::load_simumax_system(j["system"].get<std::string>());
    EXPECT_TRUE(runs.front().strategy.fsdp);
    EXPECT_EQ(runs.front().strategy.effective_zero_stage(), 3);
    const TimeFit fit = fit_time(runs, sys);
    EXPECT_LT(fit.max_abs_before(), 0.07) << file;
    const cost::Estimate e = cost::estimate(runs.front().model, runs.front().strategy, sys);
    EXPECT_DOUBLE_EQ(e.stages.front().dp.dense.reduce_scatter_ms + e.stages.front().dp.dense.all_gather_ms,
                     0);
  }
}

// Megatron-LM's own published Llama-3 FP8 table (examples/llama/README.md: 8B cp 2 on 8 H100s, 70B and 405B
// with NeMo's layouts), held out from every fit: within 4.5 % (the 70B row on 64 GPUs +4.2 %).  Left out of a
// fit on the other two, a row is priced with one common scale (two runs fix two factors exactly: the 405B
// row, extrapolated from the 8B and the 70B, was +63 % with both fitted), within 5 %.
TEST(TimeFit, MegatronLmReadmeRows) {
  const auto runs = corpus_runs("h100_megatron_lm_readme.json");
  ASSERT_EQ(runs.size(), 3u);
  const TimeFit fit = fit_time(runs, cost::load_simumax_system("h100-sxm"));
  EXPECT_LT(fit.max_abs_before(), 0.045);
  EXPECT_LT(fit.max_abs_held_out(), 0.05);
}

// MXFP8 GEMMs (`--fp8-recipe mxfp8`) against per-tensor FP8 on the same layout: NeMo's tables published both
// for six rows (docs/performance-summary-archive.md of NVIDIA-NeMo/Megatron-Bridge, 25.09 and 25.11,
// tokens/s/GPU FP8-CS vs FP8-MX): Llama-3.1-405B on 128 B200s 664 / 622 and 661 / 624, Llama-3-8B on 8 B200s
// 29994 / 29388 and 30624 / 29521, on 8 GB200s 31357 / 29925 and 31508 / 29789.  The Blackwell presets'
// mxfp8_gemm_scale (1.095, fitted on them with the quantizers' traffic priced — 1.075 before) gives each
// pair's slow-down within 2.5 %.
TEST(TimeFit, Mxfp8RowsAgainstTheirFp8TwinsOnTheSameLayout) {
  struct Pair {
    const char* file;
    const char* release;
    const char* system;
    double cs, mx;
  };
  const Pair pairs[] = {{"b200_nemo_llama31.json", "25.09", "b200", 664, 622},
                        {"b200_nemo_llama31.json", "25.11", "b200", 661, 624},
                        {"b200_nemo_llama3_8b.json", "25.09", "b200", 29994, 29388},
                        {"b200_nemo_llama3_8b.json", "25.11", "b200", 30624, 29521},
                        {"gb200_nemo_llama.json", "25.09", "gb200", 31357, 29925},
                        {"gb200_nemo_llama.json", "25.11", "gb200", 31508, 29789}};
  for (const Pair& p : pairs) {
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / p.file));
    const nlohmann::json* row = nullptr;
    for (const auto& r : j["runs"])
      if (r["name"].get<std::string>().find(std::string("(NeMo ") + p.release + ")") != std::string::npos)
        row = &r;
    ASSERT_NE(row, nullptr) << p.file << " " << p.release;
    auto args = (*row)["args"].get<std::vector<std::string>>();
    const SystemSpec sys = cost::load_simumax_system(p.system);
    EXPECT_GT(sys.mxfp8_gemm_scale, 1.0) << p.system;
    const auto cs = parse_megatron_args(args);
    args.insert(args.end(), {"--fp8-recipe", "mxfp8"});
    const auto mx = parse_megatron_args(args);
    ASSERT_EQ(mx.strategy.fp8_recipe, Fp8Recipe::Mxfp8);
    const cost::Estimate mx_est = cost::estimate(mx.model, mx.strategy, sys);
    const double predicted = mx_est.iteration_ms / cost::estimate(cs.model, cs.strategy, sys).iteration_ms;
    EXPECT_EQ(cost::summary_json(mx_est)["fp8_recipe"], "mxfp8");
    EXPECT_NE(cost::summary_text(mx_est).find("mxfp8 scaling"), std::string::npos);
    EXPECT_NEAR(predicted, p.cs / p.mx, 0.025 * p.cs / p.mx) << p.file << " " << p.release;
  }
  // A system without the scale (MXFP8 needs Blackwell) prices it as per-tensor FP8, and says so.
  {
    auto args = corpus_runs("b200_nemo_llama3_8b.json").front();
    args.strategy.fp8_recipe = Fp8Recipe::Mxfp8;
    const cost::Estimate h100 =
        cost::estimate(args.model, args.strategy, cost::load_simumax_system("h100-sxm"));
    bool warned = false;
    for (const auto& w : h100.warnings) warned = warned || w.find("no mxfp8_gemm_scale") != std::string::npos;
    EXPECT_TRUE(warned);
  }
  // Megatron's recipes, and nothing else.
  const auto bad = preflight::test::words(
      "--num-layers 2 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 "
      "--vocab-size 1000 --micro-batch-size 1 --bf16 --fp8-format hybrid --fp8-recipe nvfp4");
  try {
    parse_megatron_args(bad);
    ADD_FAILURE() << "--fp8-recipe nvfp4 accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--fp8-recipe"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mxfp8"), std::string::npos) << e.what();
  }
}

// NeMo's published NVFP4 rows (Megatron-Bridge 26.02 ... 26.06: Llama-3-70B on 64 and Llama-3.1-405B on 256
// GB200s / GB300s, tests/data/time_corpus/{gb200,gb300}_nemo_nvfp4.json): each preset's nvfp4_gemm_scale is
// the least-squares scale of its own rows — recomputed here from the predictions, which are linear in it —
// and prices them within 15.6 % (GB200: its 70B rows want 0.70, its 405B rows 0.52) and 10.1 % (GB300).  B200
// / B300 carry GB200's / GB300's scale; a device without FP4 tensor cores has none.
TEST(TimeFit, Nvfp4RowsOnTheirSystemsScale) {
  for (const auto& [file, preset, bound] : {std::tuple{"gb200_nemo_nvfp4.json", "gb200", 0.16},
                                            std::tuple{"gb300_nemo_nvfp4.json", "gb300", 0.105}}) {
    const auto runs = corpus_runs(file);
    ASSERT_GE(runs.size(), 8u) << file;
    const SystemSpec sys = cost::load_simumax_system(preset);
    ASSERT_GT(sys.nvfp4_gemm_scale, 0) << preset;
    auto at = [&](double k) {
      SystemSpec s = sys;
      s.nvfp4_gemm_scale = k;
      return s;
    };
    const SystemSpec lo = at(0.4), hi = at(0.8);
    double num = 0, den = 0;
    for (const auto& r : runs) {
      ASSERT_TRUE(r.strategy.fp4()) << r.name;
      const double measured = r.measured_ms;
      const double p = cost::estimate(r.model, r.strategy, sys).iteration_ms;
      EXPECT_LE(std::abs(p / measured - 1), bound) << r.name << ": " << p << " vs " << measured;
      // Relative least squares of p(k) = a + b·k: minimise Σ ((a + b·k) / m − 1)².
      const double pl = cost::estimate(r.model, r.strategy, lo).iteration_ms;
      const double ph = cost::estimate(r.model, r.strategy, hi).iteration_ms;
      const double b = (ph - pl) / 0.4, a = pl - b * 0.4;
      num += (1 - a / measured) * (b / measured);
      den += (b / measured) * (b / measured);
    }
    EXPECT_NEAR(sys.nvfp4_gemm_scale, num / den, 0.005) << preset;
  }
  EXPECT_EQ(cost::load_simumax_system("b200").nvfp4_gemm_scale,
            cost::load_simumax_system("gb200").nvfp4_gemm_scale);
  EXPECT_EQ(cost::load_simumax_system("b300").nvfp4_gemm_scale,
            cost::load_simumax_system("gb300").nvfp4_gemm_scale);
  EXPECT_EQ(cost::load_simumax_system("h100-sxm").nvfp4_gemm_scale, 0.0);
  EXPECT_EQ(cost::load_simumax_system("mi300x").nvfp4_gemm_scale, 0.0);
}

// NeMo's DeepSeek-V3 MXFP8 rows inside one NVL72 domain (26.02 … 26.04.01, 256 GPUs, HybridEP, exchanges
// exposed; held out, added after every fit): GB200 ep 64 pp 4 vp 4, GB300 ep 32 pp 2 vp 8 micro batch 2 —
// priced GB200 +0.7 … +8.3 %, GB300 −1.9 … +6.2 % with the FP8 grouped GEMMs at their published rate, the
// experts' host time (4 / 8 local experts; × 1.43 on Grace, fitted on these rows with the other GB200 / GB300
// MoE rows) and the flex dispatchers' one local permute, since stop 31 (GB200
// +17.2 … +26.1 %, GB300 +11.4 … +20.6 % before, +21.9 … +31.9 % before GB300's GEMM scale reached its
// grouped GEMMs); the same model with ep 8 inside a B300 node −5.4 … −0.7 %.  The rest of this comment is the
// story before stop 31.  Of the GB200 prediction 2.95 s of 19.2 s is the exposed token exchange of its 13 MoE
// layers per stage (a token copied to ~7 of 64 ranks at half of NVLink, the rate fitted on B200's ep 8 Qwen3
// rows); without it the GB200 rows would be within 6 % — HybridEP across an NVL72 domain moves its copies
// faster than that rate says.  Bounded as a measured miss.
TEST(TimeFit, Nvl72DeepSeekRowsHeldOut) {
  for (const char* file : {"gb200_nemo_deepseek.json", "gb300_nemo_deepseek.json"}) {
    const auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), 4u) << file;
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const TimeFit fit = fit_time(runs, cost::load_simumax_system(j["system"].get<std::string>()));
    for (const auto& r : fit.runs) {
      EXPECT_GT(r.error_before(), -0.04) << r.name;
      EXPECT_LT(r.error_before(), 0.09) << r.name;
    }
    EXPECT_LT(fit.max_abs_held_out(), 0.06) << file;  // one scale fits each system's four releases
  }
}

// NeMo's Qwen3-235B-A22B MXFP8 rows on 256 Blackwell GPUs (26.02 … 26.04.01; held out, added after every fit;
// tests/data/time_corpus/*_nemo_qwen3_235b.json): the alltoall dispatcher with ep 8 inside a B200 node is
// priced +1.2 / +2.0 % (its rows fit the experts' host time, with the Qwen3-30B and DeepSeek-V3 B200 rows);
// GB200 ep 32 +2.0 … +4.4 %, GB300 ep 32 micro batch 2 +4.2 … +6.2 % (the Grace host factor fitted on them
// with the other GB200 / GB300 MoE rows), held out B300 ep 8 micro batch 2 +13.0 / +10.4 %.  Before stop 31 —
// the FP8 grouped GEMMs at SimuMax's BF16 default for unmeasured shapes, which had absorbed the host time of
// the 16 local experts of the ep 8 rows, and two permute kernels a side for the flex dispatchers — they were
// +13 … +15 %, +18 … +31 % and +17 … +20 %: the 4 local experts of ep 32 cost the host a quarter of it.
// Bounded as a measured miss; each system's releases agree with one scale.
TEST(TimeFit, NemoQwen3_235bBlackwellRowsHeldOut) {
  for (const auto& [file, n, lo, hi] : {std::tuple{"b200_nemo_qwen3_235b.json", 2u, 0.0, 0.04},
                                        std::tuple{"b300_nemo_qwen3_235b.json", 2u, 0.08, 0.15},
                                        std::tuple{"gb200_nemo_qwen3_235b.json", 4u, 0.01, 0.05},
                                        std::tuple{"gb300_nemo_qwen3_235b.json", 4u, 0.03, 0.07}}) {
    const auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), n) << file;
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const TimeFit fit = fit_time(runs, cost::load_simumax_system(j["system"].get<std::string>()));
    for (const auto& r : fit.runs) {
      EXPECT_GT(r.error_before(), lo) << r.name;
      EXPECT_LT(r.error_before(), hi) << r.name;
    }
    EXPECT_LT(fit.max_abs_held_out(), 0.04) << file;
  }
}

// NeMo's MXFP8 MoE recipes of 26.06 … 26.08 on GB200 / GB300 NVL72 (held out, added after every fit;
// tests/data/time_corpus/gb*_nemo_full_iteration.json): the layouts of the 26.04.01 rows, now with a
// full-iteration CUDA graph (paged expert stash), the expert-parallel overlap with delayed wgrad, the fused
// grouped MLP and FP8 attention.  The graph captures the routed experts, so their host time is not paid
// (Strategy::moe_experts_cuda_graph): Qwen3-30B-A3B −5.5 … −2.2 %, Qwen3-235B-A22B −3.0 … +0.2 %,
// DeepSeek-V3 on GB200 +2.4 … +3.6 %; priced with the host time (the graph read past) they were +9.9 … +31 %.
// DeepSeek-V3 on GB300 (its recipe's only differences from GB200's: FP8 attention, micro batch 1 without
// recompute, ep 32) is +11.6 … +12.5 %: FP8 attention is not priced (read past, warned).  GPT-OSS-120B on 64
// GPUs (added at stop 36) −0.4 … +7.0 % with its unaligned experts on Transformer Engine's generic MXFP8 path
// (−33.7 … −35.2 % before stop 37; the scale is fitted on these and B300's row).  Bounded as measured; the
// rows' HybridEP runs on the 32 SMs the performance scripts give it (written into the rows at stop 50: the
// GB200 GPT-OSS rows +5.7 / +4.7 % before, GB300's Qwen3-30B −7.7 … −6.2 %).
TEST(TimeFit, FullIterationCudaGraphRowsHeldOut) {
  for (const auto& [file, n] :
       {std::pair{"gb200_nemo_full_iteration.json", 11u}, std::pair{"gb300_nemo_full_iteration.json", 12u}}) {
    auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), n) << file;
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const SystemSpec sys = cost::load_simumax_system(j["system"].get<std::string>());
    for (const auto& r : runs) ASSERT_TRUE(r.strategy.moe_experts_cuda_graph) << r.name;
    const TimeFit fit = fit_time(runs, sys);
    for (const auto& r : fit.runs) {
      const bool gb300_deepseek = std::string(file).find("gb300") != std::string::npos &&
                                  r.name.find("deepseek") != std::string::npos;
      const bool gpt_oss = r.name.find("gpt-oss") != std::string::npos;
      EXPECT_GT(r.error_before(), gpt_oss ? -0.03 : gb300_deepseek ? 0.10 : -0.08) << r.name;
      EXPECT_LT(r.error_before(), gpt_oss ? 0.075 : gb300_deepseek ? 0.14 : 0.05) << r.name;
    }
    // The same runs with the experts eager (the graph's host time paid) are 4 … 31 % slow (GPT-OSS's still
    // fast: its miss is not the host time).
    for (auto& r : runs) r.strategy.moe_experts_cuda_graph = false;
    for (const auto& r : fit_time(runs, sys).runs) {
      if (r.name.find("gpt-oss") == std::string::npos) {
        EXPECT_GT(r.error_before(), 0.035) << r.name;
      }
    }
  }
}

// Megatron-LM's own MoE recipes (examples/moe_recipes, their README's median TFLOP/s/GPU, turned into an
// iteration time with Megatron's FLOPs formula; tests/data/time_corpus/*_megatron_moe_recipes.json): 13 runs
// with Megatron's command lines as they were published, and the launch of its GB200 DeepSeek-V3 guide
// (2025-11, 970 TFLOP/s/GPU: −13.0 %), held out.  DeepSeek-V3 −8.5 … −2.1 %, Qwen3-235B on GB200 / GB300 −5.4
// … +3.4 %, the rest −28.3 … +7.8 % (H100 Qwen3-235B BF16 tp 2 pp 8 −28.3 %: −9.5 % before stop 43, when
// grouped GEMMs of widths SimuMax's file did not measure took the flat default fitted on GPT-OSS; B200
// Qwen3-235B tp 2 pp 4 vp 12 −21.5 %; H100 Qwen3-30B BF16 −3.1 % — −7.2 % before stop 45, when grouped GEMMs
// took the dense default just past the table's last rows per expert, +9.8 % before stop 43, +23.3 % before
// stop 33, when 16-bit grouped GEMMs paid the experts' host time too — where its FP8 twin is +7.8 %).  Two
// pairs differ only in the CUDA graph (with the paged stash and the fused grouped MLP): measured 1.139×
// (Qwen3-235B, GB200) and 1.258× (Qwen3-30B, GB200) faster with the full-iteration graph, priced 1.06×
// and 1.13× — the experts' host time is half of what the graph saves there. Bounded as measured (each row
// within 2 points).
TEST(TimeFit, MegatronLmMoeRecipesHeldOut) {
  const std::vector<std::pair<std::string, double>> expected = {
      {"b200 deepseek-v3", -0.085},
      {"b200 qwen3-235b", -0.215},
      {"gb200 deepseek-v3 mxfp8 pp4", -0.060},
      {"gb200 deepseek-v3 mxfp8 pp8 vp4 ep32 hybridep partial-cg 256 GPUs (Megatron-LM GB200 guide", -0.130},
      {"gb200 qwen3-235b-a22b mxfp8 ep64 hybridep full-iteration", 0.014},
      {"gb200 qwen3-235b-a22b mxfp8 ep64 hybridep partial-cg", -0.054},
      {"gb200 qwen3-30b-a3b bf16", 0.070},
      {"gb200 qwen3-30b-a3b mxfp8 ep16 hybridep full-iteration", -0.086},
      {"gb200 qwen3-30b-a3b mxfp8 ep16 hybridep partial-cg", -0.182},
      {"gb300 deepseek-v3", -0.021},
      {"gb300 qwen3-235b", 0.034},
      {"h100 qwen3-235b", -0.283},
      {"h100 qwen3-30b-a3b bf16", -0.031},
      {"h100 qwen3-30b-a3b fp8", 0.078}};
  std::map<std::string, double> predicted, measured;
  int checked = 0;
  for (const char* file : {"b200_megatron_moe_recipes.json", "gb200_megatron_moe_recipes.json",
                           "gb300_megatron_moe_recipes.json", "h100_megatron_moe_recipes.json"}) {
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const SystemSpec sys = cost::load_simumax_system(j["system"].get<std::string>());
    for (const auto& r : corpus_runs(file)) {
      const double p = cost::estimate(r.model, r.strategy, sys).iteration_ms;
      predicted[r.name] = p;
      measured[r.name] = r.measured_ms;
      bool found = false;
      for (const auto& [prefix, e] : expected)
        if (r.name.rfind(prefix, 0) == 0) {
          EXPECT_NEAR(p / r.measured_ms - 1, e, 0.02) << r.name;
          found = true;
        }
      EXPECT_TRUE(found) << r.name;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 14);
  // The graph pairs: priced faster with the full-iteration graph, by less than measured.
  for (const auto& [full, partial] :
       {std::pair{
            "gb200 qwen3-235b-a22b mxfp8 ep64 hybridep full-iteration graph ep-overlap 128 GPUs (Megatron-LM "
            "moe_recipes)",
            "gb200 qwen3-235b-a22b mxfp8 ep64 hybridep partial-cg ep-overlap 128 GPUs (Megatron-LM "
            "moe_recipes)"},
        std::pair{
            "gb200 qwen3-30b-a3b mxfp8 ep16 hybridep full-iteration graph 16 GPUs (Megatron-LM moe_recipes)",
            "gb200 qwen3-30b-a3b mxfp8 ep16 hybridep partial-cg 16 GPUs (Megatron-LM moe_recipes)"}}) {
    ASSERT_TRUE(predicted.count(full) && predicted.count(partial)) << full;
    const double priced = predicted[partial] / predicted[full], real = measured[partial] / measured[full];
    EXPECT_GT(priced, 1.03) << full;
    EXPECT_LT(priced, real) << full;
  }
}

// NeMo's published Qwen3 MoE rows: the HybridEP flex dispatcher across two H100 nodes, the alltoall
// dispatcher with Megatron's expert-parallel overlap on 256 H100s, and HybridEP inside one B200 node, its
// exchanges exposed as those releases ran it (the intra-node rate, half of NVLink, is fitted on these three).
// Priced as Megatron's all-to-all, fully exposed, the first two were +30 % and +55 %; within 8 % with the
// dispatchers and the overlap, and within 4 % with the Hopper presets' grouped-GEMM scale (1.4, fitted on
// these rows — on either model alone it predicts the other within 3.6 %).  Since stop 31 the experts' host
// time is priced apart (61 µs per local expert and pass, fitted on the B200 MXFP8 rows, with the flex
// dispatchers' one local permute) and the grouped-GEMM scales refitted with it (FP8 1.28, BF16 0.97): every
// row within 3.6 %.
TEST(TimeFit, NemoMoeRowsWithFlexDispatchAndExpertParallelOverlap) {
  const auto h100 = corpus_runs("h100_nemo_moe.json");
  ASSERT_EQ(h100.size(), 12u);
  for (const auto& r : h100) ASSERT_NE(r.strategy.moe_dispatcher, MoeDispatcher::AllGather) << r.name;
  const TimeFit fit = fit_time(h100, cost::load_simumax_system("h100-sxm"));
  EXPECT_LT(fit.max_abs_before(), 0.04);
  // DeepSeek-V3 on 1024 H100s (DeepEP across 8 nodes), added after the flex model and every fit: −0.2 %
  // (−0.6 %; +4.2 % before the experts' host time, +2.5 % before the straggler factor and the quantizers'
  // traffic).
  for (const auto& r : fit.runs) {
    if (r.name.find("deepseek") != std::string::npos) {
      EXPECT_LT(std::abs(r.error_before()), 0.02) << r.name;
    }
  }
  // Held out: the 235B rows spread 6 % over four releases of the same layout.
  EXPECT_LT(fit.max_abs_held_out(), 0.06);
  // B200: Qwen3-30B-A3B MXFP8 −1.6 … −0.0 % (+24 % with HybridEP priced as NCCL's all-to-all of every
  // routed copy), GPT-OSS-120B BF16 within 4 % with the b200 preset's scale on unmeasured grouped-GEMM shapes
  // (fitted on these three rows; −3 … −8 % without), DeepSeek-V3 on 256 B200s (DeepEP across 4 nodes,
  // expert-parallel overlap) −6.5 % (+2.3 % before the experts' host time and the FP8 grouped GEMMs'
  // published rate; the host time is fitted on it with the Qwen3 rows) — +26 % when the b200 preset's
  // all-to-all scale, fitted on one-node NVLink runs, was applied to InfiniBand, +9.6 % with every RDMA peer
  // paying its own latency (NCCL's all-to-all, not DeepEP's kernel).
  // Nemotron-3-Nano (hybrid Mamba, MXFP8, added at stop 37) −5.3 %.
  const auto b200_runs = corpus_runs("b200_nemo_moe.json");
  ASSERT_EQ(b200_runs.size(), 8u);
  const TimeFit b200 = fit_time(b200_runs, cost::load_simumax_system("b200"));
  EXPECT_LT(b200.max_abs_before(), 0.07);
  for (const auto& r : b200.runs) {
    if (r.name.find("qwen3") != std::string::npos) {
      EXPECT_LT(std::abs(r.error_before()), 0.04) << r.name;
    }
    if (r.name.find("deepseek") != std::string::npos) {
      EXPECT_LT(std::abs(r.error_before()), 0.07) << r.name;
    }
  }
  // Without the overlap the 235B rows are priced with every exchange exposed: far too slow.
  const auto q235 = std::find_if(h100.begin(), h100.end(),
                                 [](const TimedRun& r) { return r.name.find("235b") != std::string::npos; });
  ASSERT_NE(q235, h100.end());
  auto exposed = *q235;
  exposed.strategy.overlap_moe_expert_parallel_comm = false;
  const SystemSpec h100_sys = cost::load_simumax_system("h100-sxm");
  const double with = cost::estimate(q235->model, q235->strategy, h100_sys).iteration_ms;
  const double without = cost::estimate(exposed.model, exposed.strategy, h100_sys).iteration_ms;
  EXPECT_GT(without, 1.4 * with);
  EXPECT_GT(with, 0.9 * q235->measured_ms);
}

// NeMo 24.07's H100 FP8 table (held out, 12 dense runs from 5B on 64 GPUs to 340B on 128 and 175B on 512):
// all within 7 % but GPT-3 175B on 512 GPUs (micro batch 2, +10.2 %; +7.6 % before the straggler factor), 9
// within 5 %.  GPT-3 20B (dp 32, four micro batches) was +23 % with SimuMax's 35 µs per inter-node ring step:
// its 258 gradient buckets' reduce-scatters were latency-bound; the presets' 8 µs (NCCL over InfiniBand)
// gives +0.2 %.
TEST(TimeFit, NemoH100Fp8TableOf2024) {
  const auto runs = corpus_runs("h100_nemo_2407.json");
  ASSERT_EQ(runs.size(), 12u);
  const SystemSpec h100 = cost::load_simumax_system("h100-sxm");
  const TimeFit fit = fit_time(runs, h100);
  int within = 0;
  for (const auto& r : fit.runs) {
    EXPECT_LT(std::abs(r.error_before()), r.name.find("512 GPUs") != std::string::npos ? 0.11 : 0.07)
        << r.name;
    within += std::abs(r.error_before()) < 0.05;
  }
  EXPECT_GE(within, 9);
  SystemSpec slow_steps = h100;
  for (const char* op : {"all_reduce", "all_gather", "reduce_scatter"})
    slow_steps.networks.at("inter_node").op.at(op).latency_us = 35.0;
  const double slow = cost::estimate(runs[1].model, runs[1].strategy, slow_steps).iteration_ms;
  EXPECT_GT(slow, 1.15 * runs[1].measured_ms) << runs[1].name;
}

// The allocator's reserve: SimuMax's allocated / 0.94, or allocated / 0.99 when the launch's environment sets
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (NeMo's recipes do).  On NeMo's Llama-3.1-405B layout on
// 256 GB200s (which ran) the reserved peak shrinks by 0.94 / 0.99 and fits either way; with fp32 gradient
// reduction (not the recipe's) only the expandable-segments reserve fits — SimuMax's ratio alone would
// refuse a run of that kind.
TEST(TimeFit, ExpandableSegmentsShrinkTheReserve) {
  const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / "gb200_nemo_llama.json"));
  auto args = j["runs"][2]["args"].get<std::vector<std::string>>();
  const SystemSpec gb200 = cost::load_simumax_system("gb200");
  auto worst_reserved = [&](const std::vector<std::string>& a, const std::map<std::string, std::string>& env) {
    const auto cfg = parse_megatron_args(a, env);
    const auto est = cost::estimate(cfg.model, cfg.strategy, gb200);
    double worst = 0;
    for (const auto& s : est.stages) worst = std::max(worst, s.peak_with_reserved_bytes);
    return std::make_pair(cfg.strategy.allocated_to_reserved_ratio, worst);
  };
  const std::map<std::string, std::string> expandable_env = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  const auto plain = worst_reserved(args, {});
  const auto expandable = worst_reserved(args, expandable_env);
  EXPECT_DOUBLE_EQ(plain.first, 0.94);
  EXPECT_DOUBLE_EQ(expandable.first, 0.99);
  EXPECT_NEAR(expandable.second, plain.second * 0.94 / 0.99, 1.0);
  EXPECT_LT(plain.second, gb200.mem_bytes());
  std::erase(args, std::string("--grad-reduce-in-bf16"));
  EXPECT_GT(worst_reserved(args, {}).second, gb200.mem_bytes());
  EXPECT_LT(worst_reserved(args, expandable_env).second, gb200.mem_bytes());
  EXPECT_DOUBLE_EQ(
      worst_reserved(args, {{"PYTORCH_CUDA_ALLOC_CONF", "garbage_collection_threshold:0.6, Expandable_Segments: True"}})
          .first,
      0.99);
  EXPECT_DOUBLE_EQ(worst_reserved(args, {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False"}}).first, 0.94);
}

// SimuMax v1.2's B200 calibration file says 80 GB of device memory: every 70B/405B run of its own B200 table
// (which ran) "did not fit".  A B200's 179.06 GiB are compared by default; --simumax-compat keeps the 80.
TEST(TimeFit, SimuMaxB200FileHasTheB200sMemory) {
  const auto runs = corpus_runs("b200_llama3.json");
  const SystemSpec sys = cost::load_simumax_system("b200_bf16_ceperm");
  for (const auto& r : runs) {
    const cost::Estimate e = cost::estimate(r.model, r.strategy, sys);
    EXPECT_NEAR(e.device_memory_gib, 183359.0 / 1024, 1e-9);
    EXPECT_LE(e.max_peak_bytes(false), e.device_memory_gib * 1024 * 1024 * 1024) << r.name;  // they ran
  }
  Strategy compat = runs.front().strategy;
  compat.simumax_compat = true;
  EXPECT_EQ(cost::estimate(runs.front().model, compat, sys).device_memory_gib, 80);
}

// SimuMax's straggler factor comes from the system: the A100 presets (fitted with it on 2021 Selene runs)
// keep SimuMax's 0.09, the NVIDIA H100 … GB300 presets carry 0.0153 (fitted on the DGX Cloud weak-scaling
// pairs, WeakScalingPairsFitTheStragglerFactor); --simumax-compat always applies SimuMax's.  A run of dp 16
// over 16 nodes: 1 + l/(l+1)·k·√l with l = 4 is 1 + 1.6·k.
TEST(TimeFit, StragglerFactorFollowsTheSystem) {
  MegatronConfig c = parse_megatron_args(preflight::test::words(
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 "
      "--vocab-size 32000 --micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 8 --bf16 "
      "--use-flash-attn --nproc_per_node 8 --nnodes 16"));
  const double want = 1 + 4.0 / 5 * 0.09 * 2;
  EXPECT_NEAR(cost::estimate(c.model, c.strategy, cost::load_simumax_system("a100-sxm-80gb")).straggler_ratio, want,
              1e-12);
  EXPECT_NEAR(cost::estimate(c.model, c.strategy, cost::load_simumax_system("h100-sxm")).straggler_ratio,
              1 + 1.6 * 0.0153, 1e-12);
  // One node: no straggler.
  MegatronConfig one = parse_megatron_args(preflight::test::words(
      "--num-layers 4 --hidden-size 1024 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings "
      "1024 "
      "--vocab-size 32000 --micro-batch-size 1 --global-batch-size 64 --tensor-model-parallel-size 1 --bf16 "
      "--use-flash-attn --nproc_per_node 8 --nnodes 1"));
  EXPECT_EQ(cost::estimate(one.model, one.strategy, cost::load_simumax_system("h100-sxm")).straggler_ratio,
            1.0);
  c.strategy.simumax_compat = true;
  EXPECT_NEAR(cost::estimate(c.model, c.strategy, cost::load_simumax_system("h100-sxm")).straggler_ratio, want,
              1e-12);
}

// Weak scaling: NVIDIA's DGX Cloud recipes ran each layout at a small and a large scale (H100: Llama-3.1 8B /
// 70B / 405B, Nemotron-4 15B, GPT-3 175B, 8 … 576 and 128 … 2304 GPUs; GB200: Llama-3.1-405B and Nemotron-4
// 340B on 128 and 512), the global batch growing with the data-parallel size.  Their BF16 pairs slowed
// down 1.2 … 4.6 % at the larger scale, where the model without a straggler factor says 0 … 1 %: the NVIDIA
// presets' factor (0.0153, least squares over these 7 pairs' log ratios, scripts/refit_presets.py) halves the
// residual (RMS 2.2 % → 1.1 %); the FP8 pairs, held out, 3.8 % → 2.8 %.
TEST(TimeFit, WeakScalingPairsFitTheStragglerFactor) {
  struct Pair {
    double small_measured = 0, small_predicted = 0, large_measured = 0, large_predicted = 0;
    int small_gpus = 1 << 30, large_gpus = 0;
  };
  auto residuals = [&](bool straggler, bool bf16) {
    std::map<std::string, Pair> pairs;
    const std::regex gpus(R"((\d+) GPUs)"), gbs(R"(gbs\d+)");
    for (const auto& [file, preset] :
         {std::pair{"h100_dgxc_nemo.json", "h100-sxm"}, std::pair{"gb200_dgxc_nemo2504.json", "gb200"}}) {
      SystemSpec sys = cost::load_simumax_system(preset);
      if (!straggler) sys.straggler_coefficient = 0;
      for (const auto& r : corpus_runs(file)) {
        std::smatch m;
        if (!std::regex_search(r.name, m, gpus) || (r.name.find(" bf16 ") != std::string::npos) != bf16)
          continue;
        const int n = std::stoi(m[1]);
        const std::string key = std::regex_replace(std::regex_replace(r.name, gpus, "N"), gbs, "gbs");
        const double predicted = cost::estimate(r.model, r.strategy, sys).iteration_ms;
        Pair& p = pairs[key];
        if (n < p.small_gpus)
          p.small_gpus = n, p.small_measured = r.measured_ms, p.small_predicted = predicted;
        if (n > p.large_gpus)
          p.large_gpus = n, p.large_measured = r.measured_ms, p.large_predicted = predicted;
      }
    }
    std::vector<double> out;
    for (const auto& [key, p] : pairs) {
      if (p.large_gpus <= p.small_gpus) continue;
      EXPECT_GT(p.large_measured, p.small_measured) << key;  // every pair slowed down
      out.push_back(std::log(p.large_measured / p.small_measured) -
                    std::log(p.large_predicted / p.small_predicted));
    }
    return out;
  };
  auto rms = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x * x;
    return std::sqrt(s / static_cast<double>(v.size()));
  };
  const auto bf16_with = residuals(true, true), bf16_without = residuals(false, true);
  ASSERT_EQ(bf16_with.size(), 7u);
  EXPECT_GT(rms(bf16_without), 0.02);
  EXPECT_LT(rms(bf16_with), 0.012);
  const auto fp8_with = residuals(true, false), fp8_without = residuals(false, false);
  ASSERT_EQ(fp8_with.size(), 7u);
  EXPECT_LT(rms(fp8_with), rms(fp8_without) - 0.008);
  EXPECT_DOUBLE_EQ(cost::load_simumax_system("gb300").straggler_coefficient, 0.0153);
}

// Systems by the names people write: case, '_' / '-', vendor and form-factor words aside; an ambiguous
// product (A100: 40 or 80 GB) is refused naming both.
TEST(TimeFit, SystemPresetsByProductName) {
  EXPECT_EQ(cost::system_preset_for("h100-sxm"), "h100-sxm");
  EXPECT_EQ(cost::system_preset_for("H100"), "h100-sxm");
  EXPECT_EQ(cost::system_preset_for("NVIDIA_H100_SXM5"), "h100-sxm");
  EXPECT_EQ(cost::system_preset_for("DGX-B200"), "b200");
  EXPECT_EQ(cost::system_preset_for("GB200-NVL72"), "gb200");
  EXPECT_EQ(cost::system_preset_for("gb300_nvl72"), "gb300");
  EXPECT_EQ(cost::system_preset_for("A100_80GB"), "a100-sxm-80gb");
  EXPECT_EQ(cost::system_preset_for("a100-pcie"), "a100_pcie");
  EXPECT_EQ(cost::system_preset_for("910B"), "ascend-910b");
  EXPECT_EQ(cost::system_preset_for("MI300"), "mi300x");
  EXPECT_EQ(cost::system_preset_for("A800"), "a800-sxm-80gb");
  EXPECT_EQ(cost::system_preset_for("NVIDIA_H20"), "h20");
  EXPECT_EQ(cost::system_preset_for("MI325X"), "mi325x");
  EXPECT_EQ(cost::system_preset_for("MI355X"), "mi355x");
  EXPECT_EQ(cost::system_preset_for("AMD-Instinct-MI355"), "mi355x");
  EXPECT_EQ(cost::system_preset_for("h100-pcie"), "");  // no preset for the PCIe card
  EXPECT_EQ(cost::system_preset_for("a100"), "");
  EXPECT_EQ(cost::system_preset_choices("A100").size(), 2u);
  EXPECT_EQ(cost::load_simumax_system("DGX-H100").mem_gib, cost::load_simumax_system("h100-sxm").mem_gib);
  try {
    cost::load_simumax_system("a100");
    ADD_FAILURE() << "an ambiguous system name was accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("a100-sxm-40gb, a100-sxm-80gb"), std::string::npos) << e.what();
  }
}

// The spec-sheet presets without a published run of their own (A800, H20, MI325X, MI355X): their peak rates,
// memory and links from the spec sheet, every efficiency their sibling's (A100-80GB, H100, MI300X), so a
// run's time differs from the sibling's only through the rates — the H800 / H100 pair's rule.
TEST(SystemPresets, SiblingsWithoutTheirOwnRuns) {
  struct Case {
    const char* name;
    const char* sibling;
    double bf16_tflops, mem_gib, hbm_gbps, link_gbps;
    int sm;
  };
  for (const Case& c :
       {Case{"a800-sxm-80gb", "a100-sxm-80gb", 312, 80, 2039, 200, 108},
        Case{"h20", "h100-sxm", 148, 96, 4000, 450, 78}, Case{"mi325x", "mi300x", 1307, 256, 6000, 448, 304},
        Case{"mi355x", "mi300x", 2516, 288, 8000, 537.6, 256}}) {
    const SystemSpec s = cost::load_simumax_system(c.name), sib = cost::load_simumax_system(c.sibling);
    EXPECT_DOUBLE_EQ(s.op.at("matmul").tflops, c.bf16_tflops) << c.name;
    EXPECT_DOUBLE_EQ(s.mem_gib, c.mem_gib) << c.name;
    EXPECT_DOUBLE_EQ(s.memory_bw.at("default").gbps, c.hbm_gbps) << c.name;
    EXPECT_DOUBLE_EQ(s.networks.at("high_intra_node").bandwidth.gbps, c.link_gbps) << c.name;
    EXPECT_EQ(s.sm_count, c.sm) << c.name;
    for (const auto& [op, o] : sib.op) {
      EXPECT_DOUBLE_EQ(s.op.at(op).efficient_factor, o.efficient_factor) << c.name << " " << op;
      EXPECT_EQ(s.op.at(op).accurate_efficient_factor.size(), o.accurate_efficient_factor.size()) << c.name;
    }
    EXPECT_EQ(s.straggler_coefficient, sib.straggler_coefficient) << c.name;
    EXPECT_EQ(s.moe_host_us_per_expert, sib.moe_host_us_per_expert) << c.name;
  }
  // H20 has an FP8 rate (296 TFLOP/s dense); the A800, like the A100, has none.
  EXPECT_DOUBLE_EQ(cost::load_simumax_system("h20").op.at("fp8_matmul").tflops, 296);
  EXPECT_EQ(cost::load_simumax_system("a800").op.at("fp8_matmul").efficient_factor, 0);
}

// GH200 (Grace Hopper: CSCS Alps, JUPITER): the H100's rates and every efficiency, 96 GiB at 4.0 TB/s, the
// Grace host's factor on the experts' host time (gb200's), and four GPUs a node in a full NVLink mesh, 150
// GB/s a direction per pair: a tp-4 all-reduce drives each GPU's three links (the full 450 GB/s), a tp-2 one
// only one of them (a third) — where behind NVSwitch (h100-sxm's 450 GB/s to any peer) both run at the full
// rate.
TEST(SystemPresets, Gh200IsAnH100WithGracesHostAndAFourGpuMesh) {
  const SystemSpec g = cost::load_simumax_system("gh200"), h = cost::load_simumax_system("h100-sxm"),
                   gb = cost::load_simumax_system("gb200");
  EXPECT_EQ(cost::system_preset_for("GH200-96GB"), "gh200");
  EXPECT_DOUBLE_EQ(g.op.at("matmul").tflops, 989);
  EXPECT_DOUBLE_EQ(g.op.at("fp8_matmul").tflops, 1979);
  EXPECT_DOUBLE_EQ(g.mem_gib, 96);
  EXPECT_DOUBLE_EQ(g.memory_bw.at("default").gbps, 4000);
  EXPECT_EQ(g.num_per_node, 4);
  EXPECT_EQ(g.sm_count, 132);
  for (const auto& [op, o] : h.op) EXPECT_DOUBLE_EQ(g.op.at(op).efficient_factor, o.efficient_factor) << op;
  EXPECT_DOUBLE_EQ(g.moe_host_us_per_expert, gb.moe_host_us_per_expert);
  EXPECT_GT(g.moe_host_us_per_expert, h.moe_host_us_per_expert);
  ASSERT_TRUE(g.fc8);
  EXPECT_EQ(g.mesh_devices, 4);
  const double bytes = 256e6;
  const double g4 = cost::collective_time_ms(g, Collective::AllReduce, bytes, 4, "high_intra_node",
                                             cost::CommGroup::Tp),
               g2 = cost::collective_time_ms(g, Collective::AllReduce, bytes, 2, "high_intra_node",
                                             cost::CommGroup::Tp),
               h4 = cost::collective_time_ms(h, Collective::AllReduce, bytes, 4, "high_intra_node",
                                             cost::CommGroup::Tp),
               h2 = cost::collective_time_ms(h, Collective::AllReduce, bytes, 2, "high_intra_node",
                                             cost::CommGroup::Tp);
  EXPECT_NEAR(g4, h4, 1e-9 * h4);  // all three links: the NVSwitch rate
  EXPECT_GT(g2, 2.5 * h2);         // one of three links
  // The 910B's mesh of 8 keeps SimuMax's FC8 rule: a collective among k drives k - 1 of 7 links.
  EXPECT_EQ(cost::load_simumax_system("ascend-910b").mesh_devices, 8);
}

// FP8 on the spec-sheet presets: where the GPU has an FP8 rate the GEMMs run at it (with the BF16
// efficiencies), so an FP8 run is priced faster than the BF16 one; the A100 has none and says so.
TEST(TimeFit, Fp8OnPresetsWithAnFp8Rate) {
  const std::string args =
      "--num-layers 4 --hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --seq-length 4096 "
      "--max-position-embeddings 4096 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 8 --bf16 "
      "--use-flash-attn --swiglu --disable-bias-linear --hidden-dropout 0 --attention-dropout 0 "
      "--transformer-impl transformer_engine --nproc_per_node 8 --tensor-model-parallel-size 8 --sequence-parallel";
  const auto bf16 = parse_megatron_args(preflight::test::words(args));
  const auto fp8 = parse_megatron_args(preflight::test::words(args + " --fp8-format hybrid"));
  for (const char* preset : {"h100-sxm", "b200"}) {
    const SystemSpec sys = cost::load_simumax_system(preset);
    EXPECT_LT(cost::estimate(fp8.model, fp8.strategy, sys).iteration_ms,
              cost::estimate(bf16.model, bf16.strategy, sys).iteration_ms)
        << preset;
  }
  try {
    cost::estimate(fp8.model, fp8.strategy, cost::load_simumax_system("a100-sxm-80gb"));
    ADD_FAILURE() << "an FP8 run priced on the A100";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_matmul"), std::string::npos) << e.what();
  }
}

// --fit-overlap: tp_overlap_exposed from the grid, never a worse sum of squares than the system's own value
// (which is on the grid), and written into the fitted system file.
TEST(TimeFit, OverlapFitNeverFitsWorse) {
  const auto runs = corpus_runs("a100_megatron_gpt.json");
  const SystemSpec a100 = cost::load_simumax_system("a100-sxm-80gb");
  auto sq = [](const TimeFit& f) {
    double e = 0;
    for (const auto& r : f.runs) e += r.error_fitted() * r.error_fitted();
    return e;
  };
  const TimeFit plain = fit_time(runs, a100);
  const TimeFit both = fit_time(runs, a100, true);
  EXPECT_FALSE(plain.overlap_fitted);
  EXPECT_DOUBLE_EQ(plain.tp_overlap_exposed, 1.0);
  EXPECT_TRUE(both.overlap_fitted);
  EXPECT_GE(both.tp_overlap_exposed, 0.0);
  EXPECT_LE(both.tp_overlap_exposed, 1.0);
  EXPECT_LE(sq(both), sq(plain) * (1 + 1e-9));
  const auto j = scaled_system_json(cost::parse_json_text(cost::system_preset_json("a100-sxm-80gb"), "a100"), both);
  EXPECT_DOUBLE_EQ(j["tp_overlap_exposed"].get<double>(), both.tp_overlap_exposed);
  EXPECT_DOUBLE_EQ(cost::read_simumax_system(j, "fitted").tp_overlap_exposed, both.tp_overlap_exposed);
}

// Megatron overlaps a column-parallel linear's backward communication with its GEMMs; the system's
// tp_overlap_exposed says how much of the covered part still costs time.  Forward is untouched.
TEST(TimeFit, TpOverlapExposedHidesBackwardCommunicationOnly) {
  const auto cfg = parse_megatron_args(preflight::test::words(
      "--num-layers 4 --hidden-size 6144 --num-attention-heads 64 --seq-length 2048 --max-position-embeddings "
      "2048 --vocab-size 51200 --micro-batch-size 1 --global-batch-size 8 --tensor-model-parallel-size 8 "
      "--bf16 --use-flash-attn --hidden-dropout 0 --attention-dropout 0 --nproc_per_node 8"));
  SystemSpec sys = cost::load_simumax_system("a100-sxm-80gb");
  const auto exposed = cost::estimate(cfg.model, cfg.strategy, sys);
  sys.tp_overlap_exposed = 0;
  const auto hidden = cost::estimate(cfg.model, cfg.strategy, sys);
  const auto& a = exposed.chunks.front().times;
  const auto& b = hidden.chunks.front().times;
  EXPECT_DOUBLE_EQ(a.fwd_net_ms, b.fwd_net_ms);
  EXPECT_GT(a.bwd_net_ms(), 0);
  EXPECT_LT(b.bwd_net_ms(), 0.5 * a.bwd_net_ms());  // the all-reduce of dgrad sits under the wgrad GEMM
  EXPECT_LT(hidden.iteration_ms, exposed.iteration_ms);
  sys.tp_overlap_exposed = 0.5;
  const auto half = cost::estimate(cfg.model, cfg.strategy, sys);
  EXPECT_NEAR(half.chunks.front().times.bwd_net_ms(), (a.bwd_net_ms() + b.bwd_net_ms()) / 2, 1e-9);
  // --simumax-compat keeps every collective exposed.
  auto compat = cfg.strategy;
  compat.simumax_compat = true;
  sys.tp_overlap_exposed = 0;
  EXPECT_DOUBLE_EQ(cost::estimate(cfg.model, compat, sys).chunks.front().times.bwd_net_ms(),
                   [&] {
                     SystemSpec s1 = sys;
                     s1.tp_overlap_exposed = 1;
                     return cost::estimate(cfg.model, compat, s1).chunks.front().times.bwd_net_ms();
                   }());
  auto j = cost::parse_json_text(cost::system_preset_json("a100-sxm-80gb"), "a100");
  j["tp_overlap_exposed"] = 1.5;
  try {
    cost::read_simumax_system(j, "bad.json");
    ADD_FAILURE() << "tp_overlap_exposed 1.5 accepted";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tp_overlap_exposed"), std::string::npos) << e.what();
  }
}

TEST(TimeFit, ScaledSystemJsonMatchesScaledSystem) {
  const auto base = cost::parse_json_text(cost::system_preset_json("b200_bf16_ceperm"), "b200");
  TimeFit fit;
  fit.compute_scale = 1.25;
  fit.network_scale = 2.0;
  const auto j = scaled_system_json(base, fit);
  EXPECT_EQ(j["sys_name"], "b200_bf16_ceperm_fitted");
  const SystemSpec a = cost::read_simumax_system(j, "fitted");
  const SystemSpec b = scaled_system(cost::read_simumax_system(base, "b200"), 1.25, 2.0);
  EXPECT_DOUBLE_EQ(a.op.at("matmul").efficient_factor, b.op.at("matmul").efficient_factor);
  EXPECT_DOUBLE_EQ(a.memory_bw.at("default").efficient_factor, b.memory_bw.at("default").efficient_factor);
  EXPECT_DOUBLE_EQ(*a.networks.at("high_intra_node").op.at("all_reduce").efficient_factor,
                   *b.networks.at("high_intra_node").op.at("all_reduce").efficient_factor);
  EXPECT_DOUBLE_EQ(b.op.at("matmul").efficient_factor * 1.25,
                   cost::read_simumax_system(base, "b200").op.at("matmul").efficient_factor);
  // The experts' grouped GEMMs follow the GEMMs' scale unless a scale of their own is given (the Hopper
  // presets' 1.4), which leaves the dense GEMMs alone.
  const SystemSpec raw = cost::read_simumax_system(base, "b200");
  EXPECT_DOUBLE_EQ(b.op.at("group_matmul").efficient_factor * 1.25,
                   raw.op.at("group_matmul").efficient_factor);
  const SystemSpec grouped = scaled_system_groups(raw, {{"grouped_gemm", 1.4}});
  EXPECT_DOUBLE_EQ(grouped.op.at("group_matmul").efficient_factor * 1.4,
                   raw.op.at("group_matmul").efficient_factor);
  EXPECT_DOUBLE_EQ(grouped.op.at("matmul").efficient_factor, raw.op.at("matmul").efficient_factor);
  TimeFit g;
  g.group_scales = {{"grouped_gemm", 1.4}};
  const SystemSpec from_json = cost::read_simumax_system(scaled_system_json(base, g), "fitted");
  EXPECT_DOUBLE_EQ(from_json.op.at("group_matmul").efficient_factor,
                   grouped.op.at("group_matmul").efficient_factor);
  EXPECT_DOUBLE_EQ(from_json.op.at("matmul").efficient_factor, raw.op.at("matmul").efficient_factor);
  // The h100-sxm preset carries them (the scales its preflight.time_fit records): grouped GEMMs 1.5635x
  // the GEMMs' transfer from B200, FP8 ones 1.2806x (with the experts' host time priced apart),
  // the BF16 dense GEMMs (only they) 1 / 0.89 faster, every FP8 GEMM 0.974 (refitted with the quantizers'
  // traffic priced); an FP8 grouped scale absent falls back to the grouped one.
  const SystemSpec h100 = cost::load_simumax_system("h100-sxm");
  const auto preset_fit = nlohmann::json::parse(
      preflight::test::read_file(std::filesystem::path(PREFLIGHT_SOURCE_DIR) / "analyzer" / "data" /
                                 "systems" / "h100-sxm.json"))["preflight"]["time_fit"];
  const double grouped_k = preset_fit["group_scales"]["grouped_gemm"].get<double>(),
               grouped_fp8_k = preset_fit["group_scales"]["fp8_grouped_gemm"].get<double>(),
               bf16_k = preset_fit["bf16_gemm_scale"].get<double>(),
               fp8_k = preset_fit["fp8_compute_scale"].get<double>();
  EXPECT_DOUBLE_EQ(grouped_k, 1.5635);
  EXPECT_NEAR(grouped_fp8_k, 1.2806, 0.01);
  EXPECT_DOUBLE_EQ(bf16_k, 0.89);
  const double raw_ratio = raw.op.at("matmul").efficient_factor / raw.op.at("group_matmul").efficient_factor;
  EXPECT_NEAR(h100.op.at("matmul").efficient_factor / h100.op.at("group_matmul").efficient_factor,
              grouped_k / bf16_k * raw_ratio, 1e-9);
  EXPECT_NEAR(h100.op.at("fp8_matmul").efficient_factor / h100.op.at("fp8_group_matmul").efficient_factor,
              grouped_fp8_k * raw_ratio, 1e-9);
  EXPECT_NEAR(h100.op.at("matmul").efficient_factor / h100.op.at("fp8_matmul").efficient_factor,
              fp8_k / bf16_k, 1e-9);
  const SystemSpec only_grouped = scaled_system_groups(raw, {{"grouped_gemm", 1.3}});
  EXPECT_DOUBLE_EQ(only_grouped.op.at("fp8_group_matmul").efficient_factor * 1.3,
                   raw.op.at("fp8_group_matmul").efficient_factor);
}

TEST(TimeFit, CalibrateFitTimeWritesAUsableSystem) {
  preflight::test::TempDir dir;
  const auto out = (dir.path() / "fitted.json").string();
  auto r = preflight::test::run_preflight("calibrate --fit-time --system b200_bf16_ceperm --runs " +
                                          (data_dir() / "time_corpus" / "b200_llama3.json").string() + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("held out (leave one out)"), std::string::npos) << r.out;
  r = preflight::test::run_preflight("estimate --system " + out +
                                     " --json -- --num-layers 2 --hidden-size 1024 --num-attention-heads 16 "
                                     "--seq-length 2048 --vocab-size 32000 --bf16 --nproc_per_node 8");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["summary"]["system"], "b200_bf16_ceperm_fitted");
  r = preflight::test::run_preflight("calibrate --fit-time --runs x.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--system: is required with --fit-time"), std::string::npos) << r.err;
  // --per-group writes each group's scale into the system file; it and --fit-overlap exclude each other.
  const std::string corpus = (data_dir() / "time_corpus" / "b200_deepseek.json").string();
  r = preflight::test::run_preflight("calibrate --fit-time --per-group --system b200_bf16_ceperm --runs " + corpus +
                                     " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attention ×"), std::string::npos) << r.out;
  const auto written = nlohmann::json::parse(preflight::test::read_file(out));
  EXPECT_GT(written["preflight"]["time_fit"]["group_scales"]["attention"].get<double>(), 1.5);
  EXPECT_NO_THROW(cost::read_simumax_system(written, out));
  r = preflight::test::run_preflight("calibrate --fit-time --per-group --fit-overlap --system b200 --runs " + corpus);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--per-group"), std::string::npos) << r.err;
  // Corpus rows name their run: a row with neither a command line nor a yaml, a yaml that is not there.
  const auto bad = (dir.path() / "bad.json").string();
  std::ofstream(bad) << R"({"runs": [{"name": "a", "measured_iteration_ms": 5, "args": ["--num-layers", "2",
    "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "64", "--vocab-size", "100"]},
    {"name": "b", "measured_iteration_ms": 5}]})";
  r = preflight::test::run_preflight("calibrate --fit-time --system b200 --runs " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json: runs[1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\"args\""), std::string::npos) << r.err;
  std::ofstream(bad, std::ios::trunc)
      << R"({"runs": [{"measured_iteration_ms": 5, "config": "missing.yaml"}]})";
  r = preflight::test::run_preflight("calibrate --fit-time --system b200 --runs " + bad);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
}

TEST(EstimateTrace, OneFOneBScheduleAsAChromeTrace) {
  preflight::test::TempDir dir;
  const auto trace = (dir.path() / "sim.json").string();
  auto r = preflight::test::run_preflight(
      "estimate --model simumax:llama3-8b --strategy tp1_pp2_dp4_mbs1 --system a100_pcie --json --trace " + trace);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double iteration = nlohmann::json::parse(r.out)["summary"]["iteration_ms"].get<double>();
  const auto j = nlohmann::json::parse(preflight::test::read_file(trace));
  std::map<int, std::vector<std::string>> compute;
  double end = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    end = std::max(end, (e["ts"].get<double>() + e["dur"].get<double>()) / 1000.0);
    if (e["cat"] == "compute") compute[e["pid"].get<int>()].push_back(e["name"]);
  }
  EXPECT_NEAR(end, iteration, 1e-6 * iteration);
  // 8 micro batches, 2 stages: stage 0 warms up with F0, F1 before B0; the last stage alternates at once.
  ASSERT_EQ(compute[0].size(), 16u);
  ASSERT_EQ(compute[1].size(), 16u);
  EXPECT_EQ((std::vector<std::string>{compute[0][0], compute[0][1], compute[0][2]}),
            (std::vector<std::string>{"F0", "F1", "B0"}));
  EXPECT_EQ((std::vector<std::string>{compute[1][0], compute[1][1], compute[1][2]}),
            (std::vector<std::string>{"F0", "B0", "F1"}));
}

// The interleaved schedule as a trace: every rank runs each micro batch through each of its virtual chunks
// forward and backward (Megatron's order: micro batches in groups of pp per chunk), blocking p2p between,
// then its DP synchronisation and optimizer step, ending at the iteration time.
TEST(EstimateTrace, InterleavedScheduleAsAChromeTrace) {
  preflight::test::TempDir dir;
  const auto trace = (dir.path() / "vpp.json").string();
  auto r = preflight::test::run_preflight(
      "estimate --system a100-sxm-80gb --json --trace " + trace +
      " -- --num-layers 8 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 "
      "--max-position-embeddings 1024 --vocab-size 32000 --micro-batch-size 1 --global-batch-size 8 --bf16 "
      "--use-flash-attn --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 2 "
      "--no-overlap-p2p-communication --nproc_per_node 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("--trace"), std::string::npos) << r.err;
  const double iteration = nlohmann::json::parse(r.out)["summary"]["iteration_ms"].get<double>();
  const auto j = nlohmann::json::parse(preflight::test::read_file(trace));
  std::map<int, std::vector<std::string>> compute;
  std::map<int, int> p2p;
  double end = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    end = std::max(end, (e["ts"].get<double>() + e["dur"].get<double>()) / 1000.0);
    if (e["cat"] == "compute") compute[e["pid"].get<int>()].push_back(e["name"]);
    if (e["cat"] == "p2p") ++p2p[e["pid"].get<int>()];
  }
  EXPECT_NEAR(end, iteration, 1e-6 * iteration);
  for (int rank : {0, 1}) {
    ASSERT_EQ(compute[rank].size(), 2u * 8 * 2) << rank;  // F and B of 8 micro batches × 2 chunks
    EXPECT_GT(p2p[rank], 0) << rank;
  }
  EXPECT_EQ((std::vector<std::string>{compute[0][0], compute[0][1], compute[0][2], compute[0][3]}),
            (std::vector<std::string>{"F0.0", "F1.0", "F0.1", "F1.1"}));
  EXPECT_EQ(compute[0].back(), "B7.0");
}

}  // namespace
}  // namespace preflight::analyzer

namespace preflight::analyzer {
namespace {

// Every published run in the time corpora ran, so none may be refused for memory: the allocated peak of
// every stage is within the device's memory, and for the Megatron-Bridge rows (their recipes set
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) so is the reserved one.  Tight ones: GPT-3 20B on H100
// (allocated 75.5 of 80 GiB), Nemotron-340B (75.3), GB200 405B (166.7 of 184), Kimi-K2 on GB300 with Muon
// (265.2 of 268: the first stage's rank dealt the word embedding's states whole), GB200 70B with FSDP and 40
// of its 80 layers' activations on the host (172.6 allocated, 183.6 reserved of 184).
TEST(TimeFit, EveryPublishedRunFitsItsDevice) {
  const std::map<std::string, std::string> expandable = {{"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  int checked = 0, tight = 0;
  double tight_lo = 1, tight_hi = 0;  // allocated peak / device of the runs "tight" with the plain allocator
  for (const char* file : {"h100_nemo_llama3.json",
                           "b200_nemo_llama31.json",
                           "b200_nemo_llama3_8b.json",
                           "gb200_nemo_llama.json",
                           "h100_nemo_moe.json",
                           "b200_nemo_moe.json",
                           "h100_nemo_2407.json",
                           "h100_megatron_lm_readme.json",
                           "gb300_nemo_llama.json",
                           "b300_nemo_moe.json",
                           "gb300_nemo_moe.json",
                           "gb200_nemo_moe.json",
                           "b200_nemo2_2502.json",
                           "gb200_nemo2_2504.json",
                           "h100_nemo_long_context.json",
                           "gb200_nemo_fsdp.json",
                           "gb300_nemo_fsdp.json",
                           "gb200_nemo_nvfp4.json",
                           "gb300_nemo_nvfp4.json",
                           "gb200_nemo_deepseek.json",
                           "gb300_nemo_deepseek.json",
                           "gb300_nemo_kimi.json",
                           "gb300_nemo_nemotron3_nano.json",
                           "gb200_nemo_nemotron3_nano.json",
                           "b300_nemo_nemotron3_nano.json",
                           "h100_nemo_nemotron3_nano.json",
                           "gb300_nemo_nemotron3_super.json",
                           "gb200_nemo_nemotron3_super.json",
                           "b300_nemo_nemotron3_super.json",
                           "b200_nemo_nemotron3_super.json",
                           "b200_nemo_qwen3_235b.json",
                           "b300_nemo_qwen3_235b.json",
                           "gb200_nemo_qwen3_235b.json",
                           "gb300_nemo_qwen3_235b.json",
                           "gb200_nemo_full_iteration.json",
                           "gb300_nemo_full_iteration.json",
                           "h100_megatron_moe_recipes.json",
                           "b200_megatron_moe_recipes.json",
                           "gb200_megatron_moe_recipes.json",
                           "gb300_megatron_moe_recipes.json",
                           "h100_nemo_verification_cards.json",
                           "gb200_nemo_verification_cards.json"}) {
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const SystemSpec sys = cost::load_simumax_system(j["system"].get<std::string>());
    const bool bridge = std::string(file).find("_nemo_") != std::string::npos &&
                        std::string(file) != "h100_nemo_2407.json" &&
                        std::string(file) != "h100_nemo_long_context.json";
    for (const auto& r : j["runs"]) {
      const auto cfg = parse_megatron_args(r["args"].get<std::vector<std::string>>(),
                                           bridge ? expandable : std::map<std::string, std::string>{});
      const auto est = cost::estimate(cfg.model, cfg.strategy, sys);
      // GB300's DeepSeek-V3 rows (micro batch 2, pp 2) come out 0.25 % above the device with the allocator's
      // reserve (288.5e9 bytes of the 288e9 the preset counts until a driver-reported figure is published):
      // their allocated peak is checked, the reserve only within 0.5 % (the memory model's error is larger).
      const double device = est.device_memory_gib * 1024.0 * 1024.0 * 1024.0;
      const bool at_the_edge = std::string(file) == "gb300_nemo_deepseek.json";
      for (const auto& s : est.stages) {
        EXPECT_LE(s.peak_bytes, device) << r["name"] << " " << s.key;
        if (bridge) {
          EXPECT_LE(s.peak_with_reserved_bytes, at_the_edge ? 1.005 * device : device)
              << r["name"] << " " << s.key;
        }
      }
      // `preflight estimate`'s verdict with the plain caching allocator (reserve allocated / 0.94): never
      // "does not fit" for a run that ran; "tight" where only the allocated peak fits — the band its
      // message quotes (0.94 … 0.99 of the device).
      const auto plain =
          bridge ? cost::estimate(parse_megatron_args(r["args"].get<std::vector<std::string>>(), {}).model,
                                  parse_megatron_args(r["args"].get<std::vector<std::string>>(), {}).strategy,
                                  sys)
                 : est;
      EXPECT_NE(plain.memory_verdict(), cost::Estimate::MemoryVerdict::DoesNotFit) << r["name"];
      if (plain.memory_verdict() == cost::Estimate::MemoryVerdict::Tight) {
        const double share = plain.max_peak_bytes(false) / device;
        tight_lo = std::min(tight_lo, share);
        tight_hi = std::max(tight_hi, share);
        ++tight;
      }
      ++checked;
    }
  }
  EXPECT_GE(tight, 15);  // published runs that ran in the tight band
  EXPECT_GE(tight_lo, 0.94);
  EXPECT_LE(tight_hi, 0.995);
  EXPECT_EQ(checked, 11 + 2 + 2 + 17 + 12 + 7 + 12 + 3 + 13 + 13 + 5 + 5 + 8 + 7 + 9 + 4 + 4 + 9 + 8 + 4 + 4 +
                         4 + 4 + 4 + 3 + 3 + 5 + 5 + 3 + 2 + 2 + 2 + 4 + 4 + 11 + 12 + 3 + 2 + 7 + 2 + 1 + 6 +
                         2);
}

// The embedded presets (analyzer/data/systems) are the generator's output: re-running it reproduces every
// file, `--set` changes only the presets that carry the constant, and an unknown constant is refused.
TEST(SystemPresets, GeneratorReproducesTheEmbeddedPresetsAndSetsOneConstant) {
  namespace fs = std::filesystem;
  using preflight::test::read_file;
  using preflight::test::run_shell;
  using preflight::test::shell_quote;
  const fs::path src = PREFLIGHT_SOURCE_DIR, out = preflight::test::scratch_dir() / "presets";
  const std::string gen =
      "/usr/bin/python3 " + shell_quote((src / "scripts" / "gen_system_presets.py").string());
  auto r = run_shell(gen + " --out " + shell_quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int files = 0;
  for (const auto& e : fs::directory_iterator(src / "analyzer" / "data" / "systems")) {
    if (e.path().extension() != ".json") continue;
    ++files;
    EXPECT_EQ(nlohmann::json::parse(read_file(e.path())),
              nlohmann::json::parse(read_file(out / e.path().filename())))
        << e.path().filename() << " differs from scripts/gen_system_presets.py's output: regenerate it";
  }
  EXPECT_EQ(files, 16);

  r = run_shell(gen + " --out " + shell_quote((out / "set").string()) + " --set hopper_fp8=1.1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto h100 = nlohmann::json::parse(read_file(out / "set" / "h100-sxm.json"));
  EXPECT_DOUBLE_EQ(h100["preflight"]["time_fit"]["fp8_compute_scale"].get<double>(), 1.1);
  const auto given = nlohmann::json::parse(read_file(out / "h100-sxm.json"));
  const double k = given["accelerator"]["op"]["fp8_matmul"]["efficient_factor"].get<double>() /
                   h100["accelerator"]["op"]["fp8_matmul"]["efficient_factor"].get<double>();
  // FP8 GEMMs 1.1 / (the written scale) slower, the BF16 ones as given.
  EXPECT_NEAR(k, 1.1 / given["preflight"]["time_fit"]["fp8_compute_scale"].get<double>(), 1e-9);
  EXPECT_EQ(h100["accelerator"]["op"]["matmul"], given["accelerator"]["op"]["matmul"]);
  EXPECT_EQ(nlohmann::json::parse(read_file(out / "set" / "b200.json")),
            nlohmann::json::parse(read_file(out / "b200.json")));

  r = run_shell(gen + " --out " + shell_quote((out / "bad").string()) + " --set hopper_fp9=1.1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no fitted constant named hopper_fp9"), std::string::npos) << r.err;
  r = run_shell(gen + " --out " + shell_quote((out / "bad").string()) + " --set hopper_fp8=fast");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--set hopper_fp8=fast: expected NAME=NUMBER"), std::string::npos) << r.err;
}

// Each fitted constant of the presets is at (within 3 % of) the least-squares optimum on its own published
// rows with the current cost model (scripts/refit_presets.py): a change to the model that moves one further
// fails here until the constant is refitted and the numbers its comment cites are re-measured.
TEST(SystemPresets, FittedConstantsAreAtTheirRowsLeastSquaresOptimum) {
  namespace fs = std::filesystem;
  using preflight::test::shell_quote;
  const fs::path src = PREFLIGHT_SOURCE_DIR;
  auto r = preflight::test::run_shell(
      "/usr/bin/python3 " + shell_quote((src / "scripts" / "refit_presets.py").string()) +
      " --independent --no-summary --preflight " + shell_quote(PREFLIGHT_BINARY));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int steps = 0;
  while (std::getline(lines, line)) {
    std::istringstream w(line);
    std::string name, was;
    double refitted = 0;
    if (!(w >> name >> was >> refitted) || name == "constant" || was == "-") continue;
    ++steps;
    EXPECT_NEAR(refitted / std::stod(was), 1.0, 0.03)
        << name << ": " << was << " as written, " << refitted << " refitted on its rows";
  }
  EXPECT_EQ(steps, 14) << r.out;
}

// The published-run ranges every estimate prints (analyzer/data/fidelity/time_errors.json) are the corpus
// priced with this build: scripts/gen_time_fidelity.py re-run gives the same runs, classes and errors.
TEST(SystemPresets, PublishedRunErrorsAreTheCorpusPricedAsGiven) {
  namespace fs = std::filesystem;
  using preflight::test::read_file;
  using preflight::test::shell_quote;
  const fs::path src = PREFLIGHT_SOURCE_DIR, out = preflight::test::scratch_dir() / "time_errors.json";
  auto r = preflight::test::run_shell(
      "/usr/bin/python3 " + shell_quote((src / "scripts" / "gen_time_fidelity.py").string()) +
      " --preflight " + shell_quote(PREFLIGHT_BINARY) + " --out " + shell_quote(out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto embedded = nlohmann::json::parse(
      read_file(src / "analyzer" / "data" / "fidelity" / "time_errors.json"))["systems"];
  const auto fresh = nlohmann::json::parse(read_file(out))["systems"];
  ASSERT_EQ(embedded.size(), fresh.size()) << "regenerate with scripts/gen_time_fidelity.py";
  int runs = 0;
  for (const auto& [system, classes] : fresh.items()) {
    ASSERT_TRUE(embedded.contains(system)) << system << ": regenerate with scripts/gen_time_fidelity.py";
    ASSERT_EQ(embedded[system].size(), classes.size()) << system;
    for (const auto& [cls, c] : classes.items()) {
      const auto& e = embedded[system][cls];
      EXPECT_EQ(e["runs"], c["runs"]) << system << " " << cls;
      EXPECT_EQ(e["corpora"], c["corpora"]) << system << " " << cls;
      EXPECT_NEAR(e["min_error"].get<double>(), c["min_error"].get<double>(), 2e-4) << system << " " << cls;
      EXPECT_NEAR(e["max_error"].get<double>(), c["max_error"].get<double>(), 2e-4) << system << " " << cls;
      EXPECT_NEAR(e["median_error"].get<double>(), c["median_error"].get<double>(), 2e-4)
          << system << " " << cls;
      EXPECT_EQ(e["within_5pct"], c["within_5pct"]) << system << " " << cls;
      runs += c["runs"].get<int>();
    }
  }
  EXPECT_EQ(runs, 383);  // every run of tests/data/time_corpus
}

}  // namespace
}  // namespace preflight::analyzer

namespace preflight::analyzer {
namespace {

// NeMo's Nemotron-3-Nano-30B-A3B rows (hybrid Mamba-2 / attention / MoE; 26.04 … 26.06; held out, added at
// stop 37 with the hybrid model): MXFP8 on 8 B300 / GB200 / GB300 / B200, FP8 current scaling on 16 H100.
// Its experts' FFN (1856) is not a multiple of 128: the MXFP8 rows carry the unaligned-expert scale fitted on
// GPT-OSS (−21 … −30 % without it).  B300 −5.3 … +0.2 %, GB200 −7.2 … −5.0 %, GB300 −15.4 … −11.2 % (the
// Mamba scan's kernel rate is not measured: the `default` efficiency), H100 +12.2 … +15.2 % (Hopper's FP8
// grouped GEMMs at the scale fitted on Qwen3).  Bounded as measured.
TEST(TimeFit, Nemotron3NanoRowsHeldOut) {
  for (const auto& [file, n, lo, hi] : {std::tuple{"b300_nemo_nemotron3_nano.json", 3u, -0.075, 0.025},
                                        std::tuple{"gb200_nemo_nemotron3_nano.json", 4u, -0.095, -0.03},
                                        std::tuple{"gb300_nemo_nemotron3_nano.json", 4u, -0.175, -0.09},
                                        std::tuple{"h100_nemo_nemotron3_nano.json", 3u, 0.10, 0.175}}) {
    const auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), n) << file;
    for (const auto& r : runs) ASSERT_TRUE(r.model.hybrid()) << r.name;
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const TimeFit fit = fit_time(runs, cost::load_simumax_system(j["system"].get<std::string>()));
    for (const auto& r : fit.runs) {
      EXPECT_GT(r.error_before(), lo) << r.name;
      EXPECT_LT(r.error_before(), hi) << r.name;
    }
  }
}

// NeMo's Nemotron-3-Super-120B-A12B MXFP8 rows (LatentMoE: 512 experts top-22 at latent 1024; two MTP depths
// of an attention and a MoE layer; 26.04 … 26.08 on 64 GB300 / GB200 / B300 / B200; held out, added at stop
// 37 with --moe-latent-size and the hybrid MTP pattern) and its 26.08 NVFP4 rows on GB300 / GB200 (stop 41,
// with the recipe's --te-precision-config-file: −33.5 / −31.9 %, −35.5 / −33.9 % without it): priced 14 … 35
// % fast on every system — the same sign as Nano's rows, about 20 points further (docs/time_fidelity.md: not
// explained; no profile).  A regression guard bounded as measured, not a claim of fidelity.
TEST(TimeFit, Nemotron3SuperRowsHeldOut) {
  for (const auto& [file, n, lo, hi] : {std::tuple{"gb300_nemo_nemotron3_super.json", 5u, -0.37, -0.29},
                                        std::tuple{"gb200_nemo_nemotron3_super.json", 5u, -0.345, -0.27},
                                        std::tuple{"b300_nemo_nemotron3_super.json", 3u, -0.26, -0.12},
                                        std::tuple{"b200_nemo_nemotron3_super.json", 2u, -0.25, -0.20}}) {
    const auto runs = corpus_runs(file);
    ASSERT_EQ(runs.size(), n) << file;
    for (const auto& r : runs) {
      ASSERT_TRUE(r.model.hybrid()) << r.name;
      EXPECT_EQ(r.model.moe.latent_size, 1024) << r.name;
      EXPECT_EQ(r.model.mtp_num_layers, 2) << r.name;
      EXPECT_TRUE(r.model.mtp_repeated_layer) << r.name;
    }
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const TimeFit fit = fit_time(runs, cost::load_simumax_system(j["system"].get<std::string>()));
    for (const auto& r : fit.runs) {
      EXPECT_GT(r.error_before(), lo) << r.name;
      EXPECT_LT(r.error_before(), hi) << r.name;
    }
  }
}

// Megatron-Bridge's model verification cards (examples/model_verification_cards at 067f987df, runs of 2026-07
// / 08 on the 26.06 stack; tests/data/time_corpus/{h100,gb200}_nemo_verification_cards.json, held out, added
// at stop 43): every H100 row within the issue's 5 % — the dense Qwen3-8B, DeepSeek-V3 at 1024 GPUs, and the
// BF16 MoEs whose expert widths SimuMax's B200 file did not measure (Qwen3-30B-A3B, Nemotron-3-Super,
// Nemotron-3.5-Lightning, Moonlight), priced 27 … 37 % slow while such grouped GEMMs took the op's flat
// default fitted on GPT-OSS-120B's 1024 rows per expert; with the measured width families' efficiency at
// their own rows per expert (3072 … 6195; compute_time_ms) −3.8 … +4.3 % (Lightning +3.3 % before stop 45,
// whose rise to the dense default over 3× the table's last rows per expert was fitted on it and one other
// row — no longer held out for that factor).  On GB200 Super's BF16 row is −36 %
// (its MXFP8 rows −28 … −32 %), Lightning's +13 % (measured as fast as its MXFP8 row, priced 17 % slower).
// The memory the cards report: Lightning's allocated peak on 16 H100s (72.066 GiB) and 8 GB200s (156.85 GiB)
// within 4 %; Super's on 64 H100s (59.000 GiB) 16 % under — a known gap.  Bounded as measured: the issue's
// target where it is met, a regression guard where the error is large.
TEST(TimeFit, VerificationCardRowsHeldOut) {
  const std::map<std::string, std::string> expandable = {
      {"PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"}};
  struct Bound {
    const char* name;                     // a substring of the run's name
    double lo, hi;                        // its time error
    double measured_gib, mem_lo, mem_hi;  // the card's allocated peak (0: none) and the error band
  };
  const std::map<std::string, std::vector<Bound>> files = {
      {"h100_nemo_verification_cards.json",
       {{"qwen3-30b-a3b", -0.05, 0.05, 0, 0, 0},
        {"nemotron-3-super", -0.05, 0.05, 59.000, -0.20, -0.12},
        {"nemotron-3.5-lightning", -0.05, 0.05, 72.066, -0.04, 0.04},
        {"deepseek-v3", -0.05, 0.05, 0, 0, 0},
        {"qwen3-8b", -0.05, 0.05, 0, 0, 0},
        {"moonlight", -0.05, 0.05, 0, 0, 0}}},
      {"gb200_nemo_verification_cards.json",
       {{"nemotron-3-super", -0.42, -0.30, 0, 0, 0},
        {"nemotron-3.5-lightning", 0.07, 0.20, 156.85, -0.04, 0.04}}}};
  int checked = 0;
  for (const auto& [file, bounds] : files) {
    const auto j = nlohmann::json::parse(preflight::test::read_file(data_dir() / "time_corpus" / file));
    const SystemSpec sys = cost::load_simumax_system(j["system"].get<std::string>());
    ASSERT_EQ(j["runs"].size(), bounds.size()) << file;
    for (const Bound& b : bounds) {
      const nlohmann::json* run = nullptr;
      for (const auto& r : j["runs"])
        if (r["name"].get<std::string>().find(b.name) != std::string::npos) run = &r;
      ASSERT_NE(run, nullptr) << file << " " << b.name;
      const auto cfg = parse_megatron_args((*run)["args"].get<std::vector<std::string>>(), expandable);
      const auto est = cost::estimate(cfg.model, cfg.strategy, sys);
      const double measured = (*run)["measured_iteration_ms"].get<double>();
      const double error = (est.iteration_ms - measured) / measured;
      EXPECT_GT(error, b.lo) << (*run)["name"];
      EXPECT_LT(error, b.hi) << (*run)["name"];
      if (b.measured_gib > 0) {
        // The card's figure is rank 0's: the first stage.
        const double peak_gib = est.stages.front().peak_bytes / (1024.0 * 1024.0 * 1024.0);
        const double mem_error = (peak_gib - b.measured_gib) / b.measured_gib;
        EXPECT_GT(mem_error, b.mem_lo) << (*run)["name"] << " " << peak_gib << " GiB";
        EXPECT_LT(mem_error, b.mem_hi) << (*run)["name"] << " " << peak_gib << " GiB";
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 8);
}

// NeMo's Nemotron-3.5-Lightning MXFP8 row of 26.08 on 8 GB200s (the last row of tests/data/time_corpus/
// gb200_nemo_nemotron3_nano.json: Nano's stack and GB200 layout with two repeated MTP depths of an attention
// and a MoE layer; held out, added at stop 38): within the issue's 5 % (measured: −3.3 %; Nano's own GB200
// rows −7.2 … −5.0 %).  Pricing the MTP depths as separate weights (not repeated) leaves the time alike;
// dropping them (−16 % of the step's FLOPs) fails it.
TEST(TimeFit, Nemotron35LightningRowHeldOut) {
  const auto runs = corpus_runs("gb200_nemo_nemotron3_nano.json");
  ASSERT_EQ(runs.size(), 4u);
  const TimedRun& r = runs.back();
  EXPECT_NE(r.name.find("lightning"), std::string::npos) << r.name;
  EXPECT_EQ(r.model.mtp_num_layers, 2);
  EXPECT_EQ(r.model.mtp_hybrid_pattern, "*E");
  const cost::Estimate est = cost::estimate(r.model, r.strategy, cost::load_simumax_system("gb200"));
  const double error = (est.iteration_ms - r.measured_ms) / r.measured_ms;
  EXPECT_LT(std::fabs(error), 0.05) << error;
}

// NeMo 26.06's Llama-3-70B SFT rows on 32 GB200s / GB300s
// (tests/data/time_corpus/{gb200,gb300}_nemo_finetune.json; held out, added at stop 39): 2 (GB300, pp 2 vp
// 20) and 8 (GB200, pp 8 vp 10) micro batches a pipeline, so the interleaved schedule's fill and drain, its
// p2p and the exposed ends of the overlapped gradient reduce and fp8 parameter gather weigh more than in the
// pre-training rows.  The GB200 rows (pp 8 vp 10) and GB300's FP8 row (pp 2 vp 20) within the issue's 5 %
// (−1.7, −3.6, −4.4 %); GB300's MXFP8 row ran 12 % slower than its FP8 current-scaling row, which the model
// does not say (−12.1 %: guarded from getting worse).  Without the fp8 parameter gather the recipes set, the
// GB300 rows price 15 … 16 % slower (the pp 2 stages' 35 B parameters gathered in bf16 over dp 16).
TEST(TimeFit, LlamaSftRowsHeldOut) {
  for (const char* file : {"gb200_nemo_finetune.json", "gb300_nemo_finetune.json"}) {
    const std::string system = std::string(file).substr(0, 5);
    auto runs = corpus_runs(file);
    std::erase_if(runs, [](const TimedRun& r) { return r.name.find(" sft ") == std::string::npos; });
    ASSERT_EQ(runs.size(), 2u) << file;
    for (const TimedRun& r : runs) {
      EXPECT_EQ(r.strategy.num_microbatches(), system == "gb300" ? 2 : 8) << r.name;
      EXPECT_TRUE(r.strategy.fp8_param_gather) << r.name;
      const cost::Estimate est = cost::estimate(r.model, r.strategy, cost::load_simumax_system(system));
      const double error = (est.iteration_ms - r.measured_ms) / r.measured_ms;
      const bool mxfp8_gb300 = system == "gb300" && r.name.find("mxfp8") != std::string::npos;
      EXPECT_LT(std::fabs(error), mxfp8_gb300 ? 0.13 : 0.05) << r.name << " " << error;
    }
  }
}

// NeMo 26.06's Llama-3-70B LoRA rows (rank 16 on linear_qkv only, Megatron-Bridge's perf recipes; 8 GB300s /
// GB200s / H100s; held out, added at stop 39 with the LoRA model): +3.0 … +13.1 % (the packed samples'
// attention, priced over 4096 tokens, weighs more without the frozen weights' gradients).  Priced as full
// fine-tuning — what preflight did before — they are 30 % slow or more: every weight-gradient GEMM and its
// reduction counted.
TEST(TimeFit, LoraRowsHeldOut) {
  int rows = 0;
  for (const char* file :
       {"gb200_nemo_finetune.json", "gb300_nemo_finetune.json", "h100_nemo_finetune.json"}) {
    const std::string system =
        std::string(file).rfind("h100", 0) == 0 ? "h100-sxm" : std::string(file).substr(0, 5);
    for (const TimedRun& r : corpus_runs(file)) {
      if (!r.model.lora.enabled()) continue;
      ++rows;
      EXPECT_EQ(r.model.lora.rank, 16) << r.name;
      EXPECT_TRUE(r.model.lora.linear_qkv && !r.model.lora.linear_fc1) << r.name;
      const SystemSpec sys = cost::load_simumax_system(system);
      const double error =
          (cost::estimate(r.model, r.strategy, sys).iteration_ms - r.measured_ms) / r.measured_ms;
      EXPECT_LT(std::fabs(error), 0.14) << r.name << " " << error;
      ModelSpec full = r.model;
      full.lora = {};
      const double as_full =
          (cost::estimate(full, r.strategy, sys).iteration_ms - r.measured_ms) / r.measured_ms;
      EXPECT_GT(as_full, 0.3) << r.name << " " << as_full;
    }
  }
  EXPECT_EQ(rows, 5);
}

}  // namespace
}  // namespace preflight::analyzer

namespace preflight::analyzer {
namespace {

// MI300X's one published run (tests/data/time_corpus/mi300x_rocm_megatron.json: ROCm/Megatron-LM's Llama-2 7B
// FP8 on 8 GPUs, 10235.8 ms): the `mi300x` preset's compute scale 1.73 is fitted on it, so it is priced
// within 1 %; B200's efficiencies as transferred (the preset with that scale taken back) priced it −41.7 %.
// A fit of one run is exact (a common scale) and its held-out prediction, fitted on no run, is the system as
// given.
TEST(TimeFit, Mi300xsOnePublishedRun) {
  const auto runs = corpus_runs("mi300x_rocm_megatron.json");
  ASSERT_EQ(runs.size(), 1u);
  const SystemSpec mi300x = cost::load_simumax_system("mi300x");
  const TimeFit fit = fit_time(runs, mi300x);
  ASSERT_EQ(fit.runs.size(), 1u);
  EXPECT_NEAR(fit.runs[0].error_before(), 0.0, 0.01);
  EXPECT_NEAR(fit.runs[0].error_fitted(), 0.0, 1e-6);
  EXPECT_DOUBLE_EQ(fit.runs[0].held_out_ms, fit.runs[0].predicted_ms);
  const TimeFit transferred = fit_time(runs, scaled_system(mi300x, 1 / 1.73, 1.0));
  EXPECT_GT(transferred.runs[0].error_before(), -0.44);
  EXPECT_LT(transferred.runs[0].error_before(), -0.39);
  EXPECT_NEAR(transferred.compute_scale, 1.73, 0.02);  // the one row asks for the preset's scale
  try {
    fit_time({}, mi300x);
    ADD_FAILURE() << "a fit of no run";
  } catch (const preflight::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("at least one run"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace preflight::analyzer
