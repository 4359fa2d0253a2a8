// JSON and text forms of trace summaries; see trace_summary.hpp and allocator_hook/README.md.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"
#include "preflight/log_parse/trace_summary.hpp"

namespace preflight::log_parse {

namespace {

using nlohmann::json;

json optional_int(int v) {
  return v < 0 ? json(nullptr) : json(v);
}

json bytes_by_json(const std::vector<BytesBy>& v, const char* key_name, bool with_layer) {
  json a = json::array();
  for (const BytesBy& b : v) {
    json o;
    if (std::string(key_name) == "layer")
      o["layer"] = optional_int(b.layer);
    else
      o[key_name] = b.key;
    if (with_layer) o["layer"] = optional_int(b.layer);
    o["bytes"] = b.bytes;
    o["blocks"] = b.blocks;
    a.push_back(std::move(o));
  }
  return a;
}

json breakdown_json(const LiveBreakdown& b) {
  return json{{"live_bytes", b.live_bytes},
              {"live_blocks", b.live_blocks},
              {"by_marker", bytes_by_json(b.by_marker, "marker", true)},
              {"by_layer", bytes_by_json(b.by_layer, "layer", false)},
              {"by_phase", bytes_by_json(b.by_phase, "phase", false)}};
}

std::string percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? "-" : fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1) + " %";
}

std::string marker_label(const std::string& m) {
  return m.empty() ? "(no marker)" : m;
}

std::string secs(double s) {
  return fixed(s, 3) + " s";
}

void render_breakdown_table(std::ostringstream& out, const std::string& title,
                            const std::vector<BytesBy>& rows, const std::string& first_column,
                            std::uint64_t total, int top, bool show_layer) {
  if (rows.empty()) return;
  out << "\n  " << title << "\n";
  TextTable t;
  t.column(first_column);
  if (show_layer) t.column("layer", TextTable::Align::Right);
  t.column("bytes", TextTable::Align::Right).column("blocks", TextTable::Align::Right);
  t.column("share", TextTable::Align::Right);
  std::uint64_t rest_bytes = 0, rest_blocks = 0, rest_rows = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const BytesBy& b = rows[i];
    if (static_cast<int>(i) >= top) {
      rest_bytes += b.bytes;
      rest_blocks += b.blocks;
      ++rest_rows;
      continue;
    }
    std::vector<std::string> cells;
    cells.push_back(first_column == "layer" ? (b.key.empty() ? "(none)" : b.key)
                                            : (first_column == "module" ? marker_label(b.key) : b.key));
    if (show_layer) cells.push_back(b.layer < 0 ? "" : std::to_string(b.layer));
    cells.push_back(human_bytes(static_cast<double>(b.bytes)));
    cells.push_back(with_commas(static_cast<std::int64_t>(b.blocks)));
    cells.push_back(percent(b.bytes, total));
    t.row(std::move(cells));
  }
  if (rest_rows > 0) {
    std::vector<std::string> cells{"(" + std::to_string(rest_rows) + " more)"};
    if (show_layer) cells.emplace_back();
    cells.push_back(human_bytes(static_cast<double>(rest_bytes)));
    cells.push_back(with_commas(static_cast<std::int64_t>(rest_blocks)));
    cells.push_back(percent(rest_bytes, total));
    t.row(std::move(cells));
  }
  std::istringstream lines(t.render());
  for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
}

void indent_table(std::ostringstream& out, const TextTable& t) {
  std::istringstream lines(t.render());
  for (std::string line; std::getline(lines, line);) out << "    " << line << "\n";
}

