#include "preflight/log_parse/sapp_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <map>
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

namespace fs = std::filesystem;

namespace {

bool contains(std::string_view hay, std::string_view needle) {
  return hay.find(needle) != std::string_view::npos;
}

bool is_word(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (static_cast<unsigned char>(c) >= 0x80);
}

// Python re.search(r"\b" + re.escape(needle), hay) for ASCII text.
bool word_boundary_search(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return false;
  for (std::size_t at = hay.find(needle); at != std::string_view::npos; at = hay.find(needle, at + 1)) {
    bool before = at > 0 && is_word(hay[at - 1]);
    if (before != is_word(needle[0])) return true;
  }
  return false;
}

// re.findall(r"[0-9]*-" + body, name)[0]: the leftmost "-<body>" with the digits right before it.
std::string instance_name(std::string_view name, std::string_view body) {
  std::string dash_body = "-" + std::string(body);
  std::size_t q = name.find(dash_body);
  if (q == std::string_view::npos) return {};
  std::size_t p = q;
  while (p > 0 && name[p - 1] >= '0' && name[p - 1] <= '9') --p;
  return std::string(name.substr(p, q - p + dash_body.size()));
}

long instance_index(const std::string& instance) {
  long v = 0;
  std::size_t i = 0;
  while (i < instance.size() && instance[i] >= '0' && instance[i] <= '9') v = v * 10 + (instance[i++] - '0');
  return i ? v : -1;
}

struct Cell {
  std::uint32_t name;
  std::int64_t pid, tid, ts, dur;
  bool operator<(const Cell& o) const {
    return std::tie(name, pid, tid, ts, dur) < std::tie(o.name, o.pid, o.tid, o.ts, o.dur);
  }
};

std::vector<fs::path> expand_inputs(const std::vector<fs::path>& inputs) {
  std::vector<fs::path> files;
  for (const fs::path& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<fs::path> found;
      for (const auto& e : fs::directory_iterator(in, ec)) {
        std::string n = e.path().filename().string();
        bool json = n.size() > 5 && n.substr(n.size() - 5) == ".json";
        bool gz = n.size() > 8 && n.substr(n.size() - 8) == ".json.gz";
        if ((json || gz) && e.is_regular_file(ec)) found.push_back(e.path());
      }
      if (ec) throw InputError(in.string(), "cannot list directory: " + ec.message());
      if (found.empty()) throw InputError(in.string(), "no *.json or *.json.gz timeline in this directory");
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(in, ec)) {
      files.push_back(in);
    } else {
      throw InputError(in.string(), "no such file or directory");
    }
  }
  if (files.empty()) throw InputError("", "no timeline given");
  return files;
}

std::string ms_text(double ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", ms);
  std::string s = buf;
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

}  // namespace

