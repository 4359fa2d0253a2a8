// SimuMax v1.2 pipeline schedules.  See pipeline.hpp.
#include "pipeline.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace preflight::analyzer::cost::detail {

namespace {

enum class Kind { F, B, Send, Recv, Comm };

/// A p2p transfer's identity: direction, micro batch / virtual stage, source and destination rank.
using Gid = std::tuple<int, int, int, int, int>;

struct SubOp {
  Kind kind = Kind::Send;
  Gid gid{};
  double dur = 0;
  double ready_t = -1;
  bool done = false;
};

}  // namespace

// SimuMax only issues a transfer whose time is > 0, so with free transfers the stages stop waiting for
// each other and the bubble disappears; every transfer between neighbours is issued here (identical
// results whenever transfers cost anything, as they always do with a latency).
namespace {
/// The slowest rank's finish once each rank has run its tail (`tails`, optional) after its last pass; the
/// tails go into `events` as "deferred wgrad".
double with_tails(std::vector<double>& t, const std::vector<double>* tails,
                  std::vector<ScheduleEvent>* events) {
  if (tails)
    for (std::size_t r = 0; r < t.size() && r < tails->size(); ++r) {
      const double d = (*tails)[r];
      if (!(d > 0)) continue;
      if (events) events->push_back({static_cast<int>(r), "deferred wgrad", "compute", -1, t[r], d});
      t[r] += d;
    }
  return *std::max_element(t.begin(), t.end());
}
}  // namespace

