#include "preflight/analyzer/model/memory.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace preflight::analyzer {

BytesPerParam bytes_per_param(const Strategy& st) {
  BytesPerParam b;
  if (st.param_bytes > 0) {  // MindSpore: parameters and gradients in param_init_type, fp32 moments
    b.weight = st.param_bytes;
    b.grad = st.param_bytes;
    b.optimizer = st.optimizer == Optimizer::Adam ? 8 : 4;
    return b;
  }
  b.weight = st.element_bytes();
  b.grad = st.main_grad_bytes();
  double master = st.precision == Precision::FP32 ? 0 : st.master_param_bytes;
  double moments = st.optimizer == Optimizer::Adam ? st.exp_avg_bytes + st.exp_avg_sq_bytes : st.exp_avg_bytes;
  if (st.optimizer == Optimizer::Muon) {
    // The scalar optimizer's states (Adam: two moments, Lion: one) and Muon's momentum, fp32 beside the
    // fp32 master copy (Float16OptimizerWithFloat16Params: the optimizer steps the master copies).
    moments = 4.0 * st.muon.scalar_states;
    b.muon_optimizer = master + 4;
  }
  b.optimizer = master + moments;
  return b;
}

namespace {
/// Whether parameter `p` of op `op` is a matrix Muon orthogonalizes (layer_wise_optimizer.py
/// is_managed_by_layer_wise_optimizer: 2-D, not flagged is_embedding_or_output_parameter — the word
/// embedding and the output layer; a learned position table is 2-D and not flagged).  Grouped experts'
/// weights are [local experts, out, in] here, one 2-D weight per expert in Transformer Engine.
bool muon_matrix(const Op& op, const ParamTensor& p) {
  if (p.frozen) return false;
  if (p.name != "weight" && p.name != "lora_a" && p.name != "lora_b") return false;
  if (op.role == OpRole::WordEmbedding || op.role == OpRole::OutputLayer || op.role == OpRole::MtpEmbedding ||
      op.role == OpRole::MtpOutputLayer)
    return false;
  if (op.role == OpRole::MambaInProj) return false;  // mamba_mixer.py: in_proj.weight.use_muon = False
  return p.shape.size() == (p.expert ? 3u : 2u);
}

/// Quintic Newton-Schulz FLOPs of an r × c matrix over `steps` steps.
double ns_flops(double r, double c, int steps) {
  const double m = std::min(r, c), n = std::max(r, c);
  return steps * (4 * m * m * n + 2 * m * m * m);
}

/// Per rank of the dense / expert data-parallel group: optimizer bytes of the ping-pong deal.
std::pair<std::vector<double>, std::vector<double>> ping_pong(const LayerGraph& graph, int pp_rank) {
  const Strategy& st = graph.strategy;
  const BytesPerParam bpp = bytes_per_param(st);
  struct Item {
    double numel, bytes;
    bool expert;
  };
  std::vector<Item> items;
  for (const StageGraph* c : graph.stage(pp_rank))
    for (const Op& op : c->ops)
      for (const ParamTensor& p : op.params) {
        if (p.frozen) continue;  // no optimizer state
        const bool matrix = muon_matrix(op, p);
        const double per = matrix ? bpp.muon_optimizer : bpp.optimizer;
        // A grouped linear's experts are one parameter each in Transformer Engine.
        const int n = p.expert && !p.shape.empty() ? static_cast<int>(p.shape[0]) : 1;
        const double numel = static_cast<double>(p.numel()) / n;
        for (int i = 0; i < n; ++i) items.push_back({numel, numel * per, p.expert});
      }
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.numel < b.numel; });
  std::vector<double> dense(static_cast<std::size_t>(st.dense_shard_group()), 0.0),
      expert(static_cast<std::size_t>(st.expert_shard_group()), 0.0);
  std::size_t di = 0, ei = 0;
  auto deal = [](std::vector<double>& ranks, std::size_t& i, double bytes) {
    const std::size_t n = ranks.size(), k = i % (2 * n);
    ranks[k < n ? k : 2 * n - 1 - k] += bytes;
    ++i;
  };
  for (const Item& it : items) deal(it.expert ? expert : dense, it.expert ? ei : di, it.bytes);
  return {dense, expert};
}
}  // namespace

