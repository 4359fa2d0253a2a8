#include "preflight/analyzer/calibrate/calibrate.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "preflight/analyzer/model/rank_groups.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer {

namespace {

using json = nlohmann::json;

// ---- JSON access with errors that name the file and the field ----

const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw InputError(where, std::string("missing field '") + key + "'");
  return j.at(key);
}

double number(const json& j, const char* key, const std::string& where) {
  const json& v = field(j, key, where);
  if (!v.is_number())
    throw InputError(where + "." + key, "expected a number, got " + std::string(v.type_name()));
  return v.get<double>();
}

double number_or(const json& j, const char* key, double fallback, const std::string& where) {
  return j.is_object() && j.contains(key) ? number(j, key, where) : fallback;
}

int integer(const json& j, const char* key, const std::string& where) {
  double v = number(j, key, where);
  if (v != std::floor(v) || std::abs(v) > 1e9)
    throw InputError(where + "." + key, "expected an integer, got " + std::to_string(v));
  return static_cast<int>(v);
}

std::string text(const json& j, const char* key, const std::string& where) {
  const json& v = field(j, key, where);
  if (!v.is_string()) throw InputError(where + "." + key, "expected a string");
  return v.get<std::string>();
}

std::string text_or(const json& j, const char* key, const std::string& fallback, const std::string& where) {
  return j.is_object() && j.contains(key) ? text(j, key, where) : fallback;
}

// ---- attribution ----

/// Layer index of a module path ("decoder.layers.3.mlp" → 3), -1 when none.
int layer_of(const std::string& path) {
  std::size_t pos = path.find("layers.");
  if (pos == std::string::npos) return -1;
  pos += 7;
  std::size_t end = pos;
  while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
  if (end == pos) return -1;
  return std::stoi(path.substr(pos, end - pos));
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

/// The comparison group of a module path.
std::string group_of(const std::string& path) {
  int layer = layer_of(path);
  if (layer >= 0) return "layer " + std::to_string(layer);
  if (starts_with(path, "embedding")) return "embedding";
  if (path == "decoder.final_layernorm" || path == "output_layer" || path == "loss" ||
      starts_with(path, "output_layer.") || starts_with(path, "loss."))
    return "head";
  return "stage input";
}

bool torch_cpu(const Prediction& p) {
  return p.implementation == "torch_cpu";
}

double visible(double bytes, std::uint64_t min_bytes, bool adjust) {
  return adjust && bytes < static_cast<double>(min_bytes) ? 0 : bytes;
}

/// Static bytes of a stage as a trace with `min_bytes` sees them (torch_cpu allocation granularity).
struct StaticBytes {
  double weights = 0, grads = 0, optimizer = 0;
};

StaticBytes visible_static(const Prediction& p, const PredictedStage& s, std::uint64_t min_bytes) {
  StaticBytes b{s.weight_bytes, s.grad_bytes, s.optimizer_bytes};
  if (!torch_cpu(p)) return b;
  b.weights = b.optimizer = 0;
  double fp32_tensors = p.optimizer_bytes_per_param / 4;  // Adam moments (+ the fp32 master copy)
  for (const auto& op : s.ops)
    for (std::int64_t n : op.param_numel) {
      double nd = static_cast<double>(n);
      b.weights += visible(nd * p.weight_bytes_per_param, min_bytes, true);
      b.optimizer += fp32_tensors * visible(nd * 4, min_bytes, true);
    }
  b.grads = visible(s.grad_bytes, min_bytes, true);  // one contiguous main_grad buffer
  return b;
}

double kept_total(const PredictedStage& s, std::uint64_t min_bytes, bool adjust) {
  double t = 0;
  for (const auto& op : s.ops)
    for (const auto& k : op.kept) t += visible(static_cast<double>(k.bytes), min_bytes, adjust);
  return t;
}

std::string pct(double e) {
  if (std::isinf(e)) return e > 0 ? "+inf" : "-inf";
  return signed_fixed(100 * e, 2) + " %";
}

// ---- least squares ----

/// Fits y ≈ a·x + b; a single distinct x (or none) gives a = 1, b = mean(y − x).
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  std::size_t n = x.size();
  if (n == 0) return {1, 0};
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < n; ++i) {
    mx += x[i];
    my += y[i];
  }
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  double scale_of_x = std::max(1.0, std::abs(mx));
  if (sxx <= 1e-12 * scale_of_x * scale_of_x * n) {
    double d = 0;
    for (std::size_t i = 0; i < n; ++i) d += y[i] - x[i];
    return {1, d / n};
  }
  double a = sxy / sxx;
  return {a, my - a * mx};
}

}  // namespace

