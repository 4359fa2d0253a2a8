// The Mamba-2 mixer of a hybrid model's 'M' layer, as Megatron trains it (megatron/core/ssm/mamba_mixer.py,
// MambaMixer with its memory-efficient path): in_proj (TELayerNormColumnParallelLinear: the layer's norm is
// the InputNorm op before it), the fused causal convolution + SSD scan + z gating
// (mamba_ssm's mamba_split_conv1d_scan_combined), the gated RMSNorm, out_proj.
#include "ops_build.hpp"

namespace preflight::analyzer::graph_ops {

namespace {

/// A mixer's context parallelism (Mamba's, the gated delta net's): `what` (its input, `in_bytes` a rank) goes
/// from sequence to head shards by an all-to-all over cp before the kernel and its output (`out_bytes`) back
/// after; backward, the gradients the other way.
void add_cp_head_exchanges(Op& op, I64 in_bytes, I64 out_bytes, const std::string& what, const char* who) {
  op.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Forward, in_bytes, 1,
                      "all-to-all of " + what + " from sequence to head shards (" + who + ")"});
  op.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Forward, out_bytes, 1,
                      "all-to-all of the output back to sequence shards"});
  op.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Backward, out_bytes, 1,
                      "all-to-all of the output gradient to head shards"});
  op.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Backward, in_bytes, 1,
                      "all-to-all of the " + what + " gradients back to sequence shards"});
}

}  // namespace

void add_mamba(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre) {
  const MambaSpec& mb = c.m.mamba;
  const I64 heads = mb.heads(c.h), d_inner = mb.d_inner(c.h);
  const I64 in_full = mb.in_proj_out(c.h), conv_full = mb.conv_dim(c.h);
  // Heads, groups and d_inner are split over tp (Strategy::validate checks they divide).
  const I64 heads_l = heads / c.t, d_inner_l = d_inner / c.t;
  const I64 conv_l = conv_full / c.t;

  ops.push_back(make_column(c, pre + "in_proj", OpRole::MambaInProj, layer, c.h, in_full, false));

  // mamba_split_conv1d_scan_combined: its autograd function keeps its input (z, x, B, C, dt — the
  // contiguous copy of in_proj's output) and the ungated scan output out_x; the convolution's output, the
  // chunk states and dt are recomputed in backward.
  Op scan;
  scan.path = pre + "ssm";
  scan.kind = OpKind::SelectiveScan;
  scan.role = OpRole::MambaScan;
  scan.layer = layer;
  scan.tokens = c.tok;
  scan.in_features = mb.scan_input_width(c.h, c.t, c.st.cp);
  scan.out_features = d_inner_l;
  scan.params.push_back(param("conv1d_weight", {conv_l, 1, mb.conv_kernel}, {conv_full, 1, mb.conv_kernel}));
  scan.params.push_back(param("conv1d_bias", {conv_l}, {conv_full}));
  scan.params.push_back(param("A_log", {heads_l}, {heads}));
  scan.params.push_back(param("D", {heads_l}, {heads}));
  scan.params.push_back(param("dt_bias", {heads_l}, {heads}));
  // With context parallelism the scan gets z, x, B, C, dt as head shards of the whole sequence — as many
  // elements a rank, B and C repeated where a tp rank has fewer groups than cp (MambaSpec::cp_group_repeat).
  const int cp = c.st.cp;
  const I64 scan_in = mb.scan_input_width(c.h, c.t, cp);
  scan.input_bytes = c.tok * scan_in * c.a;
  scan.output_bytes = c.tok * d_inner_l * c.a;
  scan.saved.push_back({"zxbcdt", c.tok * scan_in * c.a, true});
  if (cp > 1)
    add_cp_head_exchanges(scan, c.tok * scan_in * c.a, c.tok * d_inner_l * c.a, "z, x, B, C, dt",
                          "Mamba context parallel");
  scan.saved.push_back({"out_x", c.tok * d_inner_l * c.a});
  // Megatron's count (training.py mamba_layer_flops): 7 · tokens · d_inner · state for the scan; the
  // depthwise convolution 2 · tokens · channels · width.  Backward about twice the forward.
  const double tok = static_cast<double>(c.tok);
  scan.fwd_flops = 7.0 * tok * static_cast<double>(d_inner_l) * static_cast<double>(mb.state_dim) +
                   2.0 * tok * static_cast<double>(conv_l) * static_cast<double>(mb.conv_kernel);
  scan.bwd_input_flops = 2 * scan.fwd_flops;
  ops.push_back(std::move(scan));

  // ExtendedRMSNorm over d_inner / tp in groups of d_inner / groups (its weight split over tp).
  Op norm = make_norm(c, pre + "norm", OpRole::MambaNorm, layer, c.tok, d_inner_l);
  norm.params = {param("weight", {d_inner_l}, {d_inner})};
  for (auto& t : norm.saved)  // one fp32 rstd per group of each token
    if (t.name == "stats") t.bytes = c.tok * (mb.num_groups / c.t) * 4;
  ops.push_back(std::move(norm));

  ops.push_back(make_row(c, pre + "out_proj", OpRole::MambaOutProj, layer, d_inner, c.h, false));
}

