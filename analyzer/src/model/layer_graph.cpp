#include "preflight/analyzer/model/layer_graph.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "preflight/common/error.hpp"

namespace preflight::analyzer {

std::int64_t ParamTensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return shape.empty() ? 0 : n;
}
std::int64_t ParamTensor::full_numel() const {
  std::int64_t n = 1;
  for (auto d : full_shape) n *= d;
  return full_shape.empty() ? 0 : n;
}
std::int64_t Op::param_numel() const {
  std::int64_t n = 0;
  for (const auto& p : params) n += p.numel();
  return n;
}
std::int64_t Op::saved_bytes() const {
  std::int64_t n = 0;
  for (const auto& s : saved) n += s.bytes;
  return n;
}
std::int64_t Op::kept_input_bytes() const {
  std::int64_t n = 0;
  for (const auto& t : kept)
    if (t.is_input) n += t.bytes;
  return n;
}
std::int64_t StageGraph::param_numel() const {
  std::int64_t n = 0;
  for (const auto& op : ops) n += op.param_numel();
  return n;
}
std::int64_t StageGraph::expert_param_numel() const {
  std::int64_t n = 0;
  for (const auto& op : ops)
    for (const auto& p : op.params)
      if (p.expert) n += p.numel();
  return n;
}
std::int64_t StageGraph::kept_activation_bytes() const {
  std::int64_t n = 0;
  for (const auto& op : ops) n += op.kept_bytes;
  return n;
}
std::vector<const StageGraph*> LayerGraph::stage(int pp_rank) const {
  std::vector<const StageGraph*> out;
  for (const auto& c : chunks)
    if (c.pp_rank == pp_rank) out.push_back(&c);
  return out;
}

namespace {

using I64 = std::int64_t;

/// torch.get_rng_state() on CPU: the mt19937 generator state as a 5056-byte tensor, which
/// torch.utils.checkpoint keeps per checkpointed call (preserve_rng_state).
constexpr I64 kTorchCpuRngStateBytes = 5056;

/// Sizes shared by all ops of one build: the notation of Korthikanti et al. 2022 on one rank.
struct Ctx {
  const ModelSpec& m;
  const Strategy& st;
  I64 a;       // activation element bytes (compute precision)
  I64 lin_a;   // bytes of a linear's saved input (1 with fp8 GEMMs)
  I64 b;       // micro batch
  I64 s;       // sequence length (full)
  I64 s_loc;   // sequence on this cp rank
  I64 tok;     // b · s_loc
  I64 tok_sp;  // tokens held outside TP regions: tok / tp with sequence parallelism
  I64 h;
  int t;                   // tp
  bool sp;                 // sequence parallel active (tp > 1)
  I64 vocab;               // padded vocab
  bool torch_cpu = false;  // Strategy::transformer_impl == TorchCpu
};

void set_kept(Op& op, std::vector<SavedTensor> kept) {
  op.kept = std::move(kept);
  op.kept_bytes = 0;
  for (const auto& t : op.kept) op.kept_bytes += t.bytes;
}

ParamTensor param(std::string name, std::vector<I64> local, std::vector<I64> full, bool replicated = false,
                  bool expert = false) {
  ParamTensor p;
  p.name = std::move(name);
  p.shape = std::move(local);
  p.full_shape = std::move(full);
  p.tp_replicated = replicated;
  p.expert = expert;
  return p;
}

void add_norm_params(const Ctx& c, Op& op, I64 width) {
  op.params.push_back(param("weight", {width}, {width}, true));
  if (c.m.normalization == Normalization::LayerNorm)
    op.params.push_back(param("bias", {width}, {width}, true));
}

Op make_norm(const Ctx& c, std::string path, int layer, I64 tokens, I64 width) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::Norm;
  op.layer = layer;
  op.tokens = tokens;
  op.in_features = op.out_features = width;
  add_norm_params(c, op, width);
  op.input_bytes = op.output_bytes = tokens * width * c.a;
  op.saved.push_back({"input", tokens * width * c.a, true});
  // fp32 statistics per row: mean + rstd (LayerNorm) or rstd (RMSNorm); PyTorch's CPU kernel keeps them
  // in the input dtype, one tensor each.
  if (c.torch_cpu) {
    op.saved.push_back({"mean", tokens * c.a});
    op.saved.push_back({"rstd", tokens * c.a});
  } else {
    I64 stats = c.m.normalization == Normalization::LayerNorm ? 2 : 1;
    op.saved.push_back({"stats", tokens * stats * 4});
  }
  return op;
}

/// TP collectives of a column-parallel linear whose input is the replicated (or SP-sharded) stream.
void column_comms(const Ctx& c, Op& op, I64 width) {
  if (c.t <= 1) return;
  I64 bytes = c.tok * width * c.a;
  if (c.sp) {
    op.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Forward, bytes, 1,
                        "all-gather of the sequence-parallel input"});
    op.comms.push_back({Collective::ReduceScatter, ParallelDim::TP, Pass::Backward, bytes, 1,
                        "reduce-scatter of the input gradient"});
    op.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Backward, bytes, 1,
                        "all-gather of the saved input for the weight gradient"});
  } else {
    op.comms.push_back({Collective::AllReduce, ParallelDim::TP, Pass::Backward, bytes, 1,
                        "all-reduce of the input gradient"});
  }
}

/// TP collectives of a row-parallel linear producing the replicated (or SP-sharded) stream.
void row_comms(const Ctx& c, Op& op, I64 width) {
  if (c.t <= 1) return;
  I64 bytes = c.tok * width * c.a;
  if (c.sp) {
    op.comms.push_back({Collective::ReduceScatter, ParallelDim::TP, Pass::Forward, bytes, 1,
                        "reduce-scatter of the partial output"});
    op.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Backward, bytes, 1,
                        "all-gather of the output gradient"});
  } else {
    op.comms.push_back({Collective::AllReduce, ParallelDim::TP, Pass::Forward, bytes, 1,
                        "all-reduce of the partial output"});
  }
}

void linear_flops(Op& op, I64 tokens, I64 in, I64 out) {
  double f = 2.0 * static_cast<double>(tokens) * static_cast<double>(in) * static_cast<double>(out);
  op.fwd_flops = f;
  op.bwd_input_flops = f;
  op.bwd_weight_flops = f;
}

