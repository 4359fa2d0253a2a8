#include "preflight/analyzer/report.hpp"

#include <nlohmann/json.hpp>

#include "preflight/analyzer/memory.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer {

namespace {
std::string gib(double bytes) { return fixed(to_gib(bytes), 2); }
}  // namespace

std::string render_analysis_text(const LayerGraph& graph, const AnalyzeOptions& opts) {
  const Strategy& st = graph.strategy;
  const ModelSpec& m = graph.model;
  std::string out;
  out += "model: " + m.name + ", " + std::to_string(m.num_layers) + " layers, hidden " +
         std::to_string(m.hidden_size) + ", " + human_count(static_cast<double>(count_parameters(m))) +
         " parameters\n";
  out += "layout: world " + std::to_string(st.world_size) + " = tp " + std::to_string(st.tp) + " × pp " +
         std::to_string(st.pp) + " × cp " + std::to_string(st.cp) + " × dp " + std::to_string(st.dp()) + "\n";
  for (const auto& w : opts.warnings) out += "note: " + w + "\n";
  MemoryReport mem = stage_memory(graph);
  TextTable t;
  using A = TextTable::Align;
  t.column("stage").column("layers", A::Right).column("params", A::Right).column("weights GiB", A::Right);
  t.column("grads GiB", A::Right).column("optimizer GiB", A::Right).column("act/mb GiB", A::Right);
  t.column("in flight", A::Right).column("activations GiB", A::Right).column("total GiB", A::Right);
  for (const auto& s : mem.stages) {
    t.row({std::to_string(s.pp_rank) + (s.pp_rank == mem.peak_stage ? " *" : ""), std::to_string(s.num_layers),
           with_commas(s.params), gib(s.weight_bytes), gib(s.grad_bytes), gib(s.optimizer_bytes),
           gib(s.activation_bytes_per_microbatch), fixed(s.inflight_microbatches, 2), gib(s.activation_bytes),
           gib(s.total_bytes())});
  }
  out += "\nMemory per GPU by pipeline stage (* = largest)\n" + t.render();
  return out;
}

nlohmann::json analysis_json(const LayerGraph& graph, const AnalyzeOptions& opts) {
  nlohmann::json j;
  MemoryReport mem = stage_memory(graph);
  j["warnings"] = opts.warnings;
  for (const auto& s : mem.stages) {
    j["memory"]["stages"].push_back({{"stage", s.pp_rank},
                                     {"layers", s.num_layers},
                                     {"params", s.params},
                                     {"weight_bytes", s.weight_bytes},
                                     {"grad_bytes", s.grad_bytes},
                                     {"optimizer_bytes", s.optimizer_bytes},
                                     {"activation_bytes_per_microbatch", s.activation_bytes_per_microbatch},
                                     {"inflight_microbatches", s.inflight_microbatches},
                                     {"activation_bytes", s.activation_bytes},
                                     {"total_bytes", s.total_bytes()}});
  }
  j["memory"]["peak_stage"] = mem.peak_stage;
  return j;
}

bool analysis_fits(const LayerGraph& graph, const AnalyzeOptions& opts) {
  if (!opts.device_memory_gib) return true;
  MemoryReport mem = stage_memory(graph);
  return mem.stages[mem.peak_stage].total_bytes() <= *opts.device_memory_gib * kGiB;
}

}  // namespace preflight::analyzer