double one_f_one_b_time(int pp, int mbc, const std::vector<StagePhases>& stages,
                        std::vector<ScheduleEvent>* events, const std::vector<double>* rank_tail_ms) {
  // Each rank's program is generated block by block (at most 7 ops: one micro batch of warmup,
  // steady state or cooldown), so no op list is materialised.  A transfer is identified by
  // (direction, micro batch, sender): the pair is the send of one rank and the recv of its neighbour.
  struct Op {
    std::uint8_t kind;  // 0 F, 1 B, 2 send, 3 recv
    std::int32_t peer;
    std::int64_t gid;
    double dur;
    std::int32_t mb = -1;  // compute blocks: the micro batch
  };
  struct Rank {
    int warmup = 0, remaining = 0, phase = 0, k = 0, n = 0, i = 0;
    Op block[8];  // at most 7: recv, F, send+recv, B, send+recv
  };
  auto gid = [](int dir, int mb, int src) {
    return (static_cast<std::int64_t>(dir) << 40) | (static_cast<std::int64_t>(mb) << 16) | src;
  };
  std::vector<Rank> R(pp);
  // Fills the next block of rank r; false when its program is over.
  auto refill = [&](int r) {
    Rank& x = R[r];
    const StagePhases& s = stages[r];
    bool odd = r % 2;
    x.n = x.i = 0;
    auto push = [&](std::uint8_t kind, int peer, std::int64_t g, double d, int mb = -1) {
      x.block[x.n++] = {kind, peer, g, d, mb};
    };
    auto recv_prev = [&](int mb) { push(3, r - 1, gid(0, mb, r - 1), s.fwd_recv); };
    auto send_next = [&](int mb) { push(2, r + 1, gid(0, mb, r), s.fwd_send); };
    auto recv_next = [&](int mb) { push(3, r + 1, gid(1, mb, r + 1), s.bwd_recv); };
    auto send_prev = [&](int mb) { push(2, r - 1, gid(1, mb, r), s.bwd_send); };
    while (x.n == 0) {
      if (x.phase == 0) {  // warmup: forwards only
        if (x.k >= x.warmup) {
          x.phase = 1, x.k = 0;
          continue;
        }
        if (r > 0) recv_prev(x.k);
        push(0, -1, 0, s.fwd_compute, x.k);
        if (r < pp - 1) send_next(x.k);
        ++x.k;
      } else if (x.phase == 1) {  // steady 1F1B
        if (x.k >= x.remaining) {
          x.phase = 2, x.k = 0;
          continue;
        }
        int f = x.warmup + x.k, b = x.k;
        bool last = x.k == x.remaining - 1;
        if (r != 0 && x.k == 0) recv_prev(f);
        push(0, -1, 0, s.fwd_compute, f);
        if (r != pp - 1) {  // odd ranks send first, even ranks receive first
          if (odd) {
            send_next(f);
            recv_next(b);
          } else {
            recv_next(b);
            send_next(f);
          }
        }
        push(1, -1, 0, s.bwd_compute, b);
        if (r != 0) {
          if (last) {
            send_prev(b);
          } else if (odd) {
            send_prev(b);
            recv_prev(f + 1);
          } else {
            recv_prev(f + 1);
            send_prev(b);
          }
        }
        ++x.k;
      } else if (x.phase == 2) {  // cooldown: backwards only
        if (x.k >= x.warmup) {
          x.phase = 3;
          return false;
        }
        int b = x.remaining + x.k;
        if (r != pp - 1) recv_next(b);
        push(1, -1, 0, s.bwd_compute, b);
        if (r != 0) send_prev(b);
        ++x.k;
      } else {
        return false;
      }
    }
    return true;
  };
  std::vector<char> active(pp, 0);
  int running = 0;
  for (int r = 0; r < pp; ++r) {
    R[r].warmup = std::min(pp - r - 1, mbc);
    R[r].remaining = mbc - R[r].warmup;
    active[r] = refill(r);
    running += active[r];
  }
  auto head = [&](int r) -> const Op* { return active[r] ? &R[r].block[R[r].i] : nullptr; };
  auto pop = [&](int r) {
    if (++R[r].i == R[r].n) {
      active[r] = refill(r);
      if (!active[r]) --running;
    }
  };
  // Every op starts when its predecessor on the rank (and, for a transfer, the peer's predecessor)
  // has ended, so ranks can be advanced greedily in sweeps; the times equal SimuMax's round-by-round
  // replay, whose rounds only order independent ops.
  std::vector<double> t(pp, 0.0);
  while (running > 0) {
    bool progressed = false;
    for (int r = 0; r < pp; ++r) {
      while (const Op* op = head(r)) {
        if (op->kind <= 1) {
          if (events)
            events->push_back({r, (op->kind == 0 ? "F" : "B") + std::to_string(op->mb), "compute", op->mb, t[r],
                               op->dur});
          t[r] += op->dur;
          pop(r);
          progressed = true;
          continue;
        }
        int peer = op->peer;
        const Op* po = head(peer);
        if (!po || po->kind < 2 || op->gid != po->gid || op->kind == po->kind) break;
        const double start = std::max(t[r], t[peer]);
        double end = start + std::max(op->dur, po->dur);
        if (events) {
          events->push_back({r, op->kind == 2 ? "send" : "recv", "p2p", -1, start, end - start});
          events->push_back({peer, po->kind == 2 ? "send" : "recv", "p2p", -1, start, end - start});
        }
        t[r] = t[peer] = end;
        pop(r);
        pop(peer);
        progressed = true;
      }
    }
    if (!progressed) throw std::runtime_error("1F1B phase scheduler deadlock");
  }
  return with_tails(t, rank_tail_ms, events);
}