/// Column-parallel linear: in → out_full (split over tp), input replicated / SP-sharded.
Op make_column(const Ctx& c, std::string path, int layer, I64 in, I64 out_full, bool bias,
               bool split = true) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::LinearColumn;
  op.layer = layer;
  op.tokens = c.tok;
  I64 out = split ? out_full / c.t : out_full;
  op.in_features = in;
  op.out_features = out;
  op.params.push_back(param("weight", {out, in}, {out_full, in}, !split));
  if (bias) op.params.push_back(param("bias", {out}, {out_full}, !split));
  I64 in_tokens = split ? c.tok_sp : c.tok;
  op.input_bytes = in_tokens * in * c.a;
  op.output_bytes = c.tok * out * c.a;
  op.saved.push_back({"input", in_tokens * in * c.lin_a, true});
  linear_flops(op, c.tok, in, out);
  if (split) column_comms(c, op, in);
  return op;
}

/// Row-parallel linear: in_full (split over tp) → out, output reduced to the replicated / SP stream.
Op make_row(const Ctx& c, std::string path, int layer, I64 in_full, I64 out, bool bias) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::LinearRow;
  op.layer = layer;
  op.tokens = c.tok;
  I64 in = in_full / c.t;
  op.in_features = in;
  op.out_features = out;
  op.params.push_back(param("weight", {out, in}, {out, in_full}));
  if (bias) op.params.push_back(param("bias", {out}, {out}, true));
  op.input_bytes = c.tok * in * c.a;
  op.output_bytes = c.tok_sp * out * c.a;
  op.saved.push_back({"input", c.tok * in * c.lin_a, true});
  linear_flops(op, c.tok, in, out);
  row_comms(c, op, out);
  return op;
}

Op make_bda(const Ctx& c, std::string path, int layer) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::BiasDropoutAdd;
  op.layer = layer;
  op.tokens = c.tok_sp;
  op.in_features = op.out_features = c.h;
  op.input_bytes = op.output_bytes = c.tok_sp * c.h * c.a;
  if (c.m.hidden_dropout > 0) {
    if (c.torch_cpu)
      op.saved.push_back({"noise", c.tok_sp * c.h * c.a});
    else
      op.saved.push_back({"mask", c.tok_sp * c.h});
  }
  return op;
}

Op make_activation(const Ctx& c, std::string path, int layer, I64 tokens, I64 in_width, I64 out_width) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::Activation;
  op.layer = layer;
  op.tokens = tokens;
  op.in_features = in_width;
  op.out_features = out_width;
  op.input_bytes = tokens * in_width * c.a;
  op.output_bytes = tokens * out_width * c.a;
  op.saved.push_back({"input", tokens * in_width * c.a, true});
  // F.silu(gate) * up keeps the SiLU output for the product's backward (Megatron's fused bias_swiglu does
  // not).
  if (c.torch_cpu && c.m.gated()) op.saved.push_back({"silu_output", tokens * out_width * c.a});
  return op;
}

void add_attention(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre) {
  const ModelSpec& m = c.m;
  int heads = m.num_attention_heads / c.t;
  I64 qk_dim, v_dim;
  int kv_heads;
  if (m.mla.enabled) {
    qk_dim = m.mla.qk_head_dim + m.mla.qk_pos_emb_head_dim;
    v_dim = m.mla.v_head_dim;
    kv_heads = heads;
    // Multi-latent attention (DeepSeek-V2 §2.1; Megatron `multi_latent_attention.py`): down projections
    // are replicated over tp, up projections are column-parallel.
    if (m.mla.q_lora_rank > 0) {
      ops.push_back(make_column(c, pre + "linear_q_down_proj", layer, c.h, m.mla.q_lora_rank, false, false));
      ops.push_back(make_norm(c, pre + "q_layernorm", layer, c.tok, m.mla.q_lora_rank));
      ops.push_back(make_column(c, pre + "linear_q_up_proj", layer, m.mla.q_lora_rank,
                                static_cast<I64>(m.num_attention_heads) * qk_dim, false));
      ops.back().input_bytes = c.tok * m.mla.q_lora_rank * c.a;
      ops.back().saved = {{"input", c.tok * m.mla.q_lora_rank * c.lin_a}};
      ops.back().comms.clear();
    } else {
      ops.push_back(make_column(c, pre + "linear_q_proj", layer, c.h,
                                static_cast<I64>(m.num_attention_heads) * qk_dim, false));
    }
    ops.push_back(make_column(c, pre + "linear_kv_down_proj", layer, c.h,
                              m.mla.kv_lora_rank + m.mla.qk_pos_emb_head_dim, false, false));
    ops.push_back(make_norm(c, pre + "kv_layernorm", layer, c.tok, m.mla.kv_lora_rank));
    ops.push_back(
        make_column(c, pre + "linear_kv_up_proj", layer, m.mla.kv_lora_rank,
                    static_cast<I64>(m.num_attention_heads) * (m.mla.qk_head_dim + m.mla.v_head_dim), false));
    ops.back().saved = {{"input", c.tok * m.mla.kv_lora_rank * c.lin_a}};
    ops.back().comms.clear();
  } else {
    qk_dim = v_dim = m.kv_channels;
    kv_heads = m.num_query_groups / c.t;
    I64 qkv_out =
        (static_cast<I64>(m.num_attention_heads) + 2 * static_cast<I64>(m.num_query_groups)) * m.kv_channels;
    ops.push_back(make_column(c, pre + "linear_qkv", layer, c.h, qkv_out, m.qkv_bias()));
    if (m.qk_layernorm) {
      // Megatron `SelfAttention.q_layernorm` / `k_layernorm`: one norm of width d applied to every head;
      // rows = tokens · local heads.  Each keeps its input (the un-normalized q / k) for backward.
      ops.push_back(make_norm(c, pre + "q_layernorm", layer, c.tok * heads, m.kv_channels));
      ops.push_back(make_norm(c, pre + "k_layernorm", layer, c.tok * kv_heads, m.kv_channels));
    }
  }

  Op at;
  at.path = pre + "core_attention";
  at.kind = OpKind::CoreAttention;
  at.layer = layer;
  at.tokens = c.tok;
  at.heads = heads;
  at.kv_heads = kv_heads;
  at.head_dim = qk_dim;
  at.v_head_dim = v_dim;
  at.seq = c.s_loc;
  at.kv_seq = c.s;
  at.in_features = static_cast<I64>(heads) * qk_dim;
  at.out_features = static_cast<I64>(heads) * v_dim;
  I64 q = c.tok * heads * qk_dim * c.a;
  // Math attention in PyTorch eager repeats k, v over the query heads of their group before the bmm.
  int kv_copies = c.torch_cpu ? heads : kv_heads;
  I64 k = c.tok * kv_copies * qk_dim * c.a;
  I64 v = c.tok * kv_copies * v_dim * c.a;
  at.input_bytes = q + c.tok * kv_heads * (qk_dim + v_dim) * c.a;  // the q, k, v projections
  at.output_bytes = c.tok * heads * v_dim * c.a;
  at.saved.push_back({"q", q});
  at.saved.push_back({"k", k});
  at.saved.push_back({"v", v});
  I64 scores = c.b * heads * c.s_loc * c.s;  // elements of QKᵀ on this rank
  if (c.torch_cpu) {
    at.saved.push_back({"softmax", scores * c.a});
    if (m.attention_dropout > 0) {
      at.saved.push_back({"dropout_noise", scores * c.a});
      at.saved.push_back({"dropout_output", scores * c.a});
    }
  } else if (c.st.attention_backend == AttentionBackend::Flash) {
    at.saved.push_back({"lse", c.b * heads * c.s_loc * 4});
  } else {
    // Korthikanti et al. Table 2: softmax output 2as²b, dropout mask as²b, dropout output 2as²b.
    at.saved.push_back({"softmax", scores * c.a});
    if (m.attention_dropout > 0) {
      at.saved.push_back({"dropout_mask", scores});
      at.saved.push_back({"dropout_output", scores * c.a});
    }
  }
  // QKᵀ and attention·V, non-causal count (as Megatron's and SimuMax's FLOP formulas).
  double f = 2.0 * c.b * heads * static_cast<double>(c.s_loc) * static_cast<double>(c.s) * (qk_dim + v_dim);
  at.fwd_flops = f;
  at.bwd_input_flops = 2 * f;
  if (c.st.cp > 1) {
    // Ring attention (Megatron `AttnFuncWithCPAndKVP2P`): cp-1 exchanges of the local k,v forward,
    // of k,v and dk,dv backward.
    at.comms.push_back({Collective::SendRecv, ParallelDim::CP, Pass::Forward, k + v, c.st.cp - 1,
                        "ring exchange of key/value chunks"});
    at.comms.push_back({Collective::SendRecv, ParallelDim::CP, Pass::Backward, 2 * (k + v), c.st.cp - 1,
                        "ring exchange of key/value chunks and their gradients"});
  }
  ops.push_back(std::move(at));
  ops.push_back(make_row(c, pre + "linear_proj", layer, static_cast<I64>(m.num_attention_heads) * v_dim, c.h,
                         m.add_bias_linear));
}

