#include "preflight/log_parse/timeline_layers.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"
#include "preflight/log_parse/chrome_trace.hpp"
#include "chrome_trace/span_assembler.hpp"
#include "chrome_trace/string_interner.hpp"

namespace preflight::log_parse {

namespace {

// "<digits>-<Identifier>": a MindSpore cell instance under a CellList ("42-LLamaDecodeLayer").
bool ascend_instance(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0 || i + 1 >= s.size() || s[i] != '-') return false;
  for (std::size_t k = i + 1; k < s.size(); ++k) {
    char c = s[k];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  return true;
}

// A MindSpore device kernel named by its full scope ("Default/network-WithLossCell/_backbone-AlexNet/
// conv1-Conv2d/Conv2D-op12", "Gradients/Default/…/conv1-Conv2d/gradConv2D-expand/Conv2DBackpropInput-op40",
// "recompute_Default/…"): the top scope gives the pass ('f', 'b', 'r'; 0 when not a scope name) and `cells`
// the layer — the cell path down to the first CellList instance "<index>-<Class>" (a transformer layer),
// else down to the deepest cell; grad expansion scopes ("gradReLU-expand") are not cells.  "" when the
// kernel sits directly in the top scope.
char kernel_scope(std::string_view name, std::string& cells) {
  cells.clear();
  char kind = 'f';
  if (name.starts_with("Gradients/")) {
    kind = 'b';
    name.remove_prefix(10);
  }
  if (name.starts_with("Default/")) {
    name.remove_prefix(8);
  } else if (name.starts_with("recompute_Default/")) {
    name.remove_prefix(18);
    if (kind == 'f') kind = 'r';
  } else {
    return 0;
  }
  std::size_t last = name.rfind('/');
  if (last == std::string_view::npos) return kind;  // the kernel itself, directly in the top scope
  std::string_view path = name.substr(0, last);
  while (!path.empty()) {
    std::size_t cut = path.find('/');
    std::string_view part = path.substr(0, cut);
    path = cut == std::string_view::npos ? std::string_view() : path.substr(cut + 1);
    if (part.empty() || part.find('-') == std::string_view::npos) continue;
    if (part.starts_with("grad") && part.ends_with("-expand")) continue;
    if (!cells.empty()) cells += '/';
    cells += part;
    if (ascend_instance(part)) break;
  }
  return kind;
}

struct KernelTotal {
  std::int64_t pid = 0;
  std::uint32_t layer = 0;  // index into the kernel-cell names; UINT32_MAX = outside any cell
  char kind = 'f';
  std::uint64_t count = 0;
  std::int64_t ns = 0;
};

bool gpu_activity(std::string_view cat) {
  return cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset" || cat == "Kernel" ||
         cat == "Memcpy" || cat == "Memset";
}
bool launch_category(std::string_view cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "Runtime" || cat == "privateuse1_runtime";
}
bool cpu_op_category(std::string_view cat) {
  return cat == "cpu_op" || cat == "Operator";
}

constexpr std::string_view kBackwardPrefix = "autograd::engine::evaluate_function: ";

struct LayerSpan {
  std::uint32_t thread;
  std::int64_t ts, end;
  std::uint32_t layer;
  std::int64_t pid;
  bool pid_numeric;
};
struct Window {
  std::int64_t ts, end;
  char kind;  // 'f' Default, 'b' Gradients, 'r' recompute_Default
};
struct Point {
  std::uint32_t thread;
  std::int64_t ts;
  std::int64_t key;  // sequence number or correlation id
};
struct BackwardOp {
  std::uint32_t thread;
  std::int64_t ts, end;
  std::int64_t seq;
};

std::string thread_key(const TraceId& pid, const TraceId& tid) {
  auto part = [](const TraceId& id) {
    return id.numeric ? std::to_string(id.number) : "\"" + std::string(id.text);
  };
  return part(pid) + "/" + part(tid);
}

// For every query (sorted by ts) calls f(query, open spans) with the spans of `spans` (sorted by start asc,
// end desc) that contain the query's time, outermost first.  Spans that overlap without nesting are treated
// as siblings (the later one replaces the earlier).
template <class Span, class Query, class F>
void sweep(const std::vector<const Span*>& spans, const std::vector<const Query*>& queries, F&& f) {
  std::vector<const Span*> stack;
  std::size_t si = 0;
  for (const Query* q : queries) {
    while (si < spans.size() && spans[si]->ts <= q->ts) {
      // Keep only the spans that contain the new one: the stack stays a chain of nested spans.
      while (!stack.empty() && stack.back()->end < spans[si]->end) stack.pop_back();
      stack.push_back(spans[si++]);
    }
    while (!stack.empty() && stack.back()->end < q->ts) stack.pop_back();
    if (!stack.empty()) f(*q, stack);
  }
}

std::string ms(std::int64_t ns, int digits = 3) {
  return fixed(static_cast<double>(ns) / 1e6, digits);
}

// Layers from kernels named by full scope, for Ascend / MindSpore timelines without a Scope Layer process
// (CANN msprof_*.json, MindSpore display files).  Uses the process with the most such kernels (the device).
// False when no kernel lies inside a cell.
bool kernel_scope_times(LayerTimes& out, const StringInterner& cells,
                        const std::unordered_map<std::string, KernelTotal>& kernels) {
  std::map<std::int64_t, std::uint64_t> per_pid;
  for (const auto& [name, k] : kernels) per_pid[k.pid] += k.count;
  if (per_pid.empty()) return false;
  auto device = std::max_element(per_pid.begin(), per_pid.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
  std::int64_t pid = device->first;
  std::vector<LayerTime> times(cells.size());
  std::vector<bool> used(cells.size(), false);
  std::int64_t outside_ns = 0;
  std::uint64_t outside = 0;
  bool backward = false;
  for (const auto& [name, k] : kernels) {
    if (k.pid != pid) continue;
    if (k.layer == UINT32_MAX) {
      outside += k.count;
      outside_ns += k.ns;
      continue;
    }
    LayerTime& t = times[k.layer];
    used[k.layer] = true;
    if (k.kind == 'f') {
      t.forward_calls = std::max(t.forward_calls, k.count);
      t.forward_ns += k.ns;
    } else if (k.kind == 'b') {
      t.backward_ops += k.count;
      t.backward_ns += k.ns;
      backward = true;
    } else {
      t.recompute_calls = std::max(t.recompute_calls, k.count);
      t.recompute_ns += k.ns;
    }
  }
  if (std::find(used.begin(), used.end(), true) == used.end()) return false;
  out.source = "MindSpore kernel scopes (device time, pid " + std::to_string(pid) + ")";
  out.backward_attributed = backward;
  for (std::uint32_t i = 0; i < cells.size(); ++i)
    if (used[i]) {
      times[i].name = cells[i];
      out.layers.push_back(std::move(times[i]));
    }
  out.notes.push_back(
      "times are device kernel time summed over each cell's kernels (streams may overlap); calls = "
      "executions of the cell's most-run kernel; backward = kernels under the Gradients scope");
  if (outside)
    out.notes.push_back(std::to_string(outside) + " kernels (" + ms(outside_ns) +
                        " ms) sit directly in a top scope, outside any cell");
  if (per_pid.size() > 1) {
    std::uint64_t other = 0;
    for (const auto& [p, n] : per_pid)
      if (p != pid) other += n;
    out.notes.push_back(std::to_string(other) + " scope-named events of other processes left out");
  }
  if (!backward) out.notes.push_back("no per-layer backward: no kernel under the Gradients scope");
  return true;
}

}  // namespace

LayerTimes timeline_layer_times(const std::filesystem::path& file, const LayerTimesOptions& options) {
  std::unique_ptr<RE2> regex;
  if (!options.layer_regex.empty()) {
    regex = std::make_unique<RE2>(options.layer_regex, RE2::Quiet);
    if (!regex->ok()) throw InputError("--layers", "invalid regular expression: " + regex->error());
  }
  LayerTimes out;
  out.file = file.string();
  StringInterner layers;
  std::unordered_map<std::string, std::uint32_t> threads;
  auto thread_of = [&](const TraceId& pid, const TraceId& tid) {
    auto [it, fresh] = threads.emplace(thread_key(pid, tid), static_cast<std::uint32_t>(threads.size()));
    return it->second;
  };
  std::vector<LayerSpan> spans;
  std::map<std::int64_t, std::vector<Window>> windows;  // pid → tid-0 scope windows
  std::vector<Point> forward_ops, launches;
  std::vector<BackwardOp> backward_ops;
  std::unordered_map<std::int64_t, std::int64_t> gpu_by_correlation;
  std::optional<std::int64_t> scope_pid;
  std::set<std::string> step_names;
  bool saw_modules = false;
  detail::SpanAssembler assembler;
  // MindSpore kernels named by full scope (no Scope Layer process needed): per (pid, kernel name).
  StringInterner kernel_cells;
  std::unordered_map<std::string, KernelTotal> kernels;
  std::string cells_scratch;
  std::set<std::string> annotations;  // user_annotation names, for the "no layer spans" message

  auto on_span = [&](const detail::Span& s) {
    const TraceEvent& e = *s.event;
    if (s.name.starts_with("ProfilerStep#")) step_names.insert(std::string(s.name));
    if (s.cat == "user_annotation" && annotations.size() < 8 && !s.name.starts_with("ProfilerStep#"))
      annotations.emplace(s.name);
    if (s.cat.empty() && s.pid.numeric) {
      // MindSpore / CANN kernels: the scope is the name (CANN, trace_view.json) or args "fullname" (MindSpore
      // < 2.3 Ascend display) / "op_full_name" (MindSpore GPU display).
      std::string_view full = s.name;
      std::optional<std::string_view> arg;
      if (!full.starts_with("Default/") && !full.starts_with("Gradients/") &&
          !full.starts_with("recompute_Default/") && e.has_args() &&
          ((arg = e.arg_string("fullname")) || (arg = e.arg_string("op_full_name"))))
        full = *arg;
      if (char kind = kernel_scope(full, cells_scratch)) {
        std::string key = std::to_string(s.pid.number) + "/" + std::string(full);
        auto [it, fresh] = kernels.try_emplace(std::move(key));
        KernelTotal& k = it->second;
        if (fresh) {
          k.pid = s.pid.number;
          k.kind = kind;
          k.layer = cells_scratch.empty() ? UINT32_MAX : kernel_cells.id(cells_scratch);
        }
        ++k.count;
        k.ns += s.dur;
      }
    }
    if (s.tid == 0 && s.pid.numeric &&
        (s.name == "Default" || s.name == "Gradients" || s.name == "recompute_Default")) {
      char kind = s.name == "Default" ? 'f' : s.name == "Gradients" ? 'b' : 'r';
      windows[s.pid.number].push_back({s.ts, s.ts + s.dur, kind});
    }
    bool layer = false;
    if (s.cat == "gpu_user_annotation") {
      // Kineto's device-side copy of a record_function span: its GPU time reaches the layer through the
      // launches' correlation ids, so counting it as a call would count the annotation twice.
    } else if (regex) {
      layer = RE2::FullMatch(re2::StringPiece(s.name.data(), s.name.size()), *regex);
    } else if (s.cat == "python_function" && s.name.starts_with("nn.Module: ")) {
      layer = true;
      saw_modules = true;
    } else if (ascend_instance(s.name)) {
      layer = true;
    }
    if (!layer && s.tid.number != 0)
      for (const std::string& n : options.include_names)
        if (s.name.find(n) != std::string_view::npos) {
          layer = true;
          break;
        }
    if (layer)
      spans.push_back(
          {thread_of(s.pid, s.tid), s.ts, s.ts + s.dur, layers.id(s.name), s.pid.number, s.pid.numeric});
    if (e.ph == 'X' && e.has_args()) {
      if (cpu_op_category(s.cat)) {
        if (auto seq = e.arg_int("Sequence number")) {
          if (s.name.starts_with(kBackwardPrefix))
            backward_ops.push_back({thread_of(s.pid, s.tid), s.ts, s.ts + s.dur, *seq});
          else
            forward_ops.push_back({thread_of(s.pid, s.tid), s.ts, *seq});
        }
      } else if (launch_category(s.cat)) {
        if (auto corr = e.arg_int("correlation")) launches.push_back({thread_of(s.pid, s.tid), s.ts, *corr});
      } else if (gpu_activity(s.cat)) {
        if (auto corr = e.arg_int("correlation")) gpu_by_correlation[*corr] += s.dur;
      }
    }
  };

  ChromeTraceInfo info = read_chrome_trace(file, [&](const TraceEvent& e) {
    if (!scope_pid && e.pid.present && e.pid.numeric &&
        (e.name == "Scope Layer" ||
         (e.ph == 'M' && e.name == "process_name" && e.args_name.starts_with("Scope Layer"))))
      scope_pid = e.pid.number;
    assembler.add(e, on_span);
  });
  out.events = info.events;
  out.steps = step_names.size();
  out.gpu = !gpu_by_correlation.empty();
  if (assembler.unclosed_begins() || assembler.unmatched_ends())
    out.notes.push_back(std::to_string(assembler.unclosed_begins()) + " 'B' events never closed and " +
                        std::to_string(assembler.unmatched_ends()) +
                        " 'E' events without a 'B' were left out");

  // Ascend: keep the scope process's instances and sort them into forward / backward / recompute.
  std::vector<LayerTime> times(layers.size());
  for (std::uint32_t i = 0; i < layers.size(); ++i) times[i].name = layers[i];
  std::vector<bool> used(layers.size(), false);
  if (regex)
    out.source = "spans matching " + options.layer_regex;
  else if (saw_modules)
    out.source = "PyTorch nn.Module spans";
  else if (scope_pid)
    out.source = "Ascend Scope Layer";
  else
    out.source = "spans named <index>-<Layer>";

  std::vector<Window>* scope_windows = nullptr;
  if (scope_pid) {
    auto& w = windows[*scope_pid];
    std::sort(w.begin(), w.end(), [](const Window& a, const Window& b) { return a.ts < b.ts; });
    scope_windows = &w;
    out.backward_attributed = true;
  }
  std::vector<LayerSpan> kept;
  for (const LayerSpan& s : spans) {
    bool ascend_span = !regex && !saw_modules;
    if (ascend_span && (!scope_pid || !s.pid_numeric || s.pid != *scope_pid)) continue;
    char kind = 'f';
    if (scope_windows && s.pid_numeric && s.pid == *scope_pid) {
      auto it = std::upper_bound(scope_windows->begin(), scope_windows->end(), s.ts,
                                 [](std::int64_t t, const Window& w) { return t < w.ts; });
      kind = 0;
      // Top-level windows follow each other; look at the few that start last before the span.
      for (int back = 0; back < 8 && it != scope_windows->begin(); ++back) {
        --it;
        if (it->ts <= s.ts && it->end >= s.end) {
          kind = it->kind;
          break;
        }
      }
      if (!kind) continue;  // outside every top-level scope window
    }
    LayerTime& t = times[s.layer];
    used[s.layer] = true;
    std::int64_t d = s.end - s.ts;
    if (kind == 'f') {
      ++t.forward_calls;
      t.forward_ns += d;
    } else if (kind == 'b') {
      ++t.backward_ops;
      t.backward_ns += d;
    } else {
      ++t.recompute_calls;
      t.recompute_ns += d;
    }
    kept.push_back(s);
  }
  if (kept.empty() && !regex && !saw_modules && kernel_scope_times(out, kernel_cells, kernels)) return out;
  if (kept.empty()) {
    std::string what =
        regex
            ? "no span name fully matches --layers " + options.layer_regex
            : "no layer spans: looked for python_function \"nn.Module: …\" spans (profile with "
              "with_stack=True), Ascend Scope Layer \"<index>-<Layer>\" spans and kernels named by MindSpore "
              "cell scope";
    if (!annotations.empty()) {
      what += "; user annotations in this trace:";
      for (const std::string& a : annotations) what += " \"" + a + "\"";
    }
    throw InputError(out.file,
                     what + "; pass --layers REGEX to name them (e.g. record_function annotations)");
  }

  // PyTorch: forward ops, launches and backward ops attributed through the enclosing layer spans.
  if (!forward_ops.empty() || !launches.empty()) {
    std::map<std::uint32_t, std::vector<const LayerSpan*>> by_thread;
    for (const LayerSpan& s : kept) by_thread[s.thread].push_back(&s);
    for (auto& [t, v] : by_thread)
      std::sort(v.begin(), v.end(), [](const LayerSpan* a, const LayerSpan* b) {
        return a->ts != b->ts ? a->ts < b->ts : a->end > b->end;
      });
    auto queries_of = [](const std::vector<Point>& points) {
      std::map<std::uint32_t, std::vector<const Point*>> q;
      for (const Point& p : points) q[p.thread].push_back(&p);
      for (auto& [t, v] : q)
        std::sort(v.begin(), v.end(), [](const Point* a, const Point* b) { return a->ts < b->ts; });
      return q;
    };
    std::unordered_map<std::int64_t, std::vector<std::uint32_t>> seq_layers;
    for (auto& [thread, qs] : queries_of(forward_ops)) {
      auto it = by_thread.find(thread);
      if (it == by_thread.end()) continue;
      sweep(it->second, qs, [&](const Point& q, const std::vector<const LayerSpan*>& open) {
        auto& v = seq_layers[q.key];
        for (const LayerSpan* s : open)
          if (std::find(v.begin(), v.end(), s->layer) == v.end()) v.push_back(s->layer);
      });
    }
    // GPU time of launches inside forward layer spans.
    auto launch_queries = queries_of(launches);
    for (auto& [thread, qs] : launch_queries) {
      auto it = by_thread.find(thread);
      if (it == by_thread.end()) continue;
      sweep(it->second, qs, [&](const Point& q, const std::vector<const LayerSpan*>& open) {
        auto g = gpu_by_correlation.find(q.key);
        if (g == gpu_by_correlation.end()) return;
        for (const LayerSpan* s : open) times[s->layer].gpu_forward_ns += g->second;
      });
    }
    // Backward ops: their own duration and the GPU time they launched.
    std::map<std::uint32_t, std::vector<const BackwardOp*>> bw_by_thread;
    for (const BackwardOp& b : backward_ops) {
      auto it = seq_layers.find(b.seq);
      if (it == seq_layers.end()) {
        out.unattributed_backward_ns += b.end - b.ts;
        continue;
      }
      for (std::uint32_t l : it->second) {
        ++times[l].backward_ops;
        times[l].backward_ns += b.end - b.ts;
      }
      bw_by_thread[b.thread].push_back(&b);
    }
    for (auto& [thread, v] : bw_by_thread) {
      std::sort(v.begin(), v.end(), [](const BackwardOp* a, const BackwardOp* b) {
        return a->ts != b->ts ? a->ts < b->ts : a->end > b->end;
      });
      auto qs = launch_queries.find(thread);
      if (qs == launch_queries.end()) continue;
      sweep(v, qs->second, [&](const Point& q, const std::vector<const BackwardOp*>& open) {
        auto g = gpu_by_correlation.find(q.key);
        if (g == gpu_by_correlation.end()) return;
        const BackwardOp* innermost = open.back();
        for (std::uint32_t l : seq_layers[innermost->seq]) times[l].gpu_backward_ns += g->second;
      });
    }
    if (!backward_ops.empty()) out.backward_attributed = true;
  }
  if (!out.backward_attributed)
    out.notes.push_back(
        "no per-layer backward: the trace has no autograd sequence numbers (Kineto args) and no "
        "Ascend Gradients scopes");
  for (std::uint32_t i = 0; i < layers.size(); ++i)
    if (used[i]) out.layers.push_back(times[i]);
  return out;
}

GroupTimes group_layer_times(const LayerTimes& t, const LayerGroups& g) {
  GroupTimes out;
  auto matches = [](const std::string& name, const std::vector<std::string>& names) {
    for (const auto& n : names)
      if (name.find(n) != std::string::npos) return true;
    return false;
  };
  double body_sum = 0;
  for (const LayerTime& l : t.layers) {
    if (!l.forward_calls) continue;
    double per_call = static_cast<double>(l.forward_ns) / 1e6 / static_cast<double>(l.forward_calls);
    if (matches(l.name, g.head)) out.head_ms += per_call, ++out.head_layers;
    if (matches(l.name, g.tail)) out.tail_ms += per_call, ++out.tail_layers;
    if (matches(l.name, g.body)) body_sum += per_call, ++out.body_layers;
  }
  if (out.body_layers) out.body_ms = body_sum / out.body_layers;
  return out;
}

nlohmann::json layer_times_json(const LayerTimes& t) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerTime& l : t.layers)
    layers.push_back({{"name", l.name},
                      {"forward_calls", l.forward_calls},
                      {"forward_ms", static_cast<double>(l.forward_ns) / 1e6},
                      {"backward_ops", l.backward_ops},
                      {"backward_ms", static_cast<double>(l.backward_ns) / 1e6},
                      {"recompute_calls", l.recompute_calls},
                      {"recompute_ms", static_cast<double>(l.recompute_ns) / 1e6},
                      {"gpu_forward_ms", static_cast<double>(l.gpu_forward_ns) / 1e6},
                      {"gpu_backward_ms", static_cast<double>(l.gpu_backward_ns) / 1e6}});
  return {{"file", t.file},
          {"source", t.source},
          {"events", t.events},
          {"steps", t.steps},
          {"backward_attributed", t.backward_attributed},
          {"gpu", t.gpu},
          {"unattributed_backward_ms", static_cast<double>(t.unattributed_backward_ns) / 1e6},
          {"layers", layers},
          {"notes", t.notes}};
}

