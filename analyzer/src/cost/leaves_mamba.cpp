// A hybrid model's Mamba-2 mixer (megatron/core/ssm/mamba_mixer.py): in_proj and out_proj as the dense
// linears are priced; the fused causal convolution + SSD scan (mamba_ssm's mamba_split_conv1d_scan_combined,
// Triton kernels) as Megatron counts its FLOPs (training.py mamba_layer_flops: 7 · tokens · d_inner · state)
// at the system's `mamba_scan` efficiency — the `default` op's when the system file has none (no published
// measurement of the kernel is in the corpus) — with the bytes it moves (its input, its output and the
// ungated output it keeps, the fp32 chunk states) as the memory-bound bound.
#include "leaf_build.hpp"

#include <cmath>

namespace preflight::analyzer::cost::detail {

namespace {

/// A mixer's context parallelism (Mamba's and the gated delta net's): its input all-to-all'd from sequence to
/// head shards over cp before the kernel, its output back after; the gradients the other way in backward.
void add_cp_head_exchanges(const Ctx& c, Pass& p, double in_bytes, double out_bytes) {
  if (c.cp <= 1) return;
  const double a2a = net(c, Collective::AllToAll, in_bytes, c.cp, c.nets.cp, CommGroup::Cp) +
                     net(c, Collective::AllToAll, out_bytes, c.cp, c.nets.cp, CommGroup::Cp);
  p.fwd_net_ms += a2a;
  p.bwd_act_net_ms += a2a;
}

/// The leaves of a mixer built as in_proj (TELayerNormColumnParallelLinear), a fused kernel, a norm and
/// out_proj, module 1 of its layer: Mamba-2's and the gated delta net's.  `norm_recompute` adds what
/// recomputes the norm alone (gdn_norm_out).
struct MixerLeaves {
  OpRole in_proj, kernel, norm, out_proj;
  LeafKind kind;
  const char* module;        // "MambaMixer"
  const char* kernel_class;  // "MambaScan"
  const char* prefix;        // "mixer."
  const char* kernel_name;   // "ssm"
  const char* norm_name;     // "norm"
};

void mixer_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc, const MixerLeaves& d,
                  bool norm_recompute) {
  const Ctx& c = bld.c;
  const std::string mp = Builder::idx(1, d.module), pre = d.prefix;
  const Op& in = ops.need(d.in_proj);
  const double tok_in = (c.sp && c.tp > 1) ? in.tokens / c.tp : in.tokens;
  // in_proj is a TELayerNormColumnParallelLinear, as the attention's linear_qkv (its recompute flags).
  add_linear(bld, true, pre + "in_proj", mp, 0, in.tokens, tok_in, in.in_features, in.out_features,
             rc.out || rc.meg_ln, rc.meg_ln, rc.meg_ln, rc.meg_ln, false, true, in.sixteen_bit);
  const Op& kernel = ops.need(d.kernel);
  Leaf l;
  l.kind = d.kind;
  l.b = mbs(c);
  l.s = static_cast<double>(kernel.tokens) / l.b;
  l.tokens = static_cast<double>(kernel.tokens);
  l.in = static_cast<double>(kernel.in_features);
  l.out = static_cast<double>(kernel.out_features);
  l.input_bytes = l.tokens * l.in * c.e;
  l.graph_saved_bytes = static_cast<double>(kernel.saved_bytes());
  l.recompute = rc.out;
  l.name = pre + d.kernel_name;
  l.path = mp + Builder::idx(1, d.kernel_class);
  bld.push(std::move(l));
  const Op& norm = ops.need(d.norm);
  bld.push(norm_leaf(static_cast<double>(norm.tokens), static_cast<double>(norm.in_features),
                     rc.out || norm_recompute, pre + d.norm_name, mp + Builder::idx(2, "LayerNorm")));
  const Op& out = ops.need(d.out_proj);
  add_linear(bld, false, pre + "out_proj", mp, 3, out.tokens, out.tokens, out.in_features, out.out_features,
             rc.out, false, false, false, false, true, out.sixteen_bit);
}

}  // namespace