void add_dense_mlp(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre, I64 ffn) {
  I64 fc1_out = c.m.gated() ? 2 * ffn : ffn;
  ops.push_back(make_column(c, pre + "linear_fc1", layer, c.h, fc1_out, c.m.add_bias_linear));
  ops.push_back(make_activation(c, pre + "activation_func", layer, c.tok, fc1_out / c.t, ffn / c.t));
  ops.push_back(make_row(c, pre + "linear_fc2", layer, ffn, c.h, c.m.add_bias_linear));
}

void add_moe_mlp(const Ctx& c, std::vector<Op>& ops, int layer, const std::string& pre) {
  const MoESpec& moe = c.m.moe;
  const Strategy& st = c.st;
  int E = moe.num_experts;
  int local = E / st.ep;
  int etp = st.expert_tp();

  Op router;
  router.path = pre + "router";
  router.kind = OpKind::Router;
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
    add_dense_mlp(c, ops, layer, pre + "shared_experts.", moe.shared_expert_ffn_hidden_size);
    for (std::size_t i = first; i < ops.size(); ++i) ops[i].moe = true;
  }

  // Tokens each rank's local experts process, balanced routing: every token goes to top-k experts; EP
  // ranks exchange tokens so each handles b·s_loc·k rows (gathered over the expert-tp group).
  I64 routed = c.tok * moe.router_topk;
  if (moe.pad_expert_input_to_capacity) {
    double per_expert = std::ceil(static_cast<double>(routed) / E);
    routed = static_cast<I64>(per_expert * E * moe.capacity_factor);
  }
  I64 ffn = moe.ffn_hidden_size;
  I64 fc1_out = c.m.gated() ? 2 * ffn : ffn;

  Op dispatch;
  dispatch.path = pre + "token_dispatcher.dispatch";
  dispatch.kind = OpKind::TokenDispatch;
  dispatch.layer = layer;
  dispatch.moe = true;
  dispatch.tokens = routed;
  dispatch.in_features = dispatch.out_features = c.h;
  dispatch.local_experts = local;
  dispatch.input_bytes = c.tok_sp * c.h * c.a;
  dispatch.output_bytes = routed * c.h * c.a;
  dispatch.saved.push_back({"permutation_indices", routed * 8});
  if (st.ep > 1) {
    dispatch.comms.push_back({Collective::AllToAll, ParallelDim::EP, Pass::Forward, routed * c.h * c.a, 1,
                              "all-to-all of tokens to their experts"});
    dispatch.comms.push_back({Collective::AllToAll, ParallelDim::EP, Pass::Backward, routed * c.h * c.a, 1,
                              "all-to-all of token gradients back"});
  }
  if (etp > 1) {
    dispatch.comms.push_back({Collective::AllGather, ParallelDim::ETP, Pass::Forward, routed * c.h * c.a, 1,
                              "all-gather of routed tokens over expert-tp"});
    dispatch.comms.push_back({Collective::ReduceScatter, ParallelDim::ETP, Pass::Backward, routed * c.h * c.a,
                              1, "reduce-scatter of routed token gradients"});
  }
  ops.push_back(std::move(dispatch));

  Op fc1;
  fc1.path = pre + "experts.linear_fc1";
  fc1.kind = OpKind::GroupedLinearColumn;
  fc1.layer = layer;
  fc1.moe = true;
  fc1.tokens = routed;
  fc1.local_experts = local;
  fc1.in_features = c.h;
  fc1.out_features = fc1_out / etp;
  fc1.params.push_back(param("weight", {local, fc1_out / etp, c.h}, {E, fc1_out, c.h}, false, true));
  if (c.m.add_bias_linear)
    fc1.params.push_back(param("bias", {local, fc1_out / etp}, {E, fc1_out}, false, true));
  fc1.input_bytes = routed * c.h * c.a;
  fc1.output_bytes = routed * (fc1_out / etp) * c.a;
  fc1.saved.push_back({"input", routed * c.h * c.lin_a});
  linear_flops(fc1, routed, c.h, fc1_out / etp);
  ops.push_back(std::move(fc1));

  Op act = make_activation(c, pre + "experts.activation_func", layer, routed, fc1_out / etp, ffn / etp);
  act.moe = true;
  act.local_experts = local;
  ops.push_back(std::move(act));

  Op fc2;
  fc2.path = pre + "experts.linear_fc2";
  fc2.kind = OpKind::GroupedLinearRow;
  fc2.layer = layer;
  fc2.moe = true;
  fc2.tokens = routed;
  fc2.local_experts = local;
  fc2.in_features = ffn / etp;
  fc2.out_features = c.h;
  fc2.params.push_back(param("weight", {local, c.h, ffn / etp}, {E, c.h, ffn}, false, true));
  if (c.m.add_bias_linear) fc2.params.push_back(param("bias", {local, c.h}, {E, c.h}, false, true));
  fc2.input_bytes = routed * (ffn / etp) * c.a;
  fc2.output_bytes = routed * c.h * c.a;
  fc2.saved.push_back({"input", routed * (ffn / etp) * c.lin_a});
  linear_flops(fc2, routed, ffn / etp, c.h);
  ops.push_back(std::move(fc2));

  Op combine;
  combine.path = pre + "token_dispatcher.combine";
  combine.kind = OpKind::TokenCombine;
  combine.layer = layer;
  combine.moe = true;
  combine.tokens = routed;
  combine.in_features = combine.out_features = c.h;
  combine.local_experts = local;
  combine.input_bytes = routed * c.h * c.a;
  combine.output_bytes = c.tok_sp * c.h * c.a;
  combine.saved.push_back({"probs", routed * 4});
  if (st.ep > 1) {
    combine.comms.push_back({Collective::AllToAll, ParallelDim::EP, Pass::Forward, routed * c.h * c.a, 1,
                             "all-to-all of expert outputs back"});
    combine.comms.push_back({Collective::AllToAll, ParallelDim::EP, Pass::Backward, routed * c.h * c.a, 1,
                             "all-to-all of output gradients to the experts"});
  }
  if (etp > 1) {
    combine.comms.push_back({Collective::ReduceScatter, ParallelDim::ETP, Pass::Forward, routed * c.h * c.a,
                             1, "reduce-scatter of partial expert outputs"});
    combine.comms.push_back({Collective::AllGather, ParallelDim::ETP, Pass::Backward, routed * c.h * c.a, 1,
                             "all-gather of output gradients"});
  }
  ops.push_back(std::move(combine));
}