// ------------------------------------------------------------------------------------------ predicted

int Prediction::stage_of_rank(int rank) const {
  if (rank < 0 || rank >= world_size)
    throw InputError("rank " + std::to_string(rank),
                     "outside the predicted world of " + std::to_string(world_size) + " ranks");
  RankGenerator gen(tp, 1, dp, pp, cp, order);
  for (const auto& group : gen.get_ranks("pp"))
    for (std::size_t s = 0; s < group.size(); ++s)
      if (group[s] == rank) return static_cast<int>(s);
  throw InputError("rank " + std::to_string(rank), "not in any pipeline group");
}

Prediction read_estimate_prediction(const json& j, const std::string& source) {
  const json& sum = j.is_object() && j.contains("summary") ? j["summary"] : j;
  std::string w = j.is_object() && j.contains("summary") ? source + ": summary" : source;
  Prediction p;
  p.source = source;
  p.tool = "estimate";
  p.implementation = "simumax";
  p.precision = "";
  // "seq64.mbs2.mbc4.gbs8 tp2.cp1.ep1.pp2.dp1.etp2.edp1, world_size:4": whole tokens only (etp2 is not tp2).
  std::string par = text(sum, "parallelism", w);
  std::map<std::string, int> sizes;
  std::string tok;
  auto flush = [&] {
    std::size_t d = tok.find_first_of("0123456789");
    std::string key = tok.substr(0, d);
    if (!key.empty() && key.back() == ':') key.pop_back();
    if (d != std::string::npos && d > 0 && tok.find_first_not_of("0123456789", d) == std::string::npos)
      sizes[key] = std::stoi(tok.substr(d, 9));
    tok.clear();
  };
  for (char ch : par) {
    if (ch == '.' || ch == ' ' || ch == ',')
      flush();
    else
      tok += ch;
  }
  flush();
  for (const char* k : {"mbc", "tp", "pp", "dp", "world_size"})
    if (!sizes.count(k))
      throw InputError(w + ".parallelism", std::string("no '") + k + "' in \"" + par + "\"");
  p.tp = sizes["tp"];
  p.pp = sizes["pp"];
  p.dp = sizes["dp"];
  p.cp = sizes.count("cp") ? sizes["cp"] : 1;
  p.world_size = sizes["world_size"];
  p.num_microbatches = sizes["mbc"];
  if (p.tp < 1 || p.pp < 1 || p.dp < 1 || p.cp < 1 || p.num_microbatches < 1 ||
      p.tp * p.pp * p.dp * p.cp != p.world_size)
    throw InputError(w + ".parallelism",
                     "inconsistent sizes in \"" + par + "\" (tp × cp × pp × dp ≠ world_size)");
  const json& stages = field(sum, "stages", w);
  if (!stages.is_array() || stages.empty()) throw InputError(w + ".stages", "expected a non-empty array");
  for (int s = 0; s < p.pp; ++s) {
    const json* pick = nullptr;
    std::size_t idx = 0;
    for (std::size_t i = 0; i < stages.size(); ++i) {
      const json& e = stages[i];
      std::string ws = w + ".stages[" + std::to_string(i) + "]";
      int r = integer(e, "pp_rank", ws);
      std::string key = text_or(e, "stage", "", ws);
      bool middle = key == "middle_stage" && s > 0 && s < p.pp - 1;
      if (r == s || (middle && !pick)) {
        pick = &e;
        idx = i;
        if (r == s) break;
      }
    }
    if (!pick) throw InputError(w + ".stages", "no entry for pipeline stage " + std::to_string(s));
    std::string ws = w + ".stages[" + std::to_string(idx) + "]";
    PredictedStage ps;
    ps.stage = s;
    ps.model_bytes = number(*pick, "model_bytes", ws);
    ps.activation_bytes_per_microbatch = number(*pick, "activation_cache_bytes_per_micro_batch", ws);
    ps.peak_bytes = number(*pick, "peak_bytes", ws);
    ps.peak_static_bytes = ps.model_bytes;
    ps.peak_activation_bytes = number_or(*pick, "activation_peak_bytes", 0, ws);
    ps.peak_op = text_or(*pick, "peak_path", "", ws);
    p.stages.push_back(ps);
  }
  return p;
}

