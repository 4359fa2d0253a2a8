// The MLP block: activations (SwiGLU, GeLU), the dense MLP, and MoE (router, token permutation, grouped
// GEMMs, shared experts).  SimuMax: dense_module.py MLP, Swiglu, Gelu; moe_module.py Router, Permutation,
// UnPermutation, GroupLinearCol/Row, ExpertMLP.
#include <algorithm>
#include <cmath>

#include "leaf_build.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::cost::detail {

// --- Swiglu / Gelu -------------------------------------------------------------------------------
void price_swiglu(const Ctx& c, Leaf& l) {
  double in_b = l.n_in * c.e, out_b = l.n_out * c.e;
  l.cache = c.st->fused_swiglu ? 2 * out_b : 3 * out_b;
  if (l.has_cached_inputs) l.cache -= 2 * out_b;
  l.fwd_peak = l.bwd_peak = in_b + out_b;
  Pass& p = l.pass;
  if (c.st->fused_swiglu) {
    p.fwd_bytes = in_b + out_b;
    p.bwd_act_bytes = in_b + out_b;
  } else {
    p.fwd_bytes = 2 * out_b + 3 * out_b;
    p.bwd_act_bytes = 2 * out_b + 2 * 3 * out_b;
  }
  if (l.weighted_silu) {  // probs [b, s, E] of the router ride along
    double probs = l.b * l.s * l.experts;
    l.fwd_peak += probs * 8;
    l.bwd_peak += probs * 8;
    p.fwd_bytes += probs * c.e;
    p.bwd_act_bytes += probs * c.e;
  }
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

void price_gelu(const Ctx& c, Leaf& l) {
  double in_b = l.n_in * c.e;
  l.cache = 3 * in_b;
  if (l.has_cached_inputs) l.cache -= in_b;
  l.fwd_peak = l.bwd_peak = 2 * in_b;
  l.pass.fwd_bytes = 2 * in_b;
  l.pass.bwd_act_bytes = 2 * in_b;
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

// --- Router --------------------------------------------------------------------------------------
// Geometry: b, s = local (sequence-parallel) tokens, in = hidden, out = experts.
void price_router(const Ctx& c, Leaf& l) {
  double x = l.b * l.s * l.in;
  double w = l.in * l.out * c.e, in_b = x * c.e, logits = l.b * l.s * l.out * c.e;
  l.cache = l.has_cached_inputs ? 0 : in_b;
  l.fwd_peak = l.bwd_peak = in_b + logits + w;
  dense_params(c, l, l.in * l.out, c.e, l.in * l.out);
  Pass& p = l.pass;
  double base = 2 * x * l.out;
  p.fwd_flops = p.bwd_act_flops = p.bwd_w_flops = base;
  double lin = w + in_b + logits;
  double soft = logits * ((c.sp && c.tp > 1) ? c.tp : 1);
  p.fwd_bytes = lin + 2 * soft;
  p.bwd_act_bytes = lin + 3 * soft;
  p.bwd_w_bytes = lin;
  finish_recompute(l);
  double M = l.s * (c.sp ? c.tp : 1);
  const char* grad_dtype = c.st->grad_reduce_in_bf16 ? "bf16" : "fp32";
  price_passes(c, l, "matmul", "matmul", "matmul", gemm_key(l.b, M, l.in, l.out, "TN", false, "bf16"),
               gemm_key(l.b, M, l.out, l.in, "NN", false, "bf16"),
               gemm_key(1, l.out, l.b * M, l.in, "NT", true, grad_dtype));
}

// --- Permutation / UnPermutation -----------------------------------------------------------------
namespace {

/// Expected number of the `units` equal parts of the expert set (nodes, or the ep ranks) that hold at least
/// one of a token's top-k experts, the experts spread evenly.  Without group limits the top-k are k of E and
/// a unit is missed with P = C(E − E/units, k) / C(E, k).  With group-limited routing (G groups, g chosen;
/// --moe-router-num-groups / --moe-router-group-topk): when a unit holds whole groups it is missed when none
/// of the g groups lies on it (the same formula over groups); when a group spans several units the token's k
/// experts lie among the g·E/G experts of g·units/G units.
double units_hit_per_token(const MoESpec& moe, int units) {
  if (units <= 1) return 1;
  auto hit = [](double n, int r, double units_of_n) {  // units_of_n units share n items; r drawn
    const double per = n / units_of_n;
    double miss = 1;
    for (int i = 0; i < r; ++i) miss *= std::max(0.0, (n - per - i) / (n - i));
    return units_of_n * (1 - miss);
  };
  const int k = std::min(moe.router_topk, moe.num_experts);
  const int G = moe.router_num_groups, g = moe.router_group_topk;
  if (G > 1 && g > 0 && g < G) {
    if (G % units == 0) return hit(G, g, units);
    if (units % G == 0) {
      const double experts = static_cast<double>(g) * moe.num_experts / G;
      return hit(experts, k, static_cast<double>(g) * units / G);
    }
  }
  return hit(moe.num_experts, k, units);
}

/// Expected number of other nodes one token's routed copies reach when the ep group spans `nodes` nodes:
/// by symmetry the token's own node is among the nodes hit with probability hits / nodes.
double remote_nodes_per_token(const MoESpec& moe, int nodes) {
  if (nodes <= 1) return 0;
  return units_hit_per_token(moe, nodes) * (nodes - 1) / nodes;
}

/// Rate (bytes/s) at which DeepEP's internode kernels forward tokens over NVLink inside the destination
/// node: 133 … 145 GB/s on H200 at EP 16 with 24 SMs (deepseek-ai/DeepEP issue 493), 140 GB/s on H800
/// (its legacy README's EP 16 row is NVLink-bound at 43 GB/s logical RDMA: 2 × 21.5 GB/s on the wire; a
/// maintainer's answer in issue 285).  The same on both NVLink generations: the kernels' SMs, not the links,
/// bound it; capped at the link's bandwidth.  No Blackwell figure is published for these kernels.
constexpr double kFlexForwardBytesPerS = 145e9;

/// Fraction of the intra-node link (`high_intra_node` bandwidth per direction) at which DeepEP / HybridEP's
/// intranode kernels move the copies of a token exchange that leave the GPU (each token once per destination
/// rank).  Fitted on NeMo's Qwen3-30B-A3B MXFP8 rows on one DGX-B200 node as those releases ran them
/// (HybridEP on 32 SMs, exchanges exposed: no expert-parallel overlap; 26.02.01 … 26.04.01):
/// tests/data/time_corpus/b200_nemo_moe.json.  About 480 GB/s on NVLink 5 — what HybridEP's own benchmark
/// publishes (DeepEP branch hybrid-ep, Hybrid-EP README: 4096 tokens of 7168, top-8, GB200 with 32 SMs, 546 /
/// 569 GB/s dispatch / combine algorithm bandwidth at 8 ranks, 484 / 465 at 32; these exchanges priced so
/// take 0.57 / 0.85 ms, the benchmark's 0.58 / 0.87), so it is kept as is since stop 31, when those rows went
/// to fit the experts' host time (SystemSpec::moe_host_us_per_expert).
constexpr double kFlexIntraNodeLinkFraction = 0.5;

double flex_exchange_ms(const Ctx& c, double routed, double local);

/// One token exchange over the expert-parallel group (a dispatch or a combine, forward or backward):
/// `routed` = bytes of this rank's routed copies (tokens · top-k rows), `local` = bytes of its tokens before
/// routing, `gather` = the all-gather side of the allgather dispatcher (dispatch forward / combine
/// backward; the other side reduce-scatters).  Strategy::moe_dispatcher says how each one moves.
double ep_exchange_ms(const Ctx& c, double routed, double local, bool gather) {
  // The busiest rank (--moe-load-imbalance) receives its share times the factor in a token exchange, and
  // sends as much back in the combine; the allgather dispatcher gathers every token either way.
  const double imb = moe_busiest_rank_factor(c.m->moe, *c.st);
  switch (c.st->moe_dispatcher) {
    case MoeDispatcher::AllGather:
      // MoEAllGatherTokenDispatcher: the tokens of the expert-tp × ep group (`tp_ep`) are gathered whole
      // (ep · etp · local bytes) and the combine reduce-scatters them; top-k does not change the volume.
      return net(c, gather ? Collective::AllGather : Collective::ReduceScatter, local * c.ep * c.etp,
                 c.ep * c.etp, c.nets.ep, CommGroup::Ep);
    case MoeDispatcher::AllToAll:
      return imb * net(c, Collective::AllToAll, routed, c.ep, c.nets.ep, CommGroup::Ep);
    case MoeDispatcher::Flex:
      break;
  }
  return imb * flex_exchange_ms(c, routed, local);
}

/// A DeepEP / HybridEP exchange at balanced routing (ep_exchange_ms).
double flex_exchange_ms(const Ctx& c, double routed, double local) {
  // DeepEP / HybridEP.  Inside one node: every token once to each other rank holding any of its experts, one
  // kernel (one latency) at kFlexIntraNodeLinkFraction of the NVLink bandwidth.  Across nodes a
  // token goes once per other node holding any of its experts (RDMA, one kernel streaming to every peer)
  // and is forwarded there, once per destination rank, over NVLink at kFlexForwardBytesPerS;
  // the two phases are pipelined: the slower one is the exchange's time.  This reproduces DeepEP's published
  // internode rates (NVLink-bound at EP 16, RDMA-bound at EP 32 / 64).
  const int node = std::max(1, c.sys->num_per_node);
  const int nodes = (c.ep * c.etp + node - 1) / node;  // the ep group is strided by expert tp
  if (c.nets.ep != "inter_node" || nodes <= 1) {
    if (c.nets.ep != "high_intra_node")  // a PCIe or other intra-node network: NCCL's all-to-all
      return net(c, Collective::AllToAll, routed, c.ep, c.nets.ep, CommGroup::Ep);
    // One kernel writes each token once to every other rank holding any of its experts.
    const double leaving = local * units_hit_per_token(c.m->moe, c.ep) * (c.ep - 1) / c.ep;
    return one_shot_intra_node_ms(*c.sys, c.nets.ep, leaving, kFlexIntraNodeLinkFraction);
  }
  const double per_rank = local * units_hit_per_token(c.m->moe, c.ep);
  const double rdma_ms = one_shot_exchange_ms(*c.sys, local * remote_nodes_per_token(c.m->moe, nodes));
  const double nvl_ms = forward_ms(*c.sys, per_rank, kFlexForwardBytesPerS);
  return std::max(rdma_ms, nvl_ms);
}

}  // namespace

/// Whether a dispatch / combine exchanges tokens: over ep, or for the allgather dispatcher over its
/// expert-tp × ep group (Megatron's `tp_ep`).
bool ep_exchanges(const Ctx& c) {
  return c.ep > 1 || (c.etp > 1 && c.st->moe_dispatcher == MoeDispatcher::AllGather);
}

/// Without sequence parallelism every rank of the expert-tp group (= tp) holds the same tokens (MindFormers'
/// use_seq_parallel: False; Megatron requires sequence parallelism for MoE with tp > 1): the experts run as a
/// tensor-parallel MLP on them, with no token gather and scatter over expert tp, only the sums of a column /
/// row-parallel pair.  SimuMax v1.2 prices the gather of `permuted · etp` rows either way (kept with
/// --simumax-compat).
bool tokens_replicated_over_etp(const Ctx& c) {
  return !c.sp && c.etp > 1 && c.etp == c.tp && !c.st->simumax_compat &&
         c.st->moe_dispatcher != MoeDispatcher::AllGather;
}

// Permutation geometry: b, s local tokens, in = hidden, tokens = permuted rows (SimuMax
// permuted_act_size / hidden), experts.  UnPermutation: tokens = rows before combine, b·s after.
void price_permute(const Ctx& c, Leaf& l, bool un) {
  double e = c.e;
  // The busiest rank's factor (--moe-load-imbalance): an UnPermutation's rows already carry it, a
  // Permutation's (the rank's own tokens) do not; ep_exchange_ms applies it to the exchanges.
  const double imb = moe_busiest_rank_factor(c.m->moe, *c.st);
  Pass& p = l.pass;
  double first, second;
  if (!un) {
    double input_act = l.b * l.s * l.in, permuted = l.tokens * l.in;
    l.cache = l.b * l.s * l.experts * 8;
    l.fwd_peak = l.bwd_peak = 0;
    first = (input_act + permuted) * e;
    second = 2 * permuted * e;
    if (ep_exchanges(c)) {
      p.fwd_ep_net_ms += ep_exchange_ms(c, permuted * e, input_act * e, true);
      p.bwd_ep_net_ms += ep_exchange_ms(c, permuted * e, input_act * e, false);
      // The probabilities travel in their own all-to-all (DeepEP sends them with the tokens).
      if (c.st->moe_dispatch_probs && c.st->moe_dispatcher == MoeDispatcher::AllToAll) {
        double probs = l.b * l.s * l.experts * e;
        p.fwd_ep_net_ms += net(c, Collective::AllToAll, probs, c.ep, c.nets.ep, CommGroup::Ep);
        p.bwd_ep_net_ms += net(c, Collective::AllToAll, probs, c.ep, c.nets.ep, CommGroup::Ep);
      }
      p.fwd_net_ms += p.fwd_ep_net_ms;
      p.bwd_act_net_ms += p.bwd_ep_net_ms;
    }
    if (tokens_replicated_over_etp(c)) {
      // The expert fc1 is column-parallel on tokens every expert-tp rank holds: its input gradient is
      // summed over the group in the backward pass.
      p.bwd_act_net_ms +=
          net(c, Collective::AllReduce, permuted * imb * e, c.etp, c.nets.etp, CommGroup::Etp);
    } else if (c.etp > 1 && c.st->moe_dispatcher != MoeDispatcher::AllGather) {  // allgather: within tp_ep
      double sz = permuted * imb * e * c.etp;
      p.fwd_net_ms += net(c, Collective::AllGather, sz, c.etp, c.nets.etp, CommGroup::Etp);
      p.bwd_act_net_ms += net(c, Collective::ReduceScatter, sz, c.etp, c.nets.etp, CommGroup::Etp);
    }
  } else {
    double before = l.tokens * l.in, after = l.b * l.s * l.in;
    if (c.st->moe_dispatch_probs) {
      l.cache = 0;
      l.fwd_peak = std::max(before, after) * e;
      l.bwd_peak = 0;
    } else {
      l.cache = before * e;
      l.fwd_peak = l.bwd_peak = (before + after) * e;
    }
    first = 2 * before * e;
    second = (before + after) * e;
    if (tokens_replicated_over_etp(c)) {
      // The row-parallel expert fc2's partial outputs are summed over the group in the forward pass.
      p.fwd_net_ms += net(c, Collective::AllReduce, before * e, c.etp, c.nets.etp, CommGroup::Etp);
    } else if (c.etp > 1 && c.st->moe_dispatcher != MoeDispatcher::AllGather) {
      double sz = before * e * c.etp;
      p.fwd_net_ms += net(c, Collective::ReduceScatter, sz, c.etp, c.nets.etp, CommGroup::Etp);
      p.bwd_act_net_ms += net(c, Collective::AllGather, sz, c.etp, c.nets.etp, CommGroup::Etp);
    }
    if (ep_exchanges(c)) {
      p.fwd_ep_net_ms += ep_exchange_ms(c, before / imb * e, after * e, false);
      p.bwd_ep_net_ms += ep_exchange_ms(c, before / imb * e, after * e, true);
      p.fwd_net_ms += p.fwd_ep_net_ms;
      p.bwd_act_net_ms += p.bwd_ep_net_ms;
    }
  }
  if (c.st->moe_dispatcher == MoeDispatcher::Flex && !c.st->simumax_compat && ep_exchanges(c)) {
    // DeepEP / HybridEP copy each token once to every rank holding one of its experts inside the dispatch
    // kernel (no global permute), and one local permute puts the received tokens in expert order (Megatron's
    // MoEFlexTokenDispatcher: dispatch, then permute; HybridEP fuses its buffer copy and the fp8 padding into
    // that permute — NVIDIA's DeepSeek-V3 on GB200 write-up); the combine side mirrors it.  One kernel each
    // way: the received tokens (each once) and the expert-ordered rows.
    const double received = l.b * l.s * l.in * units_hit_per_token(c.m->moe, c.ep) * imb;
    first = (received + l.tokens * l.in * (un ? 1 : imb)) * e;
    second = 0;
  }
  p.fwd_bytes = first + second;
  p.bwd_act_bytes = first + second;
  finish_recompute(l);
  // Two memory-bound kernels per pass (one with the flex dispatchers), each with its own launch latency
  // (_comp_cost_info override).
  auto kernels = [&](const char* bw) {
    return end_to_end_ms(*c.sys, 0, memory_time_ms(*c.sys, bw, first)) +
           end_to_end_ms(*c.sys, 0, memory_time_ms(*c.sys, bw, second));
  };
  p.fwd_ms = kernels("permute_fwd");
  p.bwd_act_ms = kernels("permute_bwd");
  p.bwd_w_ms = 0;
  p.recompute_ms = l.recompute ? p.fwd_ms : 0;
}

// --- GroupLinearCol / GroupLinearRow -------------------------------------------------------------
namespace {
/// The stage part of a grouped GEMM's forward key in the efficiency tables.
constexpr const char* kGroupedFwdStage =
    ", stage=fwd, grad=False, accumulate=False, use_split_accumulator=False, single_output=True";
/// The efficiency tables' key of a grouped GEMM (without its stage): `tokens` rows over `local` experts (rows
/// per expert rounded to the nearest whole one), `in` → `out` features.
std::string group_gemm_key(const Ctx& c, double tokens, double local, double in, double out) {
  const double rows_per_expert = std::max(1.0, std::round(tokens / local));
  return "ng=" + fmt_int(local) + ", M=" + fmt_int(rows_per_expert) + ", N=" + fmt_int(out) +
         ", K=" + fmt_int(in) + ", dtype=" + (c.fp8 ? "fp8" : "bf16") +
         ", out_dtype=bf16, main_grad_dtype=" + (c.st->grad_reduce_in_bf16 ? "bf16" : "fp32");
}
}  // namespace

// Geometry: tokens rows (all local experts), in / out local, local_experts.
void price_group_linear(const Ctx& c, Leaf& l, bool column) {
  double w_el = l.fp8_gemm ? c.lowp_e : c.e, a_el = l.fp8_gemm ? c.lowp_e : c.e;
  double x = l.tokens * l.in;
  double in_b = x * a_el, out_b = l.tokens * l.out * c.e;
  double w = l.local_experts * l.in * l.out * w_el;
  double grad = l.local_experts * l.in * l.out * kFp32;
  l.cache = x * a_el;
  if (l.has_cached_inputs || (column && l.offload_inputs)) l.cache = 0;
  l.fwd_peak = in_b + out_b + (c.st->weight_in_linear_peak ? w : 0);
  l.bwd_peak = in_b + out_b + (c.fp8 ? grad : 0) + (column && l.offload_inputs ? in_b : 0);
  double numel = l.local_experts * l.in * l.out;
  Mem& m = l.mem;
  m.moe_weight_numel = numel * c.ep * c.etp;
  m.moe_w = numel * (c.param_bytes > 0 ? c.param_bytes : w_el);
  m.moe_g = numel * c.main_grad;
  m.moe_s = c.state_bytes * numel;  // ZeRO sharding over edp: detail::shard()
  te_dummy(c, l, true);
  Pass& p = l.pass;
  double base = 2 * l.tokens * l.in * l.out;
  p.fwd_flops = p.bwd_act_flops = p.bwd_w_flops = base;
  p.fwd_bytes = in_b + w + out_b;
  p.bwd_act_bytes = w + out_b + in_b;
  // SimuMax counts the fp32 main grad of one expert only here (not × local experts).
  p.bwd_w_bytes = out_b + in_b + w + (c.st->gradient_accumulation_fusion ? l.in * l.out * 4 : 0);
  finish_recompute(l);
  const double rows_per_expert = std::max(1.0, std::round(l.tokens / l.local_experts));
  if (!c.st->moe_grouped_gemm && !c.st->simumax_compat) {
    // Megatron's SequentialMLP (no --moe-grouped-gemm): one TransformerEngine Linear per local expert, a
    // dense GEMM of its own rows each — priced at the dense GEMM's efficiency for that shape.
    price_gemm_passes(c, l, 1, rows_per_expert);
    return;
  }
  const char* op = l.fp8_gemm ? "fp8_group_matmul" : "group_matmul";
  // The efficiency tables are keyed by rows per expert; with balanced routing those need not be whole
  // (e.g. Kimi-K2's 384 experts over ep 64: 6 local experts): the key takes the nearest whole count, the
  // FLOPs and bytes the exact rows.  SimuMax refuses such a layout (kept under --simumax-compat).
  if (std::fmod(l.tokens, l.local_experts) != 0 && c.st->simumax_compat)
    throw InputError("moe", "the " + fmt_int(l.tokens) + " expert tokens do not divide over " +
                                fmt_int(l.local_experts) +
                                " local experts (SimuMax cannot price it; drop "
                                "--simumax-compat)");
  const std::string key = group_gemm_key(c, l.tokens, l.local_experts, l.in, l.out);
  price_passes(
      c, l, op, op, op, key + kGroupedFwdStage,
      key +
          ", stage=bwd_grad_act, grad=True, accumulate=False, use_split_accumulator=True, "
          "single_output=False",
      key +
          ", stage=bwd_grad_w, grad=True, accumulate=True, use_split_accumulator=True, single_output=False");
  // Transformer Engine's grouped MXFP8 kernels (grouped quantize / swizzled scales / the fused grouped paths)
  // want every expert weight dimension a multiple of 128 (common/cast/mxfp8: "divisible by 128"; the
  // specialized cast kernels need full 128-element chunks); otherwise each expert takes the generic
  // per-tensor path.  Priced as the system's mxfp8_grouped_unaligned_scale times the aligned time (GPT-OSS's
  // 2880, Nemotron-3-Nano's 1856; every aligned MoE of the corpus runs at the published rate).
  if (l.fp8_gemm && c.st->fp8_recipe == Fp8Recipe::Mxfp8 && !c.st->simumax_compat &&
      (std::fmod(l.in, 128) != 0 || std::fmod(l.out, 128) != 0)) {
    const double k = c.sys->mxfp8_grouped_unaligned_scale;
    l.pass.fwd_ms *= k;
    l.pass.bwd_act_ms *= k;
    l.pass.bwd_w_ms *= k;
    l.pass.recompute_ms *= k;
  }
}

namespace {

/// The dense MLP (or a shared expert) from its three graph ops.
void add_mlp(Builder& bld, const Op& fc1, const Op& act, const Op& fc2, const std::string& name,
             const std::string& path, bool shared, const LayerRc& rc) {
  const Ctx& c = bld.c;
  bool enable = shared ? (rc.shared || rc.meg_moe) : (rc.linear || rc.meg_mlp);
  bool ln_tail = rc.meg_ln && !shared;
  double in_tokens_fc1 = (c.sp && c.tp > 1) ? fc1.tokens / c.tp : fc1.tokens;
  bool bp_fc1 = c.rc.scope == RecomputeScope::Selective && rc.meg_ln && enable && !shared;
  const std::size_t fc1_side = bld.out.size();
  add_linear(bld, true, name + ".linear_fc1", path, 0, fc1.tokens, in_tokens_fc1, fc1.in_features,
             fc1.out_features, enable || ln_tail, ln_tail, ln_tail, ln_tail, bp_fc1, true, fc1.sixteen_bit);
  Leaf a;
  a.kind = bld.c.m->gated() ? LeafKind::Swiglu : LeafKind::Gelu;
  a.n_in = act.tokens * act.in_features;
  a.n_out = act.tokens * act.out_features;
  a.input_bytes = a.n_in * 2;
  a.recompute = enable;
  a.name = name + ".activation_layer";
  a.path = path + Builder::idx(1, bld.c.m->gated() ? "Swiglu" : "Gelu");
  bld.push(std::move(a));
  const std::size_t fc2_side = bld.out.size();
  add_linear(bld, false, name + ".linear_fc2", path, 2, fc2.tokens, fc2.tokens, fc2.in_features,
             fc2.out_features, enable, false, true, false, false, true, fc2.sixteen_bit);
  if (shared)
    for (std::size_t k = fc1_side; k < bld.out.size(); ++k)
      bld.out[k].shared_expert_side = k < fc2_side ? 1 : 2;
}

}  // namespace

void mlp_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc) {
  const Ctx& c = bld.c;
  const ModelSpec& m = *c.m;
  bool selective = c.rc.scope == RecomputeScope::Selective;
  const Op* router = ops.find(OpRole::Router);
  if (!router) {
    std::string mp = Builder::idx(3, "MLP");
    const Op& fc1 = ops.need(OpRole::Fc1);
    const Op& act = ops.need(OpRole::Act);
    add_mlp(bld, fc1, act, ops.need(OpRole::Fc2), "mlp", mp, false, rc);
    return;
  }
  std::string mp = Builder::idx(3, "ExpertMLP");
  int i = 0;
  bool has_shared = ops.has(OpRole::SharedFc1);
  if (has_shared) {
    const Op& fc1 = ops.need(OpRole::SharedFc1);
    const Op& act = ops.need(OpRole::SharedAct);
    add_mlp(bld, fc1, act, ops.need(OpRole::SharedFc2), "mlp.shared_expert", mp + Builder::idx(i++, "MLP"),
            true, rc);
  }
  double b = mbs(c), s = router->tokens / b, h = router->in_features, E = router->out_features;
  double topk = m.moe.router_topk;
  Leaf r;
  r.kind = LeafKind::Router;
  r.b = b;
  r.s = s;
  r.in = h;
  r.out = E;
  r.input_bytes = b * s * h * 2;
  r.recompute = rc.router || rc.meg_ln || rc.meg_moe;
  r.has_cached_inputs = rc.meg_ln;
  r.variance = r.recompute && (rc.meg_ln || c.rc.variance);
  r.breakpoint = selective && rc.meg_ln;
  r.name = "mlp.router";
  r.path = mp + Builder::idx(i++, "Router");
  bld.push(std::move(r));

  auto pad = [&](double t) {
    if (!m.moe.pad_expert_input_to_capacity) return t;
    // Megatron's expert capacity, ceil(tokens / experts · capacity_factor) rows per expert (SimuMax's
    // ceil(t / E) · E · factor is the same for factor 1 and fractional otherwise).
    if (c.st->simumax_compat) return std::ceil(t / E) * E * m.moe.capacity_factor;
    return std::ceil(t / E * m.moe.capacity_factor) * E;
  };
  // LatentMoE: the tokens go down to the experts' width before the exchange (fc1_latent_proj, duplicated
  // over tp on the rank's own tokens) and come back up after it; the exchanges and the experts at that width.
  const bool latent_rc = rc.linear || rc.meg_moe;
  double d = h;
  if (const Op* down = ops.find(OpRole::LatentDown)) {
    d = down->out_features;
    add_duplicated_linear(bld, "mlp.fc1_latent_proj", mp, i++, down->tokens, down->in_features,
                          down->out_features, latent_rc, false, false, false, false, 0, down->sixteen_bit);
  }
  // `permuted`: the rank's own tokens' copies before the exchange; `routed`: the rows its experts run — the
  // busiest rank's under --moe-load-imbalance (moe_busiest_rank_factor).
  double permuted = pad(topk * b * s);
  double routed =
      pad(b * ((c.sp && c.etp > 1) ? s * c.etp : s) * topk) * moe_busiest_rank_factor(m.moe, *c.st);
  const Op& fc1 = ops.need(OpRole::ExpertsFc1);
  const Op& act = ops.need(OpRole::ExpertsAct);
  const Op& fc2 = ops.need(OpRole::ExpertsFc2);
  double local = fc1.local_experts;
  bool perm_rc = rc.perm || rc.meg_moe;
  ops.need(OpRole::Dispatch);
  Leaf p;
  p.kind = LeafKind::Permutation;
  p.b = b;
  p.s = s;
  p.in = d;
  p.tokens = permuted;
  p.experts = E;
  p.input_bytes = b * s * d * 2 + b * s * E * 4;
  p.recompute = perm_rc;
  p.name = "mlp.permutation";
  p.path = mp + Builder::idx(i++, "Permutation");
  bld.push(std::move(p));

  bool lin_rc = rc.linear || rc.meg_moe;
  bool act_rc = rc.linear || rc.meg_moe || rc.meg_moe_act;
  // The host's launches of the local experts' kernels, which the GPU waits for (SystemSpec::
  // moe_host_us_per_expert); SimuMax has no such cost.  Not where the system file measured the grouped GEMM's
  // shape: an efficiency measured on the op in a loop includes its launches; not when a CUDA graph captures
  // the experts (Strategy::moe_experts_cuda_graph: no host copy, the launches replayed by the GPU); not for
  // 16-bit grouped GEMMs: Transformer Engine's GroupedLinear then only loops over the experts' cuBLAS
  // launches in C++ (general_grouped_gemm), which run ahead of the GEMMs, where its quantized paths handle
  // each expert's quantizers and weight workspace in Python first (module/grouped_linear.py).  Priced for
  // them it made every 16-bit MoE run slower than measured where the experts' GEMMs are small: Megatron-LM's
  // Qwen3-30B-A3B BF16 recipes +23 % (H100) / +12 % (GB200), +10 / +7 % without (docs/time_fidelity.md).
  // A SequentialMLP (no --moe-grouped-gemm) runs a Transformer Engine Linear per expert: priced either way.
  const bool measured =
      c.st->moe_grouped_gemm &&
      measured_shape(*c.sys, c.fp8 ? "fp8_group_matmul" : "group_matmul",
                     group_gemm_key(c, routed, local, fc1.in_features, fc1.out_features) + kGroupedFwdStage);
  const bool host_launched = c.fp8 || !c.st->moe_grouped_gemm;
  if (c.sys->moe_host_us_per_expert > 0 && !c.st->simumax_compat && !measured && host_launched &&
      !c.st->moe_experts_cuda_graph) {
    Leaf hl;
    hl.kind = LeafKind::ExpertsHost;
    hl.local_experts = local;
    hl.recompute = lin_rc;
    hl.name = "mlp.experts_host";
    hl.path = mp + Builder::idx(i, "ExpertsHost");
    bld.push(std::move(hl));
  }
  // Grouped fc1 (with its quantizer under fp8).
  {
    Leaf g;
    g.kind = LeafKind::GroupLinearCol;
    g.tokens = routed;
    g.in = fc1.in_features;
    g.out = fc1.out_features;
    g.local_experts = local;
    g.recompute = lin_rc;
    g.fp8_gemm = c.fp8 && !fc1.sixteen_bit;
    g.gemm_16bit = c.fp8 && fc1.sixteen_bit;
    if (g.fp8_gemm) {
      Leaf q = quantizer_leaf(
          routed * g.in, c.st->cache_grouped_gemm_fp8_inputs ? false : lin_rc, "mlp.group_linear1.quantizer",
          mp + Builder::idx(i, "QuantizedGroupLinearCol") + Builder::idx(0, "Float8Quantizer"));
      q.offload_inputs = !c.st->cache_grouped_gemm_fp8_inputs && c.st->offload_grouped_gemm_inputs;
      bld.push(std::move(q));
      g.offload_inputs = c.st->cache_grouped_gemm_fp8_inputs && c.st->offload_grouped_gemm_inputs;
      g.input_bytes = routed * g.in * c.lowp_e;
      g.name = "mlp.group_linear1.linear";
      g.path = mp + Builder::idx(i++, "QuantizedGroupLinearCol") + Builder::idx(1, "GroupLinearCol");
    } else {
      g.offload_inputs = c.st->offload_grouped_gemm_inputs;
      g.input_bytes = routed * g.in * 2;
      g.name = "mlp.group_linear1";
      g.path = mp + Builder::idx(i++, "GroupLinearCol");
    }
    bld.push(std::move(g));
  }
  {
    Leaf a;
    a.kind = m.gated() ? LeafKind::Swiglu : LeafKind::Gelu;
    a.n_in = routed * act.in_features;
    a.n_out = routed * act.out_features;
    a.b = b;
    a.s = s;
    a.experts = E;
    a.weighted_silu = m.gated() && c.st->moe_dispatch_probs;
    a.input_bytes = a.n_in * 2 + (a.weighted_silu ? b * s * E * 4 : 0);
    a.recompute = act_rc;
    a.name = "mlp.expert_activation_layer";
    a.path = mp + Builder::idx(i++, m.gated() ? "Swiglu" : "Gelu");
    bld.push(std::move(a));
  }
  {
    Leaf g;
    g.kind = LeafKind::GroupLinearRow;
    g.tokens = routed;
    g.in = fc2.in_features;
    g.out = fc2.out_features;
    g.local_experts = local;
    g.recompute = act_rc;
    g.has_cached_inputs = rc.meg_moe_act;
    g.variance = act_rc && (rc.meg_moe_act || c.rc.variance);
    g.fp8_gemm = c.fp8 && !fc2.sixteen_bit;
    g.gemm_16bit = c.fp8 && fc2.sixteen_bit;
    if (g.fp8_gemm) {
      bld.push(quantizer_leaf(
          routed * g.in, act_rc, "mlp.group_linear2.quantizer",
          mp + Builder::idx(i, "QuantizedGroupLinearRow") + Builder::idx(0, "Float8Quantizer")));
      g.input_bytes = routed * g.in * c.lowp_e;
      g.name = "mlp.group_linear2.linear";
      g.path = mp + Builder::idx(i++, "QuantizedGroupLinearRow") + Builder::idx(1, "GroupLinearRow");
    } else {
      g.input_bytes = routed * g.in * 2;
      g.name = "mlp.group_linear2";
      g.path = mp + Builder::idx(i++, "GroupLinearRow");
    }
    bld.push(std::move(g));
  }
  {
    ops.need(OpRole::Combine);
    Leaf u;
    u.kind = LeafKind::UnPermutation;
    u.b = b;
    u.s = s;
    u.in = d;
    u.tokens = routed;
    u.input_bytes = routed * d * 2 + (c.st->moe_dispatch_probs ? 0 : b * s * E * 4);
    u.recompute = perm_rc;
    u.breakpoint = perm_rc && selective;
    u.name = "mlp.unpermutation";
    u.path = mp + Builder::idx(i++, "UnPermutation");
    bld.push(std::move(u));
  }
  if (const Op* up = ops.find(OpRole::LatentUp))
    add_duplicated_linear(bld, "mlp.fc2_latent_proj", mp, i++, up->tokens, up->in_features, up->out_features,
                          latent_rc, false, false, false, false, 0, up->sixteen_bit);
  if (has_shared)
    bld.push(layout_leaf(LeafKind::Add, 2 * b * s * h * 2, false, mp + Builder::idx(i++, ""), "AddModule"));
}

}  // namespace preflight::analyzer::cost::detail