namespace {

struct Job {
  Kind kind = Kind::F;
  double dur = 0;
  int mb = -1, chunk = -1;  // compute: micro batch and virtual chunk (for the trace)
  double first_submit = -1;  // comm: when the rank reached the bundle
  std::vector<SubOp> bundle;
  double max_end = 0;
  Gid wait_gid{};
  bool has_wait = false;
};

/// PpSchedule's interleaved order: micro batches in groups of `group`, each group through all `vp` chunks;
/// entry k = (micro batch, chunk) of the k-th forward pass (mbc·vp entries).
std::vector<std::pair<int, int>> interleaved_order(int mbc, int vp, int group) {
  std::vector<std::pair<int, int>> table;
  for (int lo = 0; lo < mbc; lo += group) {
    int hi = std::min(mbc, lo + group);
    for (int c = 0; c < vp; ++c)
      for (int mb = lo; mb < hi; ++mb) table.push_back({mb, c});
  }
  return table;
}

/// PpSchedule._prefill_batch_interleaved, blocking path, for one rank.
std::vector<Job> interleaved_jobs(int pp, int vp, int rank, int mbc, int group,
                                  const std::vector<StagePhases>& ch, double p2p) {
  int total = mbc * vp, tvs = vp * pp;
  int warmup = megatron_interleaved_warmup(pp, vp, rank, group, 0, total);  // as PpSchedule counts them
  int remaining = total - warmup;
  std::vector<std::pair<int, int>> table = interleaved_order(mbc, vp, group);
  auto chunk_id = [&](int k, bool fwd) {
    int c = table[((k % total) + total) % total].second;
    return fwd ? c : vp - c - 1;
  };
  auto recv_needed = [&](int k, bool fwd) {
    bool recv = true;
    bool leading = fwd ? rank == 0 : rank == pp - 1;
    int last_chunk = fwd ? vp - 1 : 0;
    if (leading) {
      int next;
      if (k < pp - 1) {
        recv = false;
        next = chunk_id(k + 1, fwd);
      } else {
        next = chunk_id(k - (pp - 1), fwd);
      }
      if (next == last_chunk) recv = false;
    }
    return recv;
  };
  struct Ref {
    int mb, chunk, vi;
  };
  auto fwd_ref = [&](int k) {
    auto [mb, c] = table[k];
    return Ref{mb, c, c * pp + rank};
  };
  auto bwd_ref = [&](int k) {
    auto [mb, fc] = table[k];
    int c = vp - 1 - fc;
    return Ref{mb, c, c * pp + rank};
  };
  int prev = ((rank - 1) % pp + pp) % pp, next = (rank + 1) % pp;
  // Gid: (direction 0 fwd / 1 bwd, virtual stage of the receiver, micro batch, src, dst).
  auto send_next = [&](int vi_plus1, int mb) {
    return SubOp{Kind::Send, {0, vi_plus1, mb, rank, next}, p2p};
  };
  auto recv_prev = [&](int vi, int mb) { return SubOp{Kind::Recv, {0, vi, mb, prev, rank}, p2p}; };
  auto recv_next = [&](int vi, int mb) { return SubOp{Kind::Recv, {1, vi, mb, next, rank}, p2p}; };
  auto send_prev = [&](int vi_minus1, int mb) {
    return SubOp{Kind::Send, {1, vi_minus1, mb, rank, prev}, p2p};
  };
  std::vector<Job> jobs;
  auto compute = [&](Kind k, const Ref& r) {
    Job j;
    j.kind = k;
    j.dur = k == Kind::F ? ch[r.chunk].fwd_compute : ch[r.chunk].bwd_compute;
    j.mb = r.mb;
    j.chunk = r.chunk;
    jobs.push_back(j);
  };
  auto comms = [&](std::vector<SubOp> ops) {
    if (ops.empty()) return;
    Job j;
    j.kind = Kind::Comm;
    j.bundle = std::move(ops);
    jobs.push_back(std::move(j));
  };
  if (rank != 0) {
    Ref r0 = fwd_ref(0);
    if (r0.vi > 0) comms({recv_prev(r0.vi, r0.mb)});
  }
  bool need_bwd = false;
  for (int k = 0; k < warmup; ++k) {
    Ref f = fwd_ref(k);
    compute(Kind::F, f);
    bool nrf = recv_needed(k, true);
    if (k == total - 1) nrf = false;
    if (k == warmup - 1 && remaining > 0) need_bwd = rank != pp - 1;
    std::vector<SubOp> ops;  // order: send_prev, recv_prev, send_next, recv_next
    SubOp sn, rp, rn;
    bool has_sn = false, has_rp = false, has_rn = false;
    if (f.vi < tvs - 1) sn = send_next(f.vi + 1, f.mb), has_sn = true;
    if (k + 1 < total && nrf) {
      Ref nf = fwd_ref(k + 1);
      if (nf.vi > 0) rp = recv_prev(nf.vi, nf.mb), has_rp = true;
    } else if (remaining == 0 && rank == 0 && k + 1 < total) {
      Ref nf = fwd_ref(k + 1);
      if (nf.vi > 0) rp = recv_prev(nf.vi, nf.mb), has_rp = true;
    }
    if (k == warmup - 1 && remaining > 0 && need_bwd) {
      Ref b0 = bwd_ref(0);
      if (b0.vi < tvs - 1) rn = recv_next(b0.vi, b0.mb), has_rn = true;
    }
    if (has_rp) ops.push_back(rp);
    if (has_sn) ops.push_back(sn);
    if (has_rn) ops.push_back(rn);
    comms(ops);
  }
  if (remaining == 0 && rank != pp - 1) {
    Ref b0 = bwd_ref(0);
    if (b0.vi < tvs - 1) comms({recv_next(b0.vi, b0.mb)});
  }
  for (int k = 0; k < remaining; ++k) {
    int fk = k + warmup, bk = k;
    Ref f = fwd_ref(fk), b = bwd_ref(bk);
    compute(Kind::F, f);
    compute(Kind::B, b);
    bool nrf = recv_needed(fk, true), nrb = recv_needed(bk, false);
    if (k == remaining - 1) nrf = false;
    std::vector<SubOp> ops;
    if (b.vi > 0) ops.push_back(send_prev(b.vi - 1, b.mb));
    if (fk + 1 < total && nrf) {
      Ref nf = fwd_ref(fk + 1);
      if (nf.vi > 0) ops.push_back(recv_prev(nf.vi, nf.mb));
    }
    if (f.vi < tvs - 1) ops.push_back(send_next(f.vi + 1, f.mb));
    if (bk + 1 < total && nrb) {
      Ref nb = bwd_ref(bk + 1);
      if (nb.vi < tvs - 1) ops.push_back(recv_next(nb.vi, nb.mb));
    }
    comms(ops);
  }
  for (int k = remaining; k < total; ++k) {
    Ref b = bwd_ref(k);
    compute(Kind::B, b);
    bool nrb = recv_needed(k, false);
    if (k == total - 1) nrb = false;
    std::vector<SubOp> ops;
    if (b.vi > 0) ops.push_back(send_prev(b.vi - 1, b.mb));
    if (k + 1 < total && nrb) {
      Ref nb = bwd_ref(k + 1);
      if (nb.vi < tvs - 1) ops.push_back(recv_next(nb.vi, nb.mb));
    } else if (remaining == 0 && rank == pp - 1 && k + 1 < total) {
      Ref nb = bwd_ref(k + 1);
      if (nb.vi < tvs - 1) ops.push_back(recv_next(nb.vi, nb.mb));
    }
    comms(ops);
  }
  return jobs;
}

}  // namespace

