// The attention block: core attention (MHA/GQA, flash or math, context parallel) and multi-latent
// attention, and the attention leaves of a layer.  SimuMax: dense_module.py CoreAttention, Attention,
// MLAAttention, MLACoreAttention.
#include <algorithm>
#include <cmath>

#include "leaf_build.hpp"

namespace preflight::analyzer::cost::detail {

// --- CoreAttention / MLACoreAttention ------------------------------------------------------------
// Geometry: b, s = local sequence (s/cp), heads / kv_heads on this tp rank, head_dim (q/k), v_dim.
namespace {

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

/// Ring p2p context parallelism (TransformerEngine's `cp_comm_type p2p`, Megatron's default) priced as a ring;
/// under --simumax-compat it is priced as all-to-all, as SimuMax does.
bool cp_ring(const Ctx& c) {
  return c.cp > 1 && c.st->cp_comm_type == CpCommType::P2P && !c.st->simumax_compat;
}

bool cp_a2a(const Ctx& c) {
  return c.cp > 1 && c.st->cp_comm_type != CpCommType::AllGather && !cp_ring(c);
}

/// The all-to-all level of hierarchical context parallelism (Strategy::cp_a2a_size) under a ring: its size,
/// 1 without one.
int cp_ring_a2a(const Ctx& c) {
  return cp_ring(c) && c.st->cp_a2a_size > 1 ? c.st->cp_a2a_size : 1;
}

/// Ring attention (TransformerEngine AttnFuncWithCPAndKVP2P): as many steps as ranks in the ring (cp, or cp /
/// A under an all-to-all level of A), each attending the local queries to one k/v chunk while the next chunk
/// travels to the neighbour; forward sends k/v ring − 1 times, backward k/v and their gradients.  A step's
/// transfer hides behind the step's attention; what exceeds it is exposed.
void add_ring_exchange(const Ctx& c, Leaf& l, double step_ms) {
  Pass& p = l.pass;
  const double ring = static_cast<double>(c.cp) / cp_ring_a2a(c);
  const double steps = ring - 1;
  const double fwd_step = p.fwd_ms / ring, bwd_step = p.bwd_act_ms / ring;
  p.fwd_net_ms += steps * std::max(0.0, step_ms - fwd_step);
  p.bwd_act_net_ms += steps * std::max(0.0, 2 * step_ms - bwd_step);
  if (l.recompute && !l.variance) p.recompute_net_ms = p.fwd_net_ms;
}

bool math_dropout(const Ctx& c) {
  return !c.st->simumax_compat && c.m->attention_dropout > 0;
}

/// Math attention runs its softmax and dropout as kernels of their own between the two batched GEMMs
/// (megatron/core/transformer/dot_product_attention.py: FusedScaleMaskSoftmax, then attention_dropout);
/// they are memory bound and add to the GEMMs' time.  Forward: the fused scale-mask-softmax reads the
/// scores and writes the probabilities, dropout reads them and writes its output and 1-byte mask.
/// Backward: dropout's gradient reads the gradient and the mask and writes a gradient; softmax's reads
/// the gradient and the probabilities and writes a gradient.  Bytes over the default bandwidth.
void add_math_softmax_dropout(const Ctx& c, Leaf& l) {
  const double soft = l.b * l.heads * l.s * l.s, e = c.e;
  const bool drop = math_dropout(c);
  const double fwd = 2 * soft * e + (drop ? soft * (2 * e + 1) : 0);
  const double bwd = 3 * soft * e + (drop ? soft * (2 * e + 1) : 0);
  Pass& p = l.pass;
  const double fwd_ms = memory_time_ms(*c.sys, "default", fwd), bwd_ms = memory_time_ms(*c.sys, "default", bwd);
  p.fwd_ms += fwd_ms;
  p.fwd_bytes += fwd;
  p.bwd_act_ms += bwd_ms;
  p.bwd_act_bytes += bwd;
  if (l.recompute && !l.variance) {
    p.recompute_ms += fwd_ms;
    p.recompute_bytes += fwd;
  }
}

}  // namespace

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
    } else if (cp_ring(c)) {  // the chunk in flight next to the one being attended (double buffer)
      double kv = (k + v) * e;
      l.fwd_peak += kv;
      l.bwd_peak += 2 * kv;  // k/v and their gradients travel
      if (cp_ring_a2a(c) > 1) {  // and the all-to-all level's buffers around the ring
        const CpPeaks pk = cp_a2a_peaks(c, q * e, k * e, v * e, out_mem, saved);
        l.fwd_peak = std::max({l.fwd_peak, pk.fwd_pre, pk.fwd_post});
        l.bwd_peak = std::max({l.bwd_peak, pk.bwd_pre - saved, pk.bwd_post - saved});
      }
    } else if (c.cp > 1 && !mla) {  // all-gather of k/v
      double kv = (k + v) * e;
      l.fwd_peak += kv * (c.cp - 1);
      l.bwd_peak += 2 * kv * (c.cp - 1);
    }
  } else {
    double soft = b * H * s * s;
    l.cache = (q + k + v + soft) * e;
    // Megatron's attention dropout keeps its mask and output for backward (Korthikanti et al. 2022, §4.1).
    if (math_dropout(c)) l.cache += soft * (e + 1);
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
  // The graph's attended keys: a sliding window, or the whole sequence for a unit of the sequence pipeline.
  if (l.keys_per_query > 0)
    seq_k = c.st->seq_split > 1 ? l.keys_per_query : std::min(seq_k, l.keys_per_query);
  // Packed samples: each query attends its own sample's keys (Strategy::packed_seq_mean_length).
  const double packed = c.st->packed_seq_mean_length;
  if (packed > 0) seq_k = std::min(seq_k, packed);
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
  } else if (c.st->simumax_compat) {
    double soft = b * H * s * s;
    p.fwd_bytes = (qb + kb + soft) * e + 2 * soft * e + (soft + vb + ob) * e;
    p.bwd_act_bytes = 2 * (soft + vb + ob) * e + 2 * soft * e + 2 * (qb + kb + soft) * e;
  } else {
    // The two batched GEMMs only; their softmax and dropout kernels are added after pricing.
    double soft = b * H * s * s;
    p.fwd_bytes = (qb + kb + soft) * e + (soft + vb + ob) * e;
    p.bwd_act_bytes = 2 * (soft + vb + ob) * e + 2 * (qb + kb + soft) * e;
  }
  // Context-parallel collectives.
  // The all-to-alls of heads over `group` ranks: q, k, v before the kernel and the output after it; backward
  // the same (the output's gradient twice when TransformerEngine does not keep the output).  Sizes as
  // SimuMax's CoreAttention._get_cp_a2a_stage_specs (MHA: k, v with the kv heads; MLA: k and v re-sized with
  // the kv heads and v_dim).
  auto add_head_all_to_alls = [&](int group, bool output_twice) {
    const double qm = q * e;
    const double km = (mla ? b * KV * s * d : k) * e, vm = (mla ? b * KV * s * dv : v) * e;
    const double om = (mla ? b * H * s * dv : b * H * s * d) * e;
    for (double sz : {qm, km, vm, om})
      p.fwd_net_ms += net(c, Collective::AllToAll, sz, group, c.nets.cp, CommGroup::Cp);
    std::vector<double> bwd{qm, km, vm, om};
    if (output_twice) bwd.push_back(om);
    for (double sz : bwd)
      p.bwd_act_net_ms += net(c, Collective::AllToAll, sz, group, c.nets.cp, CommGroup::Cp);
  };
  double ring_step_ms = 0;  // one k/v chunk to the next rank (the ring's overlap is applied after pricing)
  if (cp_ring(c)) {
    // After an all-to-all level of A the rank holds A times the tokens with 1 / A of the heads: the same
    // bytes.
    const double kv = (b * KV * s * d + b * KV * s * dv) * e;
    ring_step_ms = net(c, Collective::SendRecv, kv, 2, c.nets.cp, CommGroup::Cp);
    // TransformerEngine's a2a+p2p: the all-to-alls over its first level A, around the ring.
    if (const int a2a = cp_ring_a2a(c); a2a > 1) add_head_all_to_alls(a2a, false);
  } else if (c.cp > 1) {
    if (cp_a2a(c)) {
      add_head_all_to_alls(c.cp, !c.te_cp_saves);
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
  // A unit of the sequence pipeline runs the kernel of its queries against the whole sequence's keys: priced
  // at the whole sequence's shape (the kernel's efficiency; the FLOPs are the unit's).
  double key_seq = c.st->seq_split > 1 ? seq_k : (c.cp > 1 ? s * c.cp : s);
  // Packed samples: the varlen kernel runs row / L sequences of L tokens — its efficiency at that shape.
  double key_batch = b;
  if (packed > 0 && packed < key_seq) {
    key_batch = std::max(1.0, std::round(b * key_seq / packed));
    key_seq = packed;
  }
  bool contiguous = c.sys->name.find("s5000") == std::string::npos;
  std::string key = "batch=" + fmt_int(key_batch) + ", seq_len=" + fmt_int(key_seq) +
                    ", head_num=" + fmt_int(kq_heads) + ", kv_head_num=" + fmt_int(kb_heads) +
                    ", qk_head_dim=" + fmt_int(d) + ", v_head_dim=" + fmt_int(mla ? dv : d) +
                    ", qkv_contiguous=" + (contiguous ? "True" : "False");
  price_passes(c, l, "sdp_fwd", "sdp_bwd", "sdp_bwd", key, key, key);
  if (!c.flash && !c.st->simumax_compat) add_math_softmax_dropout(c, l);
  if (ring_step_ms > 0) add_ring_exchange(c, l, ring_step_ms);
}

void attention_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc) {
  const Ctx& c = bld.c;
  const ModelSpec& m = *c.m;
  bool selective = c.rc.scope == RecomputeScope::Selective;
  const Op& core = ops.need(OpRole::CoreAttention);
  double tok = core.tokens;  // b · s_local
  double tok_in = (c.sp && c.tp > 1) ? tok / c.tp : tok;
  if (!m.mla.enabled) {
    std::string ap = Builder::idx(1, "Attention");
    const Op& qkv = ops.need(OpRole::Qkv);
    add_linear(bld, true, "attention.linear_qkv", ap, 0, qkv.tokens, tok_in, qkv.in_features,
               qkv.out_features, rc.q_up || rc.meg_ln, rc.meg_ln, rc.meg_ln, rc.meg_ln, false, true,
               qkv.sixteen_bit);
    int next = 1;
    for (OpRole qk : {OpRole::QNorm, OpRole::KNorm}) {  // Qwen3-style qk norms (not in SimuMax)
      if (const Op* n = ops.find(qk)) {
        const char* name = qk == OpRole::QNorm ? "attention.q_layernorm" : "attention.k_layernorm";
        bld.push(norm_leaf(n->tokens, n->in_features, rc.q_up, name, ap + Builder::idx(next++, "LayerNorm")));
      }
    }
    Leaf at;
    at.kind = LeafKind::CoreAttention;
    at.b = mbs(c);
    at.s = core.seq;
    at.keys_per_query =
        core.kv_seq < c.st->seq_length || c.st->seq_split > 1 ? static_cast<double>(core.kv_seq) : 0;
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
    const Op& proj = ops.need(OpRole::AttnProj);
    add_linear(bld, false, "attention.linear_out", ap, next, proj.tokens, proj.tokens, proj.in_features,
               proj.out_features, rc.out, false, false, false, false, true, proj.sixteen_bit);
  } else {
    // Multi-latent attention (SimuMax dense_module.py MLAAttention.forward, tp 1 there).  With tp > 1 as
    // Megatron's MLASelfAttention: the down projections are replicated over tp on the rank's own tokens,
    // the up projections column-parallel (they gather the latents), k_pos_emb gathered on its own.
    std::string ap = Builder::idx(1, "MLAAttention");
    const MLASpec& mla = m.mla;
    double n = core.heads, qd = mla.qk_head_dim + mla.qk_pos_emb_head_dim, vd = mla.v_head_dim;
    bool bypass = rc.meg_up && c.cp > 1 && c.st->cp_comm_type != CpCommType::AllGather;
    bool up_tail = rc.meg_up && !bypass;
    bool core_rc = rc.core && !bypass;
    bool bp_down = (c.rc.attn_norm || rc.meg_ln) && selective;
    int i = 0;
    if (mla.q_lora_rank > 0) {
      const Op& qd_op = ops.need(OpRole::QDownProj);
      add_duplicated_linear(bld, "attention.linear_q_down_proj", ap, i++, qd_op.tokens, qd_op.in_features,
                            qd_op.out_features, rc.q_down, rc.meg_ln, true, rc.meg_ln, bp_down, 0,
                            qd_op.sixteen_bit);
      if (const Op* qn = ops.find(OpRole::QDownNorm))
        bld.push(norm_leaf(qn->tokens, qn->in_features, rc.q_ln, "attention.q_layernorm",
                           ap + Builder::idx(i++, "LayerNorm")));
      const Op& qu = ops.need(OpRole::QUpProj);
      add_linear(bld, true, "attention.linear_q_up_proj", ap, i++, qu.tokens, tok_in, qu.in_features,
                 qu.out_features, rc.q_up, false, false, false, false, true, qu.sixteen_bit);
    } else {
      const Op& qp = ops.need(OpRole::QProj);
      add_linear(bld, true, "attention.linear_q_proj", ap, i++, qp.tokens, tok_in, qp.in_features,
                 qp.out_features, rc.q_up, false, false, false, false, true, qp.sixteen_bit);
    }
    const Op& kvd = ops.need(OpRole::KvDownProj);
    add_duplicated_linear(bld, "attention.linear_kv_down_proj", ap, i++, kvd.tokens, kvd.in_features,
                          kvd.out_features, rc.kv_down, true, true, rc.meg_ln, bp_down,
                          tok * mla.qk_pos_emb_head_dim * c.e, kvd.sixteen_bit);
    double kv_comb = mla.kv_lora_rank + mla.qk_pos_emb_head_dim;
    bld.push(layout_leaf(LeafKind::Split, tok_in * kv_comb * 2, rc.core, ap + Builder::idx(i++, ""),
                         "SplitModule"));
    if (const Op* kvn = ops.find(OpRole::KvDownNorm))
      bld.push(norm_leaf(kvn->tokens, kvn->in_features, rc.kv_ln, "attention.kv_layernorm",
                         ap + Builder::idx(i++, "LayerNorm")));
    const Op& kvu = ops.need(OpRole::KvUpProj);
    add_linear(bld, true, "attention.linear_kv_up_proj", ap, i++, kvu.tokens, tok_in, kvu.in_features,
               kvu.out_features, rc.kv_up, false, false, false, false, true, kvu.sixteen_bit);
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
    at.keys_per_query = core.kv_seq < c.st->seq_length ? static_cast<double>(core.kv_seq) : 0;
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
    const Op& proj = ops.need(OpRole::AttnProj);
    add_linear(bld, true, "attention.linear_out_proj", ap, i++, proj.tokens, proj.tokens, proj.in_features,
               proj.out_features, rc.out, false, false, false, rc.out && selective, true, proj.sixteen_bit);
  }
}

}  // namespace preflight::analyzer::cost::detail
