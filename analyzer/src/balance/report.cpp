#include "preflight/analyzer/balance/report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "preflight/analyzer/model/strategy.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::analyzer::balance {

using nlohmann::json;

namespace {

std::string f(double v, int d) {
  return fixed(v, d);
}

std::string centred(const std::string& s, int width) {
  const int n = static_cast<int>(display_width(s));
  if (n >= width) return s;
  const int left = (width - n) / 2;
  return std::string(left, ' ') + s + std::string(width - n - left, ' ');
}

std::string list(const std::vector<int>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}
std::string list2(const std::vector<std::vector<int>>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + list(v[i]);
  return s + "]";
}

json bubbles_json(const Bubbles& b) {
  json j = {{"real", b.real}, {"ideal", b.ideal}, {"imba", b.imba}};
  j["recompute"] = b.has_recompute ? json(b.recompute) : json(nullptr);
  return j;
}

json candidate_json(const BalanceProblem& problem, const Candidate& c) {
  json j = {{"name", c.name},
            {"end_time_ms", c.sim.end_time_ms},
            {"bubbles", bubbles_json(c.sim.bubbles)},
            {"peak_mb", c.sim.peak_mb},
            {"max_peak_mb", c.sim.max_peak_mb()},
            {"fits", c.fits}};
  if (c.assignment.chunks() == problem.pipeline.chunks && problem.model.bodies.size() == 1) {
    const YamlStrategy y = yaml_strategy(problem, c.assignment);
    j["yaml"] = {{"offset", y.offset},
                 {"recompute", y.recompute},
                 {"select_recompute", y.select_recompute},
                 {"select_comm_recompute", y.select_comm_recompute}};
  }
  return j;
}

}  // namespace

std::string sapp_bubble_block(const PipelineConfig& pipeline, const SimulationResult& sim) {
  std::ostringstream o;
  const std::string dash = "—————————————";
  char head[96];
  std::snprintf(head, sizeof head, "pp:%2d, vp:%2d, micro:%3d", pipeline.stages, pipeline.chunks,
                pipeline.units());
  o << dash << " " << head << " "
    << "————————————"
    << "\n";
  o << "--------------------  bubble  --------------------\n";
  const auto& b = sim.bubbles;
  std::vector<std::string> names = {"real", "ideal", "imba"};
  std::vector<std::string> values = {f(b.real, 4), f(b.ideal, 4), f(b.imba, 4)};
  if (b.has_recompute) {
    names.push_back("recompute");
    values.push_back(f(b.recompute, 4));
  }
  const char* sym[] = {"=", "+", "+", "+"};
  // SAPP centres each coloured cell in 22 characters, 11 of which are the invisible colour codes.
  for (const auto* row : {&names, &values}) {
    std::string line = centred((*row)[0], 11);
    for (std::size_t i = 1; i < row->size(); ++i) line += std::string(sym[i - 1]) + centred((*row)[i], 11);
    o << line << "\n";
  }
  o << "--------------------  memory  --------------------\n";
  o << "peak memory: ";
  for (std::size_t i = 0; i < sim.peak_mb.size(); ++i) o << (i ? ", " : "") << f(sim.peak_mb[i], 2);
  o << "\n";
  return o.str();
}

std::string sapp_yaml_block(const BalanceProblem& problem, const Assignment& a) {
  std::ostringstream o;
  const int S = problem.pipeline.stages, V = problem.pipeline.chunks;
  for (std::size_t k = 0; k < problem.model.bodies.size(); ++k) {
    const int base = problem.model.bodies[k].count / (S * V);
    std::vector<std::vector<int>> nass(V, std::vector<int>(S, base));
    const YamlStrategy y = yaml_strategy(problem, a, static_cast<int>(k));
    if (problem.model.bodies.size() > 1) o << "body layer '" << problem.model.bodies[k].name << "':\n";
    o << "layer-to-stage assignment baseline is \n\t" << list2(nass) << "\n";
    o << "To put in yaml configuration:\n"
      << "\toffset: " << list2(y.offset) << "\n"
      << "\trecompute: " << list2(y.recompute) << "\n"
      << "\tselect_recompute: " << list2(y.select_recompute) << "\n"
      << "\tselect_comm_recompute: " << list2(y.select_comm_recompute) << "\n";
  }
  return o.str();
}