double interleaved_sync_time(int pp, int vp, int mbc, int group,
                             const std::vector<std::vector<StagePhases>>& chunks, double p2p,
                             std::vector<ScheduleEvent>* events, const std::vector<double>* rank_tail_ms) {
  std::vector<std::deque<Job>> q(pp);
  for (int r = 0; r < pp; ++r) {
    auto jobs = interleaved_jobs(pp, vp, r, mbc, group, chunks[r], p2p);
    q[r].assign(jobs.begin(), jobs.end());
  }
  std::vector<double> t(pp, 0.0);
  std::vector<int> ver(pp, 0);
  using Entry = std::tuple<double, int, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto push = [&](int r) {
    ++ver[r];
    heap.push({t[r], r, ver[r]});
  };
  struct Waiter {
    int rank;
    Job* job;
    SubOp* sub;
  };
  std::map<Gid, Waiter> waiting;
  for (int r = 0; r < pp; ++r) push(r);
  auto any = [&] { return std::any_of(q.begin(), q.end(), [](const auto& d) { return !d.empty(); }); };
  while (any() || !waiting.empty()) {
    if (heap.empty()) throw std::runtime_error("interleaved sync scheduler deadlock");
    auto [time, rank, token] = heap.top();
    (void)time;
    heap.pop();
    if (token != ver[rank] || q[rank].empty()) continue;
    Job& op = q[rank].front();
    if (op.kind == Kind::F || op.kind == Kind::B) {
      if (events)
        events->push_back({rank, (op.kind == Kind::F ? "F" : "B") + std::to_string(op.mb) + "." + std::to_string(op.chunk),
                           "compute", op.mb, t[rank], op.dur});
      t[rank] += op.dur;
      q[rank].pop_front();
      push(rank);
      continue;
    }
    double submit = t[rank], cursor = submit;
    if (op.first_submit < 0) op.first_submit = submit;
    op.max_end = std::max(op.max_end, submit);
    op.has_wait = false;
    for (SubOp& sub : op.bundle) {
      if (sub.done) continue;
      if (sub.ready_t < 0) sub.ready_t = submit;
      auto it = waiting.find(sub.gid);
      if (it == waiting.end()) {
        waiting[sub.gid] = {rank, &op, &sub};
        if (!op.has_wait) op.wait_gid = sub.gid, op.has_wait = true;
        continue;
      }
      Waiter w = it->second;
      if (w.rank == rank) {
        if (!op.has_wait) op.wait_gid = sub.gid, op.has_wait = true;
        continue;
      }
      if (w.sub->kind == sub.kind) throw std::runtime_error("interleaved scheduler: same-kind rendezvous");
      waiting.erase(it);
      double end = std::max(sub.ready_t, w.sub->ready_t) + std::max(sub.dur, w.sub->dur);
      sub.done = w.sub->done = true;
      cursor = std::max(cursor, end);
      op.max_end = std::max(op.max_end, end);
      t[w.rank] = std::max(t[w.rank], end);
      w.job->max_end = std::max(w.job->max_end, end);
      if (w.job->has_wait && w.job->wait_gid == sub.gid && !q[w.rank].empty() && &q[w.rank].front() == w.job)
        push(w.rank);
    }
    t[rank] = std::max(t[rank], cursor);
    bool all_done = std::all_of(op.bundle.begin(), op.bundle.end(), [](const SubOp& s) { return s.done; });
    if (all_done) {
      t[rank] = std::max(t[rank], op.max_end);
      if (events && t[rank] > op.first_submit)
        events->push_back({rank, "p2p", "p2p", -1, op.first_submit, t[rank] - op.first_submit});
      q[rank].pop_front();
      push(rank);
    }
  }
  return with_tails(t, rank_tail_ms, events);
}