SappTimes sapp_timeline_times(const std::vector<fs::path>& inputs, const SappTimelineOptions& options) {
  if (options.micro_batches < 0) throw InputError("--micro-batches", "must be positive");
  const SappLayerNames& names = options.names;
  if (names.body.empty()) throw InputError("--body", "at least one body layer name is needed");
  std::vector<fs::path> files = expand_inputs(inputs);

  SappTimes out;
  StringInterner interner;
  std::set<std::string> instances;
  std::set<std::string> instance_misses;
  std::set<Cell> seen;  // identical events are counted once (SAPP: `obj not in list`)
  std::map<std::string, double> head_raw, tail_raw;  // ms before / counted_steps (compat) or after
  std::map<std::string, std::uint64_t> head_cells, tail_cells;
  std::map<std::uint32_t, double> body_by_cell_name;
  std::map<std::uint32_t, std::uint64_t> body_cells_by_name;
  int last_counted_steps = 1;
  std::vector<double> inferred_micro_batches;

  for (const fs::path& file : files) {
    SappFileSteps fsteps;
    fsteps.file = file.string();
    std::optional<std::int64_t> scope_pid;
    std::string marker;
    std::vector<std::int64_t> marker_ts;
    std::map<std::int64_t, std::vector<std::pair<std::int64_t, std::int64_t>>>
        windows;  // pid → forward windows
    std::vector<Cell> candidates;
    detail::SpanAssembler spans;

    auto on_span = [&](const detail::Span& s) {
      if (!s.pid.present || !s.pid.numeric) return;
      if (s.name == "Default" && s.tid == 0) {
        windows[s.pid.number].emplace_back(s.ts, s.ts + s.dur);
        return;
      }
      bool interesting = false;
      for (const auto* list : {&names.head, &names.tail, &names.body})
        for (const std::string& n : *list) interesting |= contains(s.name, n);
      if (interesting)
        candidates.push_back(Cell{interner.id(s.name), s.pid.number, s.tid.number, s.ts, s.dur});
    };

    ChromeTraceInfo info = read_chrome_trace(file, [&](const TraceEvent& e) {
      if (!scope_pid && e.pid.present && e.pid.numeric) {
        if (e.name == "Scope Layer" || (!options.compat && e.ph == 'M' && e.name == "process_name" &&
                                        e.args_name.starts_with("Scope Layer")))
          scope_pid = e.pid.number;
      }
      if (marker.empty() && contains(e.name, "MatMul-op")) marker = std::string(e.name);
      if (!marker.empty() && e.name == marker && e.ts_ns && e.ph != 'E' && e.ph != 'M')
        marker_ts.push_back(*e.ts_ns);
      for (const std::string& b : names.body) {
        if (!contains(e.name, b)) continue;
        std::string inst = instance_name(e.name, b);
        if (inst.empty())
          instance_misses.insert(std::string(e.name.substr(0, 120)));
        else if (!instances.count(inst))
          instances.insert(std::move(inst));
      }
      spans.add(e, on_span);
    });
    fsteps.events = info.events;

    if (!scope_pid) {
      if (!options.compat)
        throw InputError(fsteps.file,
                         "no \"Scope Layer\" process (SAPP would fall back to pid 3); profile with "
                         "MindSpore's scope-layer timeline, or pass --sapp-compat");
      scope_pid = 3;
      out.notes.push_back(fsteps.file + ": no \"Scope Layer\" process; pid 3 used as SAPP does");
    }
    fsteps.scope_pid = *scope_pid;
    fsteps.marker = marker;
    fsteps.steps = static_cast<int>(marker_ts.size());
    if (marker_ts.empty())
      throw InputError(fsteps.file,
                       "no step marker: no event name contains \"MatMul-op\" (SAPP: Failed to parse "
                       "timeline)");
    if (!options.compat) std::sort(marker_ts.begin(), marker_ts.end());
    std::int64_t begin, end;
    int n = static_cast<int>(marker_ts.size());
    if (n == 1) {
      begin = INT64_MIN;
      end = INT64_MAX;
    } else {
      begin = marker_ts[static_cast<std::size_t>(std::min(n - 2, 2))];
      end = marker_ts.back();
    }
    int counted = std::max(n - 3, 1);
    fsteps.counted_steps = counted;
    fsteps.window_begin_ns = begin == INT64_MIN ? 0 : begin;
    fsteps.window_end_ns = end == INT64_MAX ? 0 : end;
    last_counted_steps = counted;

    auto& w = windows[*scope_pid];
    std::sort(w.begin(), w.end());
    std::vector<std::int64_t> max_end(w.size());
    for (std::size_t i = 0; i < w.size(); ++i)
      max_end[i] = std::max(w[i].second, i ? max_end[i - 1] : INT64_MIN);
    fsteps.forward_windows = static_cast<int>(w.size());
    for (const auto& win : w)
      if (win.first >= begin && win.second <= end) ++fsteps.forward_windows_counted;
    auto in_forward = [&](std::int64_t s, std::int64_t e) {
      auto it = std::upper_bound(w.begin(), w.end(), std::pair(s, INT64_MAX));
      if (it == w.begin()) return false;
      return max_end[static_cast<std::size_t>(it - w.begin() - 1)] >= e;
    };

    double scale = options.compat ? 1.0 : 1.0 / counted;
    for (const Cell& c : candidates) {
      if (c.pid != *scope_pid) continue;
      if (c.ts < begin || c.ts + c.dur > end || !in_forward(c.ts, c.ts + c.dur)) continue;
      if (!seen.insert(c).second) continue;
      const std::string& cname = interner[c.name];
      double ms = static_cast<double>(c.dur) / 1e6 * scale;
      for (const std::string& h : names.head)
        if (contains(cname, h)) head_raw[h] += ms, ++head_cells[h];
      for (const std::string& t : names.tail)
        if (contains(cname, t)) tail_raw[t] += ms, ++tail_cells[t];
      for (const std::string& b : names.body)
        if (contains(cname, b)) {
          body_by_cell_name[c.name] += ms;
          ++body_cells_by_name[c.name];
          break;
        }
    }
    if (fsteps.forward_windows_counted > 0)
      inferred_micro_batches.push_back(static_cast<double>(fsteps.forward_windows_counted) / counted);
    out.files.push_back(fsteps);
  }

  // Micro batches.
  if (options.micro_batches > 0) {
    out.micro_batches = options.micro_batches;
    out.micro_batches_from = "--micro-batches";
  } else {
    if (inferred_micro_batches.empty())
      throw InputError("--micro-batches",
                       "no forward window in the counted steps to infer the micro batches from; "
                       "pass --micro-batches");
    double mb = inferred_micro_batches.front();
    out.micro_batches = static_cast<int>(std::lround(mb));
    out.micro_batches_from = "forward windows per step";
    if (out.micro_batches < 1)
      throw InputError("--micro-batches", "cannot infer the micro batches; pass --micro-batches");
    if (std::abs(mb - out.micro_batches) > 1e-9 ||
        std::any_of(inferred_micro_batches.begin(), inferred_micro_batches.end(),
                    [&](double v) { return std::abs(v - mb) > 1e-9; }))
      out.notes.push_back("forward windows per counted step differ between files or are not whole; using " +
                          std::to_string(out.micro_batches) + " micro batches: pass --micro-batches");
    out.notes.push_back("micro batches inferred as forward windows per step (" +
                        std::to_string(out.micro_batches) +
                        "); with interleaved stages (vpp > 1) pass --micro-batches");
  }
  double per_mb = options.compat ? 1.0 / last_counted_steps / out.micro_batches : 1.0 / out.micro_batches;
  if (options.compat && files.size() > 1)
    out.notes.push_back("compat: counted_steps of the last file (" + std::to_string(last_counted_steps) +
                        ") applied to all files, as SAPP does with its directory order");

  for (const std::string& h : names.head) {
    SappLayerTime t{h, head_raw[h] * per_mb, head_cells[h]};
    out.head_ms += t.ms;
    if (!t.cells) out.notes.push_back("head layer \"" + h + "\": no counted forward event");
    out.head.push_back(t);
  }
  for (const std::string& t : names.tail) {
    SappLayerTime lt{t, tail_raw[t] * per_mb, tail_cells[t]};
    out.tail_ms += lt.ms;
    if (!lt.cells) out.notes.push_back("tail layer \"" + t + "\": no counted forward event");
    out.tail.push_back(lt);
  }

  if (instances.empty())
    throw InputError("--body", "no event name contains a body layer name (" + names.body.front() +
                                   "…): no layer instance to time");
  for (const std::string& miss : instance_misses)
    out.notes.push_back("\"" + miss +
                        "\" contains a body name but no <index>-<name> instance (SAPP crashes here)");
  std::vector<std::string> empty;
  double sum = 0;
  int count = 0;
  for (const std::string& inst : instances) {
    SappLayerTime t{inst, 0, 0};
    for (const auto& [name_id, ms] : body_by_cell_name)
      if (word_boundary_search(interner[name_id], inst)) {
        t.ms += ms;
        t.cells += body_cells_by_name[name_id];
      }
    t.ms *= per_mb;
    if (t.cells == 0 && !options.compat) {
      empty.push_back(inst);
    } else {
      sum += t.ms;
      ++count;
    }
    out.body_instances.push_back(t);
  }
  std::sort(out.body_instances.begin(), out.body_instances.end(),
            [](const SappLayerTime& a, const SappLayerTime& b) {
              return std::pair(instance_index(a.name), a.name) < std::pair(instance_index(b.name), b.name);
            });
  if (!empty.empty()) {
    std::string list;
    for (std::size_t i = 0; i < empty.size() && i < 8; ++i) list += (i ? ", " : "") + empty[i];
    if (empty.size() > 8) list += ", …";
    out.notes.push_back(std::to_string(empty.size()) +
                        " layer instance(s) with no counted forward time left out of " +
                        "the body mean (SAPP averages their zero in; --sapp-compat): " + list);
  }
  if (count == 0) throw InputError("--body", "no body layer instance has a counted forward event");
  out.body_ms = sum / count;
  return out;
}

