// SimuMax v1.2 primitive costs (simumax/core/config.py SystemConfig) and network choice
// (simumax/core/perf_llm.py analysis_net).  See primitives.hpp.
#include "preflight/analyzer/cost/primitives.hpp"
#include <cstdlib>
#include <iterator>
#include <map>
#include <optional>

#include <algorithm>
#include <cmath>

#include "preflight/common/error.hpp"

namespace preflight::analyzer::cost {

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string pcie_net(long span) {
  if (span <= 2) return "intra_node_pcie_2x";
  if (span <= 4) return "intra_node_pcie_4x";
  if (span <= 8) return "intra_node_pcie_8x";
  return "inter_node";
}

template <class Map>
const double* lookup_by_n(const Map& m, int n) {
  auto it = m.find(n);
  return it == m.end() ? nullptr : &it->second;
}
}  // namespace

NetworkChoice choose_networks(const Strategy& st, const SystemSpec& sys) {
  NetworkChoice n;
  long tp = st.tp, cp = st.cp, pp = st.pp, dp = st.dp(), ep = st.ep, etp = st.expert_tp();
  long edp = st.world_size / (ep * etp * pp);
  long node = sys.num_per_node;
  if (sys.intra_with_pcie) {
    n.pp = pcie_net(tp * dp * pp * cp);
    n.ep = pcie_net(ep * etp);
    n.tp = pcie_net(tp);
    n.cp = pcie_net(tp * cp);
    n.etp = pcie_net(etp);
    n.dp = pcie_net(tp * cp * dp);
    n.edp = pcie_net(etp * ep * edp);
  } else {
    auto pick = [&](long span) {
      return span <= node ? std::string("high_intra_node") : std::string("inter_node");
    };
    n.pp = st.world_size / pp < node ? "high_intra_node" : "inter_node";
    n.ep = pick(ep * etp);
    n.tp = pick(tp);
    n.cp = pick(tp * cp);
    n.etp = pick(etp);
    n.dp = pick(tp * cp * dp);
    n.edp = pick(etp * ep * edp);
  }
  return n;
}