std::vector<PassItem> interleaved_program(int pp, int vp, int rank, int mbc, int group, int extra_warmup) {
  const int total = mbc * vp;
  const int warmup = megatron_interleaved_warmup(pp, vp, rank, group, extra_warmup, total);
  const int remaining = total - warmup;
  const std::vector<std::pair<int, int>> table = interleaved_order(mbc, vp, group);
  std::vector<PassItem> seq;
  seq.reserve(2 * static_cast<std::size_t>(total));
  auto fwd = [&](int k) { seq.push_back({true, table[k].first, table[k].second}); };
  auto bwd = [&](int k) { seq.push_back({false, table[k].first, vp - 1 - table[k].second}); };
  for (int k = 0; k < warmup; ++k) fwd(k);
  for (int k = 0; k < remaining; ++k) {
    fwd(k + warmup);
    bwd(k);
  }
  for (int k = remaining; k < total; ++k) bwd(k);
  return seq;
}

double interleaved_async_time(int pp, int vp, int mbc, int group,
                              const std::vector<std::vector<StagePhases>>& chunks, double p2p,
                              std::vector<ScheduleEvent>* events, const std::vector<double>* rank_tail_ms,
                              int extra_warmup) {
  // Finish time of each pass: [fwd/bwd][virtual stage c·pp + rank][micro batch]; < 0 = not run yet.
  const int stages = pp * vp;
  std::vector<std::vector<std::vector<double>>> done(
      2, std::vector<std::vector<double>>(static_cast<std::size_t>(stages), std::vector<double>(mbc, -1.0)));
  auto finished = [&](bool fwd, int chunk, int rank, int mb) {
    return done[fwd ? 0 : 1][static_cast<std::size_t>(chunk * pp + rank)][static_cast<std::size_t>(mb)];
  };
  std::vector<std::vector<PassItem>> prog(pp);
  for (int r = 0; r < pp; ++r) prog[r] = interleaved_program(pp, vp, r, mbc, group, extra_warmup);
  std::vector<std::size_t> next(pp, 0);
  std::vector<double> t(pp, 0.0);
  // The pass that feeds this one (virtual stage before it in the forward order, after it in the backward),
  // or none: the first virtual stage's forward, and the last one's backward (after its own forward).
  auto ready = [&](int rank, const PassItem& it, double& at) {
    const int vs = it.chunk * pp + rank;
    if (it.fwd) {
      if (vs == 0) return at = 0, true;
      const int prev = vs - 1;
      const double f = finished(true, prev / pp, prev % pp, it.mb);
      return f < 0 ? false : (at = f + p2p, true);
    }
    if (vs == stages - 1) {
      const double f = finished(true, it.chunk, rank, it.mb);
      return f < 0 ? false : (at = f, true);
    }
    const int nxt = vs + 1;
    const double f = finished(false, nxt / pp, nxt % pp, it.mb);
    return f < 0 ? false : (at = f + p2p, true);
  };
  std::size_t left = 0;
  for (const auto& p : prog) left += p.size();
  while (left > 0) {
    bool progressed = false;
    for (int r = 0; r < pp; ++r) {
      while (next[r] < prog[r].size()) {
        const PassItem& it = prog[r][next[r]];
        double at = 0;
        if (!ready(r, it, at)) break;
        const StagePhases& ph = chunks[static_cast<std::size_t>(r)][static_cast<std::size_t>(it.chunk)];
        const double dur = it.fwd ? ph.fwd_compute : ph.bwd_compute;
        const double start = std::max(t[r], at);
        t[r] = start + dur;
        done[it.fwd ? 0 : 1][static_cast<std::size_t>(it.chunk * pp + r)][static_cast<std::size_t>(it.mb)] =
            t[r];
        if (events)
          events->push_back({r, (it.fwd ? "F" : "B") + std::to_string(it.mb) + "." + std::to_string(it.chunk),
                             "compute", it.mb, start, dur});
        ++next[r];
        --left;
        progressed = true;
      }
    }
    if (!progressed)
      throw std::runtime_error("interleaved async scheduler: the ranks' orders wait on each other");
  }
  return with_tails(t, rank_tail_ms, events);
}