std::string sapp_time_config_yaml(const SappTimes& t) {
  std::ostringstream out;
  out << "# preflight timeline --sapp: forward ms per micro batch (" << t.micro_batches << " micro batches, "
      << t.micro_batches_from << "), SAPP computation_analyzer rules\n";
  out << "time_config:\n"
      << "  head: " << ms_text(t.head_ms) << "\n"
      << "  body: " << ms_text(t.body_ms) << "\n"
      << "  tail: " << ms_text(t.tail_ms) << "\n";
  return out.str();
}

nlohmann::json sapp_times_json(const SappTimes& t) {
  auto layers = [](const std::vector<SappLayerTime>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& l : v) a.push_back({{"name", l.name}, {"ms", l.ms}, {"cells", l.cells}});
    return a;
  };
  nlohmann::json files = nlohmann::json::array();
  for (const auto& f : t.files)
    files.push_back({{"file", f.file},
                     {"scope_pid", f.scope_pid},
                     {"marker", f.marker},
                     {"steps", f.steps},
                     {"counted_steps", f.counted_steps},
                     {"window_begin_us", static_cast<double>(f.window_begin_ns) / 1000.0},
                     {"window_end_us", static_cast<double>(f.window_end_ns) / 1000.0},
                     {"forward_windows", f.forward_windows},
                     {"forward_windows_counted", f.forward_windows_counted},
                     {"events", f.events}});
  return {{"head_ms", t.head_ms},
          {"body_ms", t.body_ms},
          {"tail_ms", t.tail_ms},
          {"micro_batches", t.micro_batches},
          {"micro_batches_from", t.micro_batches_from},
          {"head", layers(t.head)},
          {"tail", layers(t.tail)},
          {"body_instances", layers(t.body_instances)},
          {"files", files},
          {"notes", t.notes}};
}