/// Ops of transformer layer `layer`, in forward order.
std::vector<Op> build_layer(const Ctx& c, int layer) {
  std::vector<Op> ops;
  std::string pre = "decoder.layers." + std::to_string(layer) + ".";
  ops.push_back(make_norm(c, pre + "input_layernorm", layer, c.tok_sp, c.h));
  add_attention(c, ops, layer, pre + "self_attention.");
  ops.push_back(make_bda(c, pre + "self_attn_bda", layer));
  ops.push_back(make_norm(c, pre + "pre_mlp_layernorm", layer, c.tok_sp, c.h));
  if (c.m.is_moe_layer(layer))
    add_moe_mlp(c, ops, layer, pre + "mlp.");
  else
    add_dense_mlp(c, ops, layer, pre + "mlp.", c.m.ffn_hidden_size);
  ops.push_back(make_bda(c, pre + "mlp_bda", layer));
  return ops;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Applies selective recompute to one layer's ops (Megatron-core `TransformerLayer` recompute modules).
void apply_selective(const Ctx& c, std::vector<Op>& ops) {
  auto has = [&](const char* m) {
    return std::find(c.st.recompute_modules.begin(), c.st.recompute_modules.end(), m) !=
           c.st.recompute_modules.end();
  };
  bool moe_layer = std::any_of(ops.begin(), ops.end(), [](const Op& o) { return o.moe; });
  for (auto& op : ops) {
    if (op.kind == OpKind::CoreAttention && has("core_attn")) {
      op.recompute = true;
      if (c.torch_cpu) {
        // torch.utils.checkpoint(core_attention, qkv_output, mask): keeps its input and the RNG state.
        std::string block = op.path.substr(0, op.path.rfind('.'));  // SelfAttention calls checkpoint
        set_kept(op, {{"input", op.input_bytes, true}, {"rng_state", kTorchCpuRngStateBytes, false, block}});
      } else {
        // checkpoint(core_attention)(q, k, v): only the inputs stay.
        std::vector<SavedTensor> kept;
        for (const auto& t : op.saved)
          if (t.name == "q" || t.name == "k" || t.name == "v") kept.push_back(t);
        set_kept(op, kept);
      }
    }
  }
  // Whole-MLP checkpoint keeps only the pre-MLP norm output (held as the first MLP op's input).
  bool whole = (!moe_layer && has("mlp")) || (moe_layer && has("moe"));
  if (whole) {
    bool first = true;
    for (auto& op : ops) {
      bool in_mlp = op.path.find(".mlp.") != std::string::npos;
      if (!in_mlp) continue;
      op.recompute = true;
      if (first)
        set_kept(op, {{"input", op.input_bytes, true}});
      else
        set_kept(op, {});
      first = false;
    }
  }
  if (moe_layer && !whole && has("moe_act")) {
    // CheckpointWithoutOutput on the expert activation: its output (fc2's input) is discarded.
    for (auto& op : ops)
      if (op.moe && op.kind == OpKind::Activation && op.path.find("experts.") != std::string::npos)
        op.recompute = true;
    for (auto& op : ops)
      if (op.kind == OpKind::GroupedLinearRow) set_kept(op, {});
  }
  if (moe_layer && !whole && has("shared_experts")) {
    for (auto& op : ops)
      if (op.path.find("shared_experts.") != std::string::npos) {
        op.recompute = true;
        set_kept(op, {});  // its input (the norm output) is kept by the router anyway
      }
  }
  if (has("layernorm")) {
    // CheckpointWithoutOutput on both norms: the norm output, saved as the next linear's input, is
    // discarded and recomputed in backward.
    for (std::size_t i = 0; i + 1 < ops.size(); ++i) {
      if (ops[i].kind != OpKind::Norm || ends_with(ops[i].path, "q_layernorm") ||
          ends_with(ops[i].path, "k_layernorm") || ends_with(ops[i].path, "kv_layernorm"))
        continue;
      ops[i].recompute = true;
      Op& next = ops[i + 1];
      if (next.kind == OpKind::LinearColumn || next.kind == OpKind::Router) {
        std::vector<SavedTensor> kept;
        for (const auto& t : next.kept)
          if (t.name != "input") kept.push_back(t);
        set_kept(next, kept);
      }
    }
  }
}

void finish_kept(std::vector<Op>& ops) {
  for (auto& op : ops) set_kept(op, op.saved);
}

/// Transient bytes of the torch_cpu ops (Op::fwd_transient_bytes, Op::bwd_transient_bytes), read off the
/// eager code of examples/torch_cpu_gpt/gpt_cpu/model.py and PyTorch's autograd formulas (1.13), and
/// checked against allocation traces of real runs (tests/calibrate).  e = activation bytes, T = tokens.
void set_torch_cpu_transients(const Ctx& c, StageGraph& g) {
  const I64 e = c.a;
  const I64 TH = c.tok * c.h * e;
  const bool bf16_tp = c.st.precision == Precision::BF16 && c.t > 1;  // gloo reduces bf16 through fp32
  bool has_position = false;
  for (const auto& op : g.ops) has_position = has_position || op.kind == OpKind::PositionEmbedding;
  I64 qkv_output = 0;  // the attention block's qkv output, referenced until the block returns
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    Op& op = g.ops[i];
    const Op* next = i + 1 < g.ops.size() ? &g.ops[i + 1] : nullptr;
    I64 P = op.param_numel() * e;  // weight gradients, in the parameter dtype, before main_grad
    I64 grad_in = op.input_bytes;
    switch (op.kind) {
      case OpKind::Embedding:
        // lookup output (tp > 1: also the shifted ids and the masked copy of the output) until the
        // position add; backward: the dense weight gradient (+ the masked_fill gradient)
        op.fwd_transient_bytes = c.t > 1 ? 2 * TH + c.tok * 8 : TH;
        if (!has_position) op.fwd_transient_bytes += TH;  // the [s, b, h] contiguous copy
        op.bwd_transient_bytes = P + (c.t > 1 ? TH : 0);
        break;
      case OpKind::PositionEmbedding:
        // word output + position output + their sum; backward: the weight gradient and the add/transpose
        op.fwd_transient_bytes = 2 * TH + c.s * c.h * e;
        op.bwd_transient_bytes = P + TH;
        break;
      case OpKind::Dropout:
        op.fwd_transient_bytes = TH;  // its input, the [s, b, h] copy
        op.bwd_transient_bytes = TH;
        break;
      case OpKind::Norm:
        op.bwd_transient_bytes = grad_in + P;
        break;
      case OpKind::LinearColumn: {
        bool output_kept = next && next->kept_input_bytes() >= op.output_bytes;
        op.fwd_transient_bytes = output_kept ? 0 : op.output_bytes;
        if (op.path.size() >= 10 && op.path.compare(op.path.size() - 10, 10, "linear_qkv") == 0)
          qkv_output = output_kept ? 0 : op.output_bytes;
        op.bwd_transient_bytes = grad_in + P + (bf16_tp ? op.input_bytes / e * 4 : 0);
        break;
      }
      case OpKind::CoreAttention: {
        I64 q = c.b * op.heads * op.seq * op.head_dim * e;  // one [b·heads, s, d] tensor
        I64 scores = c.b * op.heads * op.seq * op.kv_seq * e;
        I64 saved = op.saved_bytes();
        if (op.recompute && c.st.recompute_granularity == RecomputeGranularity::Selective) {
          // forward under no_grad: q, k, v, scores, softmax, noise, dropout output, then the context
          int probs = c.m.attention_dropout > 0 ? 4 : 2;
          op.fwd_transient_bytes = std::max(3 * q + probs * scores, 5 * q + (probs - 1) * scores);
          // backward: the re-run forward (what it saves, scores, context) then grad_v + grad_probs
          op.bwd_transient_bytes = saved + scores + 2 * q;
        } else {
          op.fwd_transient_bytes = qkv_output + scores + q;  // qkv output, scores, bmm context
          op.bwd_transient_bytes = q + scores;               // grad_v + grad_probs
        }
        break;
      }
      case OpKind::LinearRow: {
        bool bias = op.params.size() > 1;
        bool is_proj = op.path.size() >= 11 && op.path.compare(op.path.size() - 11, 11, "linear_proj") == 0;
        op.fwd_transient_bytes = (bias ? 2 : 1) * op.output_bytes + (is_proj ? qkv_output : 0) +
                                 (bf16_tp ? op.output_bytes / e * 4 : 0);
        op.bwd_transient_bytes = grad_in + P;
        break;
      }
      case OpKind::Activation:
        // SwiGLU: grad of SiLU output and of up, SiLU backward, then the concatenated [T, 2f] gradient
        op.bwd_transient_bytes = c.m.gated() ? 2 * grad_in : grad_in;
        break;
      case OpKind::BiasDropoutAdd: {
        bool dropout = c.m.hidden_dropout > 0;
        op.fwd_transient_bytes = (dropout ? 2 : 1) * TH;  // the branch output (+ its dropout output)
        op.bwd_transient_bytes = dropout ? TH : 0;
        break;
      }
      case OpKind::CrossEntropy: {
        I64 fp32_copy = c.st.precision == Precision::FP32 ? 0 : op.input_bytes / e * 4;
        op.fwd_transient_bytes = op.input_bytes + fp32_copy;  // the logits (and their fp32 copy)
        op.bwd_transient_bytes = fp32_copy ? op.input_bytes : 0;
        break;
      }
      default:
        break;
    }
  }
}

