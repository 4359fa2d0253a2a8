// The leaves SimuMax v1.2 prices: sums, the context, the formulas of linears, norms and fp8 quantizers,
// the leaf builders and one transformer layer.  The other families: leaves_attention.cpp, leaves_mlp.cpp,
// leaves_embedding_head.cpp; recompute flags: layer_rc.cpp.  Each formula cites its SimuMax module
// (simumax/core/transformer/dense_module.py, moe_module.py, function.py); notes/simumax.md §2.3, §3.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include "leaf_build.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::cost::detail {

const char* leaf_kind_name(LeafKind kind) {
  switch (kind) {
    case LeafKind::Embedding:
      return "Embedding";
    case LeafKind::LinearCol:
      return "LinearCol";
    case LeafKind::LinearRow:
      return "LinearRow";
    case LeafKind::Norm:
      return "Norm";
    case LeafKind::CoreAttention:
      return "CoreAttention";
    case LeafKind::MlaCoreAttention:
      return "MlaCoreAttention";
    case LeafKind::Rotary:
      return "Rotary";
    case LeafKind::Split:
      return "Split";
    case LeafKind::Concat:
      return "Concat";
    case LeafKind::Add:
      return "Add";
    case LeafKind::Swiglu:
      return "Swiglu";
    case LeafKind::Gelu:
      return "Gelu";
    case LeafKind::CrossEntropy:
      return "CrossEntropy";
    case LeafKind::Router:
      return "Router";
    case LeafKind::Permutation:
      return "Permutation";
    case LeafKind::UnPermutation:
      return "UnPermutation";
    case LeafKind::GroupLinearCol:
      return "GroupLinearCol";
    case LeafKind::GroupLinearRow:
      return "GroupLinearRow";
    case LeafKind::Fp8Quantizer:
      return "Fp8Quantizer";
    case LeafKind::BiasDropoutAdd:
      return "BiasDropoutAdd";
    case LeafKind::PositionEmbedding:
      return "PositionEmbedding";
    case LeafKind::ExpertsHost:
      return "ExpertsHost";
    case LeafKind::MambaScan:
      return "MambaScan";
    case LeafKind::GatedDeltaRule:
      return "GatedDeltaRule";
    case LeafKind::LoraAdapter:
      return "LoraAdapter";
  }
  return "?";
}

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
  fwd_ep_net_ms += o.fwd_ep_net_ms;
  bwd_ep_net_ms += o.bwd_ep_net_ms;
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
  // --num-distributed-optimizer-instances: each instance shards over its part of the group (SimuMax: the
  // whole group).
  const bool whole = c.st->simumax_compat;
  const double group = whole ? static_cast<double>(c.dp) * c.cp : c.st->dense_shard_group();
  const double edp = whole ? c.edp : c.st->expert_shard_group();
  if (c.zero >= 1) m.dense_s /= group, m.moe_s /= edp;
  if (c.zero >= 2) m.dense_g /= group, m.moe_g /= edp;
  if (c.zero >= 3 || c.shard_weights) m.dense_w /= group, m.moe_w /= edp;
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
  c.lowp_e = st.lowp_element_bytes();
  c.main_grad = st.fp32_grad_accumulation ? st.main_grad_bytes() : 2;
  c.zero = st.effective_zero_stage();
  if (st.master_param_bytes != 4 || st.exp_avg_bytes != 4 || st.exp_avg_sq_bytes != 4)  // precision-aware optimizer
    c.state_bytes = (st.precision == Precision::FP32 ? 0 : st.master_param_bytes) + st.exp_avg_bytes +
                    (st.optimizer == Optimizer::Adam ? st.exp_avg_sq_bytes : 0);
  if (st.param_bytes > 0) {
    c.param_bytes = st.param_bytes;
    c.main_grad = st.param_bytes;
    c.state_bytes = st.optimizer == Optimizer::Adam ? 8 : 4;
  }
  if (st.shard_weights) {
    c.shard_weights = true;
    c.zero = std::max(c.zero, 1);
  }
  c.te_dummy = version_at_least(st.te.version, st.te.dummy_wgrad_min);
  c.te_grouped_dummy = version_at_least(st.te.version, st.te.grouped_linear_dummy_wgrad_min);
  c.te_cp_saves = version_at_least(st.te.version, st.te.cp_a2a_save_pre_posta2a_min);
  c.megatron_selective = c.rc.enabled && c.rc.layers > 0 && c.rc.scope == RecomputeScope::Selective &&
                         !c.rc.megatron_modules.empty();
  return c;
}