// A gated delta net (megatron/core/ssm/gated_delta_net/gdn.py, GatedDeltaNet.forward), per token of a tp rank
// (heads split over tp; with context parallelism each rank holds as many elements, below):
//   in_proj (TELayerNormColumnParallelLinear) → q, k, v, z, beta, alpha;
//   causal_conv1d (FLA, SiLU) over q, k, v — keeps its input for backward;
//   l2norm (FLA) of q, k — keeps its output and an fp32 rstd per head; q, k repeated to the value heads and
//   made contiguous, v made contiguous — the delta rule's saved inputs;
//   _compute_gates: g = −exp(A_log) · softplus(alpha + dt_bias) in fp32 (softplus keeps its fp32 input),
//   beta = sigmoid(beta) (kept);
//   chunk_gated_delta_rule (FLA) keeps q, k, v, its chunk-local cumulative g (fp32), beta and the
//   chunks' WY matrix A (64 per value head and token); z made contiguous for the gate;
//   out_norm (RMSNorm per value head) then × SiLU(z) — the norm keeps its input and rstd, the product its
//   two inputs; out_proj keeps the gated output.
void add_gdn(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre) {
  const GdnSpec& g = c.m.gdn;
  const I64 qk_l = g.qk_dim() / c.t, v_l = g.v_dim() / c.t;
  const I64 nk_l = g.num_key_heads / c.t, nv_l = g.num_value_heads / c.t;
  const I64 conv_full = g.conv_dim(), conv_l = conv_full / c.t;
  const I64 in_l = g.in_proj_out() / c.t;

  // GatedDeltaNet gets bias=False from TransformerLayer (its default): no bias whatever --disable-bias-linear
  // says.
  ops.push_back(make_column(c, pre + "in_proj", OpRole::GdnInProj, layer, c.h, g.in_proj_out(), false));

  Op rule;
  rule.path = pre + "gated_delta_rule";
  rule.kind = OpKind::GatedDeltaRule;
  rule.role = OpRole::GdnRule;
  rule.layer = layer;
  rule.tokens = c.tok;
  rule.in_features = in_l;
  rule.out_features = v_l;
  rule.input_bytes = c.tok * in_l * c.a;
  rule.output_bytes = c.tok * v_l * c.a;
  rule.params.push_back(param("conv1d.weight", {conv_l, 1, g.conv_kernel}, {conv_full, 1, g.conv_kernel}));
  rule.params.push_back(param("dt_bias", {nv_l}, {g.num_value_heads}));
  rule.params.push_back(param("A_log", {nv_l}, {g.num_value_heads}));
  const I64 t = c.tok, a = c.a;
  rule.saved.push_back({"conv_input", t * conv_l * a, true});
  rule.saved.push_back({"qk_l2norm", t * 2 * qk_l * a});
  rule.saved.push_back({"qk_rstd", t * 2 * nk_l * 4});
  rule.saved.push_back({"q_k_v", t * (2 * nv_l * g.key_head_dim + v_l) * a});
  rule.saved.push_back({"gates", t * nv_l * (4 + 4 + a)});  // softplus input, cumulative g (fp32), beta
  rule.saved.push_back({"wy_A", t * nv_l * GdnSpec::kChunk * a});
  rule.saved.push_back({"z", t * v_l * a});
  // Context parallelism (gated_delta_net/common.py a2a_cp_to_hp / a2a_hp_to_cp): in_proj's output goes from
  // sequence shards to head shards over cp before the convolution (each rank then runs the whole sequence of
  // heads / (tp · cp) heads, as many elements as it held), the rule's output back after the gated norm; the
  // gradients the other way.  The convolution's weights and the gates' parameters are sliced per cp rank.
  if (c.st.cp > 1)
    add_cp_head_exchanges(rule, c.tok * in_l * c.a, c.tok * v_l * c.a, "q, k, v, z, beta, alpha",
                          "GDN context parallel");
  // Megatron's count (GdnSpec::kernel_flops_per_token, training.py gdn_layer_flops).  Backward twice.
  rule.fwd_flops = static_cast<double>(c.tok) * g.kernel_flops_per_token(c.t);
  rule.bwd_input_flops = 2 * rule.fwd_flops;
  ops.push_back(std::move(rule));

  // out_norm over each value head (its weight of value_head_dim, replicated), gated by SiLU(z).
  Op norm = make_norm(c, pre + "out_norm", OpRole::GdnNorm, layer, c.tok, v_l);
  norm.params = {param("weight", {g.value_head_dim}, {g.value_head_dim}, true)};
  if (c.m.normalization == Normalization::LayerNorm)  // backend.layer_norm(rms_norm=False): a LayerNorm
    norm.params.push_back(param("bias", {g.value_head_dim}, {g.value_head_dim}, true));
  for (auto& s : norm.saved)  // fp32 statistics per value head of each token: rstd (and a LayerNorm's mean)
    if (s.name == "stats")
      s.bytes = c.tok * nv_l * 4 * (c.m.normalization == Normalization::LayerNorm ? 2 : 1);
  norm.saved.push_back({"normed", c.tok * v_l * a});  // the product's other input
  ops.push_back(std::move(norm));

  ops.push_back(make_row(c, pre + "out_proj", OpRole::GdnOutProj, layer, g.v_dim(), c.h, false));
}

}  // namespace preflight::analyzer::graph_ops