namespace {

/// A grouped-GEMM key's fields: "ng=8, M=512, N=4096, …" → {"ng": "8", "M": "512", …}.
std::map<std::string, std::string> key_fields(std::string_view key) {
  std::map<std::string, std::string> f;
  std::size_t b = 0;
  while (b < key.size()) {
    std::size_t e = key.find(", ", b);
    if (e == std::string_view::npos) e = key.size();
    std::string_view item = key.substr(b, e - b);
    if (auto eq = item.find('='); eq != std::string_view::npos)
      f[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    b = e + 2;
  }
  return f;
}

/// Rows per expert, as a multiple of the largest measured count, at which a grouped GEMM's groups run at the
/// dense GEMM's default efficiency (between the two: in log M from the last measured efficiency).  Until stop
/// 45 the dense default applied just past the last measured M, a step (H100: 0.28 of peak at 1024 rows, 0.57
/// at 1025) that made the search trade GPT-OSS-120B's ep 8 for ep 16 on H100 partly for the step.  The factor
/// is fitted on the corpus's two BF16 H100 rows between the table's last M and 4× it (Megatron-LM's
/// Qwen3-30B-A3B ep 8 recipe at 2048 rows: -7.2 % with the step, -3.1 % here; Megatron-Bridge's
/// Nemotron-3.5-Lightning card at ~3000: +3.3 %, +4.3 %); NeMo's DeepSeek-V3 BF16 H100 runs at 4096 … 8192
/// rows stay at the dense default.
constexpr double kGroupedDenseRowsFactor = 3.0;

/// The efficiency of a grouped GEMM at rows per expert M from the measured shapes of its N, K and stage
/// (compute_time_ms); nullopt when none was measured.
std::optional<double> grouped_by_rows(const ComputeOp& op, std::string_view key, double dense_eff) {
  const auto want = key_fields(key);
  auto get = [](const std::map<std::string, std::string>& f, const char* k) {
    auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  };
  const std::string m = get(want, "M");
  if (m.empty()) return std::nullopt;
  auto same_but_rows = [&](std::map<std::string, std::string> f) {
    if (get(f, "M").empty()) return false;
    f.erase("M");
    f.erase("ng");
    auto w = want;
    w.erase("M");
    w.erase("ng");
    return f == w;
  };
  auto rows_of = [](const std::string& v) -> std::optional<double> {  // a positive number, else nullopt
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != '\0' || !(x > 0)) return std::nullopt;
    return x;
  };
  const auto rows = rows_of(m);
  if (!rows) return std::nullopt;
  std::map<double, std::pair<double, int>> by_m;  // M → (sum, count); keys whose M is no number are skipped
  for (const auto& [shape, eff] : op.accurate_efficient_factor) {
    const auto f = key_fields(shape);
    if (!same_but_rows(f)) continue;
    const auto at = rows_of(get(f, "M"));
    if (!at || !(eff > 0)) continue;
    auto& acc = by_m[*at];
    acc.first += eff;
    acc.second += 1;
  }
  if (by_m.empty()) return std::nullopt;
  auto mean = [](const std::pair<double, int>& a) { return a.first / a.second; };
  auto hi = by_m.lower_bound(*rows);
  if (hi == by_m.end()) {
    // Above the largest measured M the groups grow toward a dense GEMM's size: the efficiency rises in log M
    // from the last measured one to the dense GEMM's default, reached at kGroupedDenseRowsFactor times that
    // M.
    const double top = std::prev(hi)->first, e_top = mean(std::prev(hi)->second);
    if (dense_eff <= e_top) return e_top;
    const double t = std::min(1.0, std::log(*rows / top) / std::log(kGroupedDenseRowsFactor));
    return e_top + t * (dense_eff - e_top);
  }
  if (hi->first == *rows || hi == by_m.begin()) return mean(hi->second);
  auto lo = std::prev(hi);
  const double t = std::log(*rows / lo->first) / std::log(hi->first / lo->first);
  return mean(lo->second) + t * (mean(hi->second) - mean(lo->second));
}

/// The efficiency of a grouped GEMM whose widths (N, K) the system file did not measure: the mean, over the
/// measured width families of the same stage and dtypes, of each family's efficiency at this key's rows per
/// expert M (grouped_by_rows); nullopt when no family of its stage and dtypes was measured.
std::optional<double> grouped_across_families(const ComputeOp& op, std::string_view key, double dense_eff) {
  const auto want = key_fields(key);
  const auto m = want.find("M");
  if (m == want.end()) return std::nullopt;
  auto without_shape = [](std::map<std::string, std::string> f) {
    for (const char* k : {"M", "ng", "N", "K"}) f.erase(k);
    return f;
  };
  const auto base = without_shape(want);
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::string>>
      families;  // (N, K) → a key
  for (const auto& [shape, eff] : op.accurate_efficient_factor) {
    const auto f = key_fields(shape);
    const auto n = f.find("N"), k = f.find("K");
    if (n == f.end() || k == f.end() || without_shape(f) != base) continue;
    families.emplace(std::make_pair(n->second, k->second), f);
  }
  double sum = 0;
  int count = 0;
  for (auto& [widths, f] : families) {
    f["M"] = m->second;
    std::string probe;
    for (const auto& [name, v] : f) probe += (probe.empty() ? "" : ", ") + name + "=" + v;
    if (auto e = grouped_by_rows(op, probe, dense_eff)) {
      sum += *e;
      ++count;
    }
  }
  if (count == 0) return std::nullopt;
  return sum / count;
}

}  // namespace

bool measured_shape(const SystemSpec& sys, std::string_view op_name, std::string_view shape_key) {
  auto it = sys.op.find(std::string(op_name));
  if (it == sys.op.end() || shape_key.empty() || it->second.accurate_efficient_factor.empty()) return false;
  const ComputeOp& op = it->second;
  if (op.accurate_efficient_factor.count(std::string(shape_key))) return true;
  return shape_key.rfind("ng=", 0) == 0 && grouped_by_rows(op, shape_key, 0.0).has_value();
}