// ---------------------------------------------------------------------------------------------
// Pricing helpers.

namespace {

/// SimuMax MetaModule._comp_cost_info_impl for one pass: roofline of the op's compute time (with the
/// per-shape efficiency) and the memory-bound time of the bytes it moves (bandwidth of the same name).
double pass_time(const Ctx& c, const char* op, double flops, double bytes, const std::string& key) {
  double t_compute = compute_time_ms(*c.sys, op, flops, key, !c.st->simumax_compat);
  double t_mem = memory_time_ms(*c.sys, op, bytes);
  return end_to_end_ms(*c.sys, t_compute, t_mem);
}

}  // namespace

std::string fmt_int(double v) {
  return std::to_string(static_cast<long long>(v));
}

/// LoRA (ModelSpec::lora): every leaf of the base model is frozen, its adapters are not.
bool frozen(const Ctx& c, const Leaf& l) {
  return c.m->lora.enabled() && l.kind != LeafKind::LoraAdapter;
}

/// Leaves whose weight-gradient pass is a weight's gradient (LoRA's frozen base skips it).
bool has_weight_gradient(LeafKind k) {
  return k == LeafKind::LinearCol || k == LeafKind::LinearRow || k == LeafKind::Norm ||
         k == LeafKind::Embedding || k == LeafKind::GroupLinearCol || k == LeafKind::GroupLinearRow;
}

/// The three passes of a leaf, plus recompute = forward time when the leaf recomputes (0 for a
/// variance tail).  SimuMax: base_struct.py MetaModule._comp_cost_info_impl.
void price_passes(const Ctx& c, Leaf& l, const char* fwd_op, const char* bwd_op, const char* w_op,
                  const std::string& k_fwd, const std::string& k_act, const std::string& k_w) {
  Pass& p = l.pass;
  // A frozen weight has no gradient pass, so nothing of the backward hides under one either (the tensor-
  // parallel overlaps are priced after this).
  if (frozen(c, l) && has_weight_gradient(l.kind)) p.bwd_w_flops = p.bwd_w_bytes = p.bwd_w_net_ms = 0;
  p.fwd_ms = pass_time(c, fwd_op, p.fwd_flops, p.fwd_bytes, k_fwd);
  p.bwd_act_ms = pass_time(c, bwd_op, p.bwd_act_flops, p.bwd_act_bytes, k_act);
  p.bwd_w_ms = pass_time(c, w_op, p.bwd_w_flops, p.bwd_w_bytes, k_w);
  // MXFP8 GEMMs (a scale per 32 elements) and NVFP4 GEMMs at the system's factor over per-tensor FP8.
  const bool mxfp8 = c.st->fp8_recipe == Fp8Recipe::Mxfp8, fp4 = c.st->fp4();
  if ((mxfp8 || fp4) && !c.st->simumax_compat) {
    const double k = fp4 ? c.sys->nvfp4_gemm_scale : c.sys->mxfp8_gemm_scale;
    auto mx = [](const char* op) { return std::string_view(op).rfind("fp8_", 0) == 0; };
    if (mx(fwd_op)) p.fwd_ms *= k;
    if (mx(bwd_op)) p.bwd_act_ms *= k;
    if (mx(w_op)) p.bwd_w_ms *= k;
  }
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
  // Megatron's rank order (tp, cp, ep, dp, pp; experts etp, ep, …): a cp group is strided by tp, an ep group
  // by expert tp.  SimuMax counts the group's own size (--simumax-compat).
  int span = 0;
  if (!c.st->simumax_compat) span = g == CommGroup::Ep ? n * c.etp : (g == CommGroup::Cp ? n * c.tp : 0);
  return collective_time_ms(*c.sys, op, bytes, n, network, g, nullptr, span);
}