MegatronForm megatron_form(const BalanceProblem& problem, const Assignment& a) {
  const int S = problem.pipeline.stages, V = a.chunks();
  const int K = static_cast<int>(problem.model.bodies.size());
  MegatronForm out;
  std::vector<std::vector<int>> layers(V, std::vector<int>(S, 0));
  for (int v = 0; v < V; ++v)
    for (int s = 0; s < S; ++s) layers[v][s] = a.chunk_layers(v, s);
  out.layout = format_pipeline_layout(layers);

  // Recompute: counts per chunk of each class, over all body kinds.
  auto count = [&](Recompute r, int v, int s) {
    int c = 0;
    for (int k = 0; k < K; ++k) c += a.at(k, r, v, s);
    return c;
  };
  bool any_full = false, any_select = false, any_comm = false, all_select = true;
  int max_full = 0;
  for (int v = 0; v < V; ++v)
    for (int s = 0; s < S; ++s) {
      const int full = count(Recompute::Full, v, s), sel = count(Recompute::Select, v, s);
      const int comm = count(Recompute::Comm, v, s) + count(Recompute::Both, v, s);
      any_full = any_full || full > 0;
      any_select = any_select || sel > 0;
      any_comm = any_comm || comm > 0;
      all_select = all_select && sel == a.chunk_layers(v, s);
      max_full = std::max(max_full, full);
    }
  if (any_comm) {
    out.note = "comm recompute (MindSpore's select_comm_recompute) has no Megatron-LM flag";
  } else if (any_full && any_select) {
    out.note = "Megatron-LM takes full or selective recompute, not both";
  } else if (any_full) {
    // Block method: the first N layers of every chunk are recomputed, N the same everywhere.
    bool block = true;
    for (int v = 0; v < V; ++v)
      for (int s = 0; s < S; ++s)
        block = block && count(Recompute::Full, v, s) == std::min(max_full, a.chunk_layers(v, s));
    if (block)
      out.recompute_args = {"--recompute-granularity full", "--recompute-method block",
                            "--recompute-num-layers " + std::to_string(max_full)};
    else
      out.note =
          "full recompute differs per chunk; Megatron-LM's --recompute-num-layers is one number for "
          "every virtual stage (the yaml lines above give the counts per chunk)";
  } else if (any_select) {
    if (all_select)
      out.recompute_args = {"--recompute-granularity selective"};
    else
      out.note =
          "selective recompute on some layers only; Megatron-LM applies --recompute-granularity "
          "selective to every layer (the yaml lines above give the counts per chunk)";
  }
  return out;
}

std::string render_decomposition_text(const Decomposition& d) {
  const int stages = d.stages;
  std::ostringstream o;
  o << "memory decomposition: " << decompose_method_name(d.method);
  for (const auto& n : d.notes) o << "; " << n;
  o << "\n  c " << (d.const_mb ? f(*d.const_mb, 2) : std::string("(not fitted)")) << "  P "
    << f(d.param_mb, 2);
  for (Recompute r : kAllRecompute)
    if (d.activation_mb[static_cast<int>(r)])
      o << "  a_" << recompute_name(r) << " " << f(*d.activation_mb[static_cast<int>(r)], 2);
  o << "  H " << f(d.head_mb, 2) << "  T " << f(d.tail_mb, 2) << "  (MB; H and T include c)\n";
  TextTable t;
  t.column("round", TextTable::Align::Right)
      .column("stage", TextTable::Align::Right)
      .column("measured MB", TextTable::Align::Right)
      .column("fitted MB", TextTable::Align::Right)
      .column("residual MB", TextTable::Align::Right);
  for (const auto& fit : d.fits) {
    std::string stage = std::to_string(fit.stage);
    if (fit.stage == 0) stage += " (head)";
    if (fit.stage == stages - 1) stage += " (tail)";
    t.row({std::to_string(fit.round + 1), stage, f(fit.measured_mb, 0), f(fit.fitted_mb, 1),
           f(fit.residual_mb(), 1)});
  }
  std::string table = t.render();
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) o << "  " << line << "\n";
  return o.str();
}

json decomposition_json(const Decomposition& d) {
  json act = json::object();
  for (Recompute r : kAllRecompute)
    if (d.activation_mb[static_cast<int>(r)]) act[recompute_name(r)] = *d.activation_mb[static_cast<int>(r)];
  json fits = json::array();
  for (const auto& fit : d.fits)
    fits.push_back({{"round", fit.round + 1},
                    {"stage", fit.stage},
                    {"measured_mb", fit.measured_mb},
                    {"fitted_mb", fit.fitted_mb},
                    {"residual_mb", fit.residual_mb()}});
  return {{"method", decompose_method_name(d.method)},
          {"const_mb", d.const_mb ? json(*d.const_mb) : json(nullptr)},
          {"param_mb", d.param_mb},
          {"activation_mb", act},
          {"head_mb", d.head_mb},
          {"tail_mb", d.tail_mb},
          {"fits", fits},
          {"notes", d.notes}};
}

