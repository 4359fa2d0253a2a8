#include "preflight/analyzer/balance/local_search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <random>

namespace preflight::analyzer::balance {

double placement_score(double makespan_ms, const ChunkCosts& costs) {
  double rec = 0;
  for (double r : costs.recompute_ms) rec += r;
  return makespan_ms + 1e-4 * rec;
}

namespace {

using Clock = std::chrono::steady_clock;

// One layer changes class and/or chunk.
struct Change {
  int kind = 0;
  int r_from = 0, v1 = 0, s1 = 0;
  int r_to = 0, v2 = 0, s2 = 0;
};
// A move is one or two changes (two: swaps between chunks).
struct Move {
  Change c[2];
  int n = 1;
};

class State {
 public:
  State(const BalanceProblem& problem, const ScheduleGraph& graph, const Assignment& a)
      : p_(problem), g_(graph), x_(a), costs_(chunk_costs(problem, a)) {
    S_ = problem.pipeline.stages;
    V_ = problem.pipeline.chunks;
    K_ = static_cast<int>(problem.model.bodies.size());
    classes_.resize(K_);
    for (int k = 0; k < K_; ++k)
      for (Recompute r : kAllRecompute)
        if (problem.model.bodies[k].considered(r)) classes_[k].push_back(static_cast<int>(r));
    peak_.resize(S_);
    for (int s = 0; s < S_; ++s) peak_[s] = simulate_stage_peak(g_, costs_, s);
    makespan_ = simulate_makespan(g_, costs_, scratch_);
    for (double r : costs_.recompute_ms) rec_total_ += r;
  }

  double excess() const {
    double e = 0;
    for (double pk : peak_) e += std::max(0.0, pk - p_.memory_limit_mb);
    return e;
  }
  bool fits() const { return excess() <= 1e-6; }
  double score() const { return makespan_ + 1e-4 * rec_total_; }
  double objective(double penalty) const { return score() + penalty * excess(); }
  double makespan() const { return makespan_; }
  const Assignment& assignment() const { return x_; }
  int S() const { return S_; }
  int V() const { return V_; }
  int K() const { return K_; }
  const std::vector<int>& classes(int k) const { return classes_[k]; }

  // Applies the move if every intermediate state is legal (counts ≥ 0, chunks non-empty at the end,
  // kind order); returns false and leaves the state unchanged otherwise.
  bool apply(const Move& m) {
    int done = 0;
    bool ok = true;
    for (; done < m.n; ++done) {
      const Change& c = m.c[done];
      if (x_.at(c.kind, static_cast<Recompute>(c.r_from), c.v1, c.s1) < 1 ||
          (c.r_from == c.r_to && c.v1 == c.v2 && c.s1 == c.s2)) {
        ok = false;
        break;
      }
      add(c.kind, c.r_from, c.v1, c.s1, -1);
      add(c.kind, c.r_to, c.v2, c.s2, +1);
    }
    if (ok)
      for (int i = 0; i < m.n && ok; ++i)
        ok = x_.chunk_layers(m.c[i].v1, m.c[i].s1) >= 1 && x_.chunk_layers(m.c[i].v2, m.c[i].s2) >= 1 &&
             representable(m.c[i].kind, m.c[i].v1, m.c[i].s1) &&
             representable(m.c[i].kind, m.c[i].v2, m.c[i].s2);
    if (ok && K_ > 1) ok = order_ok();
    if (!ok) {
      for (int i = done - 1; i >= 0; --i) revert(m.c[i]);
      return false;
    }
    return true;
  }
  // One change with the same legality checks as apply(); the stage peaks it touches are refreshed.
  // Journalled: rollback(mark) undoes every change made since journal_size() was mark.
  bool change(const Change& c) {
    Move m;
    m.c[0] = c;
    if (!apply(m)) return false;
    journal_.push_back(c);
    peak_[c.s1] = simulate_stage_peak(g_, costs_, c.s1);
    if (c.s2 != c.s1) peak_[c.s2] = simulate_stage_peak(g_, costs_, c.s2);
    return true;
  }
  std::size_t journal_size() const { return journal_.size(); }
  void rollback(std::size_t mark) {
    while (journal_.size() > mark) {
      const Change c = journal_.back();
      journal_.pop_back();
      revert(c);
      peak_[c.s1] = simulate_stage_peak(g_, costs_, c.s1);
      if (c.s2 != c.s1) peak_[c.s2] = simulate_stage_peak(g_, costs_, c.s2);
    }
  }
  void forget_journal() { journal_.clear(); }
  double peak(int s) const { return peak_[s]; }
  double limit() const { return p_.memory_limit_mb; }
  const BalanceProblem& problem() const { return p_; }