/// Weight / grad / optimizer bytes of `numel` parameters, before ZeRO sharding (applied per chunk by
/// the caller, detail::shard(), so that priced leaves do not depend on the data-parallel size).
void dense_params(const Ctx& c, Leaf& l, double numel, double w_bytes, double stat_numel) {
  Mem& m = l.mem;
  m.weight_numel = stat_numel;
  m.dense_w = numel * (c.param_bytes > 0 ? c.param_bytes : w_bytes);
  m.dense_g = numel * c.main_grad;
  m.dense_s = c.state_bytes * numel;
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

/// Megatron's column-parallel backward overlaps its tensor-parallel communication with the GEMMs
/// (megatron/core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication.backward; TE's
/// _Linear / _LayerNormLinear backward do the same): with sequence parallelism the all-gather of the saved
/// input shard runs under the dgrad GEMM and the reduce-scatter of dgrad under the wgrad GEMM; without it
/// the all-reduce of dgrad runs under the wgrad GEMM (unless --no-async-tensor-model-parallel-allreduce).
/// What a GEMM cannot cover stays exposed, and of the covered part the fraction
/// SystemSpec::tp_overlap_exposed (SM and memory contention; 1 by default).
void hide_column_backward_comm(const Ctx& c, Leaf& l) {
  Pass& p = l.pass;
  const double hide = 1 - c.sys->tp_overlap_exposed;
  if (hide <= 0) return;
  if (c.sp) {
    p.bwd_w_net_ms -= hide * std::min(p.bwd_w_net_ms, p.bwd_act_ms);
    p.bwd_act_net_ms -= hide * std::min(p.bwd_act_net_ms, p.bwd_w_ms);
  } else if (c.st->tp_async_allreduce) {
    p.bwd_act_net_ms -= hide * std::min(p.bwd_act_net_ms, p.bwd_w_ms);
  }
}

/// --tp-comm-overlap (TransformerEngine userbuffers): the all-gather in front of a column linear and the
/// reduce-scatter behind a row linear are split into chunks pipelined with the GEMM (forward and dgrad), and
/// the backward's re-gather / reduce-scatter run under the other GEMM as bulk overlaps, on their own SMs.
/// Exposed: what the paired GEMM cannot cover.
void hide_userbuffers_comm(Leaf& l, bool column) {
  Pass& p = l.pass;
  auto cover = [](double& comm, double gemm) { comm = std::max(0.0, comm - gemm); };
  cover(p.fwd_net_ms, p.fwd_ms);
  if (column) {
    cover(p.bwd_w_net_ms, p.bwd_act_ms);
    cover(p.bwd_act_net_ms, p.bwd_w_ms);
  } else {
    cover(p.bwd_act_net_ms, p.bwd_act_ms);
  }
  if (l.recompute) p.recompute_net_ms = l.variance ? 0 : p.fwd_net_ms;
}

// --- LinearCol / LinearRow (dense_module.py) -----------------------------------------------------
// Geometry: x = elements of the (gathered) input b·s_full·in; out local; B = micro batch, M = s_full.
void price_gemm_passes(const Ctx& c, Leaf& l, double b, double m) {
  const char* op = c.fp8 && !l.gemm_16bit ? "fp8_matmul" : "matmul";
  const char* grad_dtype = c.st->grad_reduce_in_bf16 ? "bf16" : "fp32";
  price_passes(c, l, op, op, op, gemm_key(b, m, l.in, l.out, "TN", false, "bf16"),
               gemm_key(b, m, l.out, l.in, "NN", false, "bf16"),
               gemm_key(1, l.out, b * m, l.in, "NT", true, grad_dtype));
}

void price_linear(const Ctx& c, Leaf& l, bool column) {
  double w_el = l.fp8_gemm ? c.lowp_e : c.e, a_el = l.fp8_gemm ? c.lowp_e : c.e;
  double x = l.b * l.s * l.in;
  double y = l.b * l.s * l.out;
  double w = l.in * l.out * w_el, in_b = x * a_el, out_b = y * c.e;
  l.cache = x * a_el;
  if (column) {
    if (c.sp && !c.fp8 && !l.duplicated) l.cache /= c.tp;
    if (l.has_cached_inputs) l.cache = 0;
  } else if (l.has_cached_inputs) {
    l.cache -= x * a_el;
  }
  double peak = in_b + out_b + (c.st->weight_in_linear_peak ? w : 0);
  l.fwd_peak = l.bwd_peak = peak;
  dense_params(c, l, l.in * l.out, w_el, l.in * l.out * (l.duplicated ? 1 : c.tp));
  te_dummy(c, l, false);
  Pass& p = l.pass;
  double base = 2 * x * l.out;
  p.fwd_flops = p.bwd_act_flops = p.bwd_w_flops = base;
  double main = l.in * l.out * 4;
  p.fwd_bytes = in_b + w + out_b;
  p.bwd_act_bytes = w + out_b + in_b;
  p.bwd_w_bytes = out_b + in_b + (column ? w : 0) + (c.st->gradient_accumulation_fusion ? main : 0);
  if (l.duplicated) {
    if (c.sp && c.tp > 1 && l.sp_gather_bytes > 0) {
      p.fwd_net_ms += net(c, Collective::AllGather, l.sp_gather_bytes, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_act_net_ms +=
          net(c, Collective::ReduceScatter, l.sp_gather_bytes, c.tp, c.nets.tp, CommGroup::Tp);
    }
  } else if (column) {
    double comm = x * c.e;
    // Transformer Engine quantizes before it gathers (gather_along_first_dim with the input's quantizer): a
    // sequence-parallel all-gather in front of an fp8 / fp4 GEMM moves the quantized input.  SimuMax gathers
    // 16 bits.
    const double gathered = l.fp8_gemm && !c.st->simumax_compat ? x * c.lowp_e : comm;
    if (c.sp && c.tp > 1) {
      p.fwd_net_ms += net(c, Collective::AllGather, gathered, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_act_net_ms += net(c, Collective::ReduceScatter, comm, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_w_net_ms += net(c, Collective::AllGather, gathered, c.tp, c.nets.tp, CommGroup::Tp);
    } else if (c.tp > 1) {
      p.bwd_act_net_ms += net(c, Collective::AllReduce, comm, c.tp, c.nets.tp, CommGroup::Tp);
    }
  } else {
    double comm = y * c.e;
    if (c.sp && c.tp > 1) {
      // The output gradient is gathered quantized too (TE's grad-output quantizer), the output reduced in 16
      // bits.
      const double gathered = l.fp8_gemm && !c.st->simumax_compat ? y * c.lowp_e : comm;
      p.fwd_net_ms += net(c, Collective::ReduceScatter, comm, c.tp, c.nets.tp, CommGroup::Tp);
      p.bwd_act_net_ms += net(c, Collective::AllGather, gathered, c.tp, c.nets.tp, CommGroup::Tp);
    } else if (c.tp > 1) {
      p.fwd_net_ms += net(c, Collective::AllReduce, comm, c.tp, c.nets.tp, CommGroup::Tp);
    }
  }
  finish_recompute(l);
  price_gemm_passes(c, l, l.b, l.s);
  if (c.tp > 1 && !c.st->simumax_compat && !l.duplicated) {
    if (c.st->tp_comm_overlap && c.sp)
      hide_userbuffers_comm(l, column);
    else if (column)
      hide_column_backward_comm(c, l);
  }
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

// --- Float8Quantizer, zero-cost layout modules ---------------------------------------------------
void price_quantizer(const Ctx& c, Leaf& l) {
  double in_b = l.n_in * 2, out_b = l.n_out * c.lowp_e;
  l.cache = 0;
  l.fwd_peak = in_b + out_b;
  l.bwd_peak = 0;
  l.pass.fwd_bytes = in_b + out_b;
  if (!c.st->simumax_compat && l.grad_numel > 0) {
    // Transformer Engine's Linear (module/linear.py) quantizes its input in forward and its output gradient
    // in backward, each into a rowwise copy (fprop / dgrad) and a columnwise one (wgrad): one bf16 read, two
    // low-precision writes per element.  Current (per-tensor) scaling needs the tensor's amax first, one more
    // read; NVFP4's two-level scaling needs it too, and its columnwise copies are Hadamard-rotated (RHT) with
    // their own amax: four reads.  Delayed scaling and MXFP8 compute their scales in the cast.  SimuMax
    // prices the forward cast alone (bf16 in, one copy out): kept under --simumax-compat and for the experts'
    // grouped GEMMs (priced like the dense linears, NeMo's MoE rows came out 1 ... 4 points worse).
    const double reads = c.st->fp4() ? 4 : c.st->fp8_recipe == Fp8Recipe::Tensorwise ? 2 : 1;
    const double per_element = 2 * reads + 2 * c.lowp_e;
    l.pass.fwd_bytes = l.n_in * per_element;
    l.pass.bwd_act_bytes = l.grad_numel * per_element;
  }
  l.pass.recompute_bytes = 0;
  price_passes(c, l, "default", "default", "default");
}

// --- BiasDropoutAdd (Megatron, not SimuMax) ------------------------------------------------------
// n_in = elements of the residual stream on this rank (b·s/tp with sequence parallelism).  The fused
// kernel (megatron/core/fusions/fused_bias_dropout.py) reads x and the residual, writes the sum and the
// 1-byte keep mask, which it saves for backward; backward reads the gradient and the mask and writes
// the gradient of x (the residual's gradient is the incoming one, no kernel).
void price_bias_dropout_add(const Ctx& c, Leaf& l) {
  const double n = l.n_in, e = c.e;
  l.cache = n;
  l.fwd_peak = n * (e + 1);
  l.bwd_peak = n * (e + 1);
  l.pass.fwd_bytes = n * (3 * e + 1);
  l.pass.bwd_act_bytes = n * (2 * e + 1);
  finish_recompute(l);
  price_passes(c, l, "default", "default", "default");
}

// --- LoRA adapter (Megatron-Bridge ParallelLinearAdapter) --------------------------------------------
// Geometry: tokens = rows, in / out = the base linear's full features, rank; the two 16-bit GEMMs split over
// tp. Rank-thin GEMMs stream their operands: forward reads x and writes x·Aᵀ (rows × rank), then reads it and
// adds x·Aᵀ·Bᵀ into the base output (read and write); backward reads the output gradient for B's input
// gradient and its weight gradient, writes and adds the input gradient, and reads x again for A's weight
// gradient.  Priced as GEMMs at the matmul efficiency or as that traffic at the memory bandwidth, whichever
// is slower.
void price_lora_adapter(const Ctx& c, Leaf& l) {
  // An expert linear's adapter (l.experts > 0) is split over expert tp and is an expert parameter.
  const bool expert = l.experts > 0;
  const double t = l.duplicated ? 1 : expert ? c.etp : c.tp, rows = l.tokens, r = l.rank;
  const double x = rows * l.in / t * c.e, y = rows * l.out / t * c.e, hid = rows * r * c.e;
  Pass& p = l.pass;
  const double f = 2 * rows * r * (l.in + l.out) / t;
  p.fwd_flops = f;
  p.bwd_act_flops = f;
  p.bwd_w_flops = f;
  p.fwd_bytes = x + hid + hid + 2 * y;
  p.bwd_act_bytes = y + hid + hid + 2 * x;
  p.bwd_w_bytes = y + hid + x + hid;
  l.cache = x + hid;
  l.fwd_peak = x + hid + y;
  l.bwd_peak = l.fwd_peak;
  const double numel = r * (l.in + l.out) / t;
  dense_params(c, l, numel, c.e, numel * t);
  if (expert) {  // reduced over expert-dp: the expert side of the static memory
    Mem& m = l.mem;
    std::swap(m.dense_w, m.moe_w);
    std::swap(m.dense_g, m.moe_g);
    std::swap(m.dense_s, m.moe_s);
    std::swap(m.weight_numel, m.moe_weight_numel);
  }
  finish_recompute(l);
  price_passes(c, l, "matmul", "matmul", "matmul");
}

/// LoRA: a leaf of the base model keeps its weights but no gradient or optimizer state (its weight-gradient
/// pass is dropped by price_passes).
void freeze(Leaf& l) {
  l.mem.dense_g = l.mem.dense_s = l.mem.moe_g = l.mem.moe_s = 0;
  l.mem.te_shapes.clear();  // no dummy wgrad buffer either
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
    case LeafKind::BiasDropoutAdd:
      price_bias_dropout_add(c, l);
      break;
    case LeafKind::PositionEmbedding:
      price_position_embedding(c, l);
      break;
    case LeafKind::MambaScan:
      price_mamba_scan(c, l);
      break;
    case LeafKind::GatedDeltaRule:
      price_gdn_rule(c, l);
      break;
    case LeafKind::LoraAdapter:
      price_lora_adapter(c, l);
      break;
    case LeafKind::ExpertsHost: {
      // The GPU idles while the host launches the local experts' kernels after the tokens-per-expert copy:
      // forward, backward (the backward GEMMs are launched per expert too), and again when recomputed.
      const double ms = c.sys->moe_host_us_per_expert * l.local_experts / 1e3;
      l.pass.fwd_ms = ms;
      l.pass.bwd_act_ms = ms;
      l.pass.recompute_ms = l.recompute ? ms : 0;
      break;
    }
    case LeafKind::Rotary:
    case LeafKind::Split:
    case LeafKind::Concat:
    case LeafKind::Add:
      break;  // layout only: no memory, no time
  }
}

// ---------------------------------------------------------------------------------------------
// Building leaves from graph ops.

RoleCursor::RoleCursor(const std::vector<Op>& ops) : used_(ops.size(), false) {
  ops_.reserve(ops.size());
  for (const auto& op : ops) ops_.push_back(&op);
}

const Op* RoleCursor::find(OpRole r) {
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (!used_[i] && ops_[i]->role == r) {
      used_[i] = true;
      return ops_[i];
    }
  return nullptr;
}

const Op& RoleCursor::need(OpRole r) {
  const Op* op = find(r);
  if (!op)
    throw std::logic_error(std::string("cost model: the layer graph has no op of role ") + to_string(r));
  return *op;
}

bool RoleCursor::has(OpRole r) const {
  return std::any_of(ops_.begin(), ops_.end(), [r](const Op* op) { return op->role == r; });
}

void RoleCursor::free(OpRole r) {
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (ops_[i]->role == r) used_[i] = true;
}

namespace {

/// Why the cost model has no formula for an op of this role.
std::string unpriced_reason(OpRole r) {
  switch (r) {
    case OpRole::PositionEmbedding:
      return "the learned position table (weights, lookup, gradient) is outside SimuMax's layer model";
    case OpRole::EmbeddingDropout:
    case OpRole::AttnBda:
    case OpRole::MlpBda:
      return "dropout is not modelled (no masks cached, no dropout kernels)";
    default:
      return std::string("the cost model has no formula for role ") + to_string(r);
  }
}

/// `decoder.layers.17.self_attn_bda` → `decoder.layers.*.self_attn_bda`.
std::string any_layer(const std::string& path) {
  const std::string key = "layers.";
  std::size_t at = path.find(key);
  if (at == std::string::npos || path.rfind("mtp.", 0) == 0) return path;
  std::size_t from = at + key.size(), to = from;
  while (to < path.size() && path[to] >= '0' && path[to] <= '9') ++to;
  return to > from ? path.substr(0, from) + "*" + path.substr(to) : path;
}

}  // namespace

void RoleCursor::report_unpriced(Unpriced* out) const {
  if (!out) return;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    if (!used_[i])
      out->push_back(any_layer(ops_[i]->path) + " (" + to_string(ops_[i]->role) +
                     "): " + unpriced_reason(ops_[i]->role));
}

void Builder::push(Leaf l) {
  if (c.search_mode) {
    l.name.clear();
    l.path.clear();
  }
  price(c, l);
  if (frozen(c, l)) freeze(l);
  out.push_back(std::move(l));
}

/// The Float8Quantizer in front of an fp8 (fp4) GEMM: `numel` bf16 input elements (2 bytes each) to fp8
/// (fp4).
Leaf quantizer_leaf(double numel, bool recompute, std::string name, std::string path, double grad_numel) {
  Leaf q;
  q.kind = LeafKind::Fp8Quantizer;
  q.n_in = q.n_out = numel;
  q.grad_numel = grad_numel;
  q.input_bytes = numel * 2;
  q.recompute = recompute;
  q.name = std::move(name);
  q.path = std::move(path);
  return q;
}

/// A column/row linear, preceded by its fp8 quantizer when the strategy uses fp8 GEMMs.
/// `tokens_full` = b·s_full, `in_tokens` = rows of the (un-gathered) input.
namespace {
void push_linear(Builder& bld, bool column, const std::string& name, const std::string& parent_path,
                 int index, double tokens_full, double in_tokens, double in, double out, bool recompute,
                 bool has_cached, bool is_last, bool use_var, bool breakpoint, bool fp8_allowed,
                 bool duplicated, double sp_gather_bytes, bool sixteen_bit) {
  const Ctx& c = bld.c;
  bool quantized = c.fp8 && fp8_allowed;
  // The output gradient its backward quantizes: a column-parallel linear's is every token's (its columns); a
  // row-parallel one's arrives sequence-split under sequence parallelism and is quantized before the gather.
  const double grad_rows = !column && c.sp && c.tp > 1 && !duplicated ? tokens_full / c.tp : tokens_full;
  Leaf l;
  l.duplicated = duplicated;
  l.sp_gather_bytes = sp_gather_bytes;
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
  l.gemm_16bit = c.fp8 && sixteen_bit;
  const char* cls = column ? "LinearCol" : "LinearRow";
  if (quantized) {
    bld.push(quantizer_leaf(in_tokens * in, recompute, name + ".quantizer",
                            parent_path +
                                Builder::idx(index, column ? "QuantizedColLinear" : "QuantizedRowLinear") +
                                Builder::idx(0, "Float8Quantizer"),
                            grad_rows * out));
    l.input_bytes = in_tokens * in * c.lowp_e;
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
}  // namespace

void add_linear(Builder& bld, bool column, const std::string& name, const std::string& parent_path, int index,
                double tokens_full, double in_tokens, double in, double out, bool recompute, bool has_cached,
                bool is_last, bool use_var, bool breakpoint, bool fp8_allowed, bool sixteen_bit) {
  push_linear(bld, column, name, parent_path, index, tokens_full, in_tokens, in, out, recompute, has_cached,
              is_last, use_var, breakpoint, fp8_allowed && !sixteen_bit, false, 0, sixteen_bit);
}

void add_duplicated_linear(Builder& bld, const std::string& name, const std::string& parent_path, int index,
                           double tokens, double in, double out, bool recompute, bool has_cached,
                           bool is_last, bool use_var, bool breakpoint, double sp_gather_bytes,
                           bool sixteen_bit) {
  push_linear(bld, true, name, parent_path, index, tokens, tokens, in, out, recompute, has_cached, is_last,
              use_var, breakpoint, !sixteen_bit, true, sp_gather_bytes, sixteen_bit);
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

/// Megatron's bias-dropout-add after the attention / MLP block, priced when the run has hidden dropout
/// (SimuMax folds the residual add into its neighbours; under --simumax-compat it stays unpriced).
static void bda_leaf(Builder& bld, RoleCursor& cur, OpRole role, bool recompute, const char* name, int index) {
  const Ctx& c = bld.c;
  if (c.st->simumax_compat || c.m->hidden_dropout == 0) return;
  const Op* op = cur.find(role);
  if (!op) return;
  Leaf l;
  l.kind = LeafKind::BiasDropoutAdd;
  l.n_in = l.n_out = static_cast<double>(op->tokens) * static_cast<double>(op->in_features);
  l.input_bytes = l.n_in * c.e;
  l.recompute = recompute;
  l.name = name;
  l.path = Builder::idx(index, "BiasDropoutAdd");
  bld.push(std::move(l));
}

std::vector<Leaf> layer_leaves(const Ctx& c, const std::vector<Op>& ops, const LayerRc& rc,
                               Unpriced* unpriced) {
  std::vector<Leaf> out;
  out.reserve(24);
  Builder bld{c, out, c.rc.variance};
  RoleCursor cur(ops);

  // A transformer layer is both blocks; a hybrid model's layer one of them, or a Mamba mixer.
  bool first = true;
  auto push_first = [&](Leaf l) {
    l.layer_first = first;
    first = false;
    bld.push(std::move(l));
  };
  // 1. Input norm (attention or Mamba).
  if (const Op* ln1 = cur.find(OpRole::InputNorm))
    push_first(norm_leaf(ln1->tokens, ln1->in_features, rc.input_ln, "layernorm_input",
                         Builder::idx(0, "LayerNorm")));
  // 2. Attention or the Mamba mixer (+ its bias-dropout-add).
  if (cur.has(OpRole::MambaScan)) {
    mamba_leaves(bld, cur, rc);
    bda_leaf(bld, cur, OpRole::MambaBda, rc.out, "mamba_bda", 4);
  } else if (cur.has(OpRole::GdnRule)) {
    gdn_leaves(bld, cur, rc);
    bda_leaf(bld, cur, OpRole::AttnBda, rc.out, "self_attn_bda", 4);
  } else if (cur.has(OpRole::CoreAttention)) {
    attention_leaves(bld, cur, rc);
    if (const Op* post = cur.find(OpRole::PostAttnNorm))  // Gemma's sandwich norm
      bld.push(norm_leaf(post->tokens, post->in_features, rc.out, "post_attention_layernorm",
                         Builder::idx(1, "LayerNorm")));
    bda_leaf(bld, cur, OpRole::AttnBda, rc.out, "self_attn_bda", 4);
  }
  // 3. Pre-MLP norm and 4. the MLP.
  if (const Op* ln2 = cur.find(OpRole::PreMlpNorm)) {
    push_first(norm_leaf(ln2->tokens, ln2->in_features, rc.pre_ln, "pre_mlp_layernorm",
                         Builder::idx(2, "LayerNorm")));
    mlp_leaves(bld, cur, rc);
    if (const Op* post = cur.find(OpRole::PostMlpNorm))
      bld.push(norm_leaf(post->tokens, post->in_features, rc.linear || rc.meg_mlp,
                         "post_feedforward_layernorm", Builder::idx(3, "LayerNorm")));
    bda_leaf(bld, cur, OpRole::MlpBda, rc.linear || rc.meg_mlp, "mlp_bda", 5);
  }
  // The residual adds: SimuMax folds them into their neighbours (no time, no memory); with dropout they
  // keep a mask, which it does not model.
  if (c.m->hidden_dropout == 0) {
    cur.free(OpRole::AttnBda);
    cur.free(OpRole::MlpBda);
    cur.free(OpRole::MambaBda);
  }
  // LoRA: each targeted linear's adapter (the layer graph's lora_a / lora_b on its op).
  for (const Op& op : ops) {
    const auto a = std::find_if(op.params.begin(), op.params.end(),
                                [](const ParamTensor& p) { return p.name == "lora_a"; });
    const auto b = std::find_if(op.params.begin(), op.params.end(),
                                [](const ParamTensor& p) { return p.name == "lora_b"; });
    if (a == op.params.end() || b == op.params.end()) continue;
    Leaf l;
    l.kind = LeafKind::LoraAdapter;
    l.tokens = static_cast<double>(op.tokens);
    l.rank = static_cast<double>(a->full_shape[0]);
    l.in = static_cast<double>(a->full_shape[1]);
    l.out = static_cast<double>(b->full_shape[0]);
    l.experts = a->expert ? 1 : 0;  // a routed experts' shared adapter
    l.duplicated = a->tp_replicated;  // an MLA down projection's, replicated over tp
    // Recomputed with the block its linear is recomputed in (full recompute, the attention or the MLP).
    const bool attention_side = !op.moe && op.role != OpRole::Fc1 && op.role != OpRole::Fc2 &&
                                op.role != OpRole::SharedFc1 && op.role != OpRole::SharedFc2;
    l.recompute = attention_side ? rc.out : (rc.linear || rc.meg_mlp || rc.meg_moe);
    // Named inside its layer as the other leaves are ("self_attention.linear_qkv.adapter"): past
    // "decoder.layers.<i>." or an MTP layer's "transformer_layer.".
    std::size_t from = 0;
    if (const auto t = op.path.find("transformer_layer."); t != std::string::npos)
      from = t + 18;
    else if (const auto d = op.path.find("decoder.layers."); d != std::string::npos)
      from = op.path.find('.', d + 15) + 1;
    l.name = op.path.substr(from) + ".adapter";
    l.path = Builder::idx(9, "LoraAdapter");
    bld.push(std::move(l));
  }
  cur.report_unpriced(unpriced);
  return out;
}

}  // namespace preflight::analyzer::cost::detail