Ctx make_ctx(const ModelSpec& model, const Strategy& st) {
  Ctx c{model, st, 0, 0, 0, 0, 0, 0, 0, 0, 1, false, 0};
  c.a = st.element_bytes();
  c.lin_a = st.fp8 != Fp8Format::None ? 1 : c.a;
  c.b = st.micro_batch_size;
  c.s = st.seq_length;
  c.s_loc = st.seq_length / st.cp;
  c.tok = c.b * c.s_loc;
  c.t = st.tp;
  c.sp = st.sequence_parallel && st.tp > 1;
  c.tok_sp = c.sp ? c.tok / st.tp : c.tok;
  c.h = model.hidden_size;
  c.vocab = model.padded_vocab_size(st.tp);
  c.torch_cpu = st.transformer_impl == TransformerImpl::TorchCpu;
  return c;
}

/// Vocab-parallel cross entropy on the output layer's logits (fp32 softmax, or the fused kernel's logits).
Op make_cross_entropy(const Ctx& c, std::string path) {
  const Strategy& st = c.st;
  Op ce;
  ce.path = std::move(path);
  ce.kind = OpKind::CrossEntropy;
  ce.tokens = c.tok;
  ce.in_features = c.vocab / c.t;
  ce.out_features = 1;
  ce.input_bytes = c.tok * (c.vocab / c.t) * c.a;
  ce.output_bytes = c.tok * 4;
  if (st.cross_entropy_loss_fusion)
    ce.saved.push_back({"logits", c.tok * (c.vocab / c.t) * c.a});
  else
    ce.saved.push_back({"softmax_fp32", c.tok * (c.vocab / c.t) * 4});
  if (c.torch_cpu) {
    ce.saved.push_back({"target_mask", c.tok});
    ce.saved.push_back({"masked_target", c.tok * 8});
  }
  if (c.t > 1)
    ce.comms.push_back({Collective::AllReduce, ParallelDim::TP, Pass::Forward, c.tok * 4,
                        st.cross_entropy_loss_fusion ? 2 : 3, "all-reduce of logit max / target / sum-exp"});
  return ce;
}