  void undo(const Move& m) {
    for (int i = m.n - 1; i >= 0; --i) revert(m.c[i]);
  }
  // Peaks of touched stages; makespan.
  void refresh_memory(const Move& m, std::vector<std::pair<int, double>>& saved) {
    saved.clear();
    for (int i = 0; i < m.n; ++i)
      for (int s : {m.c[i].s1, m.c[i].s2}) {
        bool seen = false;
        for (auto& [st, v] : saved) seen = seen || st == s;
        if (seen) continue;
        saved.emplace_back(s, peak_[s]);
        peak_[s] = simulate_stage_peak(g_, costs_, s);
      }
  }
  void restore_memory(const std::vector<std::pair<int, double>>& saved) {
    for (auto [s, v] : saved) peak_[s] = v;
  }
  void refresh_time() { makespan_ = simulate_makespan(g_, costs_, scratch_); }
  void set_makespan(double v) { makespan_ = v; }

 private:
  void revert(const Change& c) {
    add(c.kind, c.r_to, c.v2, c.s2, -1);
    add(c.kind, c.r_from, c.v1, c.s1, +1);
  }
  // MindFormers' yaml cannot put select-only and comm-only layers in one chunk (problem.hpp).
  bool representable(int k, int v, int s) const {
    return x_.at(k, Recompute::Select, v, s) == 0 || x_.at(k, Recompute::Comm, v, s) == 0;
  }
  bool order_ok() const {
    int highest = 0;
    for (int v = 0; v < V_; ++v)
      for (int s = 0; s < S_; ++s)
        for (int k = 0; k < K_; ++k)
          if (x_.chunk_layers(k, v, s) > 0) {
            if (k < highest) return false;
            highest = k;
          }
    return true;
  }
  void add(int k, int r, int v, int s, int d) {
    const BodyKind& b = p_.model.bodies[k];
    const Recompute rr = static_cast<Recompute>(r);
    x_.at(k, rr, v, s) += d;
    const int i = v * S_ + s;
    costs_.forward_ms[i] += d * b.forward_ms;
    costs_.backward_ms[i] += d * b.backward(rr);
    costs_.recompute_ms[i] += d * b.recompute_cost(rr);
    costs_.activation_mb[i] += d * b.activation(rr);
    costs_.static_mb[s] += d * b.param_mb;
    rec_total_ += d * b.recompute_cost(rr);
  }