std::string render_balance_text(const BalanceReport& rep) {
  const BalanceProblem& p = *rep.problem;
  const BalanceResult& r = *rep.result;
  const auto& pipe = p.pipeline;
  std::ostringstream o;
  o << "preflight balance — " << p.model.name << ": " << pipe.stages << " stages × " << pipe.chunks
    << " chunk" << (pipe.chunks > 1 ? "s" : "") << ", " << pipe.micro_batches << " micro batches"
    << (pipe.seq_split > 1 ? " × " + std::to_string(pipe.seq_split) + " sequence chunks" : std::string())
    << ", " << schedule_name(pipe.schedule()) << "; memory limit " << f(p.memory_limit_mb, 0) << " MB\n\n";

  // The model.
  o << "model (" << rep.model_source << "): " << p.model.total_body_layers()
    << " body layers; forward ms per micro batch: "
    << "head " << f(p.model.head_forward_ms, 2) << ", tail " << f(p.model.tail_forward_ms, 2);
  if (!rep.times_source.empty()) o << " (" << rep.times_source << ")";
  o << "\n";
  for (const auto& b : p.model.bodies) {
    o << "  " << b.name << " ×" << b.count << ": forward " << f(b.forward_ms, 2) << " ms, parameters "
      << f(b.param_mb, 0) << " MB; per class (activation MB / backward ms):";
    for (Recompute rr : kAllRecompute)
      if (b.considered(rr))
        o << " " << recompute_name(rr) << " " << f(b.activation(rr), 0) << "/" << f(b.backward(rr), 2);
    o << "\n";
  }
  o << "  constant " << f(p.model.const_mb, 0) << " MB per stage; head " << f(p.model.head_mb, 0)
    << " MB, tail " << f(p.model.tail_mb, 0) << " MB"
    << (p.constant == ConstantMemory::Once ? " (they include the constant, counted once)"
                                           : " (constant counted again on the first and last stage, as SAPP)")
    << "\n\n";
  for (const auto& n : rep.notes) o << "note: " << n << "\n";
  if (!rep.notes.empty()) o << "\n";
  if (rep.decomposition) o << render_decomposition_text(*rep.decomposition) << "\n";

  // Candidates.
  TextTable t;
  t.column("candidate")
      .column("iteration ms", TextTable::Align::Right)
      .column("real bubble", TextTable::Align::Right)
      .column("max peak MB", TextTable::Align::Right)
      .column("fits");
  auto add = [&](const Candidate& c, const std::string& mark) {
    t.row({c.name + mark, f(c.sim.end_time_ms, 1), f(c.sim.bubbles.real, 4), f(c.sim.max_peak_mb(), 0),
           c.fits ? "yes" : "no"});
  };
  for (const auto& c : r.naive) add(c, "");
  for (const auto& c : rep.manual) add(c, " (manual)");
  if (r.found || !r.best.name.empty()) add(r.best, "  <- answer");
  o << "candidates (simulated):\n";
  std::istringstream lines(t.render());
  for (std::string line; std::getline(lines, line);) o << "  " << line << "\n";
  o << "\n";
  if (rep.verbose)
    for (const auto& s : r.steps) o << "  · " << s << "\n";
  if (rep.verbose && !r.steps.empty()) o << "\n";

  if (!r.found) {
    o << "no placement fits " << f(p.memory_limit_mb, 0) << " MB in the simulator";
    if (!r.lower_bound_ms) o << " (not even a fractional one: the LP relaxation is infeasible)";
    o << "; the closest reaches " << f(r.best.sim.max_peak_mb(), 0) << " MB\n";
  } else {
    o << "answer: " << r.best.name << "; " << f(r.best.sim.end_time_ms, 1) << " ms per iteration";
    if (r.proven_optimal)
      o << ", proven optimal (exact MILP)";
    else if (r.lower_bound_ms)
      o << ", lower bound " << f(*r.lower_bound_ms, 1) << " ms, gap " << f(100 * r.gap().value_or(0), 2)
        << "%";
    o << "\n";
    if (!r.naive.empty()) {
      const Candidate* bn = nullptr;
      for (const auto& c : r.naive)
        if (c.fits && (!bn || c.sim.end_time_ms < bn->sim.end_time_ms)) bn = &c;
      if (bn)
        o << "  vs the best naive strategy that fits (" << bn->name << "): " << f(bn->sim.end_time_ms, 1)
          << " ms, " << f(100 * (bn->sim.end_time_ms - r.best.sim.end_time_ms) / bn->sim.end_time_ms, 2)
          << "% faster\n";
    }
    if (r.milp)
      o << "  MILP (" << formulation_name(rep.formulation) << " formulation): " << r.milp->status() << ", "
        << r.milp->nodes << " nodes, " << f(r.milp->seconds, 2) << " s\n";
    o << "  solved in " << f(r.seconds, 2) << " s (" << r.evaluations << " simulations)\n\n";
  }
  o << sapp_bubble_block(pipe, r.best.sim);
  if (rep.show_naive)
    for (const auto& c : r.naive) o << "\n" << c.name << ":\n" << sapp_bubble_block(pipe, c.sim);
  for (const auto& c : rep.manual) {
    PipelineConfig mp = pipe;
    mp.chunks = c.assignment.chunks();
    o << "\n" << c.name << " (manual):\n" << sapp_bubble_block(mp, c.sim);
  }
  if (r.found || !r.best.name.empty()) {
    o << "\n" << sapp_yaml_block(p, r.best.assignment);
    const MegatronForm mf = megatron_form(p, r.best.assignment);
    o << "For Megatron-LM (core >= 0.13):\n\t--pipeline-model-parallel-size " << p.pipeline.stages
      << " --pipeline-model-parallel-layout \"" << mf.layout << "\"\n";
    if (!mf.recompute_args.empty()) {
      o << "\t";
      for (std::size_t i = 0; i < mf.recompute_args.size(); ++i) o << (i ? " " : "") << mf.recompute_args[i];
      o << "\n";
    }
    if (!mf.note.empty()) o << "\t(" << mf.note << ")\n";
  }
  for (const auto& [what, path] : rep.svg_files) o << "\nSVG (" << what << "): " << path;
  if (!rep.svg_files.empty()) o << "\n";
  return o.str();
}