Prediction read_prediction(const json& j, const std::string& source) {
  if (j.is_object() && (j.contains("summary") || j.contains("parallelism")) && !j.contains("strategy"))
    return read_estimate_prediction(j, source);
  Prediction p;
  p.source = source;
  const json& st = field(j, "strategy", source);
  std::string w = source + ": strategy";
  p.implementation = text_or(st, "transformer_impl", "megatron_core", w);
  p.precision = text(st, "precision", w);
  p.world_size = integer(st, "world_size", w);
  p.tp = integer(st, "tp", w);
  p.pp = integer(st, "pp", w);
  p.cp = integer(st, "cp", w);
  p.dp = integer(st, "dp", w);
  p.num_microbatches = integer(st, "num_microbatches", w);
  p.order = text_or(st, "order", p.order, w);
  if (integer(st, "vpp", w) != 1)
    throw InputError(w + ".vpp", "calibration compares 1F1B runs; the interleaved schedule is not supported");
  if (j.contains("full_model") && j["full_model"].contains("bytes_per_param")) {
    const json& b = j["full_model"]["bytes_per_param"];
    p.weight_bytes_per_param = number(b, "weight", source + ": full_model.bytes_per_param");
    p.optimizer_bytes_per_param = number(b, "optimizer", source + ": full_model.bytes_per_param");
  }
  const json& stages = field(field(j, "memory", source), "stages", source + ": memory");
  if (!stages.is_array() || static_cast<int>(stages.size()) != p.pp)
    throw InputError(source + ": memory.stages",
                     "expected one entry per pipeline stage (" + std::to_string(p.pp) + ")");
  for (std::size_t i = 0; i < stages.size(); ++i) {
    std::string ws = source + ": memory.stages[" + std::to_string(i) + "]";
    const json& s = stages[i];
    PredictedStage ps;
    ps.stage = integer(s, "stage", ws);
    ps.weight_bytes = number(s, "weight_bytes", ws);
    ps.grad_bytes = number(s, "grad_bytes", ws);
    ps.optimizer_bytes = number(s, "optimizer_bytes", ws);
    ps.inflight_microbatches = number(s, "inflight_microbatches", ws);
    if (s.contains("peak")) {
      const json& pk = s["peak"];
      ps.peak_bytes = number(pk, "bytes", ws + ".peak");
      ps.peak_static_bytes = number(pk, "static_bytes", ws + ".peak");
      ps.peak_activation_bytes = number(pk, "activation_bytes", ws + ".peak");
      ps.peak_transient_bytes = number(pk, "transient_bytes", ws + ".peak");
      ps.peak_phase = text_or(pk, "phase", "", ws + ".peak");
      ps.peak_op = text_or(pk, "op", "", ws + ".peak");
    } else {
      ps.peak_bytes = number(s, "total_bytes", ws);
      ps.peak_static_bytes = ps.weight_bytes + ps.grad_bytes + ps.optimizer_bytes;
      ps.peak_activation_bytes = number(s, "activation_bytes", ws);
      ps.peak_phase = "not simulated";
    }
    p.stages.push_back(ps);
  }
  const json& chunks = field(j, "chunks", source);
  if (!chunks.is_array()) throw InputError(source + ": chunks", "expected an array");
  for (std::size_t ci = 0; ci < chunks.size(); ++ci) {
    std::string wc = source + ": chunks[" + std::to_string(ci) + "]";
    const json& c = chunks[ci];
    int stage = integer(c, "stage", wc);
    if (stage < 0 || stage >= p.pp)
      throw InputError(wc + ".stage", "no pipeline stage " + std::to_string(stage));
    const json& ops = field(c, "ops", wc);
    if (!ops.is_array()) throw InputError(wc + ".ops", "expected an array");
    for (std::size_t oi = 0; oi < ops.size(); ++oi) {
      std::string wo = wc + ".ops[" + std::to_string(oi) + "]";
      const json& o = ops[oi];
      PredictedOp op;
      op.path = text(o, "path", wo);
      op.kind = text_or(o, "kind", "", wo);
      op.layer = static_cast<int>(number_or(o, "layer", -1, wo));
      for (const json& k : field(o, "kept", wo)) {
        SavedTensor t;
        t.name = text(k, "name", wo + ".kept");
        t.bytes = static_cast<std::int64_t>(number(k, "bytes", wo + ".kept"));
        t.is_input = k.contains("input") && k["input"].is_boolean() && k["input"].get<bool>();
        t.allocated_by = text_or(k, "allocated_by", "", wo + ".kept");
        op.kept.push_back(t);
      }
      if (o.contains("param_shapes"))
        for (const auto& [name, shapes] : o["param_shapes"].items()) {
          std::int64_t n = 1;
          for (const json& d : field(shapes, "local", wo + ".param_shapes." + name))
            n *= d.get<std::int64_t>();
          op.param_numel.push_back(n);
        }
      p.stages[stage].ops.push_back(std::move(op));
    }
  }
  return p;
}