std::string sapp_times_text(const SappTimes& t) {
  std::ostringstream out;
  out << "SAPP forward times, ms per micro batch (" << t.micro_batches << " micro batches, "
      << t.micro_batches_from << ")\n\n";
  auto join = [](const std::vector<SappLayerTime>& v) {
    std::string s;
    for (const auto& l : v) s += (s.empty() ? "" : " + ") + l.name + " " + ms_text(l.ms);
    return s;
  };
  double lo = 0, hi = 0;
  bool first = true;
  for (const auto& b : t.body_instances) {
    if (!b.cells) continue;
    lo = first ? b.ms : std::min(lo, b.ms);
    hi = first ? b.ms : std::max(hi, b.ms);
    first = false;
  }
  TextTable table;
  table.column("part").column("ms", TextTable::Align::Right).column("from");
  table.row({"head", ms_text(t.head_ms), join(t.head)});
  table.row({"body", ms_text(t.body_ms),
             "mean of " + std::to_string(t.body_instances.size()) + " layer instances (min " + ms_text(lo) +
                 ", max " + ms_text(hi) + ")"});
  table.row({"tail", ms_text(t.tail_ms), join(t.tail)});
  out << table.render() << "\n";
  TextTable files;
  files.column("file")
      .column("scope pid", TextTable::Align::Right)
      .column("steps", TextTable::Align::Right)
      .column("counted", TextTable::Align::Right)
      .column("fwd windows", TextTable::Align::Right)
      .column("step marker");
  for (const auto& f : t.files)
    files.row({f.file, std::to_string(f.scope_pid), std::to_string(f.steps), std::to_string(f.counted_steps),
               std::to_string(f.forward_windows_counted) + "/" + std::to_string(f.forward_windows),
               f.marker});
  out << files.render();
  if (!t.notes.empty()) {
    out << "\nnotes:\n";
    for (const auto& n : t.notes) out << "  " << n << "\n";
  }
  return out.str();
}

}  // namespace preflight::log_parse
