#include "preflight/analyzer/balance/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace preflight::analyzer::balance {

namespace {

std::string num(double v, int digits = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '&')
      o += "&amp;";
    else if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else
      o += c;
  }
  return o;
}

struct Rgb {
  double r, g, b;
};
std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(std::lround(c.r)),
                static_cast<int>(std::lround(c.g)), static_cast<int>(std::lround(c.b)));
  return buf;
}
Rgb mix(Rgb a, Rgb b, double t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

// Chunk shade: chunk 0 saturated, later chunks lighter.
std::string block_color(bool forward, int chunk, int chunks) {
  const Rgb fwd{66, 118, 200}, bwd{236, 142, 44}, white{255, 255, 255};
  const double t = chunks <= 1 ? 0.15 : 0.15 + 0.6 * chunk / (chunks - 1);
  return hex(mix(forward ? fwd : bwd, white, t));
}

// Categorical palette (Tableau 20) for the memory lines.
const char* stage_color(int s) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                  "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                  "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
  return palette[s % 20];
}

// "Nice" tick step for a range.
double tick_step(double range, int target) {
  if (range <= 0) return 1;
  const double raw = range / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double f : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (f * mag >= raw) return f * mag;
  return 10 * mag;
}

}  // namespace

std::string render_schedule_svg(const ScheduleGraph& graph, const ChunkCosts& costs,
                                const SimulationResult& sim, const SvgOptions& options) {
  if (sim.timing.size() != graph.blocks().size() || sim.memory_series.empty())
    throw std::logic_error("render_schedule_svg needs a detailed simulation");
  const auto& pipe = graph.pipeline();
  const int S = pipe.stages, V = pipe.chunks;
  const double width = 1400, left = 90, right = 190, plot_w = width - left - right;
  const double row_h = std::clamp(360.0 / S, 12.0, 34.0);
  const double top = 84, tl_h = row_h * S;
  const double mem_top = top + tl_h + 60, mem_h = 300;
  const double height = mem_top + mem_h + 80;
  const double t_end = std::max(sim.end_time_ms, 1e-9);
  auto X = [&](double t) { return left + plot_w * t / t_end; };

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(width, 0) << "\" height=\""
    << num(height, 0) << "\" viewBox=\"0 0 " << num(width, 0) << " " << num(height, 0)
    << "\" font-family=\"DejaVu Sans, Arial, sans-serif\">\n";
  o << "<defs><pattern id=\"rec\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
       "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"none\"/>"
       "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#7a3d00\" stroke-width=\"2\" "
       "stroke-opacity=\"0.55\"/>"
       "</pattern></defs>\n";
  o << "<style>rect.k{stroke:#333;stroke-width:0.3}";
  for (int v = 0; v < V; ++v)
    o << " rect.f" << v << "{fill:" << block_color(true, v, V) << "} rect.b" << v
      << "{fill:" << block_color(false, v, V) << "}";
  o << " text.m{text-anchor:middle}</style>\n";
  o << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Header.
  o << "<text x=\"" << num(left, 0) << "\" y=\"24\" font-size=\"16\" font-weight=\"bold\">"
    << escape(options.title) << "</text>\n";
  const auto& b = sim.bubbles;
  std::string caption =
      "real bubble " + num(b.real, 4) + " = ideal " + num(b.ideal, 4) + " + imbalance " + num(b.imba, 4);
  if (b.has_recompute) caption += " + recompute " + num(b.recompute, 4);
  caption += "    iteration " + num(sim.end_time_ms, 1) + " ms";
  o << "<text x=\"" << num(left, 0) << "\" y=\"46\" font-size=\"13\" fill=\"#b22222\">" << escape(caption)
    << "</text>\n";

  // Timeline.
  o << "<text x=\"" << num(left, 0) << "\" y=\"" << num(top - 8, 0)
    << "\" font-size=\"13\" font-weight=\"bold\">"
    << "Pipeline schedule (" << schedule_name(pipe.schedule()) << ", " << S << " stages, " << V << " chunk"
    << (V > 1 ? "s" : "") << ", " << pipe.micro_batches << " micro batches)</text>\n";
  for (int s = 0; s < S; ++s) {
    const double y = top + s * row_h;
    if (s % 2 == 1)
      o << "<rect x=\"" << num(left) << "\" y=\"" << num(y) << "\" width=\"" << num(plot_w) << "\" height=\""
        << num(row_h) << "\" fill=\"#f4f4f4\"/>\n";
    o << "<text x=\"" << num(left - 8) << "\" y=\"" << num(y + row_h * 0.5 + 4) << "\" font-size=\""
      << num(std::min(12.0, row_h * 0.8), 0) << "\" text-anchor=\"end\">stage " << s << "</text>\n";
  }
  const double font = std::min(10.0, row_h * 0.6);
  for (std::size_t i = 0; i < graph.blocks().size(); ++i) {
    const Block& blk = graph.blocks()[i];
    const auto& t = sim.timing[i];
    const double x0 = X(t.start_ms), x1 = X(t.end_ms), y = top + blk.stage * row_h + 1;
    const double w = std::max(0.0, x1 - x0), h = row_h - 2;
    o << "<rect class=\"k " << (blk.forward ? 'f' : 'b') << blk.chunk << "\" x=\"" << num(x0, 1) << "\" y=\""
      << num(y, 1) << "\" width=\"" << num(w, 1) << "\" height=\"" << num(h, 1) << "\"/>\n";
    if (!blk.forward) {
      const double rec = costs.recompute_ms[blk.chunk * S + blk.stage];
      if (rec > 0) {
        const double rw = plot_w * rec / t_end;
        o << "<rect x=\"" << num(x0, 1) << "\" y=\"" << num(y, 1) << "\" width=\"" << num(std::min(rw, w), 1)
          << "\" height=\"" << num(h, 1) << "\" fill=\"url(#rec)\"/>\n";
      }
    }
    if (w >= font * (blk.micro >= 10 ? 1.4 : 0.9) + 2)
      o << "<text x=\"" << num(x0 + w / 2, 2) << "\" y=\"" << num(y + h / 2 + font * 0.35, 2)
        << "\" font-size=\"" << num(font, 1) << "\" text-anchor=\"middle\">" << blk.micro << "</text>\n";
  }
  // Time axis (shared).
  const double step = tick_step(t_end, 10);
  auto time_axis = [&](double y) {
    o << "<line x1=\"" << num(left) << "\" y1=\"" << num(y) << "\" x2=\"" << num(left + plot_w) << "\" y2=\""
      << num(y) << "\" stroke=\"#333\"/>\n";
    for (double t = 0; t <= t_end + 1e-9; t += step) {
      o << "<line x1=\"" << num(X(t)) << "\" y1=\"" << num(y) << "\" x2=\"" << num(X(t)) << "\" y2=\""
        << num(y + 4) << "\" stroke=\"#333\"/>";
      o << "<text x=\"" << num(X(t)) << "\" y=\"" << num(y + 16)
        << "\" font-size=\"10\" text-anchor=\"middle\">" << num(t, step < 1 ? 2 : 0) << "</text>\n";
    }
  };
  time_axis(top + tl_h);
  // Legend for blocks.
  {
    double ly = top;
    const double lx = left + plot_w + 16;
    for (int v = 0; v < V; ++v) {
      for (bool fwd : {true, false}) {
        o << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" width=\"14\" height=\"10\" fill=\""
          << block_color(fwd, v, V) << "\" stroke=\"#333\" stroke-width=\"0.3\"/>";
        o << "<text x=\"" << num(lx + 20) << "\" y=\"" << num(ly + 9) << "\" font-size=\"11\">"
          << (fwd ? "forward" : "backward") << (V > 1 ? ", chunk " + std::to_string(v) : std::string())
          << "</text>\n";
        ly += 15;
      }
    }
    o << "<rect x=\"" << num(lx) << "\" y=\"" << num(ly) << "\" width=\"14\" height=\"10\" fill=\""
      << block_color(false, 0, V) << "\"/><rect x=\"" << num(lx) << "\" y=\"" << num(ly)
      << "\" width=\"14\" height=\"10\" fill=\"url(#rec)\" stroke=\"#333\" stroke-width=\"0.3\"/>";
    o << "<text x=\"" << num(lx + 20) << "\" y=\"" << num(ly + 9) << "\" font-size=\"11\">recompute</text>\n";
  }

  // Memory.
  double mem_max = options.memory_limit_mb;
  for (const auto& series : sim.memory_series)
    for (const auto& pt : series) mem_max = std::max(mem_max, pt.second);
  mem_max = std::max(mem_max * 1.05, 1.0);
  auto Y = [&](double mb) { return mem_top + mem_h - mem_h * mb / mem_max; };
  o << "<text x=\"" << num(left, 0) << "\" y=\"" << num(mem_top - 10, 0)
    << "\" font-size=\"13\" font-weight=\"bold\">"
    << "Memory per stage (MB)</text>\n";
  const double mstep = tick_step(mem_max, 6);
  for (double v = 0; v <= mem_max + 1e-9; v += mstep) {
    o << "<line x1=\"" << num(left) << "\" y1=\"" << num(Y(v)) << "\" x2=\"" << num(left + plot_w)
      << "\" y2=\"" << num(Y(v)) << "\" stroke=\"#e5e5e5\"/>";
    o << "<text x=\"" << num(left - 6) << "\" y=\"" << num(Y(v) + 4)
      << "\" font-size=\"10\" text-anchor=\"end\">" << num(v, 0) << "</text>\n";
  }
  for (int s = 0; s < S; ++s) {
    const auto& series = sim.memory_series[s];
    o << "<polyline fill=\"none\" stroke=\"" << stage_color(s) << "\" stroke-width=\"1.3\" points=\"";
    for (std::size_t i = 0; i < series.size(); ++i) {
      if (i > 0) o << num(X(series[i].first), 1) << "," << num(Y(series[i - 1].second), 1) << " ";
      o << num(X(series[i].first), 1) << "," << num(Y(series[i].second), 1) << " ";
    }
    o << "\"/>\n";
  }
  if (options.memory_limit_mb > 0) {
    o << "<line x1=\"" << num(left) << "\" y1=\"" << num(Y(options.memory_limit_mb)) << "\" x2=\""
      << num(left + plot_w) << "\" y2=\"" << num(Y(options.memory_limit_mb))
      << "\" stroke=\"#d62728\" stroke-width=\"1.5\" "
      << "stroke-dasharray=\"8,5\"/>";
    o << "<text x=\"" << num(left + plot_w - 4) << "\" y=\"" << num(Y(options.memory_limit_mb) - 5)
      << "\" font-size=\"11\" text-anchor=\"end\" fill=\"#d62728\">limit " << num(options.memory_limit_mb, 0)
      << " MB</text>\n";
  }
  o << "<line x1=\"" << num(left) << "\" y1=\"" << num(mem_top) << "\" x2=\"" << num(left) << "\" y2=\""
    << num(mem_top + mem_h) << "\" stroke=\"#333\"/>\n";
  time_axis(mem_top + mem_h);
  o << "<text x=\"" << num(left + plot_w / 2) << "\" y=\"" << num(mem_top + mem_h + 36)
    << "\" font-size=\"11\" text-anchor=\"middle\">time (ms)</text>\n";
  // Legend: stage colours with peaks.
  {
    const double lx = left + plot_w + 16;
    const double ly0 = mem_top;
    const double lh = std::min(16.0, (mem_h + 40) / std::max(1, S));
    o << "<text x=\"" << num(lx) << "\" y=\"" << num(ly0 - 4)
      << "\" font-size=\"11\" font-weight=\"bold\">peak (MB)</text>\n";
    for (int s = 0; s < S; ++s) {
      const double ly = ly0 + 4 + s * lh;
      const bool over = options.memory_limit_mb > 0 && sim.peak_mb[s] > options.memory_limit_mb + 1e-6;
      o << "<line x1=\"" << num(lx) << "\" y1=\"" << num(ly + lh / 2) << "\" x2=\"" << num(lx + 16)
        << "\" y2=\"" << num(ly + lh / 2) << "\" stroke=\"" << stage_color(s) << "\" stroke-width=\"3\"/>";
      o << "<text x=\"" << num(lx + 22) << "\" y=\"" << num(ly + lh / 2 + 4) << "\" font-size=\""
        << num(std::min(11.0, lh * 0.8), 1) << "\"" << (over ? " fill=\"#d62728\" font-weight=\"bold\"" : "")
        << ">stage " << s << ": " << num(sim.peak_mb[s], 0) << "</text>\n";
    }
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace preflight::analyzer::balance
