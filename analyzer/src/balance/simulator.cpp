#include "preflight/analyzer/balance/simulator.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "preflight/common/error.hpp"

namespace preflight::analyzer::balance {

namespace {

struct Item {
  bool forward;
  int micro;  // unit: micro batch · k + sequence chunk
  int chunk;  // real chunk
};

// SAPP `PipelineBuilder._inter_merge`: `delta` leading forwards, then alternate, then the rest.
std::vector<Item> inter_merge(std::vector<Item> a, std::vector<Item> b, int delta) {
  std::vector<Item> res;
  std::size_t ia = 0, ib = 0;
  if (delta >= 0) {
    const std::size_t d = std::min<std::size_t>(delta, a.size());
    res.insert(res.end(), a.begin(), a.begin() + d);
    ia = d;
  } else {
    const std::size_t d = std::min<std::size_t>(-delta, b.size());
    res.insert(res.end(), b.begin(), b.begin() + d);
    ib = d;
  }
  while (ia < a.size()) {
    res.push_back(a[ia++]);
    if (ib < b.size())
      res.push_back(b[ib++]);
    else
      break;
  }
  res.insert(res.end(), a.begin() + ia, a.end());
  res.insert(res.end(), b.begin() + ib, b.end());
  return res;
}

std::vector<Item> stage_items(const PipelineConfig& p, int stage) {
  const int S = p.stages, V = p.chunks, m = p.micro_batches;
  std::vector<Item> a, b;
  int delta;
  if (V == 1) {
    // Sequence chunks (k = 1: plain 1F1B): forwards in sequence order, backwards last chunk first.
    const int k = p.seq_split;
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < k; ++j) a.push_back({true, i * k + j, 0});
    for (int i = 0; i < m; ++i)
      for (int j = k - 1; j >= 0; --j) b.push_back({false, i * k + j, 0});
    delta = S - stage - 1 + (k - 1);
  } else {
    const int r = m % S;
    for (int inter = 0; inter < m / S; ++inter)
      for (int i = 0; i < V; ++i) {
        if (inter == 0)
          for (int mm = 0; mm < r; ++mm) {
            a.push_back({true, mm, i});
            b.push_back({false, mm, V - 1 - i});
          }
        for (int mm = 0; mm < S; ++mm) {
          a.push_back({true, r + mm + inter * S, i});
          b.push_back({false, r + mm + inter * S, V - 1 - i});
        }
      }
    if (p.less_memory)
      delta = V * S - stage - 1;
    else
      delta = (V + 1) * S - 2 * stage - 2 + r * (V - 1);
  }
  return inter_merge(std::move(a), std::move(b), delta);
}

}  // namespace