void render_space(std::ostringstream& out, const TraceSummary& s, const SpaceSummary& sp, int top) {
  const std::string& name = sp.space;
  render_breakdown_table(out,
                         name + ": live at the peak (" +
                             human_bytes(static_cast<double>(sp.at_peak.live_bytes)) + " at " +
                             secs(sp.peak_time_s) + ", iteration " + std::to_string(sp.peak_iteration) +
                             ", " + sp.peak_phase + ") by module",
                         sp.at_peak.by_marker, "module", sp.at_peak.live_bytes, top, true);
  bool any_layer = false;
  for (const BytesBy& b : sp.at_peak.by_layer) any_layer = any_layer || b.layer >= 0;
  if (any_layer)
    render_breakdown_table(out, name + ": live at the peak by layer", sp.at_peak.by_layer, "layer",
                           sp.at_peak.live_bytes, top, false);
  if (sp.at_peak.by_phase.size() > 1 ||
      (sp.at_peak.by_phase.size() == 1 && sp.at_peak.by_phase[0].key != "other"))
    render_breakdown_table(out, name + ": live at the peak by phase of allocation", sp.at_peak.by_phase,
                           "phase", sp.at_peak.live_bytes, top, false);

  if (sp.iterations.size() > 1 || !sp.forward_passes.empty()) {
    out << "\n  " << name << ": iterations\n";
    TextTable t;
    t.column("iteration", TextTable::Align::Right)
        .column("allocs", TextTable::Align::Right)
        .column("frees", TextTable::Align::Right)
        .column("allocated", TextTable::Align::Right)
        .column("peak live", TextTable::Align::Right)
        .column("from", TextTable::Align::Right)
        .column("to", TextTable::Align::Right);
    int shown = 0;
    for (const IterationStats& it : sp.iterations) {
      if (shown++ >= top) break;
      t.row({it.iteration < 0 ? "start-up" : std::to_string(it.iteration),
             with_commas(static_cast<std::int64_t>(it.allocs)),
             with_commas(static_cast<std::int64_t>(it.frees)),
             human_bytes(static_cast<double>(it.bytes_allocated)),
             human_bytes(static_cast<double>(it.peak_live_bytes)), secs(it.start_s), secs(it.end_s)});
    }
    indent_table(out, t);
    if (sp.iterations.size() > static_cast<std::size_t>(top))
      out << "    (" << sp.iterations.size() - static_cast<std::size_t>(top)
          << " more iterations; --json lists all)\n";
  }

  if (!sp.forward_passes.empty()) {
    out << "\n  " << name
        << ": forward passes (bytes allocated in the pass and still live at its end: kept for backward)\n";
    TextTable t;
    t.column("iteration", TextTable::Align::Right)
        .column("pass", TextTable::Align::Right)
        .column("retained", TextTable::Align::Right)
        .column("largest modules");
    int shown = 0;
    for (const ForwardPass& p : sp.forward_passes) {
      if (shown++ >= top) break;
      std::string largest;
      for (std::size_t i = 0; i < p.retained_by_marker.size() && i < 2; ++i) {
        if (i) largest += ", ";
        largest += marker_label(p.retained_by_marker[i].key) + " " +
                   human_bytes(static_cast<double>(p.retained_by_marker[i].bytes));
      }
      t.row({std::to_string(p.iteration), std::to_string(p.pass),
             human_bytes(static_cast<double>(p.retained_bytes)), largest});
    }
    indent_table(out, t);
    if (sp.forward_passes.size() > static_cast<std::size_t>(top))
      out << "    (" << sp.forward_passes.size() - static_cast<std::size_t>(top)
          << " more passes; --json lists all)\n";
  }

  const std::string end_title = s.process.exited
                                    ? name + ": live at exit (leaks) by module"
                                    : name +
                                          ": live when the trace ended (the process did not exit "
                                          "normally: killed or exec'd) by module";
  if (sp.at_end.live_blocks > 0)
    render_breakdown_table(out, end_title, sp.at_end.by_marker, "module", sp.at_end.live_bytes, top, true);
}

}  // namespace