json balance_json(const BalanceReport& rep) {
  const BalanceProblem& p = *rep.problem;
  const BalanceResult& r = *rep.result;
  json j;
  j["problem"] = {{"stages", p.pipeline.stages},
                  {"chunks", p.pipeline.chunks},
                  {"micro_batches", p.pipeline.micro_batches},
                  {"seq_split", p.pipeline.seq_split},
                  {"schedule", schedule_name(p.pipeline.schedule())},
                  {"memory_limit_mb", p.memory_limit_mb},
                  {"constant_memory", p.constant == ConstantMemory::Once ? "once" : "sapp_twice_at_ends"}};
  j["model"] = layer_model_json(p.model, false);
  j["model_source"] = rep.model_source;
  j["times_source"] = rep.times_source;
  if (rep.decomposition) j["decomposition"] = decomposition_json(*rep.decomposition);
  j["found"] = r.found;
  j["answer"] = candidate_json(p, r.best);
  if (r.found || !r.best.name.empty()) {
    const MegatronForm mf = megatron_form(p, r.best.assignment);
    j["answer"]["megatron"] = {{"pipeline_model_parallel_layout", mf.layout},
                               {"recompute_args", mf.recompute_args},
                               {"note", mf.note.empty() ? json(nullptr) : json(mf.note)}};
  }
  j["lower_bound_ms"] = r.lower_bound_ms ? json(*r.lower_bound_ms) : json(nullptr);
  j["gap"] = r.gap() ? json(*r.gap()) : json(nullptr);
  j["proven_optimal"] = r.proven_optimal;
  json naive = json::array();
  for (const auto& c : r.naive) naive.push_back(candidate_json(p, c));
  j["naive"] = naive;
  json manual = json::array();
  for (const auto& c : rep.manual) {
    json m = {{"name", c.name},
              {"chunks", c.assignment.chunks()},
              {"end_time_ms", c.sim.end_time_ms},
              {"bubbles", bubbles_json(c.sim.bubbles)},
              {"peak_mb", c.sim.peak_mb},
              {"max_peak_mb", c.sim.max_peak_mb()},
              {"fits", c.fits}};
    if (c.assignment.chunks() == p.pipeline.chunks && p.model.bodies.size() == 1) {
      const YamlStrategy y = yaml_strategy(p, c.assignment);
      m["yaml"] = {{"offset", y.offset},
                   {"recompute", y.recompute},
                   {"select_recompute", y.select_recompute},
                   {"select_comm_recompute", y.select_comm_recompute}};
    }
    manual.push_back(m);
  }
  j["manual"] = manual;
  if (r.milp)
    j["milp"] = {
        {"status", r.milp->status()}, {"objective", r.milp->objective}, {"bound", r.milp->bound},
        {"gap", r.milp->gap},         {"nodes", r.milp->nodes},         {"seconds", r.milp->seconds},
        {"rows", r.milp->rows},       {"columns", r.milp->columns},     {"integers", r.milp->integers}};
  else
    j["milp"] = nullptr;
  j["steps"] = r.steps;
  j["notes"] = rep.notes;
  json svg = json::array();
  for (const auto& [what, path] : rep.svg_files) svg.push_back({{"what", what}, {"path", path}});
  j["svg"] = svg;
  j["evaluations"] = r.evaluations;
  j["seconds"] = r.seconds;
  return j;
}

}  // namespace preflight::analyzer::balance
