// Rank groups against a brute-force reading of Megatron's layout: rank = Σ coord_i · Π_{j<i} size_j over
// the order, a group = ranks equal in every coordinate outside the masked set.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "preflight/analyzer/model/rank_groups.hpp"
#include "preflight/common/error.hpp"

using namespace preflight::analyzer;

namespace {

using Groups = std::vector<std::vector<int>>;

Groups brute_force(const std::vector<int>& sizes, const std::vector<bool>& mask) {
  int world = 1;
  for (int s : sizes) world *= s;
  std::map<std::vector<int>, std::vector<int>> by_key;
  for (int r = 0; r < world; ++r) {
    std::vector<int> key;
    int rest = r;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      int coord = rest % sizes[i];
      rest /= sizes[i];
      if (!mask[i]) key.push_back(coord);
    }
    by_key[key].push_back(r);
  }
  Groups out;
  for (auto& [k, v] : by_key) out.push_back(v);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(RankGroups, MatchesBruteForceForEveryLayoutUpTo64) {
  const std::vector<std::string> tokens = {"tp", "cp", "ep", "dp", "pp"};
  const std::vector<std::string> queries = {"tp", "cp", "ep", "dp", "pp", "dp-cp", "tp-cp", "tp-pp", "tp-ep"};
  int layouts = 0;
  for (int tp = 1; tp <= 64; ++tp)
    for (int cp = 1; tp * cp <= 64; ++cp)
      for (int ep = 1; tp * cp * ep <= 64; ++ep)
        for (int dp = 1; tp * cp * ep * dp <= 64; ++dp)
          for (int pp = 1; tp * cp * ep * dp * pp <= 64; ++pp) {
            ++layouts;
            RankGenerator gen(tp, ep, dp, pp, cp, "tp-cp-ep-dp-pp");
            std::vector<int> sizes = {tp, cp, ep, dp, pp};
            for (const auto& q : queries) {
              std::vector<bool> mask(5, false);
              for (std::size_t i = 0; i < tokens.size(); ++i)
                mask[i] = ("-" + q + "-").find("-" + tokens[i] + "-") != std::string::npos;
              ASSERT_EQ(gen.get_ranks(q), brute_force(sizes, mask))
                  << "tp" << tp << " cp" << cp << " ep" << ep << " dp" << dp << " pp" << pp << " query " << q;
            }
          }
  EXPECT_GT(layouts, 1000);
}

TEST(RankGroups, MegatronDocstringExample) {
  // parallel_state.py: 16 GPUs, tp 2, pp 4 → 8 dp groups [g0,g2],[g1,g3],…; pp groups [g0,g4,g8,g12],…
  RankGenerator gen(2, 1, 2, 4, 1, "tp-cp-ep-dp-pp");
  Groups dp = gen.get_ranks("dp");
  ASSERT_EQ(dp.size(), 8u);
  EXPECT_EQ(dp[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(dp[1], (std::vector<int>{1, 3}));
  EXPECT_EQ(dp[2], (std::vector<int>{4, 6}));
  Groups pp = gen.get_ranks("pp");
  ASSERT_EQ(pp.size(), 4u);
  EXPECT_EQ(pp[0], (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(pp[3], (std::vector<int>{3, 7, 11, 15}));
  Groups tp = gen.get_ranks("tp");
  EXPECT_EQ(tp[7], (std::vector<int>{14, 15}));
}

TEST(RankGroups, TpPpDpOrderPutsPipelineInsideData) {
  // tp-pp-dp: rank = tp + t·(pp + p·dp); with tp 2, pp 2, dp 2 the pp group of rank 0 is {0, 2}.
  RankGenerator gen(2, 1, 2, 2, 1, "tp-pp-dp");
  EXPECT_EQ(gen.get_ranks("pp")[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(gen.get_ranks("dp")[0], (std::vector<int>{0, 4}));
}

TEST(RankGroups, MissingTokenWithSizeAboveOneIsRejected) {
  EXPECT_THROW(RankGenerator(2, 2, 1, 1, 1, "tp-pp-dp"), preflight::InputError);
}

TEST(RankGroups, StrategyGroupsIncludeExpertGroups) {
  Strategy st;
  st.world_size = 16;
  st.gpus_per_node = 8;
  st.tp = 2;
  st.pp = 2;
  st.ep = 2;
  RankGroups g = megatron_rank_groups(st, true);
  EXPECT_EQ(g.dp.size(), 4u);  // dp = 4: 16 / 4 groups
  EXPECT_EQ(g.dp[0], (std::vector<int>{0, 2, 4, 6}));
  // experts: etp = tp = 2, ep 2, edp = 16/(2·2·2) = 2; rank = etp + 2·(ep + 2·(edp + 2·pp))
  EXPECT_EQ(g.ep[0], (std::vector<int>{0, 2}));
  EXPECT_EQ(g.edp[0], (std::vector<int>{0, 4}));
  EXPECT_EQ(g.embedding[0], (std::vector<int>{0, 8}));
  EXPECT_EQ(device_name(13, 8), "n1_g5");
}