void price_mamba_scan(const Ctx& c, Leaf& l) {
  const MambaSpec& mb = c.m->mamba;
  const double heads = static_cast<double>(mb.heads(c.m->hidden_size)) / c.tp;
  const double conv = static_cast<double>(mb.conv_dim(c.m->hidden_size)) / c.tp;
  const double tok = l.tokens;
  const double chunks = std::ceil(l.s / static_cast<double>(mb.chunk_size));
  // fp32 chunk states: batch × chunks × heads × head_dim × state.
  const double states = l.b * chunks * heads * static_cast<double>(mb.head_dim * mb.state_dim) * 4;
  const double in_b = tok * l.in * c.e, out_b = tok * l.out * c.e;
  // What the op keeps (add_mamba: z, x, B, C, dt and the ungated output), its input left out when cached.
  l.cache = l.graph_saved_bytes - (l.has_cached_inputs ? in_b : 0);
  l.fwd_peak = in_b + 2 * out_b + states;
  l.bwd_peak = 2 * in_b + 2 * out_b + 2 * states;
  const double params = conv * static_cast<double>(mb.conv_kernel) + conv + 3 * heads;
  dense_params(c, l, params, c.e, params * c.tp);
  Pass& p = l.pass;
  p.fwd_flops = 7 * tok * l.out * static_cast<double>(mb.state_dim) +
                2 * tok * conv * static_cast<double>(mb.conv_kernel);
  p.bwd_act_flops = 2 * p.fwd_flops;
  p.bwd_w_flops = 0;
  p.fwd_bytes = in_b + 2 * out_b + 2 * states;
  p.bwd_act_bytes = 2 * in_b + 3 * out_b + 3 * states;
  // Context parallelism (MambaContextParallel): z, x, B, C, dt to head shards before the scan, its output
  // back after; the gradients the other way in backward.  Each rank keeps 1 / cp of what it holds.
  add_cp_head_exchanges(c, p, in_b, out_b);
  finish_recompute(l);
  price_passes(c, l, "mamba_scan", "mamba_scan", "mamba_scan");
}

void mamba_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc) {
  mixer_leaves(bld, ops, rc,
               {OpRole::MambaInProj, OpRole::MambaScan, OpRole::MambaNorm, OpRole::MambaOutProj,
                LeafKind::MambaScan, "MambaMixer", "MambaScan", "mixer.", "ssm", "norm"},
               false);
}

// A gated delta net (megatron/core/ssm/gated_delta_net): the convolution, L2 norm, gates and FLA's
// chunk_gated_delta_rule priced as Megatron counts their FLOPs (training.py gdn_layer_flops) at the system's
// `gated_delta_rule` efficiency (`default` when the system file has none: no published measurement of the
// kernels is in the corpus), with the bytes they move — the projections in, the tensors they keep, the
// WY factors and the chunk states (bf16) — as the memory-bound bound.
void price_gdn_rule(const Ctx& c, Leaf& l) {
  const GdnSpec& g = c.m->gdn;
  const double nv = static_cast<double>(g.num_value_heads) / c.tp;
  const double conv = static_cast<double>(g.conv_dim()) / c.tp;
  const double dk = static_cast<double>(g.key_head_dim), dv = static_cast<double>(g.value_head_dim);
  const double tok = l.tokens;
  const double chunks = std::ceil(l.s / static_cast<double>(GdnSpec::kChunk));
  const double states = l.b * chunks * nv * dk * dv * c.e;
  const double wy = tok * nv * (dk + dv) * c.e;
  const double in_b = tok * l.in * c.e, out_b = tok * l.out * c.e;
  // What the op keeps (add_gdn: the convolution's input, the L2-normed q, k, the repeated q, k and v, the
  // gates, the WY matrix A, z).
  const double kept = l.graph_saved_bytes;
  l.cache = kept;
  l.fwd_peak = kept + out_b + wy + states + tok * conv * c.e;
  l.bwd_peak = 2 * kept + out_b + 2 * (wy + states) + tok * conv * c.e;
  const double params = conv * static_cast<double>(g.conv_kernel) + 2 * nv;
  dense_params(c, l, params, c.e, params * c.tp);
  Pass& p = l.pass;
  p.fwd_flops = tok * g.kernel_flops_per_token(c.tp);
  p.bwd_act_flops = 2 * p.fwd_flops;
  p.bwd_w_flops = 0;
  p.fwd_bytes = in_b + kept + out_b + wy + states;
  p.bwd_act_bytes = 2 * (kept + out_b + wy + states) + in_b;
  // Context parallelism: the projections to head shards before the convolution, the output back after;
  // the gradients the other way in backward.
  add_cp_head_exchanges(c, p, in_b, out_b);
  finish_recompute(l);
  price_passes(c, l, "gated_delta_rule", "gated_delta_rule", "gated_delta_rule");
}

void gdn_leaves(Builder& bld, RoleCursor& ops, const LayerRc& rc) {
  // --recompute-modules gdn_norm_out: the norm and gate run again before out_proj's backward.
  mixer_leaves(
      bld, ops, rc,
      {OpRole::GdnInProj, OpRole::GdnRule, OpRole::GdnNorm, OpRole::GdnOutProj, LeafKind::GatedDeltaRule,
       "GatedDeltaNet", "GatedDeltaRule", "self_attention.", "gated_delta_rule", "out_norm"},
      rc.meg_gdn_norm);
}

}  // namespace preflight::analyzer::cost::detail
