// Ops every block uses: norms, column/row-parallel linears, residual adds, activations.
#include "ops_build.hpp"

#include <tuple>
#include <utility>

namespace preflight::analyzer::graph_ops {

Ctx make_ctx(const ModelSpec& model, const Strategy& st) {
  Ctx c{model, st, 0, 0, 0, 0, 0, 0, 0, 0, 1, false, 0};
  c.a = st.element_bytes();
  c.lin_a = c.a;
  c.lin_a_den = 1;
  if (st.fp8 != Fp8Format::None) std::tie(c.lin_a, c.lin_a_den) = st.lowp_bytes_fraction();
  c.b = st.micro_batch_size;
  c.s = st.seq_length;
  // A unit of the sequence pipeline carries seq_length / seq_split of the micro batch's tokens; c.s stays the
  // whole sequence (the keys each query attends).
  c.s_loc = st.seq_length / st.cp / std::max(1, st.seq_split);
  c.tok = c.b * c.s_loc;
  c.t = st.tp;
  c.sp = st.sequence_parallel && st.tp > 1;
  c.tok_sp = c.sp ? c.tok / st.tp : c.tok;
  c.h = model.hidden_size;
  c.vt = st.vocab_parallel ? st.tp : 1;
  c.vocab = model.padded_vocab_size(c.vt);
  c.torch_cpu = st.transformer_impl == TransformerImpl::TorchCpu;
  return c;
}

void set_kept(Op& op, std::vector<SavedTensor> kept) {
  op.kept = std::move(kept);
  op.kept_bytes = 0;
  for (const auto& t : op.kept) op.kept_bytes += t.bytes;
}

ParamTensor param(std::string name, std::vector<I64> local, std::vector<I64> full, bool replicated,
                  bool expert) {
  ParamTensor p;
  p.name = std::move(name);
  p.shape = std::move(local);
  p.full_shape = std::move(full);
  p.tp_replicated = replicated;
  p.expert = expert;
  return p;
}

namespace {

void add_norm_params(const Ctx& c, Op& op, I64 width) {
  op.params.push_back(param("weight", {width}, {width}, true));
  if (c.m.normalization == Normalization::LayerNorm)
    op.params.push_back(param("bias", {width}, {width}, true));
}

}  // namespace

Op make_norm(const Ctx& c, std::string path, OpRole role, int layer, I64 tokens, I64 width) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::Norm;
  op.role = role;
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

namespace {

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

}  // namespace

void linear_flops(Op& op, I64 tokens, I64 in, I64 out) {
  double f = 2.0 * static_cast<double>(tokens) * static_cast<double>(in) * static_cast<double>(out);
  op.fwd_flops = f;
  op.bwd_input_flops = f;
  op.bwd_weight_flops = f;
}

Op make_column(const Ctx& c, std::string path, OpRole role, int layer, I64 in, I64 out_full, bool bias,
               bool split) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::LinearColumn;
  op.role = role;
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
  op.saved.push_back({"input", c.lin_bytes(in_tokens * in), true});
  linear_flops(op, c.tok, in, out);
  if (split) column_comms(c, op, in);
  return op;
}

Op make_duplicated(const Ctx& c, std::string path, OpRole role, int layer, I64 in, I64 out) {
  Op op = make_column(c, std::move(path), role, layer, in, out, false, false);
  op.tokens = c.tok_sp;
  op.input_bytes = c.tok_sp * in * c.a;
  op.output_bytes = c.tok_sp * out * c.a;
  op.saved = {{"input", c.lin_bytes(c.tok_sp * in), true}};
  linear_flops(op, c.tok_sp, in, out);
  return op;
}

Op make_row(const Ctx& c, std::string path, OpRole role, int layer, I64 in_full, I64 out, bool bias) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::LinearRow;
  op.role = role;
  op.layer = layer;
  op.tokens = c.tok;
  I64 in = in_full / c.t;
  op.in_features = in;
  op.out_features = out;
  op.params.push_back(param("weight", {out, in}, {out, in_full}));
  if (bias) op.params.push_back(param("bias", {out}, {out}, true));
  op.input_bytes = c.tok * in * c.a;
  op.output_bytes = c.tok_sp * out * c.a;
  op.saved.push_back({"input", c.lin_bytes(c.tok * in), true});
  linear_flops(op, c.tok, in, out);
  row_comms(c, op, out);
  return op;
}

Op make_bda(const Ctx& c, std::string path, OpRole role, int layer) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::BiasDropoutAdd;
  op.role = role;
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

Op make_activation(const Ctx& c, std::string path, OpRole role, int layer, I64 tokens, I64 in_width,
                   I64 out_width) {
  Op op;
  op.path = std::move(path);
  op.kind = OpKind::Activation;
  op.role = role;
  op.layer = layer;
  op.tokens = tokens;
  op.in_features = in_width;
  op.out_features = out_width;
  op.input_bytes = tokens * in_width * c.a;
  op.output_bytes = tokens * out_width * c.a;
  op.saved.push_back({"input", tokens * in_width * c.a, true});
  // F.silu(gate) * up keeps the SiLU output for the product's backward (Megatron-core's fused bias_swiglu
  // does not; the legacy model's unfused swiglu does).
  if ((c.torch_cpu || c.st.legacy_model) && c.m.gated())
    op.saved.push_back({"silu_output", tokens * out_width * c.a});
  return op;
}