nlohmann::json summary_json(const TraceSummary& s) {
  const TraceProcessInfo& p = s.process;
  json spaces = json::array();
  for (const SpaceSummary& sp : s.spaces) {
    json iterations = json::array();
    for (const IterationStats& it : sp.iterations) {
      iterations.push_back({{"iteration", it.iteration < 0 ? json(nullptr) : json(it.iteration)},
                            {"allocs", it.allocs},
                            {"frees", it.frees},
                            {"bytes_allocated", it.bytes_allocated},
                            {"peak_live_bytes", it.peak_live_bytes},
                            {"start_s", it.start_s},
                            {"end_s", it.end_s}});
    }
    json passes = json::array();
    for (const ForwardPass& fp : sp.forward_passes) {
      passes.push_back({{"iteration", fp.iteration},
                        {"pass", fp.pass},
                        {"start_s", fp.start_s},
                        {"end_s", fp.end_s},
                        {"live_bytes_start", fp.live_bytes_start},
                        {"live_bytes_end", fp.live_bytes_end},
                        {"retained_bytes", fp.retained_bytes},
                        {"retained_by_marker", bytes_by_json(fp.retained_by_marker, "marker", true)}});
    }
    json markers = json::array();
    for (const MarkerTotals& m : sp.markers) {
      markers.push_back({{"marker", m.marker},
                         {"layer", optional_int(m.layer)},
                         {"allocs", m.allocs},
                         {"frees", m.frees},
                         {"bytes_allocated", m.bytes_allocated},
                         {"live_bytes_end", m.live_bytes_end},
                         {"live_blocks_end", m.live_blocks_end}});
    }
    json peak = breakdown_json(sp.at_peak);
    peak["time_s"] = sp.peak_time_s;
    peak["record"] = sp.peak_record;
    peak["iteration"] = sp.peak_iteration;
    peak["phase"] = sp.peak_phase;
    spaces.push_back({{"space", sp.space},
                      {"device", sp.device},
                      {"allocs", sp.allocs},
                      {"frees", sp.frees},
                      {"reallocs", sp.reallocs},
                      {"bytes_allocated", sp.bytes_allocated},
                      {"unknown_frees", sp.unknown_frees},
                      {"ooms", sp.ooms},
                      {"peak", std::move(peak)},
                      {"end", breakdown_json(sp.at_end)},
                      {"iterations", std::move(iterations)},
                      {"forward_passes", std::move(passes)},
                      {"markers", std::move(markers)}});
  }
  return json{{"file", p.file},
              {"pid", p.pid},
              {"ppid", p.ppid},
              {"rank", optional_int(p.rank)},
              {"local_rank", optional_int(p.local_rank)},
              {"world_size", optional_int(p.world_size)},
              {"host", p.host},
              {"exe", p.exe},
              {"cmdline", p.cmdline},
              {"start_unix_s", static_cast<double>(p.start_realtime_ns) / 1e9},
              {"duration_s", static_cast<double>(p.end_ns) / 1e9},
              {"exited", p.exited},
              {"fork_child", p.fork_child},
              {"truncated", p.truncated},
              {"host_recorded", p.host_enabled},
              {"cuda_recorded", p.cuda_enabled},
              {"min_bytes", p.min_bytes},
              {"records", s.records},
              {"incomplete_records", s.incomplete_slots},
              {"dropped_records", p.dropped},
              {"overwritten_blocks", s.overwritten},
              {"markers", s.marker_count},
              {"threads", s.thread_count},
              {"spaces", std::move(spaces)}};
}

std::string render_summaries(const std::vector<TraceSummary>& summaries, int top) {
  std::ostringstream out;
  bool first = true;
  for (const TraceSummary& s : summaries) {
    const TraceProcessInfo& p = s.process;
    if (!first) out << "\n";
    first = false;
    out << std::filesystem::path(p.file).filename().string() << ": pid " << p.pid;
    if (p.rank >= 0) out << ", rank " << p.rank;
    if (p.world_size >= 0) out << " of " << p.world_size;
    if (p.local_rank >= 0) out << " (local " << p.local_rank << ")";
    if (!p.host.empty()) out << ", " << p.host;
    out << ", " << secs(static_cast<double>(p.end_ns) / 1e9) << ", "
        << (p.exited ? "exited" : "did not exit normally (killed or exec'd)")
        << (p.fork_child ? ", fork child" : "") << "\n";
    if (!p.cmdline.empty()) out << "  command: " << p.cmdline << "\n";
    out << "  " << with_commas(static_cast<std::int64_t>(s.records)) << " records ("
        << with_commas(static_cast<std::int64_t>(s.incomplete_slots)) << " incomplete slots, "
        << with_commas(static_cast<std::int64_t>(p.dropped)) << " dropped), " << s.marker_count
        << " markers, " << s.thread_count << " threads, minimum size "
        << human_bytes(static_cast<double>(p.min_bytes)) << "\n";
    if (p.truncated)
      out << "  warning: the writer stopped early (disk full or size limit): the trace is partial\n";
    if (s.spaces.empty()) {
      out << "  no allocations recorded\n";
      continue;
    }
    out << "\n";
    TextTable t;
    t.column("space")
        .column("allocs", TextTable::Align::Right)
        .column("frees", TextTable::Align::Right)
        .column("allocated", TextTable::Align::Right)
        .column("peak live", TextTable::Align::Right)
        .column("peak at")
        .column("live at end", TextTable::Align::Right)
        .column("blocks", TextTable::Align::Right);
    for (const SpaceSummary& sp : s.spaces) {
      t.row({sp.space, with_commas(static_cast<std::int64_t>(sp.allocs)),
             with_commas(static_cast<std::int64_t>(sp.frees)),
             human_bytes(static_cast<double>(sp.bytes_allocated)),
             human_bytes(static_cast<double>(sp.at_peak.live_bytes)),
             secs(sp.peak_time_s) + ", iteration " + std::to_string(sp.peak_iteration) + ", " + sp.peak_phase,
             human_bytes(static_cast<double>(sp.at_end.live_bytes)),
             with_commas(static_cast<std::int64_t>(sp.at_end.live_blocks))});
    }
    std::istringstream lines(t.render());
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
    for (const SpaceSummary& sp : s.spaces) render_space(out, s, sp, top);
  }
  return out.str();
}

}  // namespace preflight::log_parse