double muon_ping_pong_optimizer_bytes(const LayerGraph& graph, int pp_rank, int dp_rank, int edp_rank) {
  const auto [dense, expert] = ping_pong(graph, pp_rank);
  return dense.at(static_cast<std::size_t>(dp_rank)) + expert.at(static_cast<std::size_t>(edp_rank));
}

MuonStepWork muon_newton_schulz(const LayerGraph& graph, int pp_rank) {
  MuonStepWork w;
  const Strategy& st = graph.strategy;
  if (st.optimizer != Optimizer::Muon) return w;
  const ModelSpec& m = graph.model;
  double dense = 0, expert = 0;
  for (const StageGraph* c : graph.stage(pp_rank))
    for (const Op& op : c->ops)
      for (const ParamTensor& p : op.params) {
        if (!muon_matrix(op, p)) continue;
        const std::size_t o = p.expert ? 1 : 0;  // [experts,] out, in
        const double experts = p.expert ? static_cast<double>(p.shape[0]) : 1.0;
        const double rl = static_cast<double>(p.shape[o]), cl = static_cast<double>(p.shape[o + 1]);
        const double rf = static_cast<double>(p.full_shape[o]), cf = static_cast<double>(p.full_shape[o + 1]);
        const bool split = rl * cl < rf * cf && !p.expert;  // a tensor-parallel shard (experts: over ep)
        // Each piece as Megatron orthogonalizes it: rows (out features) of the whole matrix, or of q, k, v.
        std::vector<double> rows{split ? rf : rl};
        if (op.role == OpRole::Qkv && st.muon.split_qkv && m.num_query_groups > 0 && m.kv_channels > 0) {
          const double d = static_cast<double>(m.kv_channels), g = static_cast<double>(m.num_query_groups);
          const double q = static_cast<double>(m.num_attention_heads) / g * d;
          const double gate = m.attention_output_gate ? q : 0;
          const double scale = (split ? rf : rl) / (g * (q + gate + 2 * d));  // the groups this matrix holds
          rows = {g * q * scale, g * d * scale, g * d * scale};
          if (gate > 0) rows.push_back(g * gate * scale);
        }
        const double cols = split ? cf : cl;
        const double shard = split ? rf * cf / (rl * cl) : 1.0;  // tp ranks the matrix is split over
        double f = 0;
        for (double r : rows) {
          if (!split || st.muon.tp_mode == "duplicated") f += ns_flops(r, cols, st.muon.ns_steps);
          // blockwise: the rank's shard, its rows (column-parallel) or its columns (row-parallel) cut.
          else if (st.muon.tp_mode == "blockwise")
            f += ns_flops(rl < rf ? r / shard : r, rl < rf ? cols : cl, st.muon.ns_steps);
          else  // distributed
            f += ns_flops(r, cols, st.muon.ns_steps) / shard;
        }
        (p.expert ? expert : dense) += f * experts;
        if (split && st.muon.tp_mode == "duplicated" && st.tp > 1) w.tp_gather_bytes += rf * cf * 4;
      }
  if (st.muon.layer_wise) {  // the rank's share of whole matrices (and of their gathers)
    dense /= st.dense_shard_group();
    expert /= st.expert_shard_group();
    w.tp_gather_bytes /= st.dense_shard_group();
  }
  w.ns_flops = dense + expert;
  return w;
}

namespace {
/// Parameters of the largest unit FSDP gathers at once on this chunk: a transformer layer (its ops with
/// one layer index), an MTP layer, or the embedding / output layer on their own.  Expert parameters
/// (sharded over the expert dp) and dense ones are returned apart: {dense, expert}.
std::pair<double, double> largest_fsdp_unit(const StageGraph& chunk) {
  std::map<std::pair<int, int>, std::pair<double, double>> units;
  int loose = 0;
  for (const auto& op : chunk.ops) {
    if (op.params.empty()) continue;
    const std::pair<int, int> key = op.layer >= 0       ? std::pair{0, op.layer}
                                    : op.mtp_layer >= 0 ? std::pair{1, op.mtp_layer}
                                                        : std::pair{2, loose++};
    for (const auto& p : op.params)
      (p.expert ? units[key].second : units[key].first) += static_cast<double>(p.numel());
  }
  std::pair<double, double> best{0, 0};
  for (const auto& [key, u] : units)
    if (u.first + u.second > best.first + best.second) best = u;
  return best;
}
}  // namespace

