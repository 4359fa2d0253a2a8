#include "preflight/analyzer/model/collective.hpp"

namespace preflight::analyzer {

namespace {

struct Names {
  Collective c;
  const char* ours;
  const char* simumax;
};

constexpr Names kNames[] = {
    {Collective::AllReduce, "all_reduce", "all_reduce"},
    {Collective::AllGather, "all_gather", "all_gather"},
    {Collective::ReduceScatter, "reduce_scatter", "reduce_scatter"},
    {Collective::AllToAll, "all_to_all", "all2all"},
    {Collective::SendRecv, "send_recv", "p2p"},
};

const Names& names(Collective c) {
  for (const Names& n : kNames)
    if (n.c == c) return n;
  return kNames[0];
}

}  // namespace

const char* to_string(Collective c) {
  return names(c).ours;
}

const char* simumax_key(Collective c) {
  return names(c).simumax;
}

std::optional<Collective> collective_from_simumax_key(std::string_view key) {
  for (const Names& n : kNames)
    if (key == n.simumax) return n.c;
  return std::nullopt;
}

}  // namespace preflight::analyzer
