#include "preflight/analyzer/balance/from_cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "preflight/analyzer/balance/simulator.hpp"
#include "preflight/analyzer/cost/estimate.hpp"
#include "preflight/analyzer/model/layer_graph.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer::balance {

namespace {

struct ClassRun {
  cost::Estimate est;
  // Per body kind (0 = dense or the only kind, 1 = MoE after dense): one layer of that kind.
  std::vector<std::optional<cost::LayerEstimate>> layer;
};

LayerRecompute recompute_for(Recompute r, int layers) {
  LayerRecompute rc;
  rc.enabled = r != Recompute::None;
  rc.layers = r == Recompute::None ? 0 : layers;
  rc.scope = r == Recompute::Full     ? RecomputeScope::FullBlock
             : r == Recompute::Select ? RecomputeScope::SdpOnly
                                      : RecomputeScope::None;
  return rc;
}

}  // namespace

CostModelBalanceInput balance_input_from_cost_model(const ModelSpec& model, const Strategy& strategy,
                                                    const SystemSpec& system, const std::string& name) {
  strategy.validate(model);
  CostModelBalanceInput out;
  const int S = strategy.pp, V = std::max(1, strategy.vpp), L = model.num_layers;
  out.pipeline.stages = S;
  out.pipeline.chunks = V;
  out.pipeline.micro_batches = strategy.num_microbatches();
  // The sequence pipeline: the cost model prices one unit (seq / k tokens); the schedule runs m·k of them.
  out.pipeline.seq_split = std::max(1, strategy.seq_split);
  if (out.pipeline.micro_batches < S)
    throw InputError("--strategy", "the 1F1B schedule needs at least as many micro batches (" +
                                       std::to_string(out.pipeline.micro_batches) + ") as pipeline stages (" +
                                       std::to_string(S) + "); raise the global batch");

  // Body kinds in model order: one kind, or dense layers followed by MoE layers.
  std::vector<bool> moe(static_cast<std::size_t>(L));
  for (int i = 0; i < L; ++i) moe[i] = model.is_moe_layer(i);
  int dense_count = 0;
  while (dense_count < L && !moe[dense_count]) ++dense_count;
  for (int i = dense_count; i < L; ++i)
    if (!moe[i])
      throw InputError("--model", "dense layer " + std::to_string(i) +
                                      " after a MoE layer: the balancer needs body kinds in blocks "
                                      "(dense first, then MoE)");
  const bool two_kinds = dense_count > 0 && dense_count < L;
  const int kinds = two_kinds ? 2 : 1;
  auto kind_of = [&](bool is_moe) { return two_kinds && is_moe ? 1 : 0; };

  // The cost model under each recompute class.
  const Recompute classes[] = {Recompute::None, Recompute::Full, Recompute::Select};
  std::vector<ClassRun> runs;
  for (Recompute r : classes) {
    Strategy s = strategy;
    s.layer_recompute = recompute_for(r, L);
    ClassRun run{cost::estimate(model, s, system), std::vector<std::optional<cost::LayerEstimate>>(kinds)};
    // Prefer a layer of a middle chunk (no embedding / loss next to it); any layer of the kind otherwise.
    for (int pass = 0; pass < 2; ++pass)
      for (const auto& ch : run.est.chunks)
        if (pass == 1 || (!ch.embedding && !ch.head))
          for (const auto& le : ch.layers)
            if (!run.layer[kind_of(le.moe)]) run.layer[kind_of(le.moe)] = le;
    for (int k = 0; k < kinds; ++k)
      if (!run.layer[k])
        throw InputError("--model", "the cost model priced no " + std::string(k == 1 ? "MoE" : "dense") +
                                        " layer (cannot build the layer model)");
    runs.push_back(std::move(run));
  }
  const cost::Estimate& base = runs[0].est;

  LayerModel& m = out.model;
  m.name = name;
  for (int k = 0; k < kinds; ++k) {
    BodyKind b;
    b.name = kinds == 1 ? "BODY" : (k == 0 ? "BODY_DENSE" : "BODY_MOE");
    b.count = kinds == 1 ? L : (k == 0 ? dense_count : L - dense_count);
    const cost::LayerEstimate& l0 = *runs[0].layer[k];
    b.forward_ms = l0.times.forward_ms();
    b.param_mb = to_mib(l0.memory.total_bytes());
    PerRecompute<std::optional<double>> explicit_ms{};
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const cost::LayerEstimate& l = *runs[i].layer[k];
      const int ri = static_cast<int>(classes[i]);
      if (classes[i] == Recompute::Full && out.pipeline.seq_split > 1) continue;  // MindFormers forbids it
      // A class that saves nothing is not worth a choice (e.g. select on a model whose core attention
      // keeps nothing extra); none is always there.
      const double a = to_mib(l.activation_cache_bytes);
      if (classes[i] == Recompute::None || a < to_mib(l0.activation_cache_bytes) - 1e-9) {
        b.activation_mb[ri] = std::max(a, 1e-6);
        explicit_ms[ri] = l.times.backward_ms();
      }
    }
    fill_backward_times(b, explicit_ms, {});
    m.bodies.push_back(b);
  }
  for (const auto& ch : base.chunks) {
    if (ch.embedding) m.head_forward_ms = ch.embedding_times.forward_ms();
    if (ch.head) m.tail_forward_ms = ch.head_times.forward_ms();
  }

  // The strategy's own layout (Megatron's split, vpp chunks evenly), every layer without recompute.
  const std::vector<int> per_stage = strategy.layers_per_stage(L);
  BalanceProblem p;
  p.pipeline = out.pipeline;
  p.model = m;
  p.memory_limit_mb = 1e18;
  Assignment a(kinds, V, S);
  {
    std::vector<int> chunk_layers(static_cast<std::size_t>(V * S));
    for (int s = 0; s < S; ++s)
      for (int v = 0; v < V; ++v) chunk_layers[v * S + s] = per_stage[s] / V + (v < per_stage[s] % V ? 1 : 0);
    int layer = 0;
    for (int v = 0; v < V; ++v)
      for (int s = 0; s < S; ++s)
        for (int i = 0; i < chunk_layers[v * S + s]; ++i, ++layer)
          a.at(kind_of(moe[layer]), Recompute::None, v, s) += 1;
  }
  const ScheduleGraph graph(p.pipeline);
  const SimulationResult sim = simulate(graph, chunk_costs(p, a));

  // Cost-model peaks per pipeline rank (the middle stage stands for 1…S-2).
  auto peaks_of = [&](const cost::Estimate& e) {
    std::vector<double> peak(static_cast<std::size_t>(S), 0.0);
    const cost::StageEstimate* middle = nullptr;
    for (const auto& st : e.stages) {
      if (st.pp_rank >= 0 && st.pp_rank < S) peak[st.pp_rank] = to_mib(st.peak_bytes);
      if (st.key == "middle_stage") middle = &st;
    }
    if (middle)
      for (int s = 1; s + 1 < S; ++s) peak[s] = to_mib(middle->peak_bytes);
    return peak;
  };
  const std::vector<double> peak = peaks_of(base);
  const int mid = S >= 3 ? 1 : -1;
  m.const_mb = mid >= 0 ? peak[mid] - sim.peak_mb[mid] : 0.0;
  // Stage 0 holds c + (H - c) + its layers (ConstantMemory::Once): H includes c, as SAPP's fit.
  m.head_mb = peak[0] - sim.peak_mb[0];
  m.tail_mb = S == 1 ? 0.0 : peak[S - 1] - sim.peak_mb[S - 1];

  // The strategy as given (its own recompute), for the report.
  const cost::Estimate given = cost::estimate(model, strategy, system);
  out.strategy_peak_mb = peaks_of(given);
  out.strategy_iteration_ms = given.iteration_ms;
  out.device_limit_mb = given.device_memory_gib * 1024.0 * strategy.allocated_to_reserved_ratio;
  out.notes.push_back("layer model from the cost model (" + std::to_string(kinds) +
                      " body kind(s)); classes: none, full (whole layer), select (core attention); "
                      "comm/both have no Megatron counterpart");
  if (m.const_mb < 0)
    out.notes.push_back("the cost model's middle stage peaks below the layers' memory: constant " +
                        std::to_string(static_cast<long long>(std::llround(m.const_mb))) + " MiB");
  return out;
}