double offload_kept_bytes(const LayerGraph& graph, int pp_rank, double inflight_microbatches) {
  double pinned = 0, offloaded = 0, delta = 0;
  for (const StageGraph* c : graph.stage(pp_rank)) {
    pinned = std::max(pinned, static_cast<double>(c->offload_pinned_bytes));
    offloaded += static_cast<double>(c->offloaded_bytes);
    delta += static_cast<double>(c->offload_delta_bytes);
  }
  if (offloaded == 0) return 0;
  // The margin's groups, then the delta's bytes of what the in-flight micro batches offload (Megatron
  // disables whole groups until the delta is covered: up to one group more, not counted).
  const double in_flight = std::max(0.0, inflight_microbatches * offloaded - pinned);
  return pinned + std::min(delta, in_flight);
}

MemoryReport stage_memory(const LayerGraph& graph) {
  const Strategy& st = graph.strategy;
  BytesPerParam bpp = bytes_per_param(st);
  const bool sharded = st.distributed_optimizer || st.shard_weights;
  const int zero = st.effective_zero_stage();
  const bool shard_params = st.shard_weights || (st.fsdp && zero >= 3);
  const bool shard_grads = st.fsdp && zero >= 2;
  double dense_shard = sharded ? static_cast<double>(st.dense_shard_group()) : 1.0;
  double expert_shard = sharded ? static_cast<double>(st.expert_shard_group()) : 1.0;
  // (hybrid FSDP with the outer group's optimizer sharding: the states over every instance as well)
  const double outer =
      st.outer_dp_optim_shard ? static_cast<double>(std::max(1, st.dist_opt_instances)) : 1.0;
  const double opt_dense_shard = dense_shard * outer, opt_expert_shard = expert_shard * outer;
  int m = st.num_microbatches();

  MemoryReport report;
  for (int r = 0; r < st.pp; ++r) {
    StageMemory s;
    s.pp_rank = r;
    auto chunks = graph.stage(r);
    s.first_layer = chunks.front()->first_layer;
    s.overhead_bytes = chunks.front()->overhead_bytes;
    std::vector<double> chunk_act, chunk_largest_layer;
    double fsdp_buffer = 0;
    for (const StageGraph* c : chunks) {
      chunk_largest_layer.push_back(static_cast<double>(c->largest_layer_kept_bytes()));
      s.buffer_bytes = std::max(s.buffer_bytes, static_cast<double>(c->runtime_buffer_bytes));
      s.num_layers += c->num_layers;
      s.params += c->param_numel();
      s.expert_params += c->expert_param_numel();
      s.frozen_params += c->frozen_param_numel(false) + c->frozen_param_numel(true);
      s.frozen_expert_params += c->frozen_param_numel(true);
      if (st.optimizer == Optimizer::Muon)
        for (const Op& op : c->ops)
          for (const ParamTensor& p : op.params)
            if (muon_matrix(op, p)) (p.expert ? s.muon_expert_params : s.muon_params) += p.numel();
      if (st.fsdp) {
        // The unsharded copies of one unit: parameters gathered for the unit computed and the one prefetched
        // (zero 3), its full gradient before the reduce-scatter (zero >= 2).
        const auto [ud, ue] = largest_fsdp_unit(*c);
        const double unit = ud + ue;
        const double gathered = (zero >= 3 ? 2 * unit * bpp.weight : 0) + (zero >= 2 ? unit * bpp.grad : 0);
        fsdp_buffer = std::max(fsdp_buffer, gathered);
      }
      double act = static_cast<double>(c->kept_activation_bytes());
      chunk_act.push_back(act);
      s.activation_bytes_per_microbatch += act;
    }
    double dense = static_cast<double>(s.params - s.expert_params);
    double expert = static_cast<double>(s.expert_params);
    s.weight_bytes = dense * bpp.weight / (shard_params ? dense_shard : 1.0) +
                     expert * bpp.weight / (shard_params ? expert_shard : 1.0);
    // Frozen weights (LoRA) have no gradient and no optimizer state.
    const double train_dense = static_cast<double>(s.trained_dense_params());
    const double train_expert = static_cast<double>(s.trained_expert_params());
    s.grad_bytes = train_dense * bpp.grad / (shard_grads ? dense_shard : 1.0) +
                   train_expert * bpp.grad / (shard_grads ? expert_shard : 1.0);
    s.buffer_bytes += fsdp_buffer;
    // Muon's matrices keep one momentum where the scalar optimizer keeps its states (muon_params = 0
    // otherwise).
    const double dense_muon = static_cast<double>(s.muon_params),
                 expert_muon = static_cast<double>(s.muon_expert_params);
    s.optimizer_bytes =
        ((train_dense - dense_muon) * bpp.optimizer / opt_dense_shard +
         dense_muon * bpp.muon_optimizer / opt_dense_shard +
         (train_expert - expert_muon) * bpp.optimizer / opt_expert_shard +
         expert_muon * bpp.muon_optimizer / opt_expert_shard) *
        (1.0 - st.optimizer_cpu_offload_fraction);  // the host's share (HybridDeviceOptimizer)
    if (st.optimizer == Optimizer::Muon) {
      if (st.muon.layer_wise && !st.muon.param_layout) {
        // Whole parameters per rank: the rank dealt the most.
        const auto [d, e] = ping_pong(graph, r);
        s.optimizer_bytes = (*std::max_element(d.begin(), d.end()) + *std::max_element(e.begin(), e.end())) *
                            (1.0 - st.optimizer_cpu_offload_fraction);
      }
      const MuonStepWork w = muon_newton_schulz(graph, r);
      s.muon_ns_flops = w.ns_flops;
      s.muon_tp_gather_bytes = w.tp_gather_bytes;
    }
    s.optimizer_offloaded = st.offload_optimizer_states;

    if (st.vpp <= 1) {
      // In units of the sequence pipeline when it cuts the micro batches (the graph holds one unit).
      s.inflight_microbatches = st.one_f_one_b_inflight(r);
      s.activation_bytes = s.inflight_microbatches * chunk_act[0];
    } else {
      // Megatron's interleaved warm-up forwards (Strategy::interleaved_warmup: the micro-batch group size per
      // virtual stage, one more with the expert-parallel overlap) and the one that meets the first backward;
      // the k-th forward runs chunk (k mod group·vpp) / group.
      const int group = st.microbatch_group();
      int total = m * st.vpp;
      const int warmup = st.interleaved_warmup(r, total);
      // The expert-parallel overlap's combined 1F1B (its warm-up one forward longer) runs each later forward
      // layer by layer beside a backward that frees layer by layer: about one layer of that forward is alive
      // beside the warm-up's passes (as combined_1f1b_schedule_for_no_pipelining without pipelining), not a
      // whole pass.
      const bool paired = st.overlap_moe_expert_parallel_comm && !st.simumax_compat && warmup < total;
      int inflight = paired ? warmup : std::min(warmup + 1, total);
      auto chunk_of = [&](int k) { return (k % (group * st.vpp)) / group; };
      double act = 0;
      for (int k = 0; k < inflight; ++k) act += chunk_act[chunk_of(k)];
      const int next = chunk_of(inflight);  // the chunk of the paired forward
      const double partial = paired ? chunk_largest_layer[next] : 0.0;
      act += partial;
      s.inflight_microbatches =
          (static_cast<double>(inflight) + (partial > 0 ? partial / chunk_act[next] : 0.0)) / st.vpp;
      s.activation_bytes = act;
    }
    s.activation_bytes += offload_kept_bytes(graph, r, s.inflight_microbatches);
    report.stages.push_back(s);
  }
  for (std::size_t i = 1; i < report.stages.size(); ++i)
    if (report.stages[i].total_bytes() > report.stages[report.peak_stage].total_bytes())
      report.peak_stage = static_cast<int>(i);
  return report;
}

}  // namespace preflight::analyzer