std::string layer_times_text(const LayerTimes& t, std::size_t max_rows) {
  std::ostringstream out;
  out << t.file << ": " << t.events << " events; layers: " << t.source;
  if (t.steps) out << "; " << t.steps << " profiler steps";
  out << (t.source.starts_with("MindSpore kernel scopes")
              ? "; ms, each kernel counted in its own cell only\n\n"
              : "; ms, inclusive of nested layers\n\n");
  using A = TextTable::Align;
  TextTable table;
  table.column("layer")
      .column("calls", A::Right)
      .column("fwd/call", A::Right)
      .column("fwd total", A::Right)
      .column("bwd total", A::Right);
  bool recompute = false;
  for (const auto& l : t.layers) recompute |= l.recompute_calls > 0;
  if (recompute) table.column("recompute", A::Right);
  if (t.gpu) table.column("gpu fwd", A::Right).column("gpu bwd", A::Right);
  std::size_t rows = 0;
  for (const LayerTime& l : t.layers) {
    if (rows++ == max_rows) {
      out << "(" << t.layers.size() - max_rows << " more layers in --json)\n";
      break;
    }
    std::vector<std::string> row{
        l.name, std::to_string(l.forward_calls),
        l.forward_calls
            ? fixed(static_cast<double>(l.forward_ns) / 1e6 / static_cast<double>(l.forward_calls), 3)
            : "-",
        ms(l.forward_ns), t.backward_attributed ? ms(l.backward_ns) : "-"};
    if (recompute) row.push_back(ms(l.recompute_ns));
    if (t.gpu) {
      row.push_back(ms(l.gpu_forward_ns));
      row.push_back(ms(l.gpu_backward_ns));
    }
    table.row(row);
  }
  out << table.render();
  if (t.unattributed_backward_ns)
    out << "\nbackward outside any layer: " << ms(t.unattributed_backward_ns) << " ms\n";
  if (!t.notes.empty()) {
    out << "\nnotes:\n";
    for (const auto& n : t.notes) out << "  " << n << "\n";
  }
  return out.str();
}

}  // namespace preflight::log_parse
