#include "preflight/log_parse/memory_measurement.hpp"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <vector>

#include "preflight/common/error.hpp"
#include "preflight/log_parse/trace_reader.hpp"
#include "hook_trace/trace_replay.hpp"

namespace preflight::log_parse {

namespace {

constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();

const char* kParameters = "setup.parameters";
const char* kGradBuffer = "setup.grad_buffer";
const char* kOptimizer = "setup.optimizer";
const char* kIteration = "schedule.iteration";
const char* kForward = "schedule.forward_step";
const char* kBackward = "schedule.backward_step";

struct Allocation {
  std::uint64_t slot = 0;
  std::uint64_t freed = kNever;  // slot of its free
  std::uint64_t size = 0;
  std::uint32_t marker = 0;
  int space = 0;
};

struct Push {
  std::uint64_t slot;
  std::uint32_t marker;
};

/// Records allocations with the slot of their free.
class Collector : public detail::ReplayVisitor {
 public:
  std::vector<Allocation> allocs;
  std::unordered_map<std::uint64_t, std::size_t> live;  // (space, addr) → index

  static std::uint64_t key(int space, std::uint64_t addr) {
    return addr ^ (static_cast<std::uint64_t>(space) << 56);
  }
  void on_alloc(const TraceEvent& e, const detail::Block& b) override {
    live[key(b.space, e.addr)] = allocs.size();
    allocs.push_back({e.slot, kNever, b.size, b.marker, b.space});
  }
  void on_free(const TraceEvent& e, int space, const detail::Block* b) override {
    if (!b) return;
    auto it = live.find(key(space, e.addr));
    if (it == live.end()) return;
    allocs[it->second].freed = e.slot;
    live.erase(it);
  }
};

}  // namespace

MemoryMeasurement measure_memory(const std::string& path) {
  TraceReader reader(path);
  MemoryMeasurement m;
  m.file = path;
  m.rank = reader.info().rank;
  m.world_size = reader.info().world_size;
  m.min_bytes = reader.info().min_bytes;

  detail::Replay replay;
  Collector col;
  std::vector<Push> pushes;
  TraceEvent e;
  std::uint64_t last_slot = 0;
  while (reader.next(e)) {
    last_slot = e.slot;
    if (e.kind == trace::Kind::kMarkerPush) pushes.push_back({e.slot, e.marker});
    replay.apply(e, col);
  }
  const auto& names = reader.marker_names();
  auto name_of = [&](std::uint32_t id) -> std::string { return id < names.size() ? names[id] : ""; };

  // Memory space: CUDA device 0 when the run allocated on it, else host.
  bool any_device =
      std::any_of(col.allocs.begin(), col.allocs.end(), [](const Allocation& a) { return a.space == 1; });
  int space = any_device ? 1 : 0;
  m.device = any_device;

  std::vector<std::uint64_t> iterations, forwards, backwards;
  std::uint64_t baseline = kNever;
  for (const Push& p : pushes) {
    std::string n = name_of(p.marker);
    if (n == kIteration) iterations.push_back(p.slot);
    if (n == kForward) forwards.push_back(p.slot);
    if (n == kBackward) backwards.push_back(p.slot);
    if (n == kParameters && baseline == kNever) baseline = p.slot;
  }
  if (forwards.empty() || backwards.empty())
    throw InputError(path,
                     "no schedule.forward_step / schedule.backward_step markers: the traced program does not "
                     "mark its schedule (see examples/torch_cpu_gpt/gpt_cpu/markers.py)");
  if (iterations.empty())
    throw InputError(path, "no schedule.iteration markers: cannot tell the iterations apart");
  if (baseline == kNever) baseline = 0;
  m.iterations = static_cast<int>(iterations.size());

  // The last iteration whose forward and backward steps pair up.
  auto in_range = [](const std::vector<std::uint64_t>& v, std::uint64_t lo, std::uint64_t hi) {
    std::vector<std::uint64_t> out;
    for (auto s : v)
      if (s > lo && s < hi) out.push_back(s);
    return out;
  };
  std::vector<std::uint64_t> fw, bw;
  int measured_iteration = -1;
  for (int it = static_cast<int>(iterations.size()) - 1; it >= 0; --it) {
    std::uint64_t lo = iterations[it],
                  hi = it + 1 < static_cast<int>(iterations.size()) ? iterations[it + 1] : kNever;
    auto f = in_range(forwards, lo, hi), b = in_range(backwards, lo, hi);
    if (!f.empty() && f.size() == b.size()) {
      fw = f;
      bw = b;
      measured_iteration = it;
      break;
    }
  }
  if (measured_iteration < 0)
    throw InputError(path, "no complete iteration (forward and backward steps do not pair up)");
  m.microbatches = static_cast<int>(fw.size());

  // Static memory: live at the first iteration.
  std::uint64_t first_iteration = iterations.front();
  for (const Allocation& a : col.allocs) {
    if (a.space != space || a.slot > first_iteration || a.freed <= first_iteration) continue;
    std::string n = name_of(a.marker);
    if (n == kParameters) m.weight_bytes += static_cast<double>(a.size);
    if (n == kGradBuffer) m.grad_bytes += static_cast<double>(a.size);
    if (n == kOptimizer) m.optimizer_bytes += static_cast<double>(a.size);
  }

  // Kept activations per micro batch.
  std::vector<std::uint64_t> steps;  // every step start and iteration start, sorted
  steps.insert(steps.end(), forwards.begin(), forwards.end());
  steps.insert(steps.end(), backwards.begin(), backwards.end());
  steps.insert(steps.end(), iterations.begin(), iterations.end());
  std::sort(steps.begin(), steps.end());
  std::vector<double> per_mb(fw.size(), 0);
  std::map<std::uint32_t, double> by_marker;
  for (std::size_t k = 0; k < fw.size(); ++k) {
    std::uint64_t start = fw[k];
    auto next = std::upper_bound(steps.begin(), steps.end(), start);
    std::uint64_t end = next == steps.end() ? kNever : *next;
    for (const Allocation& a : col.allocs) {
      if (a.space != space || a.slot <= start || a.slot >= end || a.freed <= bw[k]) continue;
      per_mb[k] += static_cast<double>(a.size);
      by_marker[a.marker] += static_cast<double>(a.size);
    }
  }
  double n_mb = static_cast<double>(fw.size());
  for (double v : per_mb) m.activation_bytes += v / n_mb;
  auto [lo_it, hi_it] = std::minmax_element(per_mb.begin(), per_mb.end());
  m.activation_spread_bytes = *hi_it - *lo_it;
  for (const auto& [id, b] : by_marker) m.by_module[name_of(id)] += b / n_mb;

  // Peak of what was allocated after the baseline.
  struct Event {
    std::uint64_t slot;
    double delta;
    std::uint32_t marker;
  };
  std::vector<Event> events;
  for (const Allocation& a : col.allocs) {
    if (a.space != space || a.slot < baseline) continue;
    events.push_back({a.slot, static_cast<double>(a.size), a.marker});
    if (a.freed != kNever) events.push_back({a.freed, -static_cast<double>(a.size), a.marker});
  }
  std::sort(events.begin(), events.end(), [](const Event& x, const Event& y) { return x.slot < y.slot; });
  double live = 0, peak = 0;
  std::uint64_t peak_slot = 0;
  std::uint32_t peak_marker = 0;
  for (const Event& ev : events) {
    live += ev.delta;
    if (live > peak) {
      peak = live;
      peak_slot = ev.slot;
      peak_marker = ev.marker;
    }
  }
  (void)last_slot;
  m.peak_bytes = peak;
  m.peak_marker = name_of(peak_marker);
  auto last_before = [&](const std::vector<std::uint64_t>& v) {
    auto it = std::upper_bound(v.begin(), v.end(), peak_slot);
    return it == v.begin() ? 0 : *(it - 1);
  };
  std::uint64_t f = last_before(forwards), b = last_before(backwards);
  m.peak_phase = f == 0 && b == 0 ? "other" : f > b ? "forward" : "backward";
  auto it = std::upper_bound(iterations.begin(), iterations.end(), peak_slot);
  m.peak_iteration = static_cast<int>(it - iterations.begin()) - 1;
  return m;
}

nlohmann::json measurement_json(const MemoryMeasurement& m) {
  return {{"format", "preflight-memory-measurement"},
          {"version", 1},
          {"file", m.file},
          {"rank", m.rank},
          {"world_size", m.world_size},
          {"min_bytes", m.min_bytes},
          {"device", m.device},
          {"iterations", m.iterations},
          {"microbatches", m.microbatches},
          {"static",
           {{"weights", m.weight_bytes}, {"gradients", m.grad_bytes}, {"optimizer", m.optimizer_bytes}}},
          {"activations",
           {{"per_microbatch", m.activation_bytes},
            {"spread", m.activation_spread_bytes},
            {"by_module", m.by_module}}},
          {"peak",
           {{"bytes", m.peak_bytes},
            {"phase", m.peak_phase},
            {"marker", m.peak_marker},
            {"iteration", m.peak_iteration}}}};
}

}  // namespace preflight::log_parse