void apply_precision_overrides(const Ctx& c, std::vector<Op>& ops, int local_index) {
  if (c.st.precision_overrides.empty() || (c.lin_a == c.a && c.lin_a_den == 1)) return;  // 16-bit already
  for (auto& op : ops) {
    if (op.kind != OpKind::LinearColumn && op.kind != OpKind::LinearRow &&
        op.kind != OpKind::GroupedLinearColumn && op.kind != OpKind::GroupedLinearRow)
      continue;
    std::string path = op.path;
    static const std::string layers = "decoder.layers.";
    if (local_index >= 0 && path.rfind(layers, 0) == 0) {
      const auto dot = path.find('.', layers.size());
      if (dot != std::string::npos) path = layers + std::to_string(local_index) + path.substr(dot);
    }
    const PrecisionOverride* o = c.st.precision_override_for(path);
    if (!o || !o->sixteen_bit) continue;
    op.sixteen_bit = true;
    for (auto& t : op.saved)
      if (t.name == "input") t.bytes = t.bytes * c.lin_a_den / c.lin_a * c.a;
  }
}

void finish_kept(std::vector<Op>& ops) {
  for (auto& op : ops) set_kept(op, op.saved);
}

void freeze_params(const Ctx& c, std::vector<Op>& ops) {
  if (!c.m.lora.enabled()) return;
  for (auto& op : ops)
    for (auto& p : op.params)
      if (p.name != "lora_a" && p.name != "lora_b") p.frozen = true;
}

void apply_lora(const Ctx& c, std::vector<Op>& ops) {
  const LoraSpec& lora = c.m.lora;
  if (!lora.enabled()) return;
  freeze_params(c, ops);
  for (auto& op : ops) {
    const bool grouped = op.kind == OpKind::GroupedLinearColumn || op.kind == OpKind::GroupedLinearRow;
    const bool column = op.kind == OpKind::LinearColumn || op.kind == OpKind::GroupedLinearColumn;
    if (!column && !grouped && op.kind != OpKind::LinearRow) continue;
    // Transformer Engine keeps a linear's input only for its weight gradient (linear.py / grouped_linear.py
    // backward_needs_input).
    std::erase_if(op.saved, [](const SavedTensor& t) { return t.name == "input"; });
    op.bwd_weight_flops = 0;
    // Bridge's target names match the shared experts' and the routed experts' linear_fc1 / linear_fc2 too.
    const bool fc1 = op.role == OpRole::Fc1 || op.role == OpRole::SharedFc1 || op.role == OpRole::ExpertsFc1;
    const bool fc2 = op.role == OpRole::Fc2 || op.role == OpRole::SharedFc2 || op.role == OpRole::ExpertsFc2;
    const bool target = (op.role == OpRole::Qkv && lora.linear_qkv) ||
                        (op.role == OpRole::AttnProj && lora.linear_proj) || (fc1 && lora.linear_fc1) ||
                        (fc2 && lora.linear_fc2) ||
                        (op.role == OpRole::QDownProj && lora.linear_q_down_proj) ||
                        (op.role == OpRole::QUpProj && lora.linear_q_up_proj) ||
                        (op.role == OpRole::QProj && lora.linear_q_proj) ||
                        (op.role == OpRole::KvDownProj && lora.linear_kv_down_proj) ||
                        (op.role == OpRole::KvUpProj && lora.linear_kv_up_proj);
    if (!target) continue;
    // The adapter on the full (unsplit) in / out features, its two weights split over tp — expert tp for the
    // experts — (Bridge's ParallelLinearAdapter: linear_in / linear_out parallel as the base linear is).  A
    // routed experts' grouped linear shares one adapter among a rank's local experts (LoRA
    // share_expert_adapters, the default), applied to every routed row; an expert parameter (reduced over
    // expert-dp).
    // A linear replicated over tp (MLA's down projections, TE parallel_mode "duplicated") has a replicated
    // adapter on the rank's own tokens.
    const bool replicated = !op.params.empty() && op.params.front().tp_replicated;
    const I64 r = lora.rank, t = replicated ? 1 : grouped ? c.st.expert_tp() : c.t;
    const I64 in_full = column ? op.in_features : op.in_features * t;
    const I64 out_full = column ? op.out_features * t : op.out_features;
    op.params.push_back(param("lora_a", {r, in_full / t}, {r, in_full}, replicated, grouped));
    op.params.push_back(param("lora_b", {out_full / t, r}, {out_full, r}, replicated, grouped));
    // Its input in 16 bits (the base linear's input as it arrives: sequence-split before a column linear
    // under sequence parallelism, the routed rows before an expert linear) and x·Aᵀ over the rank.
    const I64 rows = grouped || replicated ? op.tokens : c.tok;
    op.saved.push_back({"lora_input", op.input_bytes, true});
    op.saved.push_back({"lora_hidden", rows * r * c.a});
    const double f = 2.0 * static_cast<double>(rows) * static_cast<double>(r) *
                     static_cast<double>(in_full + out_full) / static_cast<double>(t);
    op.fwd_flops += f;
    op.bwd_input_flops += f;
    op.bwd_weight_flops += f;
  }
}

}  // namespace preflight::analyzer::graph_ops