VppMemory interleaved_memory(int pp, int vp, int rank, int mbc, int group,
                             const std::vector<const ChunkEstimate*>& ch) {
  VppMemory out;
  const std::vector<PassItem> seq = interleaved_program(pp, vp, rank, mbc, group);
  double live = 0, peak = 0;
  int entries = 0;
  for (const PassItem& it : seq) {
    const ChunkEstimate& c = *ch[it.chunk];
    const ActivationPeak& a = c.activation;
    double cache = a.cache_bytes, in_chunk, delta;
    const std::string* path;
    const char* stage;
    if (it.fwd) {
      in_chunk = a.forward_bytes;
      path = &a.forward_path;
      stage = "forward";
      delta = cache;
      if (delta > 0) ++entries;
    } else {
      double window = std::max({a.backward_bytes, a.recompute_forward_bytes, a.recompute_backward_bytes});
      if (window == a.recompute_forward_bytes)
        path = &a.recompute_forward_path, stage = "recompute_forward";
      else if (window == a.recompute_backward_bytes)
        path = &a.recompute_backward_path, stage = "recompute_backward";
      else
        path = &a.backward_path, stage = "backward";
      in_chunk = std::max(0.0, window - cache);
      delta = -cache;
      if (delta < 0 && cache > 0) --entries;
    }
    double phase_peak = live + in_chunk;
    if (phase_peak >= peak) {
      peak = phase_peak;
      out.peak_path =
          c.name + "[mb" + std::to_string(it.mb) + ",chunk" + std::to_string(it.chunk) + "]: " + *path;
      out.peak_stage = stage;
    }
    live += delta;
    out.max_live_entries = std::max(out.max_live_entries, entries);
  }
  out.peak_bytes = peak;
  return out;
}

}  // namespace preflight::analyzer::cost::detail
