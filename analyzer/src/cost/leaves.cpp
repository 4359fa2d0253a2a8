// The leaves SimuMax v1.2 prices and their formulas.  Each formula cites its SimuMax module
// (simumax/core/transformer/dense_module.py, moe_module.py, function.py); notes/simumax.md §2.3, §3.
#include "leaves.hpp"

#include <algorithm>
#include <cmath>

#include "preflight/common/error.hpp"

namespace preflight::analyzer::cost::detail {

// ---------------------------------------------------------------------------------------------
// Sums.

Pass& Pass::operator+=(const Pass& o) {
  fwd_flops += o.fwd_flops;
  bwd_act_flops += o.bwd_act_flops;
  bwd_w_flops += o.bwd_w_flops;
  recompute_flops += o.recompute_flops;
  fwd_bytes += o.fwd_bytes;
  bwd_act_bytes += o.bwd_act_bytes;
  bwd_w_bytes += o.bwd_w_bytes;
  recompute_bytes += o.recompute_bytes;
  fwd_ms += o.fwd_ms;
  bwd_act_ms += o.bwd_act_ms;
  bwd_w_ms += o.bwd_w_ms;
  recompute_ms += o.recompute_ms;
  fwd_net_ms += o.fwd_net_ms;
  bwd_act_net_ms += o.bwd_act_net_ms;
  bwd_w_net_ms += o.bwd_w_net_ms;
  recompute_net_ms += o.recompute_net_ms;
  return *this;
}

Mem& Mem::operator+=(const Mem& o) {
  weight_numel += o.weight_numel;
  moe_weight_numel += o.moe_weight_numel;
  dense_w += o.dense_w;
  dense_g += o.dense_g;
  dense_s += o.dense_s;
  moe_w += o.moe_w;
  moe_g += o.moe_g;
  moe_s += o.moe_s;
  te_shapes.insert(o.te_shapes.begin(), o.te_shapes.end());
  return *this;
}

void shard(const Ctx& c, Mem& m) {
  // SimuMax divides each leaf's bytes (Embedding/LinearCol/... _comp_leaf_model_info_impl); dividing
  // the chunk's sums is the same up to rounding.
  double group = static_cast<double>(c.dp) * c.cp;
  if (c.zero >= 1) m.dense_s /= group, m.moe_s /= c.edp;
  if (c.zero >= 2) m.dense_g /= group, m.moe_g /= c.edp;
  if (c.zero >= 3) m.dense_w /= group, m.moe_w /= c.edp;
}

double Mem::te_bytes() const {
  double n = 0;
  for (const auto& s : te_shapes)
    n += static_cast<double>(s[0]) * static_cast<double>(s[1]) * static_cast<double>(s[2]);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Context.

namespace {

std::array<int, 3> version_tuple(const std::string& v) {
  std::array<int, 3> out{0, 0, 0};
  int idx = 0;
  std::size_t i = 0;
  while (i < v.size() && idx < 3) {
    if (std::isdigit(static_cast<unsigned char>(v[i]))) {
      int n = 0;
      while (i < v.size() && std::isdigit(static_cast<unsigned char>(v[i]))) n = n * 10 + (v[i++] - '0');
      out[idx++] = n;
    } else {
      ++i;
    }
  }
  return out;
}
bool has_digit(const std::string& v) {
  return std::any_of(v.begin(), v.end(),
                     [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); });
}
bool version_at_least(const std::string& cur, const std::string& min) {
  if (!has_digit(cur) || !has_digit(min)) return false;
  return version_tuple(cur) >= version_tuple(min);
}

}  // namespace

Ctx Ctx::make(const ModelSpec& m, const Strategy& st, const SystemSpec& sys) {
  Ctx c;
  c.m = &m;
  c.st = &st;
  c.sys = &sys;
  c.nets = choose_networks(st, sys);
  c.rc = st.effective_layer_recompute(m);
  c.tp = st.tp;
  c.cp = st.cp;
  c.pp = st.pp;
  c.ep = st.ep;
  c.etp = st.expert_tp();
  c.dp = st.dp();
  c.edp = st.world_size / (c.ep * c.etp * c.pp);
  c.sp = st.sequence_parallel;
  c.fp8 = st.fp8 != Fp8Format::None;
  c.flash = st.attention_backend == AttentionBackend::Flash;
  c.e = st.element_bytes();
  c.main_grad = st.fp32_grad_accumulation ? st.main_grad_bytes() : 2;
  c.zero = st.effective_zero_stage();
  c.te_dummy = version_at_least(st.te.version, st.te.dummy_wgrad_min);
  c.te_grouped_dummy = version_at_least(st.te.version, st.te.grouped_linear_dummy_wgrad_min);
  c.te_cp_saves = version_at_least(st.te.version, st.te.cp_a2a_save_pre_posta2a_min);
  c.megatron_selective = c.rc.enabled && c.rc.layers > 0 && c.rc.scope == RecomputeScope::Selective &&
                         !c.rc.megatron_modules.empty();
  return c;
}

LayerRc layer_rc(const Ctx& c, int i) {
  LayerRc r;
  const LayerRecompute& rc = c.rc;
  if (rc.scope == RecomputeScope::None || i >= rc.layers) return r;
  if (c.megatron_selective) {
    auto has = [&](const char* m) {
      return std::find(rc.megatron_modules.begin(), rc.megatron_modules.end(), m) !=
             rc.megatron_modules.end();
    };
    r.meg_ln = has("layernorm");
    r.meg_up = has("mla_up_proj");
    r.input_ln = r.q_down = r.kv_down = r.meg_ln;
    r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = r.meg_up;
    r.meg_moe = has("moe");
    r.meg_moe_act = has("moe_act") && !r.meg_moe;
    r.meg_mlp = has("mlp");
    r.pre_ln = r.meg_ln;
    return r;
  }
  switch (rc.scope) {
    case RecomputeScope::FullBlock:
      r.input_ln = r.q_down = r.kv_down = r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = r.out =
          true;
      r.pre_ln = r.linear = r.shared = r.router = r.perm = true;
      break;
    case RecomputeScope::AttnOnly:
      r.q_down = r.kv_down = r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = r.out = true;
      break;
    case RecomputeScope::SdpOnly:
      r.core = true;
      break;
    case RecomputeScope::MlpOnly:
      r.pre_ln = r.shared = r.linear = r.router = r.perm = true;
      break;
    case RecomputeScope::Selective:
      r.input_ln = r.q_down = r.kv_down = rc.attn_norm;
      r.q_up = r.kv_up = r.q_ln = r.kv_ln = r.rope = r.core = rc.attn;
      r.pre_ln = rc.mlp_norm;
      r.shared = rc.mlp_norm;
      r.linear = rc.mlp;
      r.router = rc.mlp_norm;
      break;
    case RecomputeScope::None:
      break;
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Pricing helpers.

namespace {

constexpr double kFp32 = 4;

std::string fmt_int(double v) {
  return std::to_string(static_cast<long long>(v));
}

/// SimuMax MetaModule._comp_cost_info_impl for one pass: roofline of the op's compute time (with the
/// per-shape efficiency) and the memory-bound time of the bytes it moves (bandwidth of the same name).
double pass_time(const Ctx& c, const char* op, double flops, double bytes, const std::string& key) {
  double t_compute = compute_time_ms(*c.sys, op, flops, key);
  double t_mem = memory_time_ms(*c.sys, op, bytes);
  return end_to_end_ms(*c.sys, t_compute, t_mem);
}

/// The three passes of a leaf, plus recompute = forward time when the leaf recomputes (0 for a
/// variance tail).  SimuMax: base_struct.py MetaModule._comp_cost_info_impl.
void price_passes(const Ctx& c, Leaf& l, const char* fwd_op, const char* bwd_op, const char* w_op,
                  const std::string& k_fwd = "", const std::string& k_act = "", const std::string& k_w = "") {
  Pass& p = l.pass;
  p.fwd_ms = pass_time(c, fwd_op, p.fwd_flops, p.fwd_bytes, k_fwd);
  p.bwd_act_ms = pass_time(c, bwd_op, p.bwd_act_flops, p.bwd_act_bytes, k_act);
  p.bwd_w_ms = pass_time(c, w_op, p.bwd_w_flops, p.bwd_w_bytes, k_w);
  p.recompute_ms = l.recompute ? p.fwd_ms : 0;
  if (l.recompute && l.variance) p.recompute_ms = 0;
}

/// Recompute FLOPs / bytes / network time follow the forward ones, except for a variance tail
/// (MetaModule._comp_compute_info).
void finish_recompute(Leaf& l) {
  Pass& p = l.pass;
  p.recompute_flops = l.recompute ? p.fwd_flops : 0;
  p.recompute_bytes = l.recompute ? p.fwd_bytes : 0;
  p.recompute_net_ms = l.recompute ? p.fwd_net_ms : 0;
  if (l.variance) {
    p.recompute_flops = 0;
    p.recompute_bytes = 0;
    p.recompute_net_ms = 0;
  }
}

double net(const Ctx& c, Collective op, double bytes, int n, const std::string& network, CommGroup g) {
  return collective_time_ms(*c.sys, op, bytes, n, network, g);
}

/// Weight / grad / optimizer bytes of `numel` parameters, before ZeRO sharding (applied per chunk by
/// the caller, detail::shard(), so that priced leaves do not depend on the data-parallel size).
void dense_params(const Ctx& c, Leaf& l, double numel, double w_bytes, double stat_numel) {
  Mem& m = l.mem;
  m.weight_numel = stat_numel;
  m.dense_w = numel * w_bytes;
  m.dense_g = numel * c.main_grad;
  m.dense_s = 3 * kFp32 * numel;
}

void te_dummy(const Ctx& c, Leaf& l, bool grouped) {
  bool on = grouped ? c.te_grouped_dummy : c.te_dummy;
  if (!(c.st->gradient_accumulation_fusion && on)) return;
  l.mem.te_shapes.insert(
      {static_cast<std::int64_t>(l.out), static_cast<std::int64_t>(l.in), static_cast<std::int64_t>(c.e)});
}

std::string gemm_key(double b, double m, double k, double n, const char* layout, bool acc,
                     const char* dtype) {
  return "b=" + fmt_int(b) + ", m=" + fmt_int(m) + ", k=" + fmt_int(k) + ", n=" + fmt_int(n) +
         ", layout=" + layout + ", accumulate=" + (acc ? "True" : "False") + ", out_dtype=" + dtype;
}

// --- Embedding (dense_module.py Embedding) -----------------------------------------------------
void price_embedding(const Ctx& c, Leaf& l) {
  double bs = l.b * l.s, w = l.in * l.out * c.e;  // in = local vocab, out = hidden
  double in_b = bs * 4, out_b = bs * l.out * c.e;
  l.cache = 0;
  l.fwd_peak = in_b + out_b + (c.st->weight_in_linear_peak ? w : 0);
  l.bwd_peak = w;
  dense_params(c, l, l.in * l.out, c.e, l.in * l.out * c.tp);
  Pass& p = l.pass;
  p.fwd_bytes = in_b + w + out_b;
  p.bwd_w_bytes = 2 * (l.in * l.out * 4);
  double s_out = c.sp ? l.s / c.tp : l.s;
  double comm = l.b * s_out * l.out * c.e;
  if (c.tp > 1) p.fwd_net_ms += net(c, Collective::AllReduce, comm, c.tp, c.nets.tp, CommGroup::Tp);
  if (c.sp && c.tp > 1) p.bwd_w_net_ms += net(c, Collective::AllGather, comm, c.tp, c.nets.tp, CommGroup::Tp);
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

// --- LinearCol / LinearRow (dense_module.py) -----------------------------------------------------
// Geometry: x = elements of the (gathered) input b·s_full·in; out local; B = micro batch, M = s_full.
void price_linear(const Ctx& c, Leaf& l, bool column) {
  double w_el = l.fp8_gemm ? 1 : c.e, a_el = l.fp8_gemm ? 1 : c.e;
  double x = l.b * l.s * l.in;
  double y = l.b * l.s * l.out;
  double w = l.in * l.out * w_el, in_b = x * a_el, out_b = y * c.e;
  l.cache = x * a_el;
  if (column) {
    if (c.sp && !c.fp8) l.cache /= c.tp;
    if (l.has_cached_inputs) l.cache = 0;
  } else if (l.has_cached_inputs) {
    l.cache -= x * a_el;
  }
  double peak = in_b + out_b + (c.st->weight_in_linear_peak ? w : 0);
  l.fwd_peak = l.bwd_peak = peak;
  dense_params(c, l, l.in * l.out, w_el, l.in * l.out * c.tp);
  te_dummy(c, l, false);
  Pass& p = l.pass;
  double base = 2 * x * l.out;
  p.fwd_flops = p.bwd_act_flops = p.bwd_w_flops = base;
  double main = l.in * l.out * 4;
  p.fwd_bytes = in_b + w + out_b;
  p.bwd_act_bytes = w + out_b + in_b;
  p.bwd_w_bytes = out_b + in_b + (column ? w : 0) + (c.st->gradient_accumulation_fusion ? main : 0);
  if (column) {
    double comm = x * c.e;
    if (c.sp && c.tp > 1) {
      p.fwd_net_ms += net(c, Collective::AllGather, comm, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_act_net_ms += net(c, Collective::ReduceScatter, comm, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_w_net_ms += net(c, Collective::AllGather, comm, c.tp, c.nets.tp, CommGroup::Tp);
    } else if (c.tp > 1) {
      p.bwd_act_net_ms += net(c, Collective::AllReduce, comm, c.tp, c.nets.tp, CommGroup::Tp);
    }
  } else {
    double comm = y * c.e;
    if (c.sp && c.tp > 1) {
      p.fwd_net_ms += net(c, Collective::ReduceScatter, comm, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_act_net_ms += net(c, Collective::AllGather, comm, c.tp, c.nets.tp, CommGroup::Tp);
    } else if (c.tp > 1) {
      p.fwd_net_ms += net(c, Collective::AllReduce, comm, c.tp, c.nets.tp, CommGroup::Tp);
    }
  }
  finish_recompute(l);
  const char* op = c.fp8 ? "fp8_matmul" : "matmul";
  const char* grad_dtype = c.st->grad_reduce_in_bf16 ? "bf16" : "fp32";
  double M = l.s;
  price_passes(c, l, op, op, op, gemm_key(l.b, M, l.in, l.out, "TN", false, "bf16"),
               gemm_key(l.b, M, l.out, l.in, "NN", false, "bf16"),
               gemm_key(1, l.out, l.b * M, l.in, "NT", true, grad_dtype));
}

// --- LayerNorm (RMSNorm) -------------------------------------------------------------------------
// Geometry: in = width, tokens = rows (b·s).
void price_norm(const Ctx& c, Leaf& l) {
  double x = l.tokens * l.in;
  double in_b = x * c.e, out_b = x * c.e, rstd = x / l.in * c.e, w = l.in * c.e;
  Pass& p = l.pass;
  if (c.st->fused_norm) {
    l.cache = l.has_cached_inputs ? 0 : x * c.e;
    l.fwd_peak = in_b + out_b;
    l.bwd_peak = in_b + out_b + rstd;
    p.fwd_bytes = in_b + w + out_b;
    p.bwd_w_bytes = in_b + w + w;
    p.bwd_act_bytes = in_b + w + out_b + rstd;
  } else {
    double in32 = x * kFp32, rstd32 = x / l.in * kFp32;
    l.cache = in32 + rstd32 + in32 + rstd32 + out_b;
    l.fwd_peak = in32 + rstd32 + in32 + in32 + rstd32;
    l.bwd_peak = l.fwd_peak;
    p.fwd_bytes = (in_b + in32) + (in32 + out_b) + 4 * in32 + 4 * rstd + out_b + w;
    p.bwd_w_bytes = 2 * out_b + w;
    p.bwd_act_bytes = (out_b + in32) + (in_b + in32) + 11 * in32 + 5 * rstd + in_b + w;
  }
  dense_params(c, l, l.in, c.e, l.in);
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

// --- CoreAttention / MLACoreAttention ------------------------------------------------------------
// Geometry: b, s = local sequence (s/cp), heads / kv_heads on this tp rank, head_dim (q/k), v_dim.
struct CpPeaks {
  double fwd_pre, fwd_fa, fwd_post, bwd_pre, bwd_fa, bwd_post;
};

CpPeaks cp_a2a_peaks(const Ctx& c, double q, double k, double v, double o, double saved) {
  auto three = [&](double a, double b2, double d) {
    double t = a + b2 + d;
    return c.st->cp_a2a_sync ? 2 * t + (b2 + d) + (a + b2) : 4 * t;
  };
  auto two = [&](double a, double b2) {
    double t = a + b2;
    return c.st->cp_a2a_sync ? 3 * t + std::max(a, b2) : 4 * t;
  };
  double qkv = q + k + v;
  bool saves = c.cp > 1 && c.st->cp_comm_type == CpCommType::AllToAll && c.te_cp_saves;
  CpPeaks r{};
  r.fwd_pre = three(q, k, v);
  r.fwd_fa = 3 * qkv + o;
  r.fwd_post = 2 * qkv + 4 * o;
  double baseline;
  if (saves) {
    r.bwd_pre = saved + 4 * o;
    baseline = saved + 2 * o;
  } else {
    r.bwd_pre = two(o, o);
    baseline = 4 * o;
  }
  double prep = qkv + baseline, kernel = 2 * qkv + baseline + q + k, fin = qkv + baseline;
  r.bwd_fa = std::max({prep, kernel, fin});
  r.bwd_post = baseline + three(q, k, v);
  return r;
}

bool cp_a2a(const Ctx& c) {
  return c.cp > 1 && c.st->cp_comm_type != CpCommType::AllGather;
}

void price_attention(const Ctx& c, Leaf& l, bool mla) {
  double b = l.b, s = l.s, H = l.heads, KV = l.kv_heads, d = l.head_dim, dv = l.v_dim, e = c.e;
  bool saves_out = c.cp > 1 && cp_a2a(c) && c.te_cp_saves;
  // Activations (memory formula: k, v with kv heads; MLA: k like q, v with v_dim).
  double q = b * H * s * d;
  double k = mla ? q : b * KV * s * d;
  double v = mla ? b * H * s * dv : b * KV * s * d;
  double lse = b * H * s;
  double o = mla ? b * s * dv * H : b * s * d * H;
  double qkv = (q + k + v) * e;
  if (c.flash) {
    double out_mem = o * e;
    double saved = (l.cache_outputs || saves_out) ? out_mem : 0;
    l.cache = qkv + lse * e + saved;
    if (l.has_cached_inputs) l.cache -= qkv;
    l.fwd_peak = qkv + lse * e + out_mem;
    l.bwd_peak = (2 * q + 2 * k + 2 * v + lse + o) * e - saved;
    if (c.cp > 1 && cp_a2a(c)) {
      CpPeaks pk = cp_a2a_peaks(c, q * e, k * e, v * e, out_mem, saved);
      l.fwd_peak = std::max({pk.fwd_pre, pk.fwd_fa, pk.fwd_post, qkv + l.cache});
      l.bwd_peak = std::max({pk.bwd_pre, pk.bwd_fa, pk.bwd_post}) - saved;
    } else if (c.cp > 1 && !mla) {  // all-gather of k/v
      double kv = (k + v) * e;
      l.fwd_peak += kv * (c.cp - 1);
      l.bwd_peak += 2 * kv * (c.cp - 1);
    }
  } else {
    double soft = b * H * s * s;
    l.cache = (q + k + v + soft) * e;
    if (l.has_cached_inputs && H == KV) l.cache -= (q + k + v) * e;
    l.fwd_peak = 2 * soft * e;
    double factor = 3;
    if (c.sys->backend == "cuda")
      factor += 1;
    else if (c.sys->backend == "musa")
      factor -= 1;
    l.bwd_peak = factor * soft * e;
  }
  // FLOPs: with CP a2a the kernel sees the full sequence and heads/cp; all-gather: local queries
  // against the full keys (SimuMax raises NotImplementedError there).
  Pass& p = l.pass;
  double seq_q = s, seq_k = s, heads = H;
  if (c.cp > 1) {
    if (cp_a2a(c)) {
      seq_q = seq_k = s * c.cp;
      heads = std::floor(H / c.cp);
    } else {
      seq_k = s * c.cp;
    }
  }
  double base = mla ? (b * heads * d * seq_q * seq_k + b * heads * dv * seq_q * seq_k)
                    : 2 * b * heads * d * seq_q * seq_k;
  base *= 1 - c.st->attention_sparse_ratio;
  p.fwd_flops = 2 * base;
  p.bwd_act_flops = 4 * base + (c.flash ? base : 0);
  // Bytes (k, v sized like q for MHA; MLA v with v_dim).
  double qb = b * H * s * d, kb = qb, vb = mla ? b * H * s * dv : qb;
  double ob = mla ? b * s * dv * H : b * s * H * d;
  if (c.flash) {
    p.fwd_bytes = (qb + kb + vb + ob + lse) * e;
    p.bwd_act_bytes = (2 * qb + 2 * kb + 2 * vb + ob + lse) * e;
  } else {
    double soft = b * H * s * s;
    p.fwd_bytes = (qb + kb + soft) * e + 2 * soft * e + (soft + vb + ob) * e;
    p.bwd_act_bytes = 2 * (soft + vb + ob) * e + 2 * soft * e + 2 * (qb + kb + soft) * e;
  }
  // Context-parallel collectives.
  if (c.cp > 1) {
    if (cp_a2a(c)) {
      double qm = q * e, km = k * e, vm = v * e;
      double om = (mla ? b * H * s * dv : b * H * s * d) * e;
      // MHA: k, v use kv heads and v with head_dim; MLA: k like q... as CoreAttention._get_cp_a2a_stage_specs
      if (mla) {
        km = b * KV * s * d * e;
        vm = b * KV * s * dv * e;
      }
      for (double sz : {qm, km, vm, om})
        p.fwd_net_ms += net(c, Collective::AllToAll, sz, c.cp, c.nets.cp, CommGroup::Cp);
      std::vector<double> bwd{qm, km, vm, om};
      if (!c.te_cp_saves) bwd.push_back(om);
      for (double sz : bwd)
        p.bwd_act_net_ms += net(c, Collective::AllToAll, sz, c.cp, c.nets.cp, CommGroup::Cp);
    } else {
      // All-gather of the local k/v chunks (the payload is the gathered k/v, once in bytes: SimuMax
      // multiplies by the element size twice and cannot run this path).
      double kv = (b * KV * s * d + b * KV * s * dv) * e * c.cp;
      p.fwd_net_ms += net(c, Collective::AllGather, kv, c.cp, c.nets.cp, CommGroup::Cp);
      p.bwd_act_net_ms += net(c, Collective::AllGather, kv, c.cp, c.nets.cp, CommGroup::Cp);
      p.bwd_act_net_ms += net(c, Collective::ReduceScatter, kv, c.cp, c.nets.cp, CommGroup::Cp);
    }
  }
  finish_recompute(l);
  // Efficiency key (CoreAttention.get_input_shapes_desc).
  double kb_heads = c.cp > 1 ? std::floor(KV / c.cp) : KV, kq_heads = c.cp > 1 ? std::floor(H / c.cp) : H;
  double key_seq = c.cp > 1 ? s * c.cp : s;
  bool contiguous = c.sys->name.find("s5000") == std::string::npos;
  std::string key = "batch=" + fmt_int(b) + ", seq_len=" + fmt_int(key_seq) +
                    ", head_num=" + fmt_int(kq_heads) + ", kv_head_num=" + fmt_int(kb_heads) +
                    ", qk_head_dim=" + fmt_int(d) + ", v_head_dim=" + fmt_int(mla ? dv : d) +
                    ", qkv_contiguous=" + (contiguous ? "True" : "False");
  price_passes(c, l, "sdp_fwd", "sdp_bwd", "sdp_bwd", key, key, key);
}

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

// --- ParallelCE ----------------------------------------------------------------------------------
void price_ce(const Ctx& c, Leaf& l) {
  double b = l.b, s = l.s, V = l.in, L = b * s * V;
  Pass& p = l.pass;
  bool fused = c.st->cross_entropy_loss_fusion;
  if (fused) {
    double logits = L * c.e;
    l.cache = logits;
    l.fwd_peak = logits + b * s * 4 + 3 * b * s * 4 + (c.tp > 1 ? 3 * b * s * c.tp * 4 : 0);
    l.bwd_peak = 0;
    p.fwd_bytes = 2 * L * c.e + b * s * 4;
    p.bwd_act_bytes = p.fwd_bytes;
  } else {
    l.cache = L * 4;
    l.fwd_peak = l.cache + L * c.e;
    l.bwd_peak = 0;
    p.fwd_bytes =
        L * 4 + L * 2 + (L + b * s) * 4 + (L + b * s + L) * 4 + (2 * L) * 4 + (L + b) * 4 + (L + b + L) * 4;
    p.bwd_act_bytes = (L + b + L) * 4 + L * 4 + L * 2;
  }
  if (c.tp > 1) {
    double scalar = b * s * 4;
    p.fwd_net_ms += net(c, Collective::AllReduce, scalar, c.tp, c.nets.tp, CommGroup::Tp);
    if (fused) {
      p.fwd_net_ms += net(c, Collective::AllReduce, 2 * scalar, c.tp, c.nets.tp, CommGroup::Tp);
    } else {
      p.fwd_net_ms += net(c, Collective::AllReduce, scalar, c.tp, c.nets.tp, CommGroup::Tp);
      p.fwd_net_ms += net(c, Collective::AllReduce, scalar, c.tp, c.nets.tp, CommGroup::Tp);
    }
  }
  finish_recompute(l);
  const char* op = fused ? "ce_fusion" : "ce";
  price_passes(c, l, op, op, "default");
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
// Permutation geometry: b, s local tokens, in = hidden, tokens = permuted rows (SimuMax
// permuted_act_size / hidden), experts.  UnPermutation: tokens = rows before combine, b·s after.
void price_permute(const Ctx& c, Leaf& l, bool un) {
  double e = c.e;
  Pass& p = l.pass;
  double first, second;
  if (!un) {
    double input_act = l.b * l.s * l.in, permuted = l.tokens * l.in;
    l.cache = l.b * l.s * l.experts * 8;
    l.fwd_peak = l.bwd_peak = 0;
    first = (input_act + permuted) * e;
    second = 2 * permuted * e;
    if (c.ep > 1) {
      p.fwd_net_ms += net(c, Collective::AllToAll, permuted * e, c.ep, c.nets.ep, CommGroup::Ep);
      p.bwd_act_net_ms += net(c, Collective::AllToAll, permuted * e, c.ep, c.nets.ep, CommGroup::Ep);
      if (c.st->moe_dispatch_probs) {
        double probs = l.b * l.s * l.experts * e;
        p.fwd_net_ms += net(c, Collective::AllToAll, probs, c.ep, c.nets.ep, CommGroup::Ep);
        p.bwd_act_net_ms += net(c, Collective::AllToAll, probs, c.ep, c.nets.ep, CommGroup::Ep);
      }
    }
    if (c.etp > 1) {
      double sz = permuted * e * c.etp;
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
    if (c.etp > 1) {
      double sz = before * e * c.etp;
      p.fwd_net_ms += net(c, Collective::ReduceScatter, sz, c.etp, c.nets.etp, CommGroup::Etp);
      p.bwd_act_net_ms += net(c, Collective::AllGather, sz, c.etp, c.nets.etp, CommGroup::Etp);
    }
    if (c.ep > 1) {
      p.fwd_net_ms += net(c, Collective::AllToAll, before * e, c.ep, c.nets.ep, CommGroup::Ep);
      p.bwd_act_net_ms += net(c, Collective::AllToAll, before * e, c.ep, c.nets.ep, CommGroup::Ep);
    }
  }
  p.fwd_bytes = first + second;
  p.bwd_act_bytes = first + second;
  finish_recompute(l);
  // Two memory-bound kernels per pass, each with its own launch latency (_comp_cost_info override).
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
// Geometry: tokens rows (all local experts), in / out local, local_experts.
void price_group_linear(const Ctx& c, Leaf& l, bool column) {
  double w_el = l.fp8_gemm ? 1 : c.e, a_el = l.fp8_gemm ? 1 : c.e;
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
  m.moe_w = numel * w_el;
  m.moe_g = numel * c.main_grad;
  m.moe_s = 3 * kFp32 * numel;  // ZeRO sharding over edp: detail::shard()
  te_dummy(c, l, true);
  Pass& p = l.pass;
  double base = 2 * l.tokens * l.in * l.out;
  p.fwd_flops = p.bwd_act_flops = p.bwd_w_flops = base;
  p.fwd_bytes = in_b + w + out_b;
  p.bwd_act_bytes = w + out_b + in_b;
  // SimuMax counts the fp32 main grad of one expert only here (not × local experts).
  p.bwd_w_bytes = out_b + in_b + w + (c.st->gradient_accumulation_fusion ? l.in * l.out * 4 : 0);
  finish_recompute(l);
  const char* op = c.fp8 ? "fp8_group_matmul" : "group_matmul";
  if (std::fmod(l.tokens, l.local_experts) != 0)
    throw InputError("moe", "the " + fmt_int(l.tokens) + " expert tokens do not divide over " +
                                fmt_int(l.local_experts) + " local experts");
  std::string key = "ng=" + fmt_int(l.local_experts) + ", M=" + fmt_int(l.tokens / l.local_experts) +
                    ", N=" + fmt_int(l.out) + ", K=" + fmt_int(l.in) + ", dtype=" + (c.fp8 ? "fp8" : "bf16") +
                    ", out_dtype=bf16, main_grad_dtype=" + (c.st->grad_reduce_in_bf16 ? "bf16" : "fp32");
  price_passes(
      c, l, op, op, op,
      key + ", stage=fwd, grad=False, accumulate=False, use_split_accumulator=False, single_output=True",
      key +
          ", stage=bwd_grad_act, grad=True, accumulate=False, use_split_accumulator=True, "
          "single_output=False",
      key +
          ", stage=bwd_grad_w, grad=True, accumulate=True, use_split_accumulator=True, single_output=False");
}

// --- Float8Quantizer, zero-cost layout modules ---------------------------------------------------
void price_quantizer(const Ctx& c, Leaf& l) {
  double in_b = l.n_in * 2, out_b = l.n_out * 1;
  l.cache = 0;
  l.fwd_peak = in_b + out_b;
  l.bwd_peak = 0;
  l.pass.fwd_bytes = in_b + out_b;
  l.pass.recompute_bytes = 0;
  price_passes(c, l, "default", "default", "default");
}

void price(const Ctx& c, Leaf& l) {
  switch (l.kind) {
    case LeafKind::Embedding:
      price_embedding(c, l);
      break;
    case LeafKind::LinearCol:
      price_linear(c, l, true);
      break;
    case LeafKind::LinearRow:
      price_linear(c, l, false);
      break;
    case LeafKind::Norm:
      price_norm(c, l);
      break;
    case LeafKind::CoreAttention:
      price_attention(c, l, false);
      break;
    case LeafKind::MlaCoreAttention:
      price_attention(c, l, true);
      break;
    case LeafKind::Swiglu:
      price_swiglu(c, l);
      break;
    case LeafKind::Gelu:
      price_gelu(c, l);
      break;
    case LeafKind::CrossEntropy:
      price_ce(c, l);
      break;
    case LeafKind::Router:
      price_router(c, l);
      break;
    case LeafKind::Permutation:
      price_permute(c, l, false);
      break;
    case LeafKind::UnPermutation:
      price_permute(c, l, true);
      break;
    case LeafKind::GroupLinearCol:
      price_group_linear(c, l, true);
      break;
    case LeafKind::GroupLinearRow:
      price_group_linear(c, l, false);
      break;
    case LeafKind::Fp8Quantizer:
      price_quantizer(c, l);
      break;
    case LeafKind::Rotary:
    case LeafKind::Split:
    case LeafKind::Concat:
    case LeafKind::Add:
      break;  // layout only: no memory, no time
  }
}

// ---------------------------------------------------------------------------------------------
// Building leaves from graph ops.

bool ends_with(const std::string& s, const char* suffix) {
  std::size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/// Appends leaves while tracking SimuMax's module indices for names.
struct Builder {
  const Ctx& c;
  std::vector<Leaf>& out;
  bool variance_all;  // StrategyConfig.recompute_variance

  void push(Leaf l) {
    if (c.search_mode) {
      l.name.clear();
      l.path.clear();
    }
    price(c, l);
    out.push_back(std::move(l));
  }
  static std::string idx(int i, const char* cls) { return " -> (" + std::to_string(i) + ")" + cls; }
};

double mbs(const Ctx& c) {
  return c.st->micro_batch_size;
}

/// The Float8Quantizer in front of an fp8 GEMM: `numel` bf16 input elements (2 bytes each) to fp8.
Leaf quantizer_leaf(double numel, bool recompute, std::string name, std::string path) {
  Leaf q;
  q.kind = LeafKind::Fp8Quantizer;
  q.n_in = q.n_out = numel;
  q.input_bytes = numel * 2;
  q.recompute = recompute;
  q.name = std::move(name);
  q.path = std::move(path);
  return q;
}

/// A column/row linear, preceded by its fp8 quantizer when the strategy uses fp8 GEMMs.
/// `tokens_full` = b·s_full, `in_tokens` = rows of the (un-gathered) input.
void add_linear(Builder& bld, bool column, const std::string& name, const std::string& parent_path, int index,
                double tokens_full, double in_tokens, double in, double out, bool recompute, bool has_cached,
                bool is_last, bool use_var, bool breakpoint, bool fp8_allowed = true) {
  const Ctx& c = bld.c;
  bool quantized = c.fp8 && fp8_allowed;
  Leaf l;
  l.kind = column ? LeafKind::LinearCol : LeafKind::LinearRow;
  l.b = mbs(c);
  l.s = tokens_full / l.b;
  l.in = in;
  l.out = out;
  l.recompute = recompute;
  l.has_cached_inputs = has_cached;
  l.variance = recompute && is_last && (use_var || bld.variance_all);
  l.breakpoint = breakpoint;
  l.fp8_gemm = quantized;
  const char* cls = column ? "LinearCol" : "LinearRow";
  if (quantized) {
    bld.push(quantizer_leaf(in_tokens * in, recompute, name + ".quntizer",
                            parent_path +
                                Builder::idx(index, column ? "QuantizedColLinear" : "QuantizedRowLinear") +
                                Builder::idx(0, "Float8Quantizer")));
    l.input_bytes = in_tokens * in * 1;
    l.name = name + ".linear";
    l.path = parent_path + Builder::idx(index, column ? "QuantizedColLinear" : "QuantizedRowLinear") +
             Builder::idx(1, cls);
  } else {
    l.input_bytes = in_tokens * in * 2;
    l.name = name;
    l.path = parent_path + Builder::idx(index, cls);
  }
  bld.push(std::move(l));
}

Leaf norm_leaf(double tokens, double width, bool recompute, std::string name, std::string path) {
  Leaf l;
  l.kind = LeafKind::Norm;
  l.tokens = tokens;
  l.in = l.out = width;
  l.input_bytes = tokens * width * 2;
  l.recompute = recompute;
  l.name = std::move(name);
  l.path = std::move(path);
  return l;
}

Leaf layout_leaf(LeafKind kind, double input_bytes, bool recompute, const std::string& path,
                 const char* cls) {
  Leaf l;
  l.kind = kind;
  l.input_bytes = input_bytes;
  l.recompute = recompute;
  l.dynamic = true;
  l.name = "self";
  l.path = path + cls;
  return l;
}

/// The dense MLP (or a shared expert) from its three graph ops.
void add_mlp(Builder& bld, const Op& fc1, const Op& act, const Op& fc2, const std::string& name,
             const std::string& path, bool shared, const LayerRc& rc) {
  const Ctx& c = bld.c;
  bool enable = shared ? (rc.shared || rc.meg_moe) : (rc.linear || rc.meg_mlp);
  bool ln_tail = rc.meg_ln && !shared;
  double in_tokens_fc1 = (c.sp && c.tp > 1) ? fc1.tokens / c.tp : fc1.tokens;
  bool bp_fc1 = c.rc.scope == RecomputeScope::Selective && rc.meg_ln && enable && !shared;
  add_linear(bld, true, name + ".linear_fc1", path, 0, fc1.tokens, in_tokens_fc1, fc1.in_features,
             fc1.out_features, enable || ln_tail, ln_tail, ln_tail, ln_tail, bp_fc1);
  Leaf a;
  a.kind = bld.c.m->gated() ? LeafKind::Swiglu : LeafKind::Gelu;
  a.n_in = act.tokens * act.in_features;
  a.n_out = act.tokens * act.out_features;
  a.input_bytes = a.n_in * 2;
  a.recompute = enable;
  a.name = name + ".activation_layer";
  a.path = path + Builder::idx(1, bld.c.m->gated() ? "Swiglu" : "Gelu");
  bld.push(std::move(a));
  add_linear(bld, false, name + ".linear_fc2", path, 2, fc2.tokens, fc2.tokens, fc2.in_features,
             fc2.out_features, enable, false, true, false, false);
}

}  // namespace

std::vector<Leaf> layer_leaves(const Ctx& c, const std::vector<Op>& ops, const LayerRc& rc) {
  std::vector<Leaf> out;
  out.reserve(24);
  Builder bld{c, out, c.rc.variance};
  const ModelSpec& m = *c.m;
  bool selective = c.rc.scope == RecomputeScope::Selective;
  auto find = [&](const char* suffix) -> const Op* {
    for (const auto& op : ops)
      if (ends_with(op.path, suffix)) return &op;
    return nullptr;
  };
  auto need = [&](const char* suffix) -> const Op& {
    const Op* op = find(suffix);
    if (!op) throw std::logic_error(std::string("cost model: layer graph has no op ") + suffix);
    return *op;
  };

  // 1. Input norm.
  const Op& ln1 = need("input_layernorm");
  Leaf n1 =
      norm_leaf(ln1.tokens, ln1.in_features, rc.input_ln, "layernorm_input", Builder::idx(0, "LayerNorm"));
  n1.layer_first = true;
  bld.push(std::move(n1));

  // 2. Attention.
  const Op& core = need("core_attention");
  double tok = core.tokens;  // b · s_local
  double tok_in = (c.sp && c.tp > 1) ? tok / c.tp : tok;
  if (!m.mla.enabled) {
    std::string ap = Builder::idx(1, "Attention");
    const Op& qkv = need("linear_qkv");
    add_linear(bld, true, "attention.linear_qkv", ap, 0, qkv.tokens, tok_in, qkv.in_features,
               qkv.out_features, rc.q_up || rc.meg_ln, rc.meg_ln, rc.meg_ln, rc.meg_ln, false);
    int next = 1;
    for (const char* qk : {"q_layernorm", "k_layernorm"}) {  // Qwen3-style qk norms (not in SimuMax)
      if (const Op* n = find(qk)) {
        bld.push(norm_leaf(n->tokens, n->in_features, rc.q_up, std::string("attention.") + qk,
                           ap + Builder::idx(next++, "LayerNorm")));
      }
    }
    Leaf at;
    at.kind = LeafKind::CoreAttention;
    at.b = mbs(c);
    at.s = core.seq;
    at.heads = core.heads;
    at.kv_heads = core.kv_heads;
    at.head_dim = core.head_dim;
    at.v_dim = core.v_head_dim;
    at.input_bytes = tok * (core.heads + 2.0 * core.kv_heads) * core.head_dim * 2;
    at.recompute = rc.core;
    at.variance = rc.core && c.rc.variance;
    at.cache_outputs = c.flash && c.fp8;
    at.name = "attention.attention";
    at.path = ap + Builder::idx(next++, "CoreAttention");
    bld.push(std::move(at));
    const Op& proj = need("linear_proj");
    add_linear(bld, false, "attention.linear_out", ap, next, proj.tokens, proj.tokens, proj.in_features,
               proj.out_features, rc.out, false, false, false, false);
  } else {
    // Multi-latent attention (dense_module.py MLAAttention.forward); TP is 1.
    std::string ap = Builder::idx(1, "MLAAttention");
    const MLASpec& mla = m.mla;
    double n = core.heads, qd = mla.qk_head_dim + mla.qk_pos_emb_head_dim, vd = mla.v_head_dim;
    bool bypass = rc.meg_up && c.cp > 1 && c.st->cp_comm_type != CpCommType::AllGather;
    bool up_tail = rc.meg_up && !bypass;
    bool core_rc = rc.core && !bypass;
    bool bp_down = (c.rc.attn_norm || rc.meg_ln) && selective;
    int i = 0;
    if (mla.q_lora_rank > 0) {
      const Op& qd_op = need("linear_q_down_proj");
      add_linear(bld, true, "attention.linear_q_down_proj", ap, i++, qd_op.tokens, tok, qd_op.in_features,
                 qd_op.out_features, rc.q_down, rc.meg_ln, true, rc.meg_ln, bp_down);
      const Op& qn = need("q_layernorm");
      bld.push(norm_leaf(qn.tokens, qn.in_features, rc.q_ln, "attention.q_layernorm",
                         ap + Builder::idx(i++, "LayerNorm")));
      const Op& qu = need("linear_q_up_proj");
      add_linear(bld, true, "attention.linear_q_up_proj", ap, i++, qu.tokens, qu.tokens, qu.in_features,
                 qu.out_features, rc.q_up, false, false, false, false);
    } else {
      const Op& qp = need("linear_q_proj");
      add_linear(bld, true, "attention.linear_q_proj", ap, i++, qp.tokens, tok, qp.in_features,
                 qp.out_features, rc.q_up, false, false, false, false);
    }
    const Op& kvd = need("linear_kv_down_proj");
    add_linear(bld, true, "attention.linear_kv_down_proj", ap, i++, kvd.tokens, tok, kvd.in_features,
               kvd.out_features, rc.kv_down, true, true, rc.meg_ln, bp_down);
    double kv_comb = mla.kv_lora_rank + mla.qk_pos_emb_head_dim;
    bld.push(
        layout_leaf(LeafKind::Split, tok * kv_comb * 2, rc.core, ap + Builder::idx(i++, ""), "SplitModule"));
    const Op& kvn = need("kv_layernorm");
    bld.push(norm_leaf(kvn.tokens, kvn.in_features, rc.kv_ln, "attention.kv_layernorm",
                       ap + Builder::idx(i++, "LayerNorm")));
    const Op& kvu = need("linear_kv_up_proj");
    add_linear(bld, true, "attention.linear_kv_up_proj", ap, i++, kvu.tokens, kvu.tokens, kvu.in_features,
               kvu.out_features, rc.kv_up, false, false, false, false);
    bld.push(layout_leaf(LeafKind::Split, tok * n * (mla.qk_head_dim + vd) * 2, rc.core,
                         ap + Builder::idx(i++, ""), "SplitModule"));
    Leaf rope = layout_leaf(LeafKind::Rotary, tok * mla.qk_pos_emb_head_dim * 2, rc.rope,
                            ap + Builder::idx(i++, ""), "RotaryEmbedding");
    rope.dynamic = false;
    rope.name = "attention.rotary_pos_emb";
    bld.push(std::move(rope));
    bld.push(layout_leaf(LeafKind::Concat, tok * n * (mla.qk_head_dim + mla.qk_pos_emb_head_dim) * 2, rc.core,
                         ap + Builder::idx(i++, ""), "ConcatModule"));
    bld.push(layout_leaf(LeafKind::Concat, tok * n * (2 * qd + vd) * 2, rc.core, ap + Builder::idx(i++, ""),
                         "ConcatModule"));
    Leaf at;
    at.kind = LeafKind::MlaCoreAttention;
    at.b = mbs(c);
    at.s = core.seq;
    at.heads = n;
    at.kv_heads = core.kv_heads;
    at.head_dim = qd;
    at.v_dim = vd;
    at.input_bytes = tok * n * (2 * qd + vd) * 2;
    at.recompute = core_rc;
    at.has_cached_inputs = up_tail;
    at.variance = core_rc && (up_tail || c.rc.variance);
    at.cache_outputs = c.flash && c.fp8;
    at.name = "attention.core_attention";
    at.path = ap + Builder::idx(i++, "MLACoreAttention");
    bld.push(std::move(at));
    const Op& proj = need("linear_proj");
    add_linear(bld, true, "attention.linear_out_proj", ap, i++, proj.tokens, proj.tokens, proj.in_features,
               proj.out_features, rc.out, false, false, false, rc.out && selective);
  }

  // 3. Pre-MLP norm.
  const Op& ln2 = need("pre_mlp_layernorm");
  bld.push(
      norm_leaf(ln2.tokens, ln2.in_features, rc.pre_ln, "pre_mlp_layernorm", Builder::idx(2, "LayerNorm")));

  // 4. MLP.
  const Op* router = find("mlp.router");
  if (!router) {
    std::string mp = Builder::idx(3, "MLP");
    add_mlp(bld, need("mlp.linear_fc1"), need("mlp.activation_func"), need("mlp.linear_fc2"), "mlp", mp,
            false, rc);
    return out;
  }
  std::string mp = Builder::idx(3, "ExpertMLP");
  int i = 0;
  bool has_shared = m.moe.shared_expert_ffn_hidden_size > 0;
  if (has_shared) {
    add_mlp(bld, need("shared_experts.linear_fc1"), need("shared_experts.activation_func"),
            need("shared_experts.linear_fc2"), "mlp.shared_expert", mp + Builder::idx(i++, "MLP"), true, rc);
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
    return std::ceil(t / E) * E * m.moe.capacity_factor;
  };
  double permuted = pad(topk * b * s);
  double routed = pad(b * ((c.sp && c.etp > 1) ? s * c.etp : s) * topk);
  const Op& fc1 = need("mlp.experts.linear_fc1");
  const Op& act = need("mlp.experts.activation_func");
  const Op& fc2 = need("mlp.experts.linear_fc2");
  double local = fc1.local_experts;
  bool perm_rc = rc.perm || rc.meg_moe;
  Leaf p;
  p.kind = LeafKind::Permutation;
  p.b = b;
  p.s = s;
  p.in = h;
  p.tokens = permuted;
  p.experts = E;
  p.input_bytes = b * s * h * 2 + b * s * E * 4;
  p.recompute = perm_rc;
  p.name = "mlp.permutation";
  p.path = mp + Builder::idx(i++, "Permutation");
  bld.push(std::move(p));

  bool lin_rc = rc.linear || rc.meg_moe;
  bool act_rc = rc.linear || rc.meg_moe || rc.meg_moe_act;
  // Grouped fc1 (with its quantizer under fp8).
  {
    Leaf g;
    g.kind = LeafKind::GroupLinearCol;
    g.tokens = routed;
    g.in = fc1.in_features;
    g.out = fc1.out_features;
    g.local_experts = local;
    g.recompute = lin_rc;
    g.fp8_gemm = c.fp8;
    if (c.fp8) {
      Leaf q = quantizer_leaf(
          routed * g.in, c.st->cache_grouped_gemm_fp8_inputs ? false : lin_rc, "mlp.group_linear1.quantizer",
          mp + Builder::idx(i, "QuantizedGroupLinearCol") + Builder::idx(0, "Float8Quantizer"));
      q.offload_inputs = !c.st->cache_grouped_gemm_fp8_inputs && c.st->offload_grouped_gemm_inputs;
      bld.push(std::move(q));
      g.offload_inputs = c.st->cache_grouped_gemm_fp8_inputs && c.st->offload_grouped_gemm_inputs;
      g.input_bytes = routed * g.in;
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
    g.fp8_gemm = c.fp8;
    if (c.fp8) {
      bld.push(quantizer_leaf(
          routed * g.in, act_rc, "mlp.group_linear2.quantizer",
          mp + Builder::idx(i, "QuantizedGroupLinearRow") + Builder::idx(0, "Float8Quantizer")));
      g.input_bytes = routed * g.in;
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
    Leaf u;
    u.kind = LeafKind::UnPermutation;
    u.b = b;
    u.s = s;
    u.in = h;
    u.tokens = routed;
    u.input_bytes = routed * h * 2 + (c.st->moe_dispatch_probs ? 0 : b * s * E * 4);
    u.recompute = perm_rc;
    u.breakpoint = perm_rc && selective;
    u.name = "mlp.unpermutation";
    u.path = mp + Builder::idx(i++, "UnPermutation");
    bld.push(std::move(u));
  }
  if (has_shared)
    bld.push(layout_leaf(LeafKind::Add, 2 * b * s * h * 2, false, mp + Builder::idx(i++, ""), "AddModule"));
  return out;
}

std::vector<Leaf> embedding_leaves(const Ctx& c, const std::vector<Op>& ops) {
  std::vector<Leaf> out;
  Builder bld{c, out, c.rc.variance};
  for (const auto& op : ops) {
    if (op.kind != OpKind::Embedding) continue;  // position tables and dropout are not modelled
    Leaf l;
    l.kind = LeafKind::Embedding;
    l.b = mbs(c);
    l.s = op.tokens / l.b;
    l.in = op.in_features;
    l.out = op.out_features;
    l.input_bytes = op.tokens * 2;
    l.name = "embedding";
    l.path = "Embedding";
    bld.push(std::move(l));
  }
  return out;
}

std::vector<Leaf> head_leaves(const Ctx& c, const std::vector<Op>& ops) {
  std::vector<Leaf> out;
  Builder bld{c, out, c.rc.variance};
  for (const auto& op : ops) {
    if (op.kind == OpKind::Norm) {
      bld.push(norm_leaf(op.tokens, op.in_features, false, "layernorm", "LayerNorm"));
    } else if (op.kind == OpKind::LinearColumn) {
      double in_tokens = (c.sp && c.tp > 1) ? op.tokens / c.tp : op.tokens;
      add_linear(bld, true, "linear_out", "", 0, op.tokens, in_tokens, op.in_features, op.out_features, false,
                 false, false, false, false, /*fp8_allowed=*/false);
      out.back().path = "LinearCol";
    } else if (op.kind == OpKind::CrossEntropy) {
      Leaf l;
      l.kind = LeafKind::CrossEntropy;
      l.b = mbs(c);
      l.s = op.tokens / l.b;
      l.in = op.in_features;
      l.input_bytes = op.tokens * op.in_features * 2;
      l.name = "parallel_ce";
      l.path = "ParallelCE";
      bld.push(std::move(l));
    }
  }
  return out;
}

}  // namespace preflight::analyzer::cost::detail