double compute_time_ms(const SystemSpec& sys, std::string_view op_name, double flops,
                       std::string_view shape_key, bool grouped_rows) {
  if (flops == 0) return 0;
  auto it = sys.op.find(std::string(op_name));
  if (it == sys.op.end()) {
    it = sys.op.find("default");
    if (it == sys.op.end())
      throw InputError(sys.name + ": accelerator.op",
                       "has neither '" + std::string(op_name) + "' nor 'default'");
  }
  const ComputeOp& op = it->second;
  double eff = op.efficient_factor;
  if (!shape_key.empty() && !op.accurate_efficient_factor.empty()) {
    auto hit = op.accurate_efficient_factor.find(std::string(shape_key));
    if (hit != op.accurate_efficient_factor.end()) {
      eff = hit->second;
    } else if (grouped_rows && shape_key.rfind("ng=", 0) == 0) {
      // Beyond the largest measured rows per expert each group is a dense GEMM's size: at least the dense
      // GEMM's default efficiency.
      auto dense = sys.op.find(op_name.rfind("fp8_", 0) == 0 ? "fp8_matmul" : "matmul");
      const double dense_eff = dense != sys.op.end() ? dense->second.efficient_factor : 0.0;
      if (auto e = grouped_by_rows(op, shape_key, dense_eff))
        eff = *e;
      else if (auto x = grouped_across_families(op, shape_key, dense_eff))
        eff = *x * op.unmeasured_shape_scale;
    }
  }
  if (eff <= 0)
    throw InputError((sys.source.empty() ? sys.name : sys.source) + ": accelerator.op." + it->first,
                     "has efficiency 0 for a kernel this run needs" +
                         (shape_key.empty() ? std::string() : " (shape " + std::string(shape_key) + ")"));
  return flops / (op.tflops * 1e12 * eff) * 1e3;
}

double memory_time_ms(const SystemSpec& sys, std::string_view name, double bytes) {
  auto it = sys.memory_bw.find(std::string(name));
  if (it == sys.memory_bw.end()) {
    it = sys.memory_bw.find("default");
    if (it == sys.memory_bw.end())
      throw InputError(sys.name + ": accelerator.bandwidth", "has no 'default' bandwidth");
  }
  if (bytes == 0) return 0;
  const Bandwidth& bw = it->second;
  return bytes / (bw.gbps * kGiB * bw.efficient_factor) * 1e3 + bw.latency_us / 1e3;
}

double end_to_end_ms(const SystemSpec& sys, double compute_ms, double memory_ms) {
  if (sys.mode == "only_compute") return compute_ms == 0 ? memory_ms : compute_ms;
  return std::max(compute_ms, memory_ms);
}

namespace {
/// The system's network `net`; InputError naming the system and what needed it when there is none.
const Network& network_named(const SystemSpec& sys, const std::string& net, const std::string& needed_for) {
  auto nit = sys.networks.find(net);
  if (nit == sys.networks.end())
    throw InputError(sys.name + ": networks", "has no network '" + net + "' (needed for " + needed_for + ")");
  return nit->second;
}
}  // namespace