// ------------------------------------------------------------------------------------------ measured

MeasuredRank read_measured(const json& j, const std::string& source) {
  MeasuredRank m;
  if (text_or(j, "format", "", source) != "preflight-memory-measurement")
    throw InputError(source,
                     "not a memory measurement (expected \"format\": \"preflight-memory-measurement\")");
  if (integer(j, "version", source) != 1) throw InputError(source + ".version", "unsupported version");
  m.source = text_or(j, "file", source, source);
  m.rank = integer(j, "rank", source);
  m.world_size = integer(j, "world_size", source);
  m.min_bytes = static_cast<std::uint64_t>(number(j, "min_bytes", source));
  m.microbatches = integer(j, "microbatches", source);
  const json& st = field(j, "static", source);
  m.weight_bytes = number(st, "weights", source + ".static");
  m.grad_bytes = number(st, "gradients", source + ".static");
  m.optimizer_bytes = number(st, "optimizer", source + ".static");
  const json& a = field(j, "activations", source);
  m.activation_bytes = number(a, "per_microbatch", source + ".activations");
  m.activation_spread_bytes = number_or(a, "spread", 0, source + ".activations");
  for (const auto& [k, v] : field(a, "by_module", source + ".activations").items()) {
    if (!v.is_number()) throw InputError(source + ".activations.by_module." + k, "expected a number");
    m.by_module[k] = v.get<double>();
  }
  const json& pk = field(j, "peak", source);
  m.peak_bytes = number(pk, "bytes", source + ".peak");
  m.peak_phase = text_or(pk, "phase", "", source + ".peak");
  m.peak_marker = text_or(pk, "marker", "", source + ".peak");
  return m;
}

// ------------------------------------------------------------------------------------------ comparison

double CalibrationRow::error() const {
  if (measured == 0)
    return predicted == 0 ? 0 : std::copysign(std::numeric_limits<double>::infinity(), predicted);
  return (predicted - measured) / measured;
}

double Comparison::max_abs_error(const std::string& quantity) const {
  double m = 0;
  for (const auto& r : rows) {
    bool match = quantity == "layer" ? starts_with(r.quantity, "layer ") : r.quantity == quantity;
    if (match) m = std::max(m, std::abs(r.error()));
  }
  return m;
}

std::map<std::string, double> predicted_by_module(const PredictedStage& stage, std::uint64_t min_bytes,
                                                  bool visible_only) {
  std::map<std::string, double> by;
  for (std::size_t i = 0; i < stage.ops.size(); ++i) {
    const PredictedOp& op = stage.ops[i];
    for (const auto& t : op.kept) {
      double b = visible(static_cast<double>(t.bytes), min_bytes, visible_only);
      if (b == 0) continue;
      std::string owner = !t.allocated_by.empty() ? t.allocated_by
                          : !t.is_input           ? op.path
                          : i == 0                ? "input"
                                                  : stage.ops[i - 1].path;
      by[owner] += b;
    }
  }
  return by;
}

