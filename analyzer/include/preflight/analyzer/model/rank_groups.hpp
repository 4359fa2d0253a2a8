#pragma once
/// @file rank_groups.hpp
/// Process groups as Megatron-LM builds them (`megatron/core/parallel_state.py`: `RankGenerator`,
/// `generate_masked_orthogonal_rank_groups`).
///
/// Ranks are laid out in mixed radix over the parallel dimensions in `order` with the FIRST token
/// varying fastest: for the default "tp-cp-ep-dp-pp",
/// rank = tp_rank + tp·(cp_rank + cp·(ep_rank + ep·(dp_rank + dp·pp_rank))).  A group for a set of
/// tokens holds the ranks that differ only in those tokens; groups are listed by increasing index
/// over the other tokens, members by increasing index over the masked tokens.

#include <string>
#include <vector>

#include "preflight/analyzer/model/strategy.hpp"

namespace preflight::analyzer {

using RankGroupList = std::vector<std::vector<int>>;

/// Megatron's `generate_masked_orthogonal_rank_groups(world_size, parallel_size, mask)`.
/// @param world_size     product of parallel_size
/// @param parallel_size  sizes in order (first varies fastest)
/// @param mask           true for the dimensions that form a group
RankGroupList masked_orthogonal_rank_groups(int world_size, const std::vector<int>& parallel_size,
                                            const std::vector<bool>& mask);

/// Megatron's `RankGenerator(tp, ep, dp, pp, cp, order)`.
class RankGenerator {
 public:
  /// @throws InputError if a dimension missing from `order` has size != 1, or the order has an unknown token.
  RankGenerator(int tp, int ep, int dp, int pp, int cp, const std::string& order);
  /// Groups for a '-'-joined token set, e.g. "tp", "dp-cp", "tp-pp".
  RankGroupList get_ranks(const std::string& tokens) const;
  int world_size() const { return world_size_; }

 private:
  std::vector<std::string> order_;
  std::vector<int> sizes_;
  int world_size_ = 1;
};

/// All groups of a strategy: dense groups from RankGenerator(tp, 1, dp, pp, cp, order) and expert
/// groups from RankGenerator(etp, ep, expert_dp, pp, 1, order) as Megatron ≥ core_r0.10 builds them.
struct RankGroups {
  RankGroupList tp, pp, dp, cp, dp_cp, tp_cp;  ///< dense layers
  RankGroupList ep, etp, edp;                  ///< expert layers (empty for dense models)
  RankGroupList embedding;                     ///< first and last rank of each pp group (pp > 1)
};

/// @throws InputError when the sizes do not multiply to the world size.
RankGroups megatron_rank_groups(const Strategy& strategy, bool moe);

/// Device name of a global rank: `n{rank / gpus_per_node}_g{rank % gpus_per_node}`.
std::string device_name(int rank, int gpus_per_node);

}  // namespace preflight::analyzer
