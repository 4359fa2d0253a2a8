#pragma once
/// @file collective.hpp
/// The collective operations of a training step, and every name they go by: one enum, one table.

#include <array>
#include <optional>
#include <string_view>

namespace preflight::analyzer {

enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, SendRecv };

/// Every collective, in enum order.
inline constexpr std::array<Collective, 5> kAllCollectives = {Collective::AllReduce, Collective::AllGather,
                                                              Collective::ReduceScatter, Collective::AllToAll,
                                                              Collective::SendRecv};

/// Our name, NCCL-style snake case: "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv".
const char* to_string(Collective c);

/// The key of a SimuMax system file's `networks.<net>.op` table: "all_reduce", "all_gather",
/// "reduce_scatter", "all2all", "p2p" (SimuMax `simumax/core/config.py`).
const char* simumax_key(Collective c);

/// The collective a SimuMax `op` key names; nullopt for an unknown key.
std::optional<Collective> collective_from_simumax_key(std::string_view key);

}  // namespace preflight::analyzer