Comparison compare(const Prediction& p, const std::vector<MeasuredRank>& measured) {
  Comparison c;
  std::set<int> seen;
  for (const MeasuredRank& m : measured) {
    if (m.world_size > 0 && m.world_size != p.world_size)
      throw InputError(m.source, "traced a world of " + std::to_string(m.world_size) + " ranks but " +
                                     p.source + " predicts " + std::to_string(p.world_size));
    if (m.rank < 0 || m.rank >= p.world_size)
      throw InputError(m.source, "rank " + std::to_string(m.rank) + " is outside the world of " +
                                     std::to_string(p.world_size) + " ranks predicted by " + p.source);
    int stage = p.stage_of_rank(m.rank);
    if (m.microbatches != p.num_microbatches)
      throw InputError(m.source, "measured " + std::to_string(m.microbatches) +
                                     " micro batches per iteration but " + p.source + " predicts " +
                                     std::to_string(p.num_microbatches));
    if (!seen.insert(m.rank).second)
      throw InputError(m.source, "rank " + std::to_string(m.rank) + " measured twice");
    const PredictedStage& s = p.stages[stage];
    auto row = [&](const std::string& q, double pred, double meas) {
      c.rows.push_back({m.rank, stage, q, pred, meas});
    };
    if (p.tool == "estimate") {
      row("static", s.model_bytes, m.weight_bytes + m.grad_bytes + m.optimizer_bytes);
      row("activations", s.activation_bytes_per_microbatch, m.activation_bytes);
      row("peak", s.peak_bytes, m.peak_bytes);
      continue;
    }
    bool adjust = torch_cpu(p);
    StaticBytes sb = visible_static(p, s, m.min_bytes);
    row("weights", sb.weights, m.weight_bytes);
    row("gradients", sb.grads, m.grad_bytes);
    row("optimizer", sb.optimizer, m.optimizer_bytes);
    std::map<std::string, double> pred_groups, meas_groups;
    for (const auto& [path, b] : predicted_by_module(s, m.min_bytes, adjust))
      pred_groups[group_of(path)] += b;
    for (const auto& [path, b] : m.by_module) meas_groups[group_of(path)] += b;
    double pred_total = 0;
    for (const auto& [g, b] : pred_groups) pred_total += b;
    row("activations", pred_total, m.activation_bytes);
    std::vector<std::string> order = {"stage input", "embedding"};
    std::vector<int> layers;
    for (const auto& [g, b] : pred_groups)
      if (starts_with(g, "layer ")) layers.push_back(std::stoi(g.substr(6)));
    for (const auto& [g, b] : meas_groups)
      if (starts_with(g, "layer ")) layers.push_back(std::stoi(g.substr(6)));
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    for (int l : layers) order.push_back("layer " + std::to_string(l));
    order.push_back("head");
    for (const auto& g : order) {
      double pv = pred_groups.count(g) ? pred_groups[g] : 0, mv = meas_groups.count(g) ? meas_groups[g] : 0;
      if (pv == 0 && mv == 0) continue;
      row(g, pv, mv);
    }
    // Peak: the prediction less what the trace cannot see (static below min_bytes, and the same share of the
    // activations alive at the peak).
    double static_all = s.weight_bytes + s.grad_bytes + s.optimizer_bytes;
    double static_vis = sb.weights + sb.grads + sb.optimizer;
    double kept_all = kept_total(s, m.min_bytes, false), kept_vis = kept_total(s, m.min_bytes, adjust);
    double act_vis = kept_all > 0 ? s.peak_activation_bytes * kept_vis / kept_all : s.peak_activation_bytes;
    double peak = s.peak_bytes - (static_all - static_vis) - (s.peak_activation_bytes - act_vis);
    row("peak", peak, m.peak_bytes);
  }
  for (int r = 0; r < p.world_size; ++r)
    if (!seen.count(r) && !measured.empty())
      c.notes.push_back("rank " + std::to_string(r) + ": no measurement");
  if (p.tool == "estimate")
    c.notes.push_back(p.source +
                      ": estimate (SimuMax's model): static memory compared as one figure, activations per "
                      "micro batch in total (no per-layer split), peak as estimated for the device");
  else if (!torch_cpu(p))
    c.notes.push_back("implementation " + p.implementation +
                      ": allocation granularity unknown, predictions compared without dropping bytes below "
                      "the trace's minimum size");
  return c;
}

json comparison_json(const Comparison& c) {
  json rows = json::array();
  for (const auto& r : c.rows) {
    double e = r.error();
    rows.push_back({{"rank", r.rank},
                    {"stage", r.stage},
                    {"quantity", r.quantity},
                    {"predicted_bytes", r.predicted},
                    {"measured_bytes", r.measured},
                    {"error", std::isfinite(e) ? json(e) : json(nullptr)}});
  }
  json summary;
  for (const char* q : {"weights", "gradients", "optimizer", "static", "activations", "layer", "peak"})
    summary[std::string("max_abs_error_") + (std::string(q) == "layer" ? "per_layer" : q)] =
        c.max_abs_error(q);
  return {{"rows", rows}, {"summary", summary}, {"notes", c.notes}};
}