/// The embedding module's ops appended to `ops`: word embedding (vocab-parallel lookup + its TP reduction)
/// [+ learned position table] [+ dropout], paths under `prefix` ("embedding." on the first stage).
/// `with_weights` = false for a call of an embedding whose weights another op already holds (MTP on the
/// same chunk as the first stage).
void add_embedding(const Ctx& c, std::vector<Op>& ops, const std::string& prefix, bool with_weights) {
  const ModelSpec& m = c.m;
  Op emb;
  emb.path = prefix + "word_embeddings";
  emb.kind = OpKind::Embedding;
  emb.tokens = c.tok;
  emb.in_features = c.vocab / c.t;
  emb.out_features = c.h;
  if (with_weights) emb.params.push_back(param("weight", {c.vocab / c.t, c.h}, {c.vocab, c.h}));
  emb.input_bytes = c.tok * 8;
  emb.output_bytes = c.tok_sp * c.h * c.a;
  if (c.torch_cpu && c.t > 1) {
    // VocabParallelEmbedding: F.embedding keeps the shifted ids, masked_fill the out-of-range mask.
    emb.saved.push_back({"masked_ids", c.tok * 8});
    emb.saved.push_back({"out_of_range_mask", c.tok});
  } else {
    emb.saved.push_back({"token_ids", c.tok * 8, c.torch_cpu});
  }
  if (c.t > 1) {
    I64 bytes = c.tok * c.h * c.a;
    if (c.sp) {
      emb.comms.push_back({Collective::ReduceScatter, ParallelDim::TP, Pass::Forward, bytes, 1,
                           "reduce-scatter of the vocab-parallel lookup"});
      emb.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Backward, bytes, 1,
                           "all-gather of the output gradient"});
    } else {
      emb.comms.push_back({Collective::AllReduce, ParallelDim::TP, Pass::Forward, bytes, 1,
                           "all-reduce of the vocab-parallel lookup"});
    }
  }
  ops.push_back(std::move(emb));
  if (m.position_embedding == PositionEmbedding::LearnedAbsolute) {
    Op pos;
    pos.path = prefix + "position_embeddings";
    pos.kind = OpKind::PositionEmbedding;
    pos.tokens = c.tok;
    pos.in_features = m.max_position_embeddings;
    pos.out_features = c.h;
    if (with_weights)
      pos.params.push_back(
          param("weight", {m.max_position_embeddings, c.h}, {m.max_position_embeddings, c.h}, true));
    pos.output_bytes = c.tok * c.h * c.a;
    ops.push_back(std::move(pos));
  }
  if (m.hidden_dropout > 0) {
    Op drop;
    drop.path = prefix + "embedding_dropout";
    drop.kind = OpKind::Dropout;
    drop.tokens = c.tok_sp;
    drop.in_features = drop.out_features = c.h;
    drop.input_bytes = drop.output_bytes = c.tok_sp * c.h * c.a;
    if (c.torch_cpu)
      drop.saved.push_back({"noise", c.tok_sp * c.h * c.a});
    else
      drop.saved.push_back({"mask", c.tok_sp * c.h});
    ops.push_back(std::move(drop));
  }
}

/// One multi-token-prediction layer on the last stage (Megatron-core `MultiTokenPredictionLayer`), ops
/// appended to `ops` with recompute applied.  `embedding_weights`: this chunk holds no first-stage
/// embedding, so the MTP lookup carries the word embedding's own copy (kept in sync over the embedding
/// group, like a tied output layer).  Activations, per Korthikanti et al. 2022's conventions:
///  - the lookup keeps its token ids; enorm keeps its input (the new embedding output);
///  - hnorm's input is the hidden state that the output layer of the main model (k = 0) or of the previous
///    MTP layer also keeps as its input: listed once, there; hnorm keeps only its statistics;
///  - eh_proj keeps the concatenation [enorm, hnorm] (2h wide); its output is all-gathered over tp
///    (`gather_from_tensor_model_parallel_region`) and re-split for sequence parallelism;
///  - one transformer layer built like the decoder's last layer; final_layernorm; the shared output layer
///    keeps its input; its own cross entropy.
/// Full recompute checkpoints enorm … final_layernorm (`MultiTokenPredictionLayer._checkpointed_forward`),
/// keeping the embedding output; selective recompute applies to the transformer layer as in the decoder.
/// A checkpoint id not used by `ops` yet.
int next_checkpoint_id(const std::vector<Op>& ops) {
  int id = 0;
  for (const Op& op : ops) id = std::max(id, op.checkpoint + 1);
  return id;
}