double collective_time_ms(const SystemSpec& sys, Collective kind, double size, int n, const std::string& net,
                          CommGroup group, const Strategy* st, int span) {
  const Network& nw = network_named(
      sys, net, std::string("a ") + simumax_key(kind) + " among " + std::to_string(n) + " ranks");
  auto oit = nw.op.find(simumax_key(kind));
  if (oit == nw.op.end())
    throw InputError(sys.name + ": networks." + net + ".op",
                     std::string("has no '") + simumax_key(kind) + "'");
  const NetOp& op = oit->second;
  double eff = op.efficient_factor ? *op.efficient_factor : nw.bandwidth.efficient_factor;
  double actual = size * op.scale;
  double chunk = actual / n;
  actual += chunk * op.offset;

  bool dense_dp = group == CommGroup::DpCp;
  if (net.find("pcie") != std::string::npos && dense_dp) {
    if (const double* fixed = lookup_by_n(op.dp_fixed_bw, n); fixed && *fixed != 0)
      return actual / (*fixed * kGiB) * 1000.0;
  }
  double bw = nw.bandwidth.gbps;
  if (sys.fc8 && net == "high_intra_node")
    bw *= (n - 1) / static_cast<double>(std::max(1, sys.mesh_devices - 1));
  if (net == "inter_node") {
    if (kind == Collective::SendRecv) bw /= sys.num_per_node;
    if (kind == Collective::AllToAll && (group == CommGroup::Ep || group == CommGroup::Cp)) {
      double k = std::max(1.0, std::ceil(static_cast<double>(span > 0 ? span : n) / sys.num_per_node));
      actual = (k - 1) / k * actual;
      bw /= sys.num_per_node;
    }
    if ((kind == Collective::AllReduce || kind == Collective::AllGather ||
         kind == Collective::ReduceScatter) &&
        st) {
      if (dense_dp)
        bw /= std::min(sys.num_per_node, st->tp);
      else if (group == CommGroup::Edp)
        bw /= std::min(sys.num_per_node, st->ep * st->expert_tp());
      else if (group == CommGroup::Pp)  // one pair per GPU of the stage, all at once: a NIC's share each
        bw /= sys.num_per_node;
    }
  }
  double base_latency = op.latency_us ? *op.latency_us : nw.bandwidth.latency_us;
  double fixed = 0;
  if (const double* f = lookup_by_n(op.fixed_latency_us_by_comm_num, n))
    fixed = *f;
  else if (op.fixed_latency_us)
    fixed = *op.fixed_latency_us;
  else if (const double* g = lookup_by_n(nw.bandwidth.fixed_latency_us_by_comm_num, n))
    fixed = *g;
  else
    fixed = nw.bandwidth.fixed_latency_us;
  if (n == 1) return 0;
  // A latency per ring step (per peer for an all-to-all).  SimuMax applies it on 8-device nodes only (all its
  // systems have 8); a 72-GPU NVLink domain's 64-rank all-to-all has 63 peers as well.
  double latency = base_latency;
  if (kind != Collective::SendRecv) latency = base_latency * (n + op.offset) * op.scale;
  return actual / (bw * kGiB * eff) * 1e3 + (latency + fixed) / 1e3;
}

double one_shot_exchange_ms(const SystemSpec& sys, double bytes) {
  const Network& nw = network_named(sys, "inter_node", "an inter-node token exchange");
  auto oit = nw.op.find(simumax_key(Collective::AllToAll));
  if (oit == nw.op.end()) throw InputError(sys.name + ": networks.inter_node.op", "has no 'all2all'");
  if (bytes <= 0) return 0;
  const NetOp& op = oit->second;
  const double eff = op.efficient_factor ? *op.efficient_factor : nw.bandwidth.efficient_factor;
  const double bw = nw.bandwidth.gbps / std::max(1, sys.num_per_node);
  const double latency = op.latency_us ? *op.latency_us : nw.bandwidth.latency_us;
  return bytes * op.scale / (bw * kGiB * eff) * 1e3 + latency / 1e3;
}

double one_shot_intra_node_ms(const SystemSpec& sys, const std::string& net, double bytes,
                              double efficiency) {
  const Network& nw = network_named(sys, net, "a token exchange");
  if (bytes <= 0) return 0;
  auto oit = nw.op.find(simumax_key(Collective::AllToAll));
  const double latency =
      oit != nw.op.end() && oit->second.latency_us ? *oit->second.latency_us : nw.bandwidth.latency_us;
  return bytes / (nw.bandwidth.gbps * kGiB * efficiency) * 1e3 + latency / 1e3;
}

double forward_ms(const SystemSpec& sys, double bytes, double rate) {
  const Network& nw = network_named(sys, "high_intra_node", "a token exchange");
  if (bytes <= 0) return 0;
  return bytes / std::min(rate, nw.bandwidth.gbps * kGiB) * 1e3;
}

}  // namespace preflight::analyzer::cost