std::string render_comparison(const Comparison& c) {
  TextTable t;
  t.column("rank", TextTable::Align::Right)
      .column("stage", TextTable::Align::Right)
      .column("quantity")
      .column("predicted MiB", TextTable::Align::Right)
      .column("measured MiB", TextTable::Align::Right)
      .column("error", TextTable::Align::Right);
  int last_rank = -1;
  for (const auto& r : c.rows) {
    if (last_rank >= 0 && r.rank != last_rank) t.rule();
    last_rank = r.rank;
    t.row({std::to_string(r.rank), std::to_string(r.stage), r.quantity, fixed(to_mib(r.predicted), 3),
           fixed(to_mib(r.measured), 3), pct(r.error())});
  }
  std::string out = t.render();
  // Only the quantities the comparison has (an estimate prediction has "static", no split and no layers).
  std::string largest;
  for (const char* q : {"weights", "gradients", "optimizer", "static", "activations", "layer", "peak"}) {
    std::string qs = q;
    bool present = std::any_of(c.rows.begin(), c.rows.end(), [&](const CalibrationRow& r) {
      return qs == "layer" ? starts_with(r.quantity, "layer ") : r.quantity == qs;
    });
    if (!present) continue;
    largest += (largest.empty() ? "" : ", ") + (qs == "layer" ? std::string("per layer") : qs) + " " +
               pct(c.max_abs_error(qs));
  }
  out += "\nlargest |error|: " + largest + "\n";
  for (const auto& n : c.notes) out += "note: " + n + "\n";
  return out;
}

// ------------------------------------------------------------------------------------------ fitting

std::string module_kind(const std::string& path) {
  std::size_t pos = path.find("layers.");
  if (pos == std::string::npos) return path;
  std::size_t start = pos + 7, end = start;
  while (end < path.size() && std::isdigit(static_cast<unsigned char>(path[end]))) ++end;
  if (end == start) return path;
  return path.substr(0, start) + "*" + path.substr(end);
}

namespace {

/// Visible static bytes and predicted peak parts of one measured rank, after the module coefficients.
struct PeakSample {
  double measured = 0;
  double base = 0;       // static (visible) + calibrated activations at the peak
  double transient = 0;  // predicted transient at the peak
};

double calibrated_activation(const std::map<std::string, std::map<std::string, double>>& per_kind_instances,
                             const Calibration& c) {
  double total = 0;
  for (const auto& [kind, instances] : per_kind_instances) {
    auto it = c.modules.find(kind);
    for (const auto& [path, b] : instances) {
      (void)path;
      total += it == c.modules.end() ? b : it->second.scale * b + it->second.bytes_per_op;
    }
  }
  return total;
}

std::map<std::string, std::map<std::string, double>> instances_by_kind(const PredictedStage& s,
                                                                       std::uint64_t min_bytes, bool adjust) {
  std::map<std::string, std::map<std::string, double>> out;
  for (const auto& op : s.ops) out[module_kind(op.path)][op.path] += 0;  // every module, kept or not
  for (const auto& [path, b] : predicted_by_module(s, min_bytes, adjust)) out[module_kind(path)][path] += b;
  return out;
}

PeakSample peak_sample(const Prediction& p, const MeasuredRank& m, const Calibration& c) {
  const PredictedStage& s = p.stages[p.stage_of_rank(m.rank)];
  bool adjust = torch_cpu(p);
  StaticBytes sb = visible_static(p, s, m.min_bytes);
  double kept_all = kept_total(s, m.min_bytes, false), kept_vis = kept_total(s, m.min_bytes, adjust);
  double act_vis = kept_all > 0 ? s.peak_activation_bytes * kept_vis / kept_all : s.peak_activation_bytes;
  double mb_vis = kept_vis;
  double mb_cal = calibrated_activation(instances_by_kind(s, m.min_bytes, adjust), c);
  double act_cal = mb_vis > 0 ? act_vis * mb_cal / mb_vis : act_vis;
  return {m.peak_bytes, sb.weights + sb.grads + sb.optimizer + act_cal, s.peak_transient_bytes};
}

}  // namespace

