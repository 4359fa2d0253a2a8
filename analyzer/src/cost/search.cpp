// Parallel-strategy search with SimuMax v1.2's semantics (perf_llm.py search_best_parallel_strategy,
// search_best_strategy_no_recompute, search_best_recompute_layer_num, search_best_selective_recompute).
#include "preflight/analyzer/cost/search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>

#include "preflight/analyzer/cost/report.hpp"
#include "preflight/common/error.hpp"

namespace preflight::analyzer::cost {

const char* to_string(RecomputeSearch r) {
  switch (r) {
    case RecomputeSearch::None:
      return "none";
    case RecomputeSearch::FullBlock:
      return "full_block";
    case RecomputeSearch::Selective:
      return "selective";
    case RecomputeSearch::Launch:
      return "launch";
  }
  return "?";
}

std::vector<std::size_t> SearchResult::ranking() const {
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < evaluations.size(); ++i)
    if (evaluations[i].feasible) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](std::size_t a, std::size_t b) { return evaluations[a].mfu > evaluations[b].mfu; });
  return idx;
}

namespace {

/// SimuMax compares the humanized peak ("45.1816 GB") after parsing it back: 4 decimals of its unit.
double simumax_rounded_gib(double bytes) {
  std::string s = simumax_bytes(bytes);
  double v = std::stod(s);
  std::string unit = s.substr(s.find(' ') + 1);
  double f = unit == "TB"   ? 1024.0
             : unit == "GB" ? 1.0
             : unit == "MB" ? 1.0 / 1024
             : unit == "KB" ? 1.0 / 1048576
                            : 1.0 / 1073741824;
  return v * f;
}

struct Layout {
  int tp, ep, pp, etp, last_stage_layers, micro_batches, cp, vpp;
  int mbs = 1;  ///< samples per micro batch
  /// Interleaved layouts whose layers do not split evenly over pp·vpp chunks: the embedding and / or the loss
  /// counted as a layer slot (Megatron's --account-for-embedding/loss-in-pipeline-split), as NeMo splits
  /// Llama-3.1-405B's 126 layers into 128 slots.
  bool embedding_in_split = false, loss_in_split = false;
  /// Interleaved layouts whose layers do not split evenly even with those slots: a
  /// `--pipeline-model-parallel-layout` as even as possible (balanced_pipeline_layout), [vpp][pp].
  std::vector<std::vector<int>> chunk_layout;
};

/// A hybrid model's `--hybrid-layer-pattern` with '|' between the chunks of `chunks` ([vpp][pp] layers, in
/// Megatron's segment order: segment k is chunk k / pp of rank k % pp) and its MTP depths after '/'.
std::string hybrid_pattern_with_segments(const ModelSpec& m, const std::vector<std::vector<int>>& chunks) {
  std::string out;
  std::size_t pos = 0;
  const std::size_t pp = chunks.front().size();
  for (std::size_t k = 0; k < chunks.size() * pp; ++k) {
    const auto n = static_cast<std::size_t>(chunks[k / pp][k % pp]);
    out += (k ? "|" : "") + m.hybrid_pattern.substr(pos, n);
    pos += n;
  }
  for (int d = 0; d < m.mtp_num_layers; ++d) out += "/" + m.mtp_hybrid_pattern;
  return out;
}

/// An evaluation of the layout's sizes, not yet priced.
SearchEvaluation sizes_of(const ModelSpec& model, const Layout& lay) {
  SearchEvaluation ev;
  ev.tp = lay.tp;
  ev.pp = lay.pp;
  ev.ep = lay.ep;
  ev.etp = lay.etp;
  ev.cp = lay.cp;
  ev.vpp = lay.vpp;
  ev.micro_batch_size = lay.mbs;
  ev.micro_batches = lay.micro_batches;
  ev.embedding_in_split = lay.embedding_in_split;
  ev.loss_in_split = lay.loss_in_split;
  if (!lay.chunk_layout.empty()) {
    if (model.hybrid()) {
      ev.pipeline_layout_flag = "--hybrid-layer-pattern";
      ev.pipeline_layout = hybrid_pattern_with_segments(model, lay.chunk_layout);
    } else {
      ev.pipeline_layout_flag = "--pipeline-model-parallel-layout";
      ev.pipeline_layout = format_pipeline_layout(lay.chunk_layout, model.mtp_num_layers);
    }
  }
  if (lay.chunk_layout.empty() && lay.pp > 1 && lay.vpp == 1 && model.num_layers % lay.pp != 0)
    ev.last_stage_layers = lay.last_stage_layers;
  return ev;
}

SearchEvaluation evaluate(const ModelSpec& model, const Strategy& st, const SystemSpec& sys,
                          const SearchSpace& space, double limit_gib, const Layout& lay, RecomputeSearch kind,
                          EstimateCache& cache) {
  SearchEvaluation ev = sizes_of(model, lay);
  ev.dp = st.dp();
  ev.kind = kind;
  ev.recompute = st.effective_layer_recompute(model);
  ev.parallelism = parallelism_text(st);
  ev.recompute_status = recompute_status_text(ev.recompute);
  try {
    EstimateOptions opt;
    opt.names = false;
    opt.per_layer = false;
    opt.cache = &cache;
    Estimate e = estimate(model, st, sys, opt);
    for (const auto& s : e.stages) {
      double gib = simumax_rounded_gib(space.use_reserved_memory ? s.peak_with_reserved_bytes : s.peak_bytes);
      ev.stage_peaks_gib.emplace_back(s.key, gib);
      ev.peak_gib = std::max(ev.peak_gib, gib);
      ev.allocated_peak_gib = std::max(ev.allocated_peak_gib, simumax_rounded_gib(s.peak_bytes));
    }
    ev.feasible = ev.peak_gib <= limit_gib;
    ev.memory_model = e.memory_model;
    ev.mfu = e.mfu;
    ev.tflops_per_gpu = e.tflops_per_gpu;
    ev.tokens_per_second_per_gpu = e.tokens_per_second_per_gpu;
    ev.iteration_ms = e.iteration_ms;
    ev.straggler_ratio = e.straggler_ratio;
  } catch (const InputError& err) {
    ev.error = err.what();
  }
  return ev;
}

/// All evaluations of one layout, in SimuMax's order.
std::vector<SearchEvaluation> search_layout(const ModelSpec& model, const Strategy& base,
                                            const SystemSpec& sys, const SearchSpace& space, double limit_gib,
                                            const Layout& lay, EstimateCache& cache) {
  std::vector<SearchEvaluation> out;
  Strategy st = base;
  st.world_size = space.world_size;
  st.tp = lay.tp;
  st.ep = lay.ep;
  st.pp = lay.pp;
  st.etp = lay.etp;
  st.cp = lay.cp;
  st.vpp = lay.vpp;
  st.first_stage_layers = -1;
  st.last_stage_layers = lay.last_stage_layers;
  st.stage_layers.clear();
  st.chunk_layout = lay.chunk_layout;
  // A launch's features that need a size the layout does not have are off for it, as NeMo's recipes set
  // them (Megatron refuses them there): TP communication overlap at tp 1, the output layer's deferred weight
  // gradients at pp 1.
  if (lay.tp == 1) st.tp_comm_overlap = false;
  if (lay.pp == 1) st.defer_embedding_wgrad = false;
  if (lay.tp > 1 && space.sequence_parallel_with_tp) st.sequence_parallel = true;
  // The expert-parallel all-to-all overlap (--overlap-moe-expert-parallel-comm) needs ep > 1 and, with pp >
  // 1, the interleaved schedule (Megatron's TransformerConfig asserts both); off where the layout has
  // neither.
  if (lay.ep == 1 || (lay.pp > 1 && lay.vpp == 1)) st.overlap_moe_expert_parallel_comm = false;
  const bool ep_overlap = st.overlap_moe_expert_parallel_comm;
  st.account_for_embedding_in_pipeline_split = lay.embedding_in_split;
  st.account_for_loss_in_pipeline_split = lay.loss_in_split;
  st.micro_batch_size = lay.mbs;
  st.global_batch_size = space.global_batch_size;
  LayerRecompute base_rc = base.effective_layer_recompute(model);
  const int slots = model.num_layers + (lay.embedding_in_split ? 1 : 0) + (lay.loss_in_split ? 1 : 0);
  int per_stage = (slots + lay.pp * lay.vpp - 1) / (lay.pp * lay.vpp);  // per chunk with vpp
  for (RecomputeSearch kind : space.recompute) {
    st.overlap_moe_expert_parallel_comm = ep_overlap;
    LayerRecompute rc;
    rc.enabled = base_rc.enabled;
    rc.variance = base_rc.variance;
    if (kind == RecomputeSearch::None) {
      st.layer_recompute = rc;
      out.push_back(evaluate(model, st, sys, space, limit_gib, lay, kind, cache));
    } else if (kind == RecomputeSearch::Launch) {
      st.layer_recompute = base.layer_recompute;  // unset for a launch: its Megatron flags at this layout
      out.push_back(evaluate(model, st, sys, space, limit_gib, lay, kind, cache));
    } else if (kind == RecomputeSearch::FullBlock) {
      // Full recompute and the expert-parallel overlap exclude each other (Megatron asserts it): the overlap
      // is off for these evaluations.
      st.overlap_moe_expert_parallel_comm = false;
      rc.scope = RecomputeScope::FullBlock;
      rc.variance = false;  // Megatron's full recompute has no variance mode
      int left = 0, right = per_stage;
      while (left <= right) {
        int mid = (left + right) / 2;
        rc.layers = mid;
        st.layer_recompute = rc;
        SearchEvaluation ev = evaluate(model, st, sys, space, limit_gib, lay, kind, cache);
        if (!ev.feasible)
          left = mid + 1;
        else
          right = mid - 1;
        out.push_back(std::move(ev));
      }
    } else {
      rc.scope = RecomputeScope::Selective;
      rc.layers = per_stage;
      const bool combos[3][4] = {
          {true, true, true, true}, {true, true, false, false}, {false, false, true, true}};
      for (const auto& c : combos) {
        rc.attn = c[0];
        rc.attn_norm = c[1];
        rc.mlp = c[2];
        rc.mlp_norm = c[3];
        st.layer_recompute = rc;
        out.push_back(evaluate(model, st, sys, space, limit_gib, lay, kind, cache));
      }
    }
  }
  return out;
}

/// SimuMax build_valid_candidate_strategy: StrategyConfig.sanity_check + PerfLLM._cross_sanity_check.
std::string layout_problem(const ModelSpec& m, const Strategy& base, const SearchSpace& space,
                           const Layout& lay) {
  std::int64_t ws = space.world_size;
  if (ws % (static_cast<std::int64_t>(lay.pp) * lay.tp * lay.cp) != 0)
    return "world size not divisible by pp·tp·cp";
  if (ws % (static_cast<std::int64_t>(lay.ep) * lay.etp * lay.pp) != 0)
    return "world size not divisible by ep·etp·pp";
  if (base.seq_length % lay.cp != 0) return "sequence not divisible by cp";
  if (m.num_attention_heads % lay.tp != 0) return "heads not divisible by tp";
  if (!m.mla.enabled && m.num_query_groups % lay.tp != 0 &&
      !base.allows_tp_beyond(m.num_query_groups, lay.tp))
    return "kv heads neither divisible by tp nor a divisor of it";
  int experts = m.moe.enabled() ? m.moe.num_experts : 1;
  if (experts % lay.ep != 0) return "experts not divisible by ep";
  if (lay.cp > 1 && base.cp_comm_type != CpCommType::AllGather) {
    if (m.num_attention_heads % lay.cp != 0) return "heads not divisible by cp";
    if (m.num_query_groups % lay.cp != 0) return "kv heads not divisible by cp";
  }
  // Context parallelism only where the base's model code and attention kernel have it.
  if (!base.simumax_compat) {
    if (std::string problem = base.context_parallel_problem(lay.cp); !problem.empty()) return problem;
  }
  if (lay.cp > 1 && base.cp_a2a_size > 1 && lay.cp % base.cp_a2a_size != 0)
    return "cp not divisible by the all-to-all level of hierarchical context parallelism";
  if (lay.vpp > 1) {
    if (lay.pp == 1) return "an interleaved schedule needs pp > 1";
    const int chunks = lay.pp * lay.vpp;
    if (m.num_layers % chunks != 0) {
      // SimuMax refuses it; Megatron splits the layers with the loss, or the embedding and the loss, counted
      // as layer slots (the loss first: the output layer is the heavier end) when that makes them even — an
      // end chunk may then hold the embedding or the loss alone, as NeMo runs Llama-3.1-405B's 126 layers
      // over pp 16 · vpp 8.
      if (base.simumax_compat) return "layers not divisible by pp·vpp";
      if ((m.num_layers + 1) % chunks == 0 || (m.num_layers + 2) % chunks == 0) return "";
      // Otherwise a --pipeline-model-parallel-layout as even as possible (plan_layout), as NeMo lays out
      // DeepSeek-V3's 61 layers and MTP depth; a chunk should hold a layer.
      if (m.num_layers < chunks) return "fewer layers than pp·vpp chunks";
      return "";
    }
  }
  return "";
}

/// Fills the layout's derived sizes (the last stage of SimuMax's uneven split, the micro batches per
/// iteration) and returns why it is refused ("" when it is valid): SimuMax's checks (layout_problem) and
/// Megatron's interleaved-schedule rules.
std::string plan_layout(const ModelSpec& model, const Strategy& base, const SearchSpace& space, Layout& lay) {
  if (lay.pp <= 0 || lay.tp <= 0 || lay.ep <= 0 || lay.cp <= 0 || lay.vpp <= 0)
    return "sizes must be positive";
  if (lay.pp > 1 && lay.vpp == 1) {
    const int per = (model.num_layers + lay.pp - 1) / lay.pp;
    lay.last_stage_layers = model.num_layers - per * (lay.pp - 1);
    if (per <= 0 || lay.last_stage_layers <= 0) return "no layers left for the last stage";
  }
  if (std::string problem = layout_problem(model, base, space, lay); !problem.empty()) return problem;
  const int chunks = lay.pp * lay.vpp;
  const int layers = static_cast<int>(model.num_layers);
  if (model.hybrid() && !base.simumax_compat && lay.pp > 1 && (lay.vpp > 1 || layers % lay.pp != 0)) {
    // Megatron takes a hybrid model's interleaved or uneven pipeline split from its pattern's '|' segments
    // only (the account-for-embedding/loss flags and the decoder-first/last counts are refused with a
    // pattern): an even split, else the balanced one, written as the pattern with its segments.
    if (layers < chunks) return "fewer layers than pp·vpp chunks";
    lay.last_stage_layers = -1;
    lay.chunk_layout = layers % chunks == 0
                           ? std::vector<std::vector<int>>(
                                 static_cast<std::size_t>(lay.vpp),
                                 std::vector<int>(static_cast<std::size_t>(lay.pp), layers / chunks))
                           : balanced_pipeline_layout(layers, lay.pp, lay.vpp, model.mtp_num_layers);
  } else if (lay.vpp > 1 && model.num_layers % chunks != 0) {
    if ((model.num_layers + 1) % chunks == 0) {
      lay.loss_in_split = true;
    } else if ((model.num_layers + 2) % chunks == 0) {
      lay.loss_in_split = lay.embedding_in_split = true;
    } else {
      lay.chunk_layout =
          balanced_pipeline_layout(static_cast<int>(model.num_layers), lay.pp, lay.vpp, model.mtp_num_layers);
    }
  }
  const int dp = space.world_size / (lay.pp * lay.tp * lay.cp);
  if (space.global_batch_size % (dp * lay.mbs) != 0) return "global batch not divisible by dp·micro batch";
  lay.micro_batches = space.global_batch_size / (dp * lay.mbs);
  if (lay.micro_batches == 0) return "no micro batch";
  if (lay.vpp > 1 && lay.micro_batches % lay.pp != 0)
    return "micro batches not a multiple of pp (interleaved groups of pp)";
  return "";
}

}  // namespace

