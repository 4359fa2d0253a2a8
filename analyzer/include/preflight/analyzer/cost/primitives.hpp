#pragma once
/// @file primitives.hpp
/// The three primitive costs of the SimuMax v1.2 model on a SystemSpec, and the choice of network per
/// parallel group.  Source: `simumax/core/config.py` (`SystemConfig.compute_op_accuracy_time`,
/// `compute_mem_access_time`, `compute_net_op_time`, `compute_end2end_time`) and
/// `simumax/core/perf_llm.py` (`analysis_pcie_net`, `analysis_high_link_net`); formulas in
/// notes/simumax.md §2.1–2.2.
///
/// Units: every time is in milliseconds; sizes in bytes; FLOPs as counts.  Bandwidths in the system
/// file are GiB/s (× 2^30), TFLOPS × 10^12, latencies µs.

#include <string>
#include <string_view>

#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer::cost {

/// Network name (a key of SystemSpec::networks) used by each parallel group.
struct NetworkChoice {
  std::string tp, cp, pp, dp, ep, etp, edp;
};

/// SimuMax `analysis_net`: NVLink-type systems use `high_intra_node` while the group fits in a node,
/// else `inter_node`; PCIe systems (`intra_with_pcie`) use `intra_node_pcie_{2,4,8}x` by span, else
/// `inter_node`.  Spans: tp; tp·cp; tp·cp·dp; ep·etp; etp; etp·ep·edp; pp: world/pp < node (NVLink) or
/// world (PCIe).  `low_intra_node` is never chosen.
NetworkChoice choose_networks(const Strategy& st, const SystemSpec& sys);

/// The group a collective runs in, as far as SimuMax's bandwidth rules care (`comm_stage`).
enum class CommGroup {
  Tp,    ///< tensor parallel (and anything without special inter-node rules)
  Cp,    ///< context parallel: all-to-all across nodes uses one NIC per group
  Ep,    ///< expert parallel: all-to-all across nodes uses one NIC per group
  Etp,   ///< expert tensor parallel
  DpCp,  ///< dense optimizer group dp·cp (stage "dp_cp"): measured PCIe DP bandwidth, NIC sharing by tp
  Edp,   ///< expert data parallel (stage "edp"): NIC sharing by ep·etp
  Pp,    ///< pipeline send/recv
};

/// Compute time of `flops` on op kind `op` (`matmul`, `sdp_fwd`, `group_matmul`, …; unknown kinds use
/// `default`), with the per-shape efficiency `shape_key` when the system file has one:
/// flops / (tflops·10^12·eff) · 10^3.  0 when flops is 0.
/// With `grouped_by_rows` a grouped-GEMM key (`ng=…, M=…, N=…, K=…, dtype=…, stage=…, …`) the file did not
/// measure takes the efficiency of the measured keys that differ from it only in rows per expert M and the
/// experts' count ng — interpolated in log M between the nearest measured M below and above, the nearest one
/// below their range; above it rising in log M from the last measured one to the dense GEMM's default
/// (`matmul` / `fp8_matmul`), reached at 3× the last measured M (each group is then a dense GEMM's size;
/// NeMo's DeepSeek-V3 BF16 H100 runs at 4096 … 8192 rows over a table measured to 1024); a dense default
/// below the last measured efficiency leaves that one.  A key whose widths N, K no measured key has takes
/// the mean, over the measured width families of its stage and dtypes, of each family's efficiency at its M
/// (the same rule), times the op's `unmeasured_shape_scale`; the op's flat default only when no family of its
/// stage and dtypes was measured (SimuMax's B200 file: DeepSeek-V2/V3 widths, BF16; its grouped-GEMM
/// efficiency rises ~2.5× from M 128 to 1024 and levels off near 0.4 of the peak by M 2460 … 9832 — the
/// flat default, fitted on GPT-OSS-120B's 1024 rows per expert, priced Qwen3-30B-A3B, Nemotron-3-Super /
/// Lightning and Moonlight at 3072 … 6195 rows 27 … 37 % slow on H100).  SimuMax (false) takes the flat
/// default for every unmeasured key.
/// @throws InputError when neither the op nor `default` exists in the system file.
double compute_time_ms(const SystemSpec& sys, std::string_view op, double flops, std::string_view shape_key,
                       bool grouped_by_rows = false);