Calibration fit_calibration(const std::vector<CalibrationRun>& runs) {
  Calibration cal;
  std::size_t ranks = 0;
  for (const auto& r : runs) ranks += r.measured.size();
  if (runs.empty() || ranks == 0) throw InputError("--fit", "no measured ranks to fit on");
  cal.implementation = runs.front().predicted.implementation;
  for (const auto& r : runs) {
    if (r.predicted.tool == "estimate")
      throw InputError(
          r.predicted.source,
          "--fit needs per-op predictions: give the JSON of `preflight analyze --json`, not estimate");
    if (r.predicted.implementation != cal.implementation)
      throw InputError(r.predicted.source, "implementation " + r.predicted.implementation + " differs from " +
                                               cal.implementation + " of the other runs");
    cal.fitted_on.push_back(r.predicted.source);
  }

  // 1. Per module kind: measured bytes of each module instance against predicted.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> samples;
  for (const auto& r : runs)
    for (const auto& m : r.measured) {
      const PredictedStage& s = r.predicted.stages[r.predicted.stage_of_rank(m.rank)];
      auto inst = instances_by_kind(s, m.min_bytes, torch_cpu(r.predicted));
      for (const auto& [kind, paths] : inst)
        for (const auto& [path, pred] : paths) {
          auto it = m.by_module.find(path);
          samples[kind].first.push_back(pred);
          samples[kind].second.push_back(it == m.by_module.end() ? 0 : it->second);
        }
    }
  for (const auto& [kind, xy] : samples) {
    auto [a, b] = fit_line(xy.first, xy.second);
    ModuleCoefficients mc;
    mc.scale = a;
    mc.bytes_per_op = b;
    mc.samples = static_cast<int>(xy.first.size());
    if (std::abs(a - 1) > 1e-9 || std::abs(b) > 0.5) cal.modules[kind] = mc;
  }

  // 2. Peak: measured − (static + calibrated activations) = transient_scale · transient + overhead.
  std::vector<PeakSample> peaks;
  for (const auto& r : runs)
    for (const auto& m : r.measured) peaks.push_back(peak_sample(r.predicted, m, cal));
  std::vector<double> x, y;
  for (const auto& s : peaks) {
    x.push_back(s.transient);
    y.push_back(s.measured - s.base);
  }
  auto [a, b] = fit_line(x, y);
  if (a < 0) {  // a negative transient scale has no physical meaning: keep the transient, fit the constant
    a = 1;
    double d = 0;
    for (std::size_t i = 0; i < x.size(); ++i) d += y[i] - x[i];
    b = d / static_cast<double>(x.size());
  }
  cal.transient_scale = a;
  cal.overhead_bytes = b;
  Calibration none;
  double before = 0, after = 0;
  std::size_t k = 0;
  for (const auto& r : runs)
    for (const auto& m : r.measured) {
      PeakSample raw = peak_sample(r.predicted, m, none);
      double e0 = (raw.base + raw.transient - raw.measured) / raw.measured;
      double e1 = (peaks[k].base + a * peaks[k].transient + b - peaks[k].measured) / peaks[k].measured;
      before += e0 * e0;
      after += e1 * e1;
      ++k;
    }
  cal.rms_peak_error_before = std::sqrt(before / static_cast<double>(k));
  cal.rms_peak_error_after = std::sqrt(after / static_cast<double>(k));
  return cal;
}

json calibration_json(const Calibration& c) {
  json modules = json::object();
  for (const auto& [k, m] : c.modules)
    modules[k] = {{"scale", m.scale}, {"bytes_per_op", m.bytes_per_op}, {"samples", m.samples}};
  return {
      {"format", "preflight-calibration"},
      {"version", 1},
      {"implementation", c.implementation},
      {"modules", modules},
      {"peak", {{"transient_scale", c.transient_scale}, {"overhead_bytes", c.overhead_bytes}}},
      {"fitted_on", c.fitted_on},
      {"in_sample_rms_peak_error", {{"before", c.rms_peak_error_before}, {"after", c.rms_peak_error_after}}}};
}

