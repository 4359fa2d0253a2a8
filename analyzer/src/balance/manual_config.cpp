#include "preflight/analyzer/balance/manual_config.hpp"

#include <cmath>

#include <yaml-cpp/yaml.h>

#include "preflight/common/error.hpp"
#include "yaml_input.hpp"

namespace preflight::analyzer::balance {

namespace {

using Ctx = detail::YamlCtx;
using detail::as_bool;

int as_int(const Ctx& ctx, const YAML::Node& n, const std::string& what) {
  try {
    std::size_t pos = 0;
    const std::string s = n.Scalar();
    const double v = std::stod(s, &pos);
    if (pos != s.size() || std::floor(v) != v) throw std::invalid_argument(s);
    return static_cast<int>(v);
  } catch (const std::exception&) {
    throw InputError(ctx.at(n),
                     what + ": expected an integer, got '" + (n.IsScalar() ? n.Scalar() : "a list") + "'");
  }
}

// [chunk][stage] from: missing/false/0 → zeros, true → `all`, [S] → one chunk, [[S]…] → per chunk.
std::vector<std::vector<int>> grid(const Ctx& ctx, const YAML::Node& n, int V, int S, const std::string& what,
                                   const std::vector<std::vector<int>>* all) {
  std::vector<std::vector<int>> zero(V, std::vector<int>(S, 0));
  if (!n.IsDefined() || n.IsNull()) return zero;
  if (auto b = as_bool(n)) {
    if (!*b) return zero;
    if (!all) throw InputError(ctx.at(n), what + ": expected 0 or a list");
    return *all;
  }
  if (n.IsScalar()) {
    if (as_int(ctx, n, what) != 0) throw InputError(ctx.at(n), what + ": expected true, false, 0 or a list");
    return zero;
  }
  if (!n.IsSequence()) throw InputError(ctx.at(n), what + ": expected a list");
  std::vector<YAML::Node> rows;
  bool nested = n.size() > 0 && n[0].IsSequence();
  if (nested)
    for (const auto& r : n) rows.push_back(r);
  else
    rows.push_back(n);
  if (static_cast<int>(rows.size()) != V)
    throw InputError(ctx.at(n), what + ": " + std::to_string(rows.size()) +
                                    " chunk lists for interleave_num " + std::to_string(V));
  std::vector<std::vector<int>> out;
  for (const auto& r : rows) {
    if (!r.IsSequence() || static_cast<int>(r.size()) != S)
      throw InputError(ctx.at(r), what + ": expected " + std::to_string(S) + " entries (one per stage)");
    std::vector<int> row;
    for (const auto& e : r) row.push_back(as_int(ctx, e, what));
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace

std::vector<ManualStrategy> read_manual_strategies(const std::filesystem::path& file,
                                                   const BalanceProblem& problem) {
  Ctx ctx{file.string()};
  YAML::Node root = detail::load_yaml(file, "cannot open manual strategy file");
  if (!root.IsMap() || root.size() == 0)
    throw InputError(file.string(), "expected named strategies (name: {offset: …, select_recompute: …})");
  const int S = problem.pipeline.stages;
  std::vector<ManualStrategy> out;
  for (const auto& kv : root) {
    ManualStrategy ms;
    ms.name = kv.first.Scalar();
    const YAML::Node& e = kv.second;
    if (!e.IsMap()) throw InputError(ctx.at(e), ms.name + ": expected a mapping");
    ms.chunks = problem.pipeline.chunks;
    if (e["interleave_num"].IsDefined())
      ms.chunks = as_int(ctx, e["interleave_num"], ms.name + ".interleave_num");
    if (ms.chunks < 1) throw InputError(ctx.at(e), ms.name + ": interleave_num must be at least 1");
    if (e["file_name"].IsDefined() && e["file_name"].IsScalar()) ms.file_name = e["file_name"].Scalar();
    BalanceProblem p = problem;
    p.pipeline.chunks = ms.chunks;
    if (p.model.bodies.size() != 1)
      throw InputError(ctx.at(e), ms.name + ": manual strategies need a model with one body layer kind");
    const int V = ms.chunks;
    const int base = p.model.bodies[0].count / (S * V);
    YamlStrategy y;
    y.offset = grid(ctx, e["offset"], V, S, ms.name + ".offset", nullptr);
    std::vector<std::vector<int>> all(V, std::vector<int>(S, 0));
    for (int v = 0; v < V; ++v)
      for (int s = 0; s < S; ++s) all[v][s] = base + y.offset[v][s];
    y.recompute = grid(ctx, e["recompute"], V, S, ms.name + ".recompute", &all);
    y.select_recompute = grid(ctx, e["select_recompute"], V, S, ms.name + ".select_recompute", &all);
    y.select_comm_recompute =
        grid(ctx, e["select_comm_recompute"], V, S, ms.name + ".select_comm_recompute", &all);
    ms.assignment = assignment_from_yaml(p, y, ctx.at(e) + ": " + ms.name);
    if (const std::string why = check_assignment(p, ms.assignment); !why.empty())
      throw InputError(ctx.at(e), ms.name + ": " + why);
    out.push_back(std::move(ms));
  }
  return out;
}

}  // namespace preflight::analyzer::balance