ScheduleGraph::ScheduleGraph(const PipelineConfig& pipeline) : pipeline_(pipeline) {
  const int S = pipeline.stages, V = pipeline.chunks, m = pipeline.units();
  if (S < 1 || V < 1 || pipeline.micro_batches < 1 || pipeline.seq_split < 1)
    throw InputError("-s/-i/-mb", "pipeline sizes must be at least 1");
  if (pipeline.seq_split > 1 && V > 1)
    throw InputError("-seq", "sequence pipelining with interleaving is not modelled; use -i 1");
  if (pipeline.micro_batches < S)
    throw InputError("-mb", std::to_string(pipeline.micro_batches) + " micro batches for " +
                                std::to_string(S) +
                                " stages: the schedule needs at least as many micro batches as stages");
  // MindSpore's less-memory interleaved order (SAPP vpp2: warm-up V·S − p − 1) deadlocks when the last
  // round is partial: every such case tried (17, 20, 24, 31, 33 micro batches on 16 stages) has a loop.
  if (pipeline.less_memory && V > 1 && pipeline.micro_batches % S != 0)
    throw InputError("-lm", "the less-memory interleaved schedule needs the micro batches (" +
                                std::to_string(pipeline.micro_batches) +
                                ") to be a multiple of the stages (" + std::to_string(S) +
                                "); otherwise its order deadlocks. Use -lm 0 or change -mb");
  // Block id lookup: ((dir * m + micro) * V + chunk) * S + stage.
  auto key = [&](bool fwd, int micro, int chunk, int stage) {
    return ((static_cast<std::size_t>(fwd ? 0 : 1) * m + micro) * V + chunk) * S + stage;
  };
  std::vector<int> lookup(2 * static_cast<std::size_t>(m) * V * S, -1);
  std::vector<Block> raw;
  std::vector<std::vector<int>> seq(S);
  for (int p = 0; p < S; ++p) {
    const auto items = stage_items(pipeline, p);
    if (static_cast<int>(items.size()) != 2 * m * V) throw std::logic_error("schedule builder lost blocks");
    // (m here counts units: micro batches × sequence chunks)
    for (std::size_t i = 0; i < items.size(); ++i) {
      Block b;
      b.stage = p;
      b.forward = items[i].forward;
      b.micro = items[i].micro;
      b.chunk = items[i].chunk;
      b.position = static_cast<int>(i);
      b.left = i == 0 ? -1 : seq[p].back();
      const int id = static_cast<int>(raw.size());
      lookup[key(b.forward, b.micro, b.chunk, p)] = id;
      seq[p].push_back(id);
      raw.push_back(b);
    }
  }
  for (auto& b : raw) {
    if (b.forward) {
      if (b.stage > 0)
        b.pre = lookup[key(true, b.micro, b.chunk, b.stage - 1)];
      else if (b.chunk > 0)
        b.pre = lookup[key(true, b.micro, b.chunk - 1, S - 1)];
    } else {
      if (b.stage < S - 1)
        b.pre = lookup[key(false, b.micro, b.chunk, b.stage + 1)];
      else if (b.chunk == V - 1)
        b.pre = lookup[key(true, b.micro, V - 1, S - 1)];
      else
        b.pre = lookup[key(false, b.micro, b.chunk + 1, 0)];
    }
  }
  // Topological order (Kahn); remap indices so that dependencies come first.
  const int n = static_cast<int>(raw.size());
  std::vector<int> indeg(n, 0);
  std::vector<std::vector<int>> out(n);
  for (int i = 0; i < n; ++i)
    for (int d : {raw[i].left, raw[i].pre})
      if (d >= 0) {
        ++indeg[i];
        out[d].push_back(i);
      }
  std::vector<int> order, queue;
  for (int i = 0; i < n; ++i)
    if (indeg[i] == 0) queue.push_back(i);
  while (!queue.empty()) {
    const int i = queue.back();
    queue.pop_back();
    order.push_back(i);
    for (int j : out[i])
      if (--indeg[j] == 0) queue.push_back(j);
  }
  if (static_cast<int>(order.size()) != n)
    throw InputError("-s/-i/-mb/-lm", "the " + std::string(pipeline.less_memory ? "less-memory " : "") +
                                          "schedule of " + std::to_string(pipeline.micro_batches) +
                                          " micro batches on " + std::to_string(S) + " stages × " +
                                          std::to_string(V) +
                                          " chunks deadlocks (a block waits on a later one)");
  std::vector<int> new_id(n);
  for (int i = 0; i < n; ++i) new_id[order[i]] = i;
  blocks_.resize(n);
  for (int i = 0; i < n; ++i) {
    Block b = raw[order[i]];
    if (b.left >= 0) b.left = new_id[b.left];
    if (b.pre >= 0) b.pre = new_id[b.pre];
    blocks_[i] = b;
  }
  stage_sequence_.assign(S, {});
  for (int p = 0; p < S; ++p)
    for (int id : seq[p]) stage_sequence_[p].push_back(new_id[id]);
  for (const Block& b : blocks_) {
    left_.push_back(b.left);
    pre_.push_back(b.pre);
    dur_index_.push_back((b.forward ? 0 : V * S) + b.chunk * S + b.stage);
  }
  live_patterns_.assign(S, {});
  for (int p = 0; p < S; ++p) {
    std::vector<int> cnt(V, 0);
    std::set<std::vector<int>> seen;
    for (int id : stage_sequence_[p]) {
      const Block& b = blocks_[id];
      cnt[b.chunk] += b.forward ? 1 : -1;
      if (seen.insert(cnt).second) live_patterns_[p].push_back(cnt);
    }
  }
}