Calibration read_calibration(const json& j, const std::string& source) {
  if (text_or(j, "format", "", source) != "preflight-calibration")
    throw InputError(source, "not a calibration file (expected \"format\": \"preflight-calibration\")");
  if (integer(j, "version", source) != 1) throw InputError(source + ".version", "unsupported version");
  Calibration c;
  c.implementation = text(j, "implementation", source);
  for (const auto& [k, v] : field(j, "modules", source).items()) {
    std::string w = source + ".modules." + k;
    ModuleCoefficients m;
    m.scale = number(v, "scale", w);
    m.bytes_per_op = number(v, "bytes_per_op", w);
    m.samples = static_cast<int>(number_or(v, "samples", 0, w));
    if (!std::isfinite(m.scale) || !std::isfinite(m.bytes_per_op))
      throw InputError(w, "coefficients must be finite");
    c.modules[k] = m;
  }
  const json& pk = field(j, "peak", source);
  c.transient_scale = number(pk, "transient_scale", source + ".peak");
  c.overhead_bytes = number(pk, "overhead_bytes", source + ".peak");
  if (!std::isfinite(c.transient_scale) || !std::isfinite(c.overhead_bytes))
    throw InputError(source + ".peak", "coefficients must be finite");
  if (j.contains("fitted_on") && j["fitted_on"].is_array())
    for (const auto& f : j["fitted_on"])
      if (f.is_string()) c.fitted_on.push_back(f.get<std::string>());
  return c;
}

Calibration load_calibration_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  json j;
  try {
    j = json::parse(ss.str());
  } catch (const json::parse_error& e) {
    throw InputError(path + "@" + std::to_string(e.byte), std::string("malformed JSON: ") + e.what());
  }
  return read_calibration(j, path);
}

Prediction apply_calibration(const Prediction& p, const Calibration& c) {
  if (p.tool == "estimate")
    throw InputError(p.source,
                     "a calibration applies to per-op predictions (`preflight analyze --json`), "
                     "not to estimate output");
  Prediction out = p;
  for (auto& s : out.stages) {
    double kept_before = 0, kept_after = 0;
    for (const auto& op : s.ops)
      for (const auto& t : op.kept) kept_before += static_cast<double>(t.bytes);
    // Module coefficients act on what each module allocates and keeps (the attribution of compare()).
    std::map<std::string, double> by = predicted_by_module(s, 0, false);
    for (auto& op : s.ops) {
      auto it = c.modules.find(module_kind(op.path));
      if (it == c.modules.end()) continue;
      double own = by.count(op.path) ? by[op.path] : 0;
      double delta = (it->second.scale - 1) * own + it->second.bytes_per_op;
      op.kept.push_back({"calibration", static_cast<std::int64_t>(std::llround(delta)), false});
    }
    for (const auto& op : s.ops)
      for (const auto& t : op.kept) kept_after += static_cast<double>(t.bytes);
    double act =
        kept_before > 0 ? s.peak_activation_bytes * kept_after / kept_before : s.peak_activation_bytes;
    double trans = s.peak_transient_bytes * c.transient_scale;
    s.peak_bytes = s.peak_static_bytes + act + trans + c.overhead_bytes;
    s.peak_activation_bytes = act;
    s.peak_transient_bytes = trans + c.overhead_bytes;
  }
  return out;
}

void apply_calibration(LayerGraph& graph, const Calibration& c) {
  std::string impl = to_string(graph.strategy.transformer_impl);
  if (!c.implementation.empty() && c.implementation != impl)
    throw InputError("--calibration", "fitted for implementation " + c.implementation + ", not " + impl);
  for (auto& chunk : graph.chunks) {
    // What each op allocates and keeps: its own kept tensors plus the next op's kept input.
    std::vector<double> own(chunk.ops.size(), 0);
    for (std::size_t i = 0; i < chunk.ops.size(); ++i) {
      const Op& op = chunk.ops[i];
      own[i] += static_cast<double>(op.kept_bytes - op.kept_input_bytes());
      if (i > 0) own[i - 1] += static_cast<double>(op.kept_input_bytes());
    }
    for (std::size_t i = 0; i < chunk.ops.size(); ++i) {
      Op& op = chunk.ops[i];
      op.fwd_transient_bytes = std::llround(static_cast<double>(op.fwd_transient_bytes) * c.transient_scale);
      op.bwd_transient_bytes = std::llround(static_cast<double>(op.bwd_transient_bytes) * c.transient_scale);
      auto it = c.modules.find(module_kind(op.path));
      if (it == c.modules.end()) continue;
      double delta = (it->second.scale - 1) * own[i] + it->second.bytes_per_op;
      std::int64_t d = std::llround(delta);
      if (d == 0) continue;
      op.kept.push_back({"calibration", d, false});
      op.kept_bytes += d;
    }
    chunk.overhead_bytes = c.overhead_bytes;
  }
}

}  // namespace preflight::analyzer
