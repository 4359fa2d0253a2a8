// The Mamba-2 mixer of a hybrid model's 'M' layer, as Megatron trains it (megatron/core/ssm/mamba_mixer.py,
// MambaMixer with its memory-efficient path): in_proj (TELayerNormColumnParallelLinear: the layer's norm is
// the InputNorm op before it), the fused causal convolution + SSD scan + z gating
// (mamba_ssm's mamba_split_conv1d_scan_combined), the gated RMSNorm, out_proj.
#include "ops_build.hpp"

namespace preflight::analyzer::graph_ops {

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
  if (cp > 1) {
    const I64 in_bytes = c.tok * scan_in * c.a, out_bytes = c.tok * d_inner_l * c.a;
    scan.comms.push_back(
        {Collective::AllToAll, ParallelDim::CP, Pass::Forward, in_bytes, 1,
         "all-to-all of z, x, B, C, dt from sequence to head shards (Mamba context parallel)"});
    scan.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Forward, out_bytes, 1,
                          "all-to-all of the scan output back to sequence shards"});
    scan.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Backward, out_bytes, 1,
                          "all-to-all of the output gradient to head shards"});
    scan.comms.push_back({Collective::AllToAll, ParallelDim::CP, Pass::Backward, in_bytes, 1,
                          "all-to-all of the z, x, B, C, dt gradients back to sequence shards"});
  }
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

}  // namespace preflight::analyzer::graph_ops