  const BalanceProblem& p_;
  const ScheduleGraph& g_;
  Assignment x_;
  ChunkCosts costs_;
  int S_ = 0, V_ = 0, K_ = 0;
  std::vector<std::vector<int>> classes_;
  std::vector<double> peak_;
  std::vector<double> scratch_;
  std::vector<Change> journal_;
  double makespan_ = 0, rec_total_ = 0;
};

// The best single-layer class change on stage s by `rank(added backward ms, peak after) -> {key, tie}`
// (smaller is better; nullopt rejects the change) among those `wanted(body, from, to)` lets through.
// Each candidate is applied, measured and rolled back.
template <typename Wanted, typename Rank>
std::optional<Change> best_class_change(State& st, int s, Wanted&& wanted, Rank&& rank) {
  const BalanceProblem& p = st.problem();
  std::optional<Change> best;
  std::pair<double, double> best_key{0, 0};
  for (int k = 0; k < st.K(); ++k) {
    const BodyKind& b = p.model.bodies[k];
    for (int v = 0; v < st.V(); ++v)
      for (int rf : st.classes(k)) {
        if (st.assignment().at(k, static_cast<Recompute>(rf), v, s) < 1) continue;
        for (int rt : st.classes(k)) {
          if (rt == rf || !wanted(b, static_cast<Recompute>(rf), static_cast<Recompute>(rt))) continue;
          const Change c{k, rf, v, s, rt, v, s};
          const std::size_t mark = st.journal_size();
          if (!st.change(c)) continue;
          const double pk = st.peak(s);
          st.rollback(mark);
          const std::optional<std::pair<double, double>> key =
              rank(b.backward(static_cast<Recompute>(rt)) - b.backward(static_cast<Recompute>(rf)), pk);
          if (!key) continue;
          if (!best || key->first < best_key.first - 1e-12 ||
              (key->first <= best_key.first + 1e-12 && key->second < best_key.second)) {
            best = c;
            best_key = *key;
          }
        }
      }
  }
  return best;
}

// Recompute classes of one stage, made to fit and then as fast as the memory allows (greedy): while the
// stage is over the limit, the class change (one layer) with the least backward time added per MB of
// peak saved; then, while one fits, the change to a faster class with the most backward time saved per MB
// of peak added.  Returns false when the stage cannot be made to fit (the changes stay in the journal).
bool repair_stage(State& st, int s) {
  const double lim = st.limit() + 1e-6;
  using Key = std::optional<std::pair<double, double>>;
  while (st.peak(s) > lim) {
    const double before = st.peak(s);
    const auto lighter = [](const BodyKind& b, Recompute f, Recompute t) {
      return b.activation(t) < b.activation(f);
    };
    const auto c = best_class_change(st, s, lighter, [&](double added_ms, double pk) -> Key {
      if (pk >= before - 1e-9) return std::nullopt;
      return std::pair{std::max(0.0, added_ms) / (before - pk), pk};
    });
    if (!c || !st.change(*c)) return false;
  }
  for (;;) {
    const double before = st.peak(s);
    const auto faster = [](const BodyKind& b, Recompute f, Recompute t) {
      return b.backward(t) < b.backward(f) - 1e-9;
    };
    const auto c = best_class_change(st, s, faster, [&](double added_ms, double pk) -> Key {
      if (pk > lim) return std::nullopt;
      return std::pair{added_ms / std::max(pk - before, 1e-3), 0.0};
    });
    if (!c || !st.change(*c)) break;
  }
  return true;
}

}  // namespace

std::optional<Assignment> memory_aware_start(const BalanceProblem& problem, const ScheduleGraph& graph) {
  if (problem.model.bodies.size() != 1) return std::nullopt;
  const int S = problem.pipeline.stages, V = problem.pipeline.chunks;
  const int L = problem.model.bodies[0].count;
  if (L < S * V) return std::nullopt;
  const Recompute light = lightest_class(problem, 0);
  Assignment a(1, V, S);
  for (int v = 0; v < V; ++v)
    for (int s = 0; s < S; ++s) a.at(0, light, v, s) = 1;
  for (int placed = S * V; placed < L; ++placed) {
    const ChunkCosts c = chunk_costs(problem, a);
    int best_v = -1, best_s = -1;
    double best_work = 0, best_peak = 0;
    bool best_fits = false;
    for (int s = 0; s < S; ++s) {
      double work = 0;
      for (int v = 0; v < V; ++v) work += c.fwd(v, s) + c.bwd(v, s);
      for (int v = 0; v < V; ++v) {
        ++a.at(0, light, v, s);
        const double pk = simulate_stage_peak(graph, chunk_costs(problem, a), s);
        --a.at(0, light, v, s);
        const bool fits = pk <= problem.memory_limit_mb + 1e-6;
        // Fitting first; then the least loaded stage; then the chunk that adds the least peak.
        const bool better =
            best_v < 0 || (fits != best_fits ? fits
                           : fits ? (work < best_work - 1e-9 || (work <= best_work + 1e-9 && pk < best_peak))
                                  : pk < best_peak);
        if (better) {
          best_v = v;
          best_s = s;
          best_work = work;
          best_peak = pk;
          best_fits = fits;
        }
      }
    }
    ++a.at(0, light, best_v, best_s);
  }
  // Faster classes wherever the memory allows.
  State st(problem, graph, a);
  for (int s = 0; s < S; ++s)
    if (st.peak(s) <= st.limit() + 1e-6) repair_stage(st, s);
  return st.assignment();
}

SearchResult improve_placement(const BalanceProblem& problem, const ScheduleGraph& graph,
                               const Assignment& start, const SearchOptions& options) {
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto st = std::make_unique<State>(problem, graph, start);
  SearchResult res;
  res.best = st->assignment();
  res.fits = st->fits();
  res.makespan_ms = st->makespan();
  double best_obj = st->objective(1000.0);
  // Hard memory rule until a fitting placement is reached; then the soft penalty when one is set.
  bool soft = false;
  res.evaluations = 1;

  const int S = st->S(), V = st->V(), K = st->K();
  std::mt19937_64 rng(options.seed);
  auto uni = [&](int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); };
  auto unit = [&] { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); };
  std::vector<std::pair<int, double>> saved;

  const double relocate_share = options.relocate_share;
  auto keep_if_best = [&] {
    const double ranked = st->objective(1000.0);
    if (ranked < best_obj - 1e-9 && (st->fits() || !res.fits)) {
      best_obj = ranked;
      res.best = st->assignment();
      res.fits = st->fits();
      res.makespan_ms = st->makespan();
      ++res.improvements;
    }
    if (st->fits() && options.memory_penalty > 0) soft = true;
  };

  // Applies m; keeps it when memory stays acceptable and `accept(new, old)`; else restores.
  auto attempt = [&](const Move& m, auto&& accept) -> bool {
    const double pen = soft ? options.memory_penalty : 1000.0;
    const double old_obj = st->objective(pen);
    const double old_excess = st->excess();
    const double old_makespan = st->makespan();
    if (!st->apply(m)) return false;
    st->refresh_memory(m, saved);
    // While fitting, never leave the feasible region; while not, never increase the excess.
    const double new_excess = st->excess();
    if (!soft && ((old_excess <= 1e-6 && new_excess > 1e-6) ||
                  (old_excess > 1e-6 && new_excess > old_excess + 1e-9))) {
      st->undo(m);
      st->restore_memory(saved);
      return false;
    }
    st->refresh_time();
    ++res.evaluations;
    const double new_obj = st->objective(pen);
    if (!accept(new_obj, old_obj)) {
      st->undo(m);
      st->restore_memory(saved);
      st->set_makespan(old_makespan);
      return false;
    }
    keep_if_best();
    return true;
  };

  // A random layer: chunk first, then a (kind, class) present there.
  auto pick_layer = [&](Change& c) -> bool {
    for (int tries = 0; tries < 64; ++tries) {
      c.v1 = uni(V);
      c.s1 = uni(S);
      const int n = st->assignment().chunk_layers(c.v1, c.s1);
      if (n < 1) continue;
      int pick = uni(n);
      for (int k = 0; k < K; ++k)
        for (int r : st->classes(k)) {
          const int cnt = st->assignment().at(k, static_cast<Recompute>(r), c.v1, c.s1);
          if (pick < cnt) {
            c.kind = k;
            c.r_from = r;
            return true;
          }
          pick -= cnt;
        }
    }
    return false;
  };
  auto random_class = [&](int k) {
    const auto& cls = st->classes(k);
    return cls[uni(static_cast<int>(cls.size()))];
  };
  auto random_move = [&]() -> Move {
    Move m;
    Change& a = m.c[0];
    if (!pick_layer(a)) return m;
    const double u = unit();
    if (u < 0.35) {  // change the class in place
      a.v2 = a.v1;
      a.s2 = a.s1;
      a.r_to = random_class(a.kind);
    } else if (u < 0.75) {  // move the layer (nearby more often)
      a.v2 = a.v1;
      a.s2 = a.s1;
      if (unit() < 0.6) {
        if (unit() < 0.5 || V == 1)
          a.s2 = std::clamp(a.s1 + (unit() < 0.5 ? -1 : 1), 0, S - 1);
        else
          a.v2 = uni(V);
      } else {
        a.v2 = uni(V);
        a.s2 = uni(S);
      }
      a.r_to = unit() < 0.5 ? a.r_from : random_class(a.kind);
    } else {  // two layers: swap chunks, or exchange classes
      Change& b = m.c[1];
      if (!pick_layer(b)) return m;
      m.n = 2;
      if (unit() < 0.5) {
        a.v2 = b.v1;
        a.s2 = b.s1;
        a.r_to = a.r_from;
        b.v2 = a.v1;
        b.s2 = a.s1;
        b.r_to = b.r_from;
      } else {
        a.v2 = a.v1;
        a.s2 = a.s1;
        b.v2 = b.v1;
        b.s2 = b.s1;
        a.r_to = b.r_from;
        b.r_to = a.r_from;
        if (!problem.model.bodies[a.kind].considered(static_cast<Recompute>(a.r_to)) ||
            !problem.model.bodies[b.kind].considered(static_cast<Recompute>(b.r_to)))
          m.n = 0;
      }
    }
    return m;
  };

  // Relocate one layer to another chunk, then re-choose the recompute classes of both stages
  // (repair_stage): the neighbourhood for placements held at the memory limit, where a plain move
  // must be paired with class changes to stay within it.
  auto relocate = [&](auto&& accept) -> bool {
    Change a;
    if (!pick_layer(a)) return false;
    if (unit() < 0.5 || V == 1) {
      a.v2 = unit() < 0.5 || V == 1 ? a.v1 : uni(V);
      a.s2 = uni(S);
    } else {
      a.v2 = uni(V);
      a.s2 = a.s1;
    }
    a.r_to = a.r_from;
    if (a.v2 == a.v1 && a.s2 == a.s1) return false;
    const double pen = soft ? options.memory_penalty : 1000.0;
    const double old_obj = st->objective(pen);
    const double old_makespan = st->makespan();
    const double old_excess = st->excess();
    st->forget_journal();
    if (!st->change(a)) return false;
    bool ok = repair_stage(*st, a.s2) && repair_stage(*st, a.s1);
    if (ok && !soft) {
      const double e = st->excess();
      ok = (old_excess <= 1e-6 && e <= 1e-6) || (old_excess > 1e-6 && e <= old_excess + 1e-9);
    }
    if (!ok) {
      st->rollback(0);
      return false;
    }
    st->refresh_time();
    ++res.evaluations;
    if (!accept(st->objective(pen), old_obj)) {
      st->rollback(0);
      st->set_makespan(old_makespan);
      return false;
    }
    st->forget_journal();
    keep_if_best();
    return true;
  };

  auto anneal = [&](long iters, double t_start, double t_end) {
    for (long it = 0; it < iters; ++it) {
      if ((it & 1023) == 0 && elapsed() > options.time_limit_s) break;
      const double temp = t_start * std::pow(t_end / t_start, static_cast<double>(it) / std::max(1L, iters));
      auto acc = [&](double nw, double old) {
        return nw <= old + 1e-12 || unit() < std::exp(-(nw - old) / temp);
      };
      if (relocate_share > 0 && unit() < relocate_share) {
        relocate(acc);
        continue;
      }
      Move m = random_move();
      if (m.n == 0) continue;
      attempt(m, acc);
    }
  };
  // First-improvement descent over all single-layer moves from the current state.
  auto descend = [&] {
    auto better = [](double nw, double old) { return nw < old - 1e-9; };
    bool improved = true;
    while (improved && elapsed() <= options.time_limit_s) {
      improved = false;
      for (int k = 0; k < K && !improved; ++k)
        for (int v1 = 0; v1 < V && !improved; ++v1)
          for (int s1 = 0; s1 < S && !improved; ++s1)
            for (int rf : st->classes(k)) {
              if (improved) break;
              if (st->assignment().at(k, static_cast<Recompute>(rf), v1, s1) < 1) continue;
              for (int v2 = 0; v2 < V && !improved; ++v2)
                for (int s2 = 0; s2 < S && !improved; ++s2)
                  for (int rt : st->classes(k)) {
                    Move m;
                    m.c[0] = {k, rf, v1, s1, rt, v2, s2};
                    if (attempt(m, better)) {
                      improved = true;
                      break;
                    }
                  }
            }
    }
  };

  const double base = std::max(1.0, st->makespan());
  const long iters = std::max(0L, options.iterations);
  const int kicks = std::max(0, options.kicks);
  const long first = kicks > 0 ? iters / 2 : iters;
  anneal(first, options.temperature_start * base, options.temperature_end * base);
  if (options.descent) {
    st = std::make_unique<State>(problem, graph, res.best);
    soft = false;
    descend();
  }
  for (int round = 0; round < kicks && elapsed() <= options.time_limit_s; ++round) {
    st = std::make_unique<State>(problem, graph, res.best);
    soft = false;
    // Perturb: a few random moves that keep the memory within the limit, whatever they cost.
    for (int j = 0, tries = 0; j < 6 && tries < 200; ++tries) {
      Move m = random_move();
      if (m.n > 0 && attempt(m, [](double, double) { return true; })) ++j;
    }
    soft = options.memory_penalty > 0 && res.fits;
    anneal((iters - first) / kicks, 0.2 * options.temperature_start * base, options.temperature_end * base);
    if (options.descent) {
      st = std::make_unique<State>(problem, graph, res.best);
      soft = false;
      descend();
    }
  }
  res.seconds = elapsed();
  return res;
}

}  // namespace preflight::analyzer::balance