double SimulationResult::max_peak_mb() const {
  double m = 0;
  for (double v : peak_mb) m = std::max(m, v);
  return m;
}

double simulate_makespan(const ScheduleGraph& graph, const ChunkCosts& costs, std::vector<double>& end) {
  const std::size_t n = graph.left_of().size(), vs = costs.forward_ms.size();
  // Durations [forward…, backward…] and a zero slot for "no dependency" (index -1 → n).
  thread_local std::vector<double> dur;
  dur.resize(2 * vs);
  std::copy(costs.forward_ms.begin(), costs.forward_ms.end(), dur.begin());
  std::copy(costs.backward_ms.begin(), costs.backward_ms.end(),
            dur.begin() + static_cast<std::ptrdiff_t>(vs));
  end.resize(n + 1);
  double* e = end.data() + 1;  // e[-1] == 0
  end[0] = 0;
  const int* left = graph.left_of().data();
  const int* pre = graph.pre_of().data();
  const int* di = graph.duration_index().data();
  double makespan = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double start = std::max(e[left[i]], e[pre[i]]);
    e[i] = start + dur[di[i]];
    makespan = std::max(makespan, e[i]);
  }
  return makespan;
}

double simulate_stage_peak(const ScheduleGraph& graph, const ChunkCosts& costs, int stage) {
  double best = 0;
  bool any = false;
  for (const auto& cnt : graph.live_patterns(stage)) {
    double v = 0;
    for (int c = 0; c < costs.chunks; ++c) v += cnt[c] * costs.act(c, stage);
    if (!any || v > best) best = v;
    any = true;
  }
  return std::max(0.0, costs.static_mb[stage] + best);
}

Bubbles bubbles_for(const PipelineConfig& pipeline, const ChunkCosts& costs, double end_time_ms) {
  double fwd = 0, bwd = 0, rec = 0;
  for (std::size_t i = 0; i < costs.forward_ms.size(); ++i) {
    fwd += costs.forward_ms[i];
    bwd += costs.backward_ms[i];
    rec += costs.recompute_ms[i];
  }
  const double m = pipeline.units();
  const double model = (fwd + bwd - rec) * m;
  const double hardware = (fwd + bwd) * m;
  Bubbles b;
  b.ideal = static_cast<double>(pipeline.stages - 1) / pipeline.chunks / pipeline.units();
  b.has_recompute = rec > 1e-5;
  b.recompute = b.has_recompute ? hardware / model - 1 : 0.0;
  b.real = model > 0 ? (pipeline.stages * end_time_ms - model) / model : 0.0;
  b.imba = b.real - b.ideal - b.recompute;
  return b;
}

SimulationResult simulate(const ScheduleGraph& graph, const ChunkCosts& costs, bool detail) {
  SimulationResult r;
  std::vector<double> end;
  r.end_time_ms = simulate_makespan(graph, costs, end);
  const int S = graph.pipeline().stages;
  r.peak_mb.resize(S);
  for (int p = 0; p < S; ++p) r.peak_mb[p] = simulate_stage_peak(graph, costs, p);
  r.bubbles = bubbles_for(graph.pipeline(), costs, r.end_time_ms);
  if (detail) {
    const auto& blocks = graph.blocks();
    r.timing.resize(blocks.size());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const Block& b = blocks[i];
      const double d = b.forward ? costs.fwd(b.chunk, b.stage) : costs.bwd(b.chunk, b.stage);
      r.timing[i] = {end[i + 1] - d, end[i + 1]};
    }
    r.memory_series.assign(S, {});
    for (int p = 0; p < S; ++p) {
      auto& series = r.memory_series[p];
      double cur = costs.static_mb[p];
      series.emplace_back(0.0, cur);
      for (int id : graph.stage_sequence()[p]) {
        const Block& b = blocks[id];
        cur += (b.forward ? 1 : -1) * costs.act(b.chunk, p);
        series.emplace_back(end[id + 1], cur);
      }
    }
  }
  return r;
}

}  // namespace preflight::analyzer::balance
