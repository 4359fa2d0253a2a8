// SimuMax-format results and the human summary.  See report.hpp.
#include "preflight/analyzer/cost/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "preflight/analyzer/cost/fidelity.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer::cost {

using ojson = nlohmann::ordered_json;

namespace {

/// summary_json's "published_runs": the class, and its runs on the preset (null when none / a file).
ojson published_check_json(const Estimate& est) {
  const PublishedCheck c = published_check(est.system_preset, time_run_class(est.model, est.strategy));
  ojson same = nullptr;
  if (c.same) {
    same = ojson{{"runs", c.same->runs},
                 {"min_error", c.same->min_error},
                 {"max_error", c.same->max_error},
                 {"median_error", c.same->median_error},
                 {"within_5pct", c.same->within_5pct},
                 {"corpora", c.same->corpora}};
  }
  ojson others = ojson::object();
  for (const auto& r : c.others)
    others[r.run_class] = ojson{{"runs", r.runs}, {"min_error", r.min_error}, {"max_error", r.max_error}};
  return ojson{{"preset", c.preset.empty() ? ojson(nullptr) : ojson(c.preset)},
               {"run_class", c.run_class},
               {"same_class", same},
               {"other_classes", others}};
}

std::string human(double v, double base, std::initializer_list<const char*> units) {
  std::vector<const char*> u(units);
  std::size_t i = 0;
  while (v >= base && i + 1 < u.size()) {
    v /= base;
    ++i;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f %s", v, u[i]);
  return buf;
}

/// Python repr of a float (shortest round-trip).
std::string py_float(double v) {
  char buf[64];
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string billions(double n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2fB", n / 1e9);
  return buf;
}

ojson memory_detail(const ModelMemory& m) {
  ojson shapes = ojson::array();
  for (const auto& s : m.te_dummy_wgrad_shapes) shapes.push_back({s[0], s[1], s[2]});
  return ojson{{"dense",
                {{"all_mem", simumax_bytes(m.dense_bytes())},
                 {"detail",
                  {{"weight_bytes", simumax_bytes(m.dense_weight_bytes)},
                   {"grad_bytes", simumax_bytes(m.dense_grad_bytes)},
                   {"state_bytes", simumax_bytes(m.dense_state_bytes)}}}}},
               {"moe",
                {{"all_mem", simumax_bytes(m.moe_bytes())},
                 {"detail",
                  {{"weight_bytes", simumax_bytes(m.moe_weight_bytes)},
                   {"grad_bytes", simumax_bytes(m.moe_grad_bytes)},
                   {"state_bytes", simumax_bytes(m.moe_state_bytes)}}}}},
               {"te_dummy_wgrad",
                {{"all_mem", simumax_bytes(m.te_dummy_wgrad_bytes)},
                 {"detail",
                  {{"dummy_wgrad_bytes", simumax_bytes(m.te_dummy_wgrad_bytes)},
                   {"shape_count", m.te_dummy_wgrad_shapes.size()},
                   {"shapes", shapes}}}}}};
}

ojson parallel_config(const Estimate& est, int actual_layers) {
  ojson granularity = nullptr;
  if (est.recompute.scope != RecomputeScope::None) granularity = to_string(est.recompute.scope);
  return ojson{{"parallelism", parallelism_text(est.strategy)},
               {"fp8", est.strategy.fp8 != Fp8Format::None},
               {"recompute_status",
                {{"layer_num", est.model.num_layers},
                 {"actual_layer_num", actual_layers},
                 {"recompute_layer", est.recompute.layers},
                 {"recompute_recompute_granularity", granularity}}}};
}

ojson stage_mem(const Estimate& est, const StageEstimate& s) {
  ojson o;
  o["micro_batch_num"] = est.micro_batches;
  o["micro_batch_size"] = est.strategy.micro_batch_size;
  bool vpp = est.strategy.vpp > 1;
  int actual = 0;
  if (vpp)
    for (int ci : s.chunks) actual += est.chunks[ci].num_layers;
  else
    actual = est.chunks[0].num_layers;
  if (!vpp) o["cached_micro_batch_num"] = s.cached_micro_batches;
  o["parallel_config"] = parallel_config(est, actual);
  if (vpp) {
    int kind = s.pp_rank == 0 ? 0 : (s.pp_rank == est.strategy.pp - 1 ? 2 : 1);
    o["memory_schedule"] = "sync_vpp_schedule";
    o["stage_type"] =
        kind == 0 ? "first_stage_chunk" : (kind == 2 ? "last_stage_chunk" : "middle_stage_chunk");
    o["stage_rank"] = s.pp_rank;
  }
  o["model_mem"] = simumax_bytes(s.memory.total_bytes());
  o["model_mem_detail"] = memory_detail(s.memory);
  o["fwd_activation_cache_per_micro_batch"] = s.activation_cache_text;
  if (vpp) o["cached_micro_batch_num"] = s.cached_micro_batches;
  o["peak_activation_mem_in_1F1B"] = simumax_bytes(s.activation_peak_bytes);
  o["peak_mem"] = simumax_bytes(s.peak_bytes);
  o["peak_mem_with_reserved"] = simumax_bytes(s.peak_with_reserved_bytes);
  o["memory_reserved_ratio"] = py_float(est.strategy.allocated_to_reserved_ratio);
  o["peak_path"] = s.peak_path;
  return o;
}

const StageEstimate* stage_for_chunk(const Estimate& est, int chunk) {
  for (const auto& s : est.stages)
    if (s.physical_chunk == chunk) return &s;
  return nullptr;
}

ojson dp_group(const DpComm::Group& g) {
  ojson o{{"dp_comm_time", simumax_time(g.time_ms)},
          {"dp_comm_exposed_time", simumax_time(g.time_ms)},
          {"dp_comm_rs_size", g.rs_bytes},
          {"dp_comm_ag_size", g.ag_bytes},
          {"dp_comm_num_gather", g.num_gather}};
  if (g.sharded)
    o["details"] = {{"reduce_scatter_time", simumax_time(g.reduce_scatter_ms)},
                    {"all_gather_time", simumax_time(g.all_gather_ms)}};
  return o;
}

struct StageCost {
  ojson comm, compute, breakdown;
};

StageCost stage_cost(const Estimate& est, const ChunkEstimate& ch, const DpComm& dp,
                     const OptimizerTime& opt) {
  const PassTimes& t = ch.times;
  const PassWork& w = ch.work;
  bool rc_on = est.recompute.enabled;
  double mbc = est.micro_batches;
  StageCost out;
  double intra = t.fwd_net_ms + t.bwd_net_ms() + t.recompute_net_ms;
  double inter = est.strategy.pp > 1 ? ch.fwd_recv_ms + ch.fwd_send_ms + ch.bwd_recv_ms + ch.bwd_send_ms : 0;
  out.comm = ojson{{"dp_comm_time",
                    {{"dp_comm_exposed_time", simumax_time(dp.exposed_ms())},
                     {"dense", dp_group(dp.dense)},
                     {"moe", dp_group(dp.moe)}}},
                   {"intra_comm_time",
                    {{"intra_exposed_time_per_batch", simumax_time(intra)},
                     {"intra_exposed_time", simumax_time(intra * mbc)}}},
                   {"inter_comm_time",
                    {{"inter_exposed_time_per_batch", simumax_time(inter)},
                     {"inter_exposed_time", simumax_time(inter * mbc)}}}};
  if (dp.embedding_sync_ms > 0)
    out.comm["dp_comm_time"]["embedding_grad_all_reduce"] = simumax_time(dp.embedding_sync_ms);
  double recompute_time = rc_on ? t.recompute_compute_ms : 0;
  ojson batch{{"compute_info",
               {{"fwd_flops", simumax_flops(w.fwd_flops)},
                {"recompute_flops", simumax_flops(rc_on ? w.recompute_flops : 0)},
                {"bwd_flops", simumax_flops(w.bwd_flops)},
                {"fwd_accessed_mem", simumax_bytes(w.fwd_bytes)},
                {"recompute_accessed_mem", simumax_bytes(rc_on ? w.recompute_bytes : 0)},
                {"bwd_accessed_mem", simumax_bytes(w.bwd_bytes)}}},
              {"cost_info",
               {{"fwd_compute_time", simumax_time(t.fwd_compute_ms)},
                {"bwd_compute_time", simumax_time(t.bwd_compute_ms())},
                {"recompute_compute_time", simumax_time(t.recompute_compute_ms)},
                {"fwd_net_time", simumax_time(t.fwd_net_ms)},
                {"bwd_net_time", simumax_time(t.bwd_net_ms())},
                {"recompute_net_time", simumax_time(t.recompute_net_ms)},
                {"fwd_net_exposed_time", simumax_time(0)},
                {"bwd_net_exposed_time", simumax_time(0)},
                {"recompute_net_exposed_time", simumax_time(0)},
                {"fwd_time", simumax_time(t.fwd_compute_ms)},
                {"bwd_time", simumax_time(t.bwd_compute_ms())},
                {"recompute_time", simumax_time(recompute_time)}}}};
  ojson optim{{"optim_time", simumax_time(opt.total_ms())},
              {"optim_exposed_time", simumax_time(opt.total_ms())},
              {"zero_grad_buffer_time", simumax_time(opt.zero_grad_buffer_ms)},
              {"l2_norm_before_reduce_time", simumax_time(opt.l2_norm_before_reduce_ms)},
              {"mul_before_reduce_time", simumax_time(opt.mul_before_reduce_ms)},
              {"l2_norm_after_reduce_time", simumax_time(opt.l2_norm_after_reduce_ms)},
              {"grads_clip_after_reduce_time", simumax_time(opt.grads_clip_after_reduce_ms)},
              {"adam_time", simumax_time(opt.adam_ms)},
              {"copy_main_params_to_model_params_time", simumax_time(opt.copy_main_params_ms)}};
  if (opt.muon_newton_schulz_ms > 0 || opt.muon_tp_gather_ms > 0) {
    optim["muon_newton_schulz_time"] = simumax_time(opt.muon_newton_schulz_ms);
    optim["muon_tp_gather_time"] = simumax_time(opt.muon_tp_gather_ms);
  }
  double fwd_flops = w.fwd_flops * mbc, bwd_flops = w.bwd_flops * mbc;
  out.compute = ojson{{"batch_compute_stat", batch},
                      {"fwd_compute_time", simumax_time(t.fwd_compute_ms * mbc)},
                      {"recompute_time", simumax_time(t.recompute_compute_ms * mbc)},
                      {"bwd_compute_time", simumax_time(t.bwd_compute_ms() * mbc)},
                      {"optim_time", optim},
                      {"fwd_flops", simumax_flops(fwd_flops)},
                      {"recompute_flops", simumax_flops((rc_on ? w.recompute_flops : 0) * mbc)},
                      {"bwd_flops", simumax_flops(bwd_flops)},
                      {"model_flops", simumax_flops(fwd_flops + bwd_flops)}};
  out.breakdown = ojson{{"fwd_compute_time", simumax_time(t.fwd_compute_ms * mbc)},
                        {"recompute_time", simumax_time(t.recompute_compute_ms * mbc)},
                        {"bwd_compute_time", simumax_time(t.bwd_compute_ms() * mbc)},
                        {"optim_time", simumax_time(opt.total_ms())},
                        {"intra_exposed_time", simumax_time(intra * mbc)},
                        {"inter_exposed_time", simumax_time(inter * mbc)},
                        {"dp_exposed_time", simumax_time(dp.exposed_ms())}};
  return out;
}

}  // namespace

std::string simumax_time(double ms) {
  return human(ms, 1000, {"ms", "s"});
}
std::string simumax_bytes(double bytes) {
  return human(bytes, 1024, {"B", "KB", "MB", "GB", "TB"});
}
std::string simumax_flops(double flops) {
  return human(flops, 1000, {"", "K", "M", "B", "T"});
}

std::string parallelism_text(const Strategy& st) {
  int etp = st.expert_tp();
  int edp = st.world_size / (st.ep * etp * st.pp);
  std::string sp = st.sequence_parallel ? "sp" + std::to_string(st.tp) + "." : "";
  return "seq" + std::to_string(st.seq_length) + ".mbs" + std::to_string(st.micro_batch_size) + ".mbc" +
         std::to_string(st.num_microbatches()) + ".gbs" + std::to_string(st.global_batch()) + " tp" +
         std::to_string(st.tp) + "." + sp + "cp" + std::to_string(st.cp) + ".ep" + std::to_string(st.ep) +
         ".pp" + std::to_string(st.pp) + ".dp" + std::to_string(st.dp()) + ".etp" + std::to_string(etp) +
         ".edp" + std::to_string(edp) + ", world_size:" + std::to_string(st.world_size);
}

std::string recompute_status_text(const LayerRecompute& rc) {
  bool on = rc.enabled && rc.layers > 0 && rc.scope != RecomputeScope::None;
  if (on && rc.scope == RecomputeScope::Selective && rc.megatron_modules.empty() &&
      !(rc.attn || rc.attn_norm || rc.mlp || rc.mlp_norm))
    on = false;
  if (!on) return "No Recompute";
  std::string base = std::string(to_string(rc.scope)) + ", recompute_layer_num=" + std::to_string(rc.layers);
  if (rc.scope != RecomputeScope::Selective) return base;
  if (!rc.megatron_modules.empty()) {
    std::vector<std::string> m = rc.megatron_modules;
    std::sort(m.begin(), m.end());
    std::string list;
    for (const auto& s : m) list += (list.empty() ? "" : ",") + s;
    return base + ", megatron_recompute=True, modules=[" + list + "]";
  }
  auto b = [](bool v) { return v ? "True" : "False"; };
  return base + ", attn=" + b(rc.attn) + ", attn_rms=" + b(rc.attn_norm) + ", mlp=" + b(rc.mlp) +
         ", mlp_rms=" + b(rc.mlp_norm) + ", recompute_variance=" + b(rc.variance);
}

ojson mem_result_json(const Estimate& est) {
  if (est.strategy.pp == 1) return stage_mem(est, est.stages.front());
  ojson o;
  for (const auto& s : est.stages) o[s.key] = stage_mem(est, s);
  return o;
}

ojson compute_result_json(const Estimate& est) {
  const Strategy& st = est.strategy;
  int pp = st.pp;
  const ChunkEstimate& first = est.chunks[0];
  auto find_chunk = [&](const char* name) -> const ChunkEstimate* {
    for (const auto& c : est.chunks)
      if (c.name == name) return &c;
    return nullptr;
  };
  const ChunkEstimate* middle = find_chunk("middle_stage_chunk");
  const ChunkEstimate* last = find_chunk("last_stage_chunk");
  auto costs_of = [&](const ChunkEstimate& ch, int idx) {
    const StageEstimate* s = stage_for_chunk(est, idx);
    return stage_cost(est, ch, s->dp, s->optimizer);
  };
  ojson o;
  StageCost c_first = costs_of(first, 0);
  if (pp > 1)
    o["breakdown_result_last_stage"] = costs_of(*last, static_cast<int>(last - est.chunks.data())).breakdown;
  o["comm_details"] = c_first.comm;
  o["compute_details"] = c_first.compute;
  o["breakdown_result"] = c_first.breakdown;
  o["all_tokens_per_iter"] = est.tokens_per_iteration;
  o["straggle_ratio"] = est.straggler_ratio;
  double t_pp = est.pipeline_ms * est.straggler_ratio;
  double mbc = est.micro_batches;
  ojson chunk_times;
  auto chunk_entry = [&](const ChunkEstimate& ch) {
    const StageEstimate* s = stage_for_chunk(est, static_cast<int>(&ch - est.chunks.data()));
    double dp_opt = s->dp.exposed_ms() + s->optimizer.total_ms();
    return ojson{{"duration_time(chunk_timexmbc+dp_optim+bubble)", simumax_time(t_pp + dp_opt)},
                 {"chunk_time(fwd+bwd)", simumax_time(ch.chunk_ms())},
                 {"dp_and_optim_time", simumax_time(dp_opt)},
                 {"bubble_time", simumax_time(est.pipeline_ms - mbc * ch.chunk_ms())},
                 {"straggler_time", simumax_time(t_pp * (est.straggler_ratio - 1) / est.straggler_ratio)}};
  };
  chunk_times["first_stage_chunk"] = chunk_entry(first);
  if (middle) chunk_times["middle_stage_chunk"] = chunk_entry(*middle);
  if (last) chunk_times["last_stage_chunk"] = chunk_entry(*last);
  o["all_chunk_times"] = chunk_times;
  o["duration_time_per_iter"] = simumax_time(est.iteration_ms);
  o["throughput_per_accelerator"] = est.tokens_per_second_per_gpu;
  o["throughput per GPU (TFLOP/s/GPU)"] = est.tflops_per_gpu;
  double seconds = est.iteration_ms / 1000.0;
  o["throughput per GPU per token (TFLOP/s/GPU/token)"] = est.flops_per_token / seconds / 1e12;
  o["mfu_6nd_with_attn"] = est.mfu;
  o["mfu"] = est.mfu;
  o["moe_param_numel"] = billions(est.moe_params);
  double mbc_flops = (first.work.fwd_flops + first.work.bwd_flops) * mbc;
  o["flops_info"] = {{"theory_flops", simumax_flops(est.theory_flops)},
                     {"model_flops", simumax_flops(mbc_flops)}};
  ojson params{{"dense", billions(est.dense_params)},
               {"moe", billions(est.moe_params)},
               {"all", billions(est.dense_params + est.moe_params)}};
  if (est.model.moe.enabled()) {
    double act = est.dense_params + est.moe_params * (static_cast<double>(est.model.moe.router_topk) /
                                                      est.model.moe.num_experts);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f%%", act / (est.dense_params + est.moe_params) * 100);
    params["activations"] = billions(act);
    params["activations_ratio"] = buf;
  } else {
    params["activations"] = params["all"];
    params["activations_ratio"] = "100.00%";
  }
  o["param_numel_info"] = params;
  return o;
}

ojson summary_json(const Estimate& est) {
  ojson stages = ojson::array();
  for (const auto& s : est.stages) {
    stages.push_back({{"stage", s.key},
                      {"pp_rank", s.pp_rank},
                      {"model_bytes", s.model_bytes},
                      {"activation_cache_bytes_per_micro_batch", s.activation_cache_bytes},
                      {"cached_micro_batches", s.cached_micro_batches},
                      {"activation_peak_bytes", s.activation_peak_bytes},
                      {"peak_bytes", s.peak_bytes},
                      {"peak_with_reserved_bytes", s.peak_with_reserved_bytes},
                      {"peak_path", s.peak_path},
                      {"dp_ms", s.dp.exposed_ms()},
                      {"optimizer_ms", s.optimizer.total_ms()},
                      {"duration_ms", s.duration_ms}});
  }
  ojson w = ojson::array();
  for (const auto& x : est.warnings) w.push_back(x);
  return ojson{
      {"model", est.model.name},
      {"system", est.system_name},
      {"parallelism", parallelism_text(est.strategy)},
      {"recompute", recompute_status_text(est.recompute)},
      {"memory_model", est.memory_model},
      {"fp8", to_string(est.strategy.fp8)},
      {"fp4", est.strategy.fp4()},
      {"fp8_recipe", to_string(est.strategy.fp8_recipe)},
      {"moe_token_dispatcher", to_string(est.strategy.moe_dispatcher)},
      {"expert_parallel_overlap",
       est.strategy.overlap_moe_expert_parallel_comm && !est.strategy.simumax_compat},
      {"shared_expert_overlap", est.strategy.moe_shared_expert_overlap && !est.strategy.simumax_compat},
      {"experts_cuda_graph", est.strategy.moe_experts_cuda_graph && !est.strategy.simumax_compat},
      {"lora_rank", est.model.lora.rank},  // 0: not a LoRA fine-tuning
      {"moe_load_imbalance", moe_busiest_rank_factor(est.model.moe, est.strategy)},  // 1: balanced
      {"packed_seq_mean_length", est.strategy.packed_seq_mean_length},               // 0: unpacked rows
      {"precision_overrides",
       est.strategy.precision_overrides.size()},  // --te-precision-config-file matchers
      {"allocated_to_reserved_ratio", est.strategy.allocated_to_reserved_ratio},
      {"stages", stages},
      {"device_memory_bytes", est.device_memory_gib * 1024.0 * 1024.0 * 1024.0},
      {"memory_verdict", memory_verdict_name(est.memory_verdict())},
      {"iteration_ms", est.iteration_ms},
      {"pipeline_ms", est.pipeline_ms},
      {"straggler_ratio", est.straggler_ratio},
      {"mfu", est.mfu},
      {"tflops_per_gpu", est.tflops_per_gpu},
      {"tokens_per_second_per_gpu", est.tokens_per_second_per_gpu},
      {"networks",
       {{"tp", est.networks.tp},
        {"cp", est.networks.cp},
        {"pp", est.networks.pp},
        {"dp", est.networks.dp},
        {"ep", est.networks.ep},
        {"etp", est.networks.etp},
        {"edp", est.networks.edp}}},
      {"published_runs", est.strategy.simumax_compat ? ojson(nullptr) : published_check_json(est)},
      {"warnings", w}};
}

std::string summary_text(const Estimate& est) {
  const Strategy& st = est.strategy;
  // SimuMax's parallelism string has no interleaving: the virtual stages per rank follow it.
  std::string out = est.model.name + " on " + est.system_name + ": " + parallelism_text(st) +
                    (st.vpp > 1 ? ", " + std::to_string(st.vpp) + " virtual stages per rank" : "") + "\n";
  out += "recompute: " + recompute_status_text(est.recompute) + "\n";
  if (const LoraSpec& lora = est.model.lora; lora.enabled()) {
    std::string targets;
    for (const auto& name : lora.targets()) targets += (targets.empty() ? "" : ", ") + name;
    out += "fine-tuning: LoRA of rank " + std::to_string(lora.rank) + " on " + targets +
           " (every other weight frozen: no gradient, optimizer state or weight-gradient GEMM)\n";
  }
  if (st.seq_split > 1)
    out += "sequence pipeline: each micro batch in " + std::to_string(st.seq_split) + " units of " +
           std::to_string(st.seq_length / st.seq_split) + " tokens, " + std::to_string(est.micro_batches) +
           " per iteration; act/mb and cached mb below count units\n";
  if (st.fp8 != Fp8Format::None)
    out += std::string("precision: ") + to_string(st.precision) + " with " + (st.fp4() ? "fp4" : "fp8") +
           " GEMMs (" + to_string(st.fp8) + " format, " + to_string(st.fp8_recipe) + " scaling" +
           (st.simumax_compat                   ? ""
            : st.fp4()                          ? ": GEMMs at the system's nvfp4_gemm_scale"
            : st.fp8_recipe == Fp8Recipe::Mxfp8 ? ": GEMMs at the system's mxfp8_gemm_scale"
                                                : "") +
           ")\n";
  if (est.model.moe.enabled() && st.ep > 1) {
    const char* note = st.moe_dispatcher == MoeDispatcher::AllGather ? " (Megatron's default)"
                       : st.moe_dispatcher == MoeDispatcher::Flex    ? " (DeepEP / HybridEP)"
                                                                     : "";
    out += std::string("expert parallel: ") + to_string(st.moe_dispatcher) + note +
           " token dispatcher, exchanges " +
           (st.simumax_compat                     ? "exposed"
            : st.overlap_moe_expert_parallel_comm ? "overlapped with another micro batch's compute"
            : st.moe_shared_expert_overlap        ? "beside the shared expert's compute (the rest exposed)"
                                                  : "exposed") +
           "\n";
    if (const double imb = moe_busiest_rank_factor(est.model.moe, st); imb > 1) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3g", imb);
      out += std::string("routing: the busiest ep rank priced, ") + buf +
             " × the mean routed tokens (--moe-load-imbalance; its experts, exchanges and activations; MFU "
             "counts the mean)\n";
    }
  }
  if (st.packed_seq_mean_length > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", st.packed_seq_mean_length);
    out +=
        std::string("packed sequences: samples of ") + buf +
        " tokens on average in each row, attention priced within each (--packed-seq-mean-length; MFU counts "
        "the row)\n";
  }
  if (est.model.moe.enabled() && st.moe_experts_cuda_graph && !st.simumax_compat)
    out +=
        "CUDA graph: the routed experts captured (no tokens-per-expert copy to the host, no launch per local "
        "expert: the system's moe_host_us_per_expert not paid)\n";
  out += "\n";
  TextTable t;
  t.column("stage")
      .column("model GiB", TextTable::Align::Right)
      .column("act/mb GiB", TextTable::Align::Right);
  t.column("cached mb", TextTable::Align::Right).column("act peak GiB", TextTable::Align::Right);
  t.column("peak GiB", TextTable::Align::Right).column("reserved GiB", TextTable::Align::Right);
  t.column("time s", TextTable::Align::Right);
  for (const auto& s : est.stages) {
    t.row({s.key, fixed(to_gib(s.model_bytes), 2), fixed(to_gib(s.activation_cache_bytes), 2),
           std::to_string(s.cached_micro_batches), fixed(to_gib(s.activation_peak_bytes), 2),
           fixed(to_gib(s.peak_bytes), 2), fixed(to_gib(s.peak_with_reserved_bytes), 2),
           fixed(s.duration_ms / 1000.0, 3)});
  }
  out += t.render();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\niteration %.4f s  (pipeline %.4f s × straggler %.4f)\nMFU %.4f (of the %.0f TFLOP/s "
                "16-bit peak)   %.2f TFLOP/s/GPU   %.1f tokens/s/GPU\n",
                est.iteration_ms / 1000.0, est.pipeline_ms / 1000.0, est.straggler_ratio, est.mfu,
                est.peak_tflops, est.tflops_per_gpu, est.tokens_per_second_per_gpu);
  out += buf;
  std::snprintf(buf, sizeof buf, "device memory %.1f GiB; highest peak with reserved %.2f GiB\n",
                est.device_memory_gib, to_gib(est.max_peak_bytes(true)));
  out += buf;
  out += est.memory_model == "megatron"
             ? "memory: the layer graph walked op by op along the pipeline schedule, as `preflight analyze` "
               "prints it; model = weights + grads + "
               "optimizer + buffers; reserved = peak / " +
                   fixed(est.strategy.allocated_to_reserved_ratio, 2) + "\n"
             : "memory: SimuMax v1.2's model; reserved = peak / " +
                   fixed(est.strategy.allocated_to_reserved_ratio, 2) + "\n";
  out +=
      est.strategy.simumax_compat
          ? "published runs: the ranges of published runs are the default model's, not SimuMax v1.2's "
            "(--simumax-compat)\n"
          : published_check_text(published_check(est.system_preset, time_run_class(est.model, est.strategy)));
  out += "networks: tp " + est.networks.tp + ", cp " + est.networks.cp + ", pp " + est.networks.pp + ", dp " +
         est.networks.dp + ", ep " + est.networks.ep + ", etp " + est.networks.etp + ", edp " +
         est.networks.edp + "\n";
  return out;
}

std::string layer_ops_text(const Estimate& est) {
  std::string out;
  for (const auto& lo : est.layer_ops) {
    PassTimes total;
    PassWork work;
    for (const auto& op : lo.ops) {
      total += op.times;
      work += op.work;
    }
    const double layer_ms = total.forward_ms() + total.backward_ms();
    const std::string what =
        lo.layer == -1 ? std::string("embedding")
        : lo.layer == -2
            ? std::string("head")
            : std::string(est.model.layer_symbol(lo.layer) == 'M'   ? "Mamba"
                          : est.model.layer_symbol(lo.layer) == 'G' ? "gated delta net"
                          : est.model.layer_symbol(lo.layer) == '*' ? "attention"
                          : est.model.layer_symbol(lo.layer) == '-' ? "MLP"
                          : lo.moe                                  ? "MoE"
                                                                    : "dense") +
                  (est.model.is_gdn_layer(lo.layer) && !est.model.hybrid() ? " (gated delta net)" : "") +
                  " layer " + std::to_string(lo.layer);
    out += what + " (" + lo.chunk + ")" + (lo.recompute ? ", recomputed" : "") +
           ": ms per micro batch on one rank\n";
    TextTable t;
    t.column("op").column("kind");
    for (const char* c : {"fwd ms", "bwd ms", "recomp ms", "comm ms", "TFLOP/s", "share"})
      t.column(c, TextTable::Align::Right);
    // Achieved rate over the op's kernels (forward, backward and recompute); "-" without FLOPs.
    auto rate = [](double flops, double ms) {
      return flops > 0 && ms > 0 ? fixed(flops / ms / 1e9, 0) : std::string("-");
    };
    for (const auto& op : lo.ops) {
      const PassTimes& x = op.times;
      const double comm = x.fwd_net_ms + x.bwd_net_ms() + x.recompute_net_ms;
      const double compute = x.fwd_compute_ms + x.bwd_compute_ms() + x.recompute_compute_ms;
      const double flops = op.work.fwd_flops + op.work.bwd_flops + op.work.recompute_flops;
      if (comm == 0 && compute == 0 && flops == 0)
        continue;  // layout only (split, concat, …): nothing priced
      t.row({op.name, op.kind, fixed(x.fwd_compute_ms, 3), fixed(x.bwd_compute_ms(), 3),
             fixed(x.recompute_compute_ms, 3), fixed(comm, 3), rate(flops, compute),
             layer_ms > 0 ? fixed(100 * (compute + comm) / layer_ms, 1) + " %" : "-"});
    }
    const double comm = total.fwd_net_ms + total.bwd_net_ms() + total.recompute_net_ms;
    const double compute = total.fwd_compute_ms + total.bwd_compute_ms() + total.recompute_compute_ms;
    t.row({"total", "", fixed(total.fwd_compute_ms, 3), fixed(total.bwd_compute_ms(), 3),
           fixed(total.recompute_compute_ms, 3), fixed(comm, 3),
           rate(work.fwd_flops + work.bwd_flops + work.recompute_flops, compute),
           layer_ms > 0 ? "100.0 %" : "-"});
    out += t.render();
    if (std::any_of(lo.ops.begin(), lo.ops.end(),
                    [](const OpEstimate& op) { return op.kind == "ExpertsHost"; }))
      out +=
          "mlp.experts_host: the GPU waiting for the host to launch each local expert's kernels after the "
          "tokens-per-expert copy (the system's moe_host_us_per_expert); a CUDA graph that captures the "
          "experts removes it (--cuda-graph-impl full_iteration, or a per-layer graph of the whole layer "
          "or its moe module)\n";
    out += "\n";
  }
  return out;
}

nlohmann::json layer_ops_json(const Estimate& est) {
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& lo : est.layer_ops) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& op : lo.ops)
      ops.push_back({{"name", op.name},
                     {"kind", op.kind},
                     {"fwd_ms", op.times.fwd_compute_ms},
                     {"bwd_ms", op.times.bwd_compute_ms()},
                     {"recompute_ms", op.times.recompute_compute_ms},
                     {"fwd_comm_ms", op.times.fwd_net_ms},
                     {"bwd_comm_ms", op.times.bwd_net_ms() + op.times.recompute_net_ms},
                     {"fwd_flops", op.work.fwd_flops},
                     {"bwd_flops", op.work.bwd_flops},
                     {"fwd_bytes", op.work.fwd_bytes},
                     {"bwd_bytes", op.work.bwd_bytes}});
    layers.push_back({{"chunk", lo.chunk},
                      {"layer", lo.layer},
                      {"moe", lo.moe},
                      {"recompute", lo.recompute},
                      {"ops", ops}});
  }
  return layers;
}

}  // namespace preflight::analyzer::cost
