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

nlohmann::json model_json(const ModelSpec& m, std::int64_t padded_vocab) {
  nlohmann::json j = {{"name", m.name},
                      {"num_layers", m.num_layers},
                      {"hidden_size", m.hidden_size},
                      {"ffn_hidden_size", m.ffn_hidden_size},
                      {"num_attention_heads", m.num_attention_heads},
                      {"num_query_groups", m.num_query_groups},
                      {"kv_channels", m.kv_channels},
                      {"max_position_embeddings", m.max_position_embeddings},
                      {"vocab_size", m.vocab_size},
                      {"padded_vocab_size", padded_vocab},
                      {"activation", to_string(m.activation)},
                      {"add_bias_linear", m.add_bias_linear},
                      {"add_qkv_bias", m.add_qkv_bias},
                      {"normalization", to_string(m.normalization)},
                      {"untie_embeddings_and_output_weights", m.untie_embeddings_and_output_weights},
                      {"position_embedding", to_string(m.position_embedding)},
                      {"attention_dropout", m.attention_dropout},
                      {"hidden_dropout", m.hidden_dropout},
                      {"parameters", count_parameters(m)}};
  if (m.moe.enabled()) {
    j["moe"] = {{"num_experts", m.moe.num_experts},
                {"router_topk", m.moe.router_topk},
                {"ffn_hidden_size", m.moe.ffn_hidden_size},
                {"shared_expert_ffn_hidden_size", m.moe.shared_expert_ffn_hidden_size}};
  }
  if (m.mla.enabled) {
    j["mla"] = {{"q_lora_rank", m.mla.q_lora_rank},
                {"kv_lora_rank", m.mla.kv_lora_rank},
                {"qk_head_dim", m.mla.qk_head_dim},
                {"qk_pos_emb_head_dim", m.mla.qk_pos_emb_head_dim},
                {"v_head_dim", m.mla.v_head_dim}};
  }
  return j;
}

nlohmann::json strategy_json(const Strategy& st) {
  return {{"world_size", st.world_size},
          {"gpus_per_node", st.gpus_per_node},
          {"tp", st.tp},
          {"pp", st.pp},
          {"cp", st.cp},
          {"ep", st.ep},
          {"etp", st.expert_tp()},
          {"dp", st.dp()},
          {"expert_dp", st.expert_dp()},
          {"vpp", st.vpp},
          {"sequence_parallel", st.sequence_parallel},
          {"order", st.order},
          {"seq_length", st.seq_length},
          {"micro_batch_size", st.micro_batch_size},
          {"global_batch_size", st.global_batch()},
          {"num_microbatches", st.num_microbatches()},
          {"precision", to_string(st.precision)},
          {"fp8", st.fp8 != Fp8Format::None},
          {"distributed_optimizer", st.distributed_optimizer},
          {"recompute_granularity", to_string(st.recompute_granularity)},
          {"recompute_method", to_string(st.recompute_method)},
          {"recompute_num_layers", st.recompute_num_layers},
          {"attention_backend", to_string(st.attention_backend)}};
}

nlohmann::json analysis_json(const LayerGraph& graph, const AnalyzeOptions& opts) {
  nlohmann::json j;
  MemoryReport mem = stage_memory(graph);
  j["model"] = model_json(graph.model, graph.padded_vocab);
  j["strategy"] = strategy_json(graph.strategy);
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