SearchResult search(const ModelSpec& model, const Strategy& base, const SystemSpec& system,
                    const SearchSpace& space, const std::function<void(int, int)>& progress) {
  auto t0 = std::chrono::steady_clock::now();
  model.validate();
  if (space.world_size <= 0) throw InputError("--world-size", "must be positive");
  if (space.global_batch_size <= 0) throw InputError("--global-batch-size", "must be positive");
  if (space.micro_batch_size <= 0) throw InputError("--micro-batch-size", "must be positive");
  std::vector<int> mbss =
      space.micro_batch_sizes.empty() ? std::vector<int>{space.micro_batch_size} : space.micro_batch_sizes;
  for (int m : mbss)
    if (m <= 0) throw InputError("--micro-batch-size", "must be positive");
  if (space.recompute.empty()) throw InputError("--recompute", "names no recompute type");
  bool moe = model.moe.enabled();
  std::vector<int> tps = space.tp, eps = space.ep, pps = space.pp;
  const std::vector<int> etps = space.etp.empty() ? std::vector<int>{1} : space.etp;
  for (int e : etps)
    if (e < 0) throw InputError("--etp", "expert tensor-parallel sizes must be positive (or tp)");
  std::vector<int> cps = space.cp.empty() ? std::vector<int>{base.cp} : space.cp;
  std::vector<int> vpps = space.vpp.empty() ? std::vector<int>{base.vpp} : space.vpp;
  if (tps.empty()) tps = moe ? std::vector<int>{1} : std::vector<int>{1, 2, 4, 8};
  if (eps.empty()) eps = moe ? std::vector<int>{1, 2, 4, 8} : std::vector<int>{1};
  if (pps.empty())
    for (int p = 1; p <= model.num_layers; ++p) pps.push_back(p);
  // SimuMax: a dense model searches ep = 1 only, a MoE model tp = 1 only.  Sizes the user names are searched
  // as given (Megatron runs MoE models with tp > 1, and MLA with tp > 1 is priced), except under --simumax-compat.
  if (!moe)
    eps = {1};
  else if (space.tp.empty() || base.simumax_compat)
    tps = {1};

  SearchResult result;
  result.memory_limit_gib = device_memory_gib(system, base.simumax_compat) - space.mem_margin_gib;
  std::vector<Layout> layouts;
  for (int tp : tps) {
    std::vector<int> etps_at_tp;  // the expert tp sizes at this tp, each once (one for a dense model)
    for (int e : etps)
      if (const int etp = e > 0 ? e : tp;
          std::count(etps_at_tp.begin(), etps_at_tp.end(), etp) == 0 && (moe || etps_at_tp.empty()))
        etps_at_tp.push_back(etp);
    for (int ep : eps)
      for (int etp : etps_at_tp)
        for (int pp : pps)
          for (int cp : cps)
            for (int vpp : vpps)
              for (int mbs : mbss) {
                Layout lay{tp, ep, pp, etp, -1, 0, cp, vpp, mbs};
                std::string where = "tp" + std::to_string(tp) + " ep" + std::to_string(ep) +
                                    (etps.size() > 1 || etp != 1 ? " etp" + std::to_string(etp) : "") +
                                    " pp" + std::to_string(pp) +
                                    (cps.size() > 1 || cp > 1 ? " cp" + std::to_string(cp) : "") +
                                    (vpps.size() > 1 || vpp > 1 ? " vpp" + std::to_string(vpp) : "") +
                                    (mbss.size() > 1 ? " mbs" + std::to_string(mbs) : "");
                if (const std::string why = plan_layout(model, base, space, lay); !why.empty())
                  result.skipped.push_back(where + ": " + why);
                else
                  layouts.push_back(lay);
              }
  }

  // Ops the cost model does not price do not depend on the layout: checked once, on the first one.
  if (!layouts.empty()) {
    Strategy st = base;
    st.world_size = space.world_size;
    st.tp = layouts.front().tp;
    st.ep = layouts.front().ep;
    st.etp = layouts.front().etp;
    st.pp = 1;
    st.micro_batch_size = layouts.front().mbs;
    std::vector<std::string> lines = unpriced_ops(model, st, system);
    if (space.strict) refuse_unpriced(lines);
    for (const auto& line : lines) result.warnings.push_back("not priced: " + line);
  }

  std::vector<std::vector<SearchEvaluation>> per_layout(layouts.size());
  int threads =
      space.threads > 0 ? space.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, static_cast<int>(layouts.size())));
  std::atomic<std::size_t> next{0};
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  auto worker = [&] {
    EstimateCache cache;
    for (std::size_t i = next++; i < layouts.size(); i = next++) {
      // An error of one layout is that layout's (an exception leaving a worker thread would end the process).
      try {
        per_layout[i] = search_layout(model, base, system, space, result.memory_limit_gib, layouts[i], cache);
      } catch (const std::exception& e) {
        SearchEvaluation ev = sizes_of(model, layouts[i]);
        ev.error = e.what();
        per_layout[i] = {ev};
      }
      int d = ++done;
      if (progress) {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress(d, static_cast<int>(layouts.size()));
      }
    }
  };
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
    for (auto& t : pool) t.join();
  }
  for (auto& v : per_layout) {
    const bool fits = std::any_of(v.begin(), v.end(), [](const SearchEvaluation& ev) { return ev.feasible; });
    const bool allocated_fits = std::any_of(v.begin(), v.end(), [&](const SearchEvaluation& ev) {
      return ev.error.empty() && ev.allocated_peak_gib <= result.memory_limit_gib;
    });
    if (space.use_reserved_memory && !fits && allocated_fits) ++result.allocated_only_layouts;
    for (auto& ev : v) result.evaluations.push_back(std::move(ev));
  }

  // Best in SimuMax's order: strictly better MFU, except full_block which also takes an equal one.
  double best = -1;
  for (std::size_t i = 0; i < result.evaluations.size(); ++i) {
    const SearchEvaluation& ev = result.evaluations[i];
    if (!ev.feasible) continue;
    bool better = ev.kind == RecomputeSearch::FullBlock ? ev.mfu >= best : ev.mfu > best;
    if (better) {
      best = ev.mfu;
      result.best = i;
    }
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace preflight::analyzer::cost