CostModelBalanceInput balance_input_from_mindformers(const ModelSpec& model, const Strategy& yaml_strategy,
                                                     const SystemSpec& system, const std::string& name) {
  const int S = yaml_strategy.pp, V = std::max(1, yaml_strategy.vpp), L = model.num_layers;
  Strategy plain = yaml_strategy;
  plain.per_layer_recompute.clear();
  if (L % (S * V) == 0) plain.chunk_layout.clear();
  CostModelBalanceInput out = balance_input_from_cost_model(model, plain, system, name);

  // Kept bytes of one layer of each kind under a recompute choice applied to every layer.
  auto layer_bytes = [&](const Strategy::LayerRecomputeChoice& choice, int layer) {
    Strategy s = plain;
    s.per_layer_recompute.assign(static_cast<std::size_t>(L), choice);
    const LayerGraph g = build_layer_graph(model, s);
    double bytes = 0;
    for (const auto& ch : g.chunks)
      for (const auto& op : ch.ops)
        if (op.layer == layer) bytes += static_cast<double>(op.kept_bytes);
    return bytes;
  };
  Strategy::LayerRecomputeChoice none, select, comm, both;
  select.modules = {"mlp_act"};
  comm.modules = {"layernorm"};
  both.modules = {"layernorm", "mlp_act"};
  for (std::size_t k = 0; k < out.model.bodies.size(); ++k) {
    BodyKind& b = out.model.bodies[k];
    // A layer of this kind (kind 1 = MoE after the dense ones).
    int layer = 0;
    if (out.model.bodies.size() > 1)
      while (layer < L && model.is_moe_layer(layer) != (k == 1)) ++layer;
    const double base = layer_bytes(none, layer);
    const double a_none = b.activation(Recompute::None);
    PerRecompute<std::optional<double>> explicit_ms{};
    explicit_ms[static_cast<int>(Recompute::None)] = b.backward(Recompute::None);
    if (b.considered(Recompute::Full)) explicit_ms[static_cast<int>(Recompute::Full)] = b.backward(Recompute::Full);
    b.activation_mb[static_cast<int>(Recompute::Select)].reset();
    const std::pair<Recompute, const Strategy::LayerRecomputeChoice*> classes[] = {
        {Recompute::Select, &select}, {Recompute::Comm, &comm}, {Recompute::Both, &both}};
    for (const auto& [r, choice] : classes) {
      const double bytes = layer_bytes(*choice, layer);
      if (base > 0 && bytes < base) b.activation_mb[static_cast<int>(r)] = std::max(a_none * bytes / base, 1e-6);
    }
    fill_backward_times(b, explicit_ms, {});
  }
  out.notes.erase(std::remove_if(out.notes.begin(), out.notes.end(),
                                 [](const std::string& n) { return n.find("no Megatron counterpart") != std::string::npos; }),
                  out.notes.end());
  out.notes.push_back(
      "MindFormers classes: select = MLP activation (select_recompute), comm = norms (select_comm_recompute), "
      "both, full; select/comm/both activations scaled from the cost model's by the layer graph, their "
      "backward times from SAPP's default coefficients");
  return out;
}

}  // namespace preflight::analyzer::balance
