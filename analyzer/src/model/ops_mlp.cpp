// The MLP block: dense MLP and MoE (router, shared experts, dispatch, grouped GEMMs, combine); one layer.
#include "ops_build.hpp"

#include <cmath>

namespace preflight::analyzer::graph_ops {

void add_dense_mlp(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre, I64 ffn,
                   bool shared_experts) {
  I64 fc1_out = c.m.gated() ? 2 * ffn : ffn;
  ops.push_back(make_column(c, pre + "linear_fc1", shared_experts ? OpRole::SharedFc1 : OpRole::Fc1, layer,
                            c.h, fc1_out, c.m.add_bias_linear));
  ops.push_back(make_activation(c, pre + "activation_func", shared_experts ? OpRole::SharedAct : OpRole::Act,
                                layer, c.tok, fc1_out / c.t, ffn / c.t));
  ops.push_back(make_row(c, pre + "linear_fc2", shared_experts ? OpRole::SharedFc2 : OpRole::Fc2, layer, ffn,
                         c.h, c.m.fc2_bias()));
}

namespace {

/// The expert-parallel exchange of a dispatch (tokens to their experts) or a combine (outputs back), as
/// Strategy::moe_dispatcher moves it: `gathered` = the tokens of the expert-tp × ep group (allgather
/// dispatcher: MoEAllGatherTokenDispatcher gathers over `tp_ep`, expert tp included), `routed` = the rank's
/// routed copies (all-to-all; DeepEP / HybridEP move them too, across nodes once per node).
void add_ep_exchange(Op& op, const Strategy& st, I64 gathered, I64 routed, bool dispatch) {
  if (st.moe_dispatcher == MoeDispatcher::AllGather) {
    if (st.ep * st.expert_tp() <= 1) return;
    op.comms.push_back(
        {dispatch ? Collective::AllGather : Collective::ReduceScatter, ParallelDim::EP, Pass::Forward,
         gathered, 1,
         dispatch ? "all-gather of the expert-tp × ep group's tokens (allgather dispatcher)"
                  : "reduce-scatter of expert outputs to their tokens' ranks (allgather dispatcher)"});
    op.comms.push_back({dispatch ? Collective::ReduceScatter : Collective::AllGather, ParallelDim::EP,
                        Pass::Backward, gathered, 1,
                        dispatch ? "reduce-scatter of their gradients" : "all-gather of output gradients"});
    return;
  }
  if (st.ep <= 1) return;
  const std::string how = st.moe_dispatcher == MoeDispatcher::Flex ? " (DeepEP/HybridEP)" : "";
  op.comms.push_back(
      {Collective::AllToAll, ParallelDim::EP, Pass::Forward, routed, 1,
       (dispatch ? "all-to-all of tokens to their experts" : "all-to-all of expert outputs back") + how});
  op.comms.push_back(
      {Collective::AllToAll, ParallelDim::EP, Pass::Backward, routed, 1,
       (dispatch ? "all-to-all of token gradients back" : "all-to-all of output gradients to the experts") +
           how});
}

}  // namespace

void add_moe_mlp(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre) {
  const MoESpec& moe = c.m.moe;
  const Strategy& st = c.st;
  int E = moe.num_experts;
  int local = E / st.ep;
  int etp = st.expert_tp();

  Op router;
  router.path = pre + "router";
  router.kind = OpKind::Router;
  router.role = OpRole::Router;
  router.layer = layer;
  router.moe = true;
  router.tokens = c.tok_sp;
  router.in_features = c.h;
  router.out_features = E;
  router.local_experts = E;
  router.params.push_back(param("weight", {E, c.h}, {E, c.h}, true));
  router.input_bytes = c.tok_sp * c.h * c.a;
  router.output_bytes = c.tok_sp * E * 4;
  router.saved.push_back({"input", c.tok_sp * c.h * c.a});
  router.saved.push_back({"scores", c.tok_sp * E * 4});
  linear_flops(router, c.tok_sp, c.h, E);
  ops.push_back(std::move(router));

  if (moe.shared_expert_ffn_hidden_size > 0) {
    std::size_t first = ops.size();
    add_dense_mlp(c, ops, layer, pre + "shared_experts.", moe.shared_expert_ffn_hidden_size, true);
    for (std::size_t i = first; i < ops.size(); ++i) ops[i].moe = true;
    if (moe.shared_expert_gate) {
      // SharedExpertMLP with gate: output · sigmoid(linear(input, gate_weight)) — a [1, hidden] weight
      // (replicated), and the product keeps the shared expert's output (its rows of the stream) and the
      // score.
      Op& fc2 = ops.back();
      fc2.params.push_back(param("gate_weight", {1, c.h}, {1, c.h}, true));
      fc2.saved.push_back({"gated_output", c.tok_sp * c.h * c.a});
      fc2.saved.push_back({"gate_score", c.tok_sp * c.a});
      fc2.fwd_flops += 2.0 * static_cast<double>(c.tok_sp * c.h);
    }
  }

  // Tokens each rank's local experts process, balanced routing: every token goes to top-k experts; EP
  // ranks exchange tokens so each handles the top-k copies of the tokens its expert-tp group holds — the
  // sequence shards of etp ranks with sequence parallelism (Megatron's MoE layer takes the SP shard: with
  // etp = tp that is b·s_loc, with etp 1 under tp 2 half of it).
  I64 routed = (c.sp ? c.tok_sp * etp : c.tok) * moe.router_topk;
  if (moe.pad_expert_input_to_capacity) {
    // Megatron's capacity: ceil(tokens / experts · capacity_factor) rows per expert.
    const double per_expert = std::ceil(static_cast<double>(routed) / E * moe.capacity_factor);
    routed = static_cast<I64>(per_expert) * E;
  }
  // A trained router's busiest ep rank receives more than the mean (--moe-load-imbalance): the graph is
  // that rank's, which sets the layer's pace and holds the most.
  if (const double imb = moe_busiest_rank_factor(moe, st); imb > 1)
    routed = static_cast<I64>(std::llround(static_cast<double>(routed) * imb));
  I64 ffn = moe.ffn_hidden_size;
  I64 fc1_out = c.m.gated() ? 2 * ffn : ffn;
  // The routed experts' width: the hidden size, or the latent size of a LatentMoE, whose fc1_latent_proj
  // (a TELinear duplicated over tp, on the rank's own tokens; its gradient all-reduced over tp with
  // sequence parallelism, as the router's) projects the tokens down before they are exchanged.
  const I64 d = moe.expert_width(c.h);
  if (moe.latent_size > 0) {
    ops.push_back(make_duplicated(c, pre + "fc1_latent_proj", OpRole::LatentDown, layer, c.h, d));
    ops.back().moe = true;
  }

  Op dispatch;
  dispatch.path = pre + "token_dispatcher.dispatch";
  dispatch.kind = OpKind::TokenDispatch;
  dispatch.role = OpRole::Dispatch;
  dispatch.layer = layer;
  dispatch.moe = true;
  dispatch.tokens = routed;
  dispatch.in_features = dispatch.out_features = d;
  dispatch.local_experts = local;
  dispatch.input_bytes = c.tok_sp * d * c.a;
  dispatch.output_bytes = routed * d * c.a;
  dispatch.saved.push_back({"permutation_indices", routed * 8});
  // The allgather dispatcher's gather spans expert tp too: no expert-tp exchange of its own.
  const bool allgather = st.moe_dispatcher == MoeDispatcher::AllGather;
  const I64 gathered = c.tok_sp * d * c.a * st.ep * etp;
  add_ep_exchange(dispatch, st, gathered, routed * d * c.a, true);
  if (etp > 1 && !allgather) {
    dispatch.comms.push_back({Collective::AllGather, ParallelDim::ETP, Pass::Forward, routed * d * c.a, 1,
                              "all-gather of routed tokens over expert-tp"});
    dispatch.comms.push_back({Collective::ReduceScatter, ParallelDim::ETP, Pass::Backward, routed * d * c.a,
                              1, "reduce-scatter of routed token gradients"});
  }
  ops.push_back(std::move(dispatch));

  Op fc1;
  fc1.path = pre + "experts.linear_fc1";
  fc1.kind = OpKind::GroupedLinearColumn;
  fc1.role = OpRole::ExpertsFc1;
  fc1.layer = layer;
  fc1.moe = true;
  fc1.tokens = routed;
  fc1.local_experts = local;
  fc1.in_features = d;
  fc1.out_features = fc1_out / etp;
  fc1.params.push_back(param("weight", {local, fc1_out / etp, d}, {E, fc1_out, d}, false, true));
  if (c.m.add_bias_linear)
    fc1.params.push_back(param("bias", {local, fc1_out / etp}, {E, fc1_out}, false, true));
  fc1.input_bytes = routed * d * c.a;
  fc1.output_bytes = routed * (fc1_out / etp) * c.a;
  fc1.saved.push_back({"input", c.lin_bytes(routed * d)});
  linear_flops(fc1, routed, d, fc1_out / etp);
  ops.push_back(std::move(fc1));

  Op act = make_activation(c, pre + "experts.activation_func", OpRole::ExpertsAct, layer, routed,
                           fc1_out / etp, ffn / etp);
  act.moe = true;
  act.local_experts = local;
  ops.push_back(std::move(act));

  Op fc2;
  fc2.path = pre + "experts.linear_fc2";
  fc2.kind = OpKind::GroupedLinearRow;
  fc2.role = OpRole::ExpertsFc2;
  fc2.layer = layer;
  fc2.moe = true;
  fc2.tokens = routed;
  fc2.local_experts = local;
  fc2.in_features = ffn / etp;
  fc2.out_features = d;
  fc2.params.push_back(param("weight", {local, d, ffn / etp}, {E, d, ffn}, false, true));
  if (c.m.add_bias_linear) fc2.params.push_back(param("bias", {local, d}, {E, d}, false, true));
  fc2.input_bytes = routed * (ffn / etp) * c.a;
  fc2.output_bytes = routed * d * c.a;
  fc2.saved.push_back({"input", c.lin_bytes(routed * (ffn / etp))});
  linear_flops(fc2, routed, ffn / etp, d);
  ops.push_back(std::move(fc2));

  Op combine;
  combine.path = pre + "token_dispatcher.combine";
  combine.kind = OpKind::TokenCombine;
  combine.role = OpRole::Combine;
  combine.layer = layer;
  combine.moe = true;
  combine.tokens = routed;
  combine.in_features = combine.out_features = d;
  combine.local_experts = local;
  combine.input_bytes = routed * d * c.a;
  combine.output_bytes = c.tok_sp * d * c.a;
  combine.saved.push_back({"probs", routed * 4});
  // The router probabilities are applied where the tokens are unpermuted, and their gradient needs the expert
  // outputs: Megatron's unpermute keeps them (unfused: `permuted_tokens * permuted_probs` saves its input;
  // fused: TransformerEngine's moe_unpermute with merging_probs saves `inp`, transformer_engine/pytorch/
  // permutation.py).  Measured on SimuMax's B200 DeepSeek-V2/V3 runs (tests/data/memory_corpus): without it
  // the first stage of pp 2 was 1.6-2.1 % short, one such tensor per micro batch in flight.
  if (!c.torch_cpu) combine.saved.push_back({"expert_output", routed * d * c.a});
  add_ep_exchange(combine, st, gathered, routed * d * c.a, false);
  if (etp > 1 && !allgather) {
    combine.comms.push_back({Collective::ReduceScatter, ParallelDim::ETP, Pass::Forward, routed * d * c.a, 1,
                             "reduce-scatter of partial expert outputs"});
    combine.comms.push_back({Collective::AllGather, ParallelDim::ETP, Pass::Backward, routed * d * c.a, 1,
                             "all-gather of output gradients"});
  }
  ops.push_back(std::move(combine));
  if (moe.latent_size > 0) {
    ops.push_back(make_duplicated(c, pre + "fc2_latent_proj", OpRole::LatentUp, layer, d, c.h));
    ops.back().moe = true;
  }
}

std::vector<Op> build_layer(const Ctx& c, int layer) {
  std::vector<Op> ops;
  std::string pre = "decoder.layers." + std::to_string(layer) + ".";
  // A transformer layer is attention then an MLP; a hybrid model's layer one block of its own — its norm, the
  // block, the residual add (megatron/core/models/hybrid: MambaLayer norm / mixer / mamba_bda;
  // TransformerLayer with only attention or only an MLP).
  if (c.m.is_mamba_layer(layer)) {
    ops.push_back(make_norm(c, pre + "norm", OpRole::InputNorm, layer, c.tok_sp, c.h));
    add_mamba(c, ops, layer, pre + "mixer.");
    ops.push_back(make_bda(c, pre + "mamba_bda", OpRole::MambaBda, layer));
    return ops;
  }
  if (c.m.has_attention(layer)) {
    ops.push_back(make_norm(c, pre + "input_layernorm", OpRole::InputNorm, layer, c.tok_sp, c.h));
    if (c.m.is_gdn_layer(layer))
      add_gdn(c, ops, layer, pre + "self_attention.");
    else
      add_attention(c, ops, layer, pre + "self_attention.");
    if (c.m.sandwich_norms)
      ops.push_back(
          make_norm(c, pre + "post_attention_layernorm", OpRole::PostAttnNorm, layer, c.tok_sp, c.h));
    ops.push_back(make_bda(c, pre + "self_attn_bda", OpRole::AttnBda, layer));
  }
  if (c.m.has_mlp(layer)) {
    ops.push_back(make_norm(c, pre + "pre_mlp_layernorm", OpRole::PreMlpNorm, layer, c.tok_sp, c.h));
    if (c.m.is_moe_layer(layer))
      add_moe_mlp(c, ops, layer, pre + "mlp.");
    else
      add_dense_mlp(c, ops, layer, pre + "mlp.", c.m.ffn_hidden_size);
    if (c.m.sandwich_norms)
      ops.push_back(
          make_norm(c, pre + "post_feedforward_layernorm", OpRole::PostMlpNorm, layer, c.tok_sp, c.h));
    ops.push_back(make_bda(c, pre + "mlp_bda", OpRole::MlpBda, layer));
  }
  apply_lora(c, ops);
  return ops;
}

}  // namespace preflight::analyzer::graph_ops
