// The answer as Megatron-LM flags: --pipeline-model-parallel-layout read back with Megatron's rules
// (megatron/core/transformer/pipeline_parallel_layer_layout.py: commas dropped, "(x)*n" then "c*n"
// unrolled, split on '|', segment v·S + s = chunk v of PP rank s) and the recompute flags.
#include <gtest/gtest.h>

#include <regex>

#include "preflight/analyzer/balance/report.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "sapp_cases.hpp"

namespace {

using namespace preflight::analyzer::balance;

std::string unroll(std::string s, const std::regex& re) {
  std::smatch m;
  std::string out;
  while (std::regex_search(s, m, re)) {
    out += m.prefix().str();
    for (int i = 0; i < std::stoi(m[2].str()); ++i) out += m[1].str();
    s = m.suffix().str();
  }
  return out + s;
}

std::vector<std::string> megatron_segments(std::string layout) {
  layout.erase(std::remove(layout.begin(), layout.end(), ','), layout.end());
  layout = unroll(layout, std::regex(R"(\(([^)]+)\)\*(\d+))"));
  layout = unroll(layout, std::regex(R"((.)\*(\d+))"));
  std::vector<std::string> segs(1);
  for (char c : layout) {
    if (c == '|')
      segs.emplace_back();
    else
      segs.back() += c;
  }
  return segs;
}

TEST(MegatronForm, LayoutReadsBackAsTheAnswersChunks) {
  // SAPP's Llama answer (16 stages × 3 chunks, 96 layers, offsets −1 … +1).
  const BalanceProblem p = sapp_cases::llama_problem(56000, true);
  const Assignment a = sapp_cases::llama_sapp_internal();
  const MegatronForm mf = megatron_form(p, a);
  const auto segs = megatron_segments(mf.layout);
  ASSERT_EQ(segs.size(), 48u) << mf.layout;
  int decoders = 0;
  for (int v = 0; v < 3; ++v)
    for (int s = 0; s < 16; ++s) {
      const std::string& seg = segs[static_cast<std::size_t>(v * 16 + s)];
      const auto t = std::count(seg.begin(), seg.end(), 't');
      EXPECT_EQ(t, a.chunk_layers(v, s)) << "chunk " << v << " stage " << s << ": " << mf.layout;
      decoders += static_cast<int>(t);
      EXPECT_EQ(seg.find('E') != std::string::npos, v == 0 && s == 0);
      EXPECT_EQ(seg.find('L') != std::string::npos, v == 2 && s == 15);
    }
  EXPECT_EQ(decoders, 96);
  // analyze reads it back (parse_pipeline_layout) into the same chunks.
  const auto chunks = preflight::analyzer::parse_pipeline_layout(mf.layout, 16, 96, 0);
  ASSERT_EQ(chunks.size(), 3u);
  for (int v = 0; v < 3; ++v)
    for (int s = 0; s < 16; ++s) EXPECT_EQ(chunks[v][s], a.chunk_layers(v, s));
  EXPECT_EQ(segs.front().front(), 'E');
  EXPECT_EQ(segs.back().back(), 'L');
  // Equal neighbours are grouped, so the string stays short.
  EXPECT_LT(mf.layout.size(), 120u) << mf.layout;
  // SAPP's answer recomputes select+comm ("both") layers: no Megatron flag for that.
  EXPECT_TRUE(mf.recompute_args.empty());
  EXPECT_NE(mf.note.find("comm recompute"), std::string::npos) << mf.note;
}

TEST(MegatronForm, RecomputeFlagsWhenOneSettingSaysIt) {
  const BalanceProblem p = sapp_cases::llama_problem(56000, true);
  // Two layers per chunk; the first of each fully recomputed → block method, 1 layer.
  Assignment a = uniform_assignment(p, Recompute::None);
  for (int v = 0; v < 3; ++v)
    for (int s = 0; s < 16; ++s) {
      ASSERT_EQ(a.chunk_layers(v, s), 2);
      a.at(0, Recompute::None, v, s) = 1;
      a.at(0, Recompute::Full, v, s) = 1;
    }
  MegatronForm mf = megatron_form(p, a);
  EXPECT_EQ(mf.layout, "Et*2|(t*2|)*46,t*2L");
  EXPECT_EQ(mf.recompute_args,
            (std::vector<std::string>{"--recompute-granularity full", "--recompute-method block",
                                      "--recompute-num-layers 1"}));
  // One chunk with both layers recomputed: no single N says it.
  a.at(0, Recompute::None, 1, 5) = 0;
  a.at(0, Recompute::Full, 1, 5) = 2;
  mf = megatron_form(p, a);
  EXPECT_TRUE(mf.recompute_args.empty());
  EXPECT_NE(mf.note.find("differs per chunk"), std::string::npos) << mf.note;
  // Every layer selective.
  mf = megatron_form(p, uniform_assignment(p, Recompute::Select));
  EXPECT_EQ(mf.recompute_args, std::vector<std::string>{"--recompute-granularity selective"});
  // No recompute at all: no flags, no note.
  mf = megatron_form(p, uniform_assignment(p, Recompute::None));
  EXPECT_TRUE(mf.recompute_args.empty());
  EXPECT_TRUE(mf.note.empty());
}

}  // namespace