void add_mtp_layer(const Ctx& c, std::vector<Op>& ops, int k, bool embedding_weights) {
  const ModelSpec& m = c.m;
  const std::string pre = "mtp.layers." + std::to_string(k) + ".";
  std::vector<Op> block;
  add_embedding(c, block, pre + "embedding.", embedding_weights);
  const std::size_t checkpoint_from = block.size();  // enorm
  block.push_back(make_norm(c, pre + "enorm", -1, c.tok_sp, c.h));
  Op hnorm = make_norm(c, pre + "hnorm", -1, c.tok_sp, c.h);
  std::erase_if(hnorm.saved, [](const SavedTensor& t) { return t.is_input; });
  block.push_back(std::move(hnorm));
  Op eh = make_column(c, pre + "eh_proj", -1, 2 * c.h, c.h, false);
  if (c.t > 1)
    eh.comms.push_back({Collective::AllGather, ParallelDim::TP, Pass::Forward, c.tok * c.h * c.a, 1,
                        "all-gather of the eh_proj output over tp"});
  block.push_back(std::move(eh));
  finish_kept(block);

  std::vector<Op> layer = build_layer(c, m.num_layers - 1);
  const std::size_t decoder_prefix = ("decoder.layers." + std::to_string(m.num_layers - 1) + ".").size();
  for (auto& op : layer) {
    op.path = pre + "transformer_layer." + op.path.substr(decoder_prefix);
    op.layer = -1;
  }
  finish_kept(layer);
  if (c.st.recompute_granularity == RecomputeGranularity::Selective) {
    apply_selective(c, layer);
    int id = next_checkpoint_id(ops);
    for (std::size_t i = 0; i < layer.size(); ++i)
      if (layer[i].recompute)
        layer[i].checkpoint = i > 0 && layer[i - 1].recompute ? layer[i - 1].checkpoint : id++;
  }
  for (auto& op : layer) block.push_back(std::move(op));

  std::vector<Op> tail;
  tail.push_back(make_norm(c, pre + "final_layernorm", -1, c.tok_sp, c.h));
  const std::size_t checkpoint_to = block.size() + 1;  // past final_layernorm
  Op out = make_column(c, pre + "output_layer", -1, c.h, c.vocab, false);
  out.saved = {{"input", c.tok_sp * c.h * c.a, true}};  // never fp8, as the model's output layer
  out.params.clear();                                   // the model's output layer, called once more
  tail.push_back(std::move(out));
  tail.push_back(make_cross_entropy(c, pre + "loss"));
  finish_kept(tail);
  for (auto& op : tail) block.push_back(std::move(op));

  if (c.st.recompute_granularity == RecomputeGranularity::Full) {
    int id = next_checkpoint_id(ops);
    for (std::size_t i = checkpoint_from; i < checkpoint_to; ++i) {
      block[i].recompute = true;
      block[i].checkpoint = id;
      set_kept(block[i], {});
    }
    set_kept(block[checkpoint_from], {{"input", c.tok_sp * c.h * c.a, true}});  // the embedding output
  }
  for (auto& op : block) ops.push_back(std::move(op));
}

/// Builds the ops of one chunk and applies recompute.
StageGraph build_chunk(const Ctx& c, int pp_rank, int vchunk, int first_layer, int num_layers, bool embedding,
                       bool head) {
  const ModelSpec& m = c.m;
  const Strategy& st = c.st;
  StageGraph g;
  g.pp_rank = pp_rank;
  g.vchunk = vchunk;
  g.first_layer = first_layer;
  g.num_layers = num_layers;
  g.has_embedding = embedding;
  g.has_output_layer = head;

  if (embedding) {
    add_embedding(c, g.ops, "embedding.", true);
    finish_kept(g.ops);
  }

  int selective_checkpoints = 0;
  for (int i = 0; i < num_layers; ++i) {
    int layer = first_layer + i;
    std::vector<Op> ops = build_layer(c, layer);
    finish_kept(ops);
    if (st.recompute_granularity == RecomputeGranularity::Full) {
      // Megatron `TransformerBlock._checkpointed_forward`: uniform checkpoints consecutive groups of
      // recompute_num_layers layers (each keeps its input); block checkpoints the first
      // recompute_num_layers layers of the chunk one by one.
      bool checkpointed, keeps_input;
      if (st.recompute_method == RecomputeMethod::Uniform) {
        checkpointed = true;
        keeps_input = i % st.recompute_num_layers == 0;
      } else {
        checkpointed = i < st.recompute_num_layers;
        keeps_input = true;
      }
      if (checkpointed) {
        // One checkpoint call per group of layers (uniform) or per layer (block).
        int group = st.recompute_method == RecomputeMethod::Uniform ? i / st.recompute_num_layers : i;
        for (auto& op : ops) {
          op.recompute = true;
          op.checkpoint = group;
          set_kept(op, {});
        }
        if (keeps_input) {
          std::vector<SavedTensor> kept = {{"input", c.tok_sp * c.h * c.a, true}};
          if (c.torch_cpu)  // TransformerBlock ("decoder") calls checkpoint
            kept.push_back({"rng_state", kTorchCpuRngStateBytes, false, "decoder"});
          set_kept(ops.front(), kept);
        }
      }
    } else if (st.recompute_granularity == RecomputeGranularity::Selective) {
      apply_selective(c, ops);
      // Consecutive recomputed ops are one checkpoint call (core_attn; the whole MLP).
      for (std::size_t k = 0; k < ops.size(); ++k)
        if (ops[k].recompute)
          ops[k].checkpoint = k > 0 && ops[k - 1].recompute ? ops[k - 1].checkpoint : selective_checkpoints++;
    }
    for (auto& op : ops) g.ops.push_back(std::move(op));
  }

  if (head) {
    std::size_t first = g.ops.size();
    g.ops.push_back(make_norm(c, "decoder.final_layernorm", -1, c.tok_sp, c.h));
    // Tied embeddings with pp = 1 reuse the embedding weight; with pp > 1 the last stage holds its own
    // copy, kept in sync by the embedding group (Megatron
    // `LanguageModule.setup_embeddings_and_output_layer`).
    // With MTP the last stage builds its own embedding (for the MTP layers' lookups), which a tied output
    // layer shares (Megatron `GPTModel.shared_embedding_or_output_weight`).
    bool own_weight = m.untie_embeddings_and_output_weights || (!embedding && m.mtp_num_layers == 0);
    Op out = make_column(c, "output_layer", -1, c.h, c.vocab, false);
    out.saved = {{"input", c.tok_sp * c.h * c.a, true}};  // never fp8 (Megatron keeps the LM head in bf16)
    if (!own_weight) out.params.clear();
    g.ops.push_back(std::move(out));
    g.ops.push_back(make_cross_entropy(c, "loss"));
    for (std::size_t i = first; i < g.ops.size(); ++i) set_kept(g.ops[i], g.ops[i].saved);
    for (int k = 0; k < m.mtp_num_layers; ++k) add_mtp_layer(c, g.ops, k, !embedding && k == 0);
  }

  if (c.torch_cpu) set_torch_cpu_transients(c, g);

  if (st.pp > 1) {
    I64 bytes = c.tok_sp * c.h * c.a;
    bool first_in_pipe = pp_rank == 0 && vchunk == 0;
    bool last_in_pipe = pp_rank == st.pp - 1 && vchunk == st.vpp - 1;
    if (!first_in_pipe) {
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Forward, bytes, 1,
                       "receive activations from the previous stage"});
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Backward, bytes, 1,
                       "send input gradients to the previous stage"});
    }
    if (!last_in_pipe) {
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Forward, bytes, 1,
                       "send activations to the next stage"});
      g.p2p.push_back({Collective::SendRecv, ParallelDim::PP, Pass::Backward, bytes, 1,
                       "receive output gradients from the next stage"});
    }
  }
  return g;
}

}  // namespace