/// Whether the system file measured `op` at `shape_key`: the key itself, or (a grouped-GEMM key) one that
/// differs from it only in rows per expert and the experts' count — the keys compute_time_ms() with
/// `grouped_by_rows` takes its efficiency from instead of the op's default.
bool measured_shape(const SystemSpec& sys, std::string_view op, std::string_view shape_key);

/// Memory-bound time of moving `bytes` through bandwidth model `name` (`default`, `permute_fwd`, `ce`, …;
/// unknown names use `default`): bytes / (gbps·2^30·eff) · 10^3 + latency_us / 10^3.  0 when bytes is 0.
/// @throws InputError when `default` is missing.
double memory_time_ms(const SystemSpec& sys, std::string_view name, double bytes);

/// `roofline`: max(compute, memory); `only_compute`: compute, or memory when compute is 0.
double end_to_end_ms(const SystemSpec& sys, double compute_ms, double memory_ms);

/// Time of one collective on network `net` among `n` ranks; `bytes` is the full (un-sharded) payload.
/// Traffic = bytes·scale·(1 + offset/n); PCIe DP groups use the measured `dp_fixed_bw`; `inter_node`
/// divides the bandwidth by the ranks sharing a NIC (p2p; ep/cp all-to-all; dp_cp/edp and pp — the embedding
/// group's gradient all-reduce — with `st`);
/// latency is multiplied by the ring steps (SimuMax: on 8-device nodes only, which all its systems are; here
/// on any node — a 72-GPU NVLink domain too).  0 when n is 1. `st` is given only for the DP gradient
/// collectives (as SimuMax does).  `span`: the consecutive ranks the group's members lie in, for the share of
/// an inter-node ep / cp all-to-all that leaves the node, (k − 1)/k with k = ceil(span / num_per_node); 0 = n
/// (SimuMax's: an ep group strided by expert tp, or a cp group by tp, then counts as one node however many it
/// spans).
/// @throws InputError when the network or its collective is missing from the system file.
double collective_time_ms(const SystemSpec& sys, Collective op, double bytes, int n, const std::string& net,
                          CommGroup group, const Strategy* st = nullptr, int span = 0);

/// Time of the RDMA phase of a DeepEP / HybridEP token exchange: `bytes` (bytes that leave this rank's
/// node) go over the rank's share of the node's NICs (`inter_node` bandwidth / num_per_node, the
/// network's all-to-all efficiency) to every peer at once — one kernel whose channels stream to all peers
/// concurrently, so one network latency (`bandwidth.latency_us`), not one per peer as NCCL's all-to-all is
/// priced (DeepEP's README: normal internode kernels reach the NIC's bandwidth at 4096 tokens).  0 when
/// bytes is 0.
/// @throws InputError when the system has no `inter_node` all-to-all.
double one_shot_exchange_ms(const SystemSpec& sys, double bytes);

/// Time of an intra-node token exchange made by one kernel (DeepEP / HybridEP intranode): `bytes` (this
/// rank's bytes that leave the GPU) over network `net`'s bandwidth per direction times `efficiency`, plus
/// one latency (the network's all-to-all `latency_us`, else the network's):
/// bytes / (gbps·2^30·efficiency) · 10^3 + latency / 10^3 ms.  0 when bytes is 0.
/// @throws InputError when the system has no network `net`.
double one_shot_intra_node_ms(const SystemSpec& sys, const std::string& net, double bytes, double efficiency);

/// Time to move `bytes` inside a node at `rate` bytes/s, at most the `high_intra_node` bandwidth, no
/// latency: bytes / min(rate, gbps·2^30) · 10^3 ms.  For copies bound by the few SMs of the kernels making
/// them (DeepEP's forwarding).
/// @throws InputError when the system has no `high_intra_node` network.
double forward_ms(const SystemSpec& sys, double bytes, double rate);

}  // namespace preflight::analyzer::cost
