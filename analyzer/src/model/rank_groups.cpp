#include "preflight/analyzer/model/rank_groups.hpp"

#include <sstream>

#include "preflight/common/error.hpp"

namespace preflight::analyzer {

namespace {
std::vector<int> prefix_product(const std::vector<int>& a) {
  std::vector<int> r{1};
  for (int v : a) r.push_back(r.back() * v);
  return r;
}
std::vector<int> decompose(int index, const std::vector<int>& shape) {
  std::vector<int> idx;
  int stride = 1;
  for (int s : shape) {
    idx.push_back((index / stride) % s);
    stride *= s;
  }
  return idx;
}
int inner(const std::vector<int>& a, const std::vector<int>& b) {
  int s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string t;
  while (std::getline(in, t, '-')) out.push_back(t);
  return out;
}
}  // namespace

RankGroupList masked_orthogonal_rank_groups(int world_size, const std::vector<int>& parallel_size,
                                            const std::vector<bool>& mask) {
  std::vector<int> masked_shape, unmasked_shape, masked_stride, unmasked_stride;
  std::vector<int> global_stride = prefix_product(parallel_size);
  for (std::size_t i = 0; i < parallel_size.size(); ++i) {
    (mask[i] ? masked_shape : unmasked_shape).push_back(parallel_size[i]);
    (mask[i] ? masked_stride : unmasked_stride).push_back(global_stride[i]);
  }
  int group_size = prefix_product(masked_shape).back();
  int num_groups = world_size / group_size;
  RankGroupList ranks;
  ranks.reserve(num_groups);
  for (int g = 0; g < num_groups; ++g) {
    std::vector<int> gidx = decompose(g, unmasked_shape);
    std::vector<int> group;
    group.reserve(group_size);
    for (int r = 0; r < group_size; ++r)
      group.push_back(inner(decompose(r, masked_shape), masked_stride) + inner(gidx, unmasked_stride));
    ranks.push_back(std::move(group));
  }
  return ranks;
}

RankGenerator::RankGenerator(int tp, int ep, int dp, int pp, int cp, const std::string& order) {
  std::vector<std::pair<std::string, int>> sizes = {
      {"tp", tp}, {"pp", pp}, {"dp", dp}, {"ep", ep}, {"cp", cp}};
  order_ = split(order);
  for (const auto& tok : order_) {
    bool ok = false;
    for (const auto& [name, size] : sizes) ok = ok || name == tok;
    if (!ok) throw InputError("rank order", "unknown token '" + tok + "' in '" + order + "'");
  }
  for (const auto& [name, size] : sizes) {
    bool in_order = false;
    for (const auto& tok : order_) in_order = in_order || tok == name;
    if (!in_order) {
      if (size != 1)
        throw InputError("rank order",
                         "'" + order + "' has no '" + name + "' but its size is " + std::to_string(size));
      order_.push_back(name);
    }
  }
  for (const auto& tok : order_)
    for (const auto& [name, size] : sizes)
      if (name == tok) sizes_.push_back(size);
  for (int s : sizes_) world_size_ *= s;
}

RankGroupList RankGenerator::get_ranks(const std::string& tokens) const {
  std::vector<std::string> want = split(tokens);
  std::vector<bool> mask(order_.size(), false);
  for (const auto& w : want) {
    bool found = false;
    for (std::size_t i = 0; i < order_.size(); ++i)
      if (order_[i] == w) mask[i] = found = true;
    if (!found) throw InputError("rank groups", "unknown token '" + w + "'");
  }
  return masked_orthogonal_rank_groups(world_size_, sizes_, mask);
}

RankGroups megatron_rank_groups(const Strategy& st, bool moe) {
  RankGroups g;
  int dp = st.dp();
  if (st.tp * st.pp * st.cp * dp != st.world_size)
    throw InputError("world size",
                     "tp·pp·cp·dp does not equal the world size " + std::to_string(st.world_size));
  RankGenerator dense(st.tp, 1, dp, st.pp, st.cp, st.order);
  g.tp = dense.get_ranks("tp");
  g.pp = dense.get_ranks("pp");
  g.dp = dense.get_ranks("dp");
  g.cp = dense.get_ranks("cp");
  g.dp_cp = dense.get_ranks("dp-cp");
  g.tp_cp = dense.get_ranks("tp-cp");
  if (st.pp > 1)
    for (const auto& grp : g.pp) g.embedding.push_back({grp.front(), grp.back()});
  if (moe) {
    int edp = st.expert_dp();
    if (st.expert_tp() * st.ep * st.pp * edp != st.world_size)
      throw InputError("world size",
                       "etp·ep·pp·edp does not equal the world size " + std::to_string(st.world_size));
    // Megatron: expert_decoder_rank_generator = RankGenerator(etp, ep, expert_dp, pp, cp=1, order).
    RankGenerator expert(st.expert_tp(), st.ep, edp, st.pp, 1, st.order);
    g.ep = expert.get_ranks("ep");
    g.etp = expert.get_ranks("tp");
    g.edp = expert.get_ranks("dp");
  }
  return g;
}

std::string device_name(int rank, int gpus_per_node) {
  return "n" + std::to_string(rank / gpus_per_node) + "_g" + std::to_string(rank % gpus_per_node);
}

}  // namespace preflight::analyzer