LayerGraph build_layer_graph(const ModelSpec& model, const Strategy& strategy) {
  model.validate();
  strategy.validate(model);

  LayerGraph graph;
  graph.model = model;
  graph.strategy = strategy;
  graph.padded_vocab = model.padded_vocab_size(strategy.tp);

  const Strategy& st = graph.strategy;
  Ctx c = make_ctx(graph.model, st);

  // Layer offsets: virtual chunk v of rank r follows all ranks' chunks < v, then ranks < r of chunk v.
  const std::vector<std::vector<int>> chunk_layers = st.layers_per_chunk(model.num_layers);
  for (int r = 0; r < st.pp; ++r) {
    for (int v = 0; v < st.vpp; ++v) {
      int offset = 0;
      for (int w = 0; w < v; ++w)
        offset += std::accumulate(chunk_layers[w].begin(), chunk_layers[w].end(), 0);
      for (int q = 0; q < r; ++q) offset += chunk_layers[v][q];
      bool emb = r == 0 && v == 0;
      bool head = r == st.pp - 1 && v == st.vpp - 1;
      graph.chunks.push_back(build_chunk(c, r, v, offset, chunk_layers[v][r], emb, head));
    }
  }
  return graph;
}

std::vector<Op> build_layer_ops(const ModelSpec& model, const Strategy& strategy, int layer) {
  Ctx c = make_ctx(model, strategy);
  std::vector<Op> ops = build_layer(c, layer);
  finish_kept(ops);
  return ops;
}

std::vector<Op> build_embedding_ops(const ModelSpec& model, const Strategy& strategy) {
  Ctx c = make_ctx(model, strategy);
  return build_chunk(c, 0, 0, 0, 0, true, false).ops;
}

std::vector<Op> build_head_ops(const ModelSpec& model, const Strategy& strategy) {
  // pp > 1 so that the output layer owns its weight, as the last stage of a pipeline does.
  Strategy st = strategy;
  if (st.pp == 1) {
    st.pp = 2;
    st.chunk_layout.clear();
  }
  Ctx c = make_ctx(model, st);
  return build_chunk(c, st.pp - 1, st.vpp - 1, 0, 0, false, true).ops;
}

std::int64_t count_parameters(const ModelSpec& model) {
  Strategy st;
  st.world_size = 1;
  st.gpus_per_node = 1;
  st.seq_length = 1;
  st.micro_batch_size = 1;
  ModelSpec m = model;
  if (m.position_embedding == PositionEmbedding::LearnedAbsolute && m.max_position_embeddings <= 0)
    m.max_position_embeddings = 1;
  LayerGraph g = build_layer_graph(m, st);
  std::int64_t n = 0;
  for (const auto& c : g.chunks) n += c.param_numel();
  return n;
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Embedding:
      return "Embedding";
    case OpKind::PositionEmbedding:
      return "PositionEmbedding";
    case OpKind::Dropout:
      return "Dropout";
    case OpKind::Norm:
      return "Norm";
    case OpKind::LinearColumn:
      return "ColumnParallelLinear";
    case OpKind::LinearRow:
      return "RowParallelLinear";
    case OpKind::CoreAttention:
      return "CoreAttention";
    case OpKind::Activation:
      return "Activation";
    case OpKind::BiasDropoutAdd:
      return "BiasDropoutAdd";
    case OpKind::Router:
      return "Router";
    case OpKind::TokenDispatch:
      return "TokenDispatch";
    case OpKind::GroupedLinearColumn:
      return "GroupedLinearColumn";
    case OpKind::GroupedLinearRow:
      return "GroupedLinearRow";
    case OpKind::TokenCombine:
      return "TokenCombine";
    case OpKind::CrossEntropy:
      return "CrossEntropy";
  }
  return "?";
}
const char* to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all_reduce";
    case Collective::AllGather:
      return "all_gather";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::AllToAll:
      return "all_to_all";
    case Collective::SendRecv:
      return "send_recv";
  }
  return "?";
}
const char* to_string(ParallelDim d) {
  switch (d) {
    case ParallelDim::TP:
      return "tp";
    case ParallelDim::CP:
      return "cp";
    case ParallelDim::EP:
      return "ep";
    case ParallelDim::ETP:
      return "etp";
    case ParallelDim::DP:
      return "dp";
    case ParallelDim::EDP:
      return "edp";
    case ParallelDim::PP:
      return "pp";
  }
  return "?";
}

}  // namespace preflight::analyzer
