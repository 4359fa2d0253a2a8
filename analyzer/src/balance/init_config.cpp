#include "preflight/analyzer/balance/init_config.hpp"

#include <cmath>

#include <yaml-cpp/yaml.h>

#include "preflight/common/error.hpp"
#include "yaml_input.hpp"

namespace preflight::analyzer::balance {

namespace {

using Ctx = detail::YamlCtx;
using detail::as_bool;

bool is_scalar(const YAML::Node& n) {
  return n.IsDefined() && n.IsScalar();
}

double as_number(const Ctx& ctx, const YAML::Node& n, const std::string& what) {
  if (!is_scalar(n)) throw InputError(ctx.at(n), what + ": expected a number");
  try {
    std::size_t pos = 0;
    const std::string s = n.Scalar();
    double v = std::stod(s, &pos);
    if (pos != s.size()) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    throw InputError(ctx.at(n), what + ": expected a number, got '" + n.Scalar() + "'");
  }
}

int as_int(const Ctx& ctx, const YAML::Node& n, const std::string& what) {
  if (auto b = as_bool(n)) return *b ? 1 : 0;
  double v = as_number(ctx, n, what);
  if (std::floor(v) != v || std::abs(v) > 1e9) throw InputError(ctx.at(n), what + ": expected an integer");
  return static_cast<int>(v);
}

YAML::Node child(const Ctx& ctx, const YAML::Node& parent, const char* key, const std::string& path) {
  if (!parent.IsMap()) throw InputError(ctx.at(parent), path + ": expected a mapping");
  YAML::Node n = parent[key];
  if (!n.IsDefined() || n.IsNull()) throw InputError(ctx.at(parent), "missing '" + path + "." + key + "'");
  return n;
}

bool is_list_of_lists(const YAML::Node& n) {
  if (!n.IsSequence() || n.size() == 0) return false;
  for (const auto& e : n)
    if (e.IsSequence()) return true;
  return false;
}

std::vector<int> int_list(const Ctx& ctx, const YAML::Node& n, std::size_t expect, const std::string& what) {
  if (!n.IsSequence()) throw InputError(ctx.at(n), what + ": expected a list");
  if (n.size() != expect)
    throw InputError(ctx.at(n), what + ": has " + std::to_string(n.size()) + " entries, pipeline_num is " +
                                    std::to_string(expect));
  std::vector<int> out;
  for (const auto& e : n) out.push_back(as_int(ctx, e, what));
  return out;
}

// One round's recompute value: bool | int 0 | [S ints] → counts per stage (true = every layer).
std::vector<int> recompute_round(const Ctx& ctx, const YAML::Node& n, const std::vector<int>& layers,
                                 const std::string& what) {
  const std::size_t S = layers.size();
  if (!n.IsDefined() || n.IsNull()) return std::vector<int>(S, 0);
  if (auto b = as_bool(n)) return *b ? layers : std::vector<int>(S, 0);
  if (is_scalar(n)) {
    int v = as_int(ctx, n, what);
    if (v != 0) throw InputError(ctx.at(n), what + ": expected true, false, 0 or a list per stage");
    return std::vector<int>(S, 0);
  }
  if (n.IsMap())
    throw InputError(ctx.at(n),
                     what + ": per-operator recompute patterns are not supported; give layer counts");
  return int_list(ctx, n, S, what);
}

std::vector<std::string> string_list(const YAML::Node& n, std::vector<std::string> def) {
  if (!n.IsDefined() || n.IsNull()) return def;
  if (n.IsScalar()) return {n.Scalar()};
  std::vector<std::string> out;
  for (const auto& e : n) out.push_back(e.Scalar());
  return out;
}

StageTimes time_config_from(const Ctx& ctx, const YAML::Node& tc) {
  StageTimes t;
  t.head_ms = as_number(ctx, tc["head"], "time_config.head");
  t.body_ms = as_number(ctx, tc["body"], "time_config.body");
  t.tail_ms = as_number(ctx, tc["tail"], "time_config.tail");
  if (t.head_ms < 0 || t.body_ms <= 0 || t.tail_ms < 0)
    throw InputError(ctx.at(tc), "time_config: body must be > 0 and head, tail >= 0 (ms)");
  return t;
}

}  // namespace

StageTimes read_time_config(const std::filesystem::path& file) {
  Ctx ctx{file.string()};
  YAML::Node root = detail::load_yaml(file, "cannot open");
  YAML::Node tc = root.IsMap() ? root["time_config"] : YAML::Node();
  if (!tc.IsDefined() || !tc.IsMap() || !tc["head"].IsDefined() || !tc["body"].IsDefined() ||
      !tc["tail"].IsDefined())
    throw InputError(file.string(), "no time_config with head, body and tail (ms)");
  return time_config_from(ctx, tc);
}

InitConfig read_init_config(const std::filesystem::path& file, HeadTailRound head_tail,
                            const std::vector<std::filesystem::path>& memory_files) {
  Ctx ctx{file.string()};
  YAML::Node root = detail::load_yaml(file, "cannot open init yaml");
  if (!root.IsMap())
    throw InputError(file.string(), "expected a yaml mapping with pipeline_config and memory_usage");

  InitConfig cfg;
  cfg.file = file;
  YAML::Node pipe = child(ctx, root, "pipeline_config", "");
  YAML::Node sn = child(ctx, pipe, "pipeline_num", "pipeline_config");
  YAML::Node ln = child(ctx, pipe, "num_layer", "pipeline_config");
  cfg.stages = as_int(ctx, sn, "pipeline_num");
  cfg.layers = as_int(ctx, ln, "num_layer");
  if (cfg.stages < 3)
    throw InputError(ctx.at(sn), "pipeline_num must be at least 3 (head, tail and a body stage)");
  if (cfg.layers < cfg.stages) throw InputError(ctx.at(ln), "num_layer must be at least pipeline_num");
  const int S = cfg.stages;
  const int lps = cfg.layers / S;

  // Offsets → rounds.
  YAML::Node off = pipe["offset"];
  std::vector<std::vector<int>> offsets;
  std::vector<YAML::Node> offset_nodes;
  if (!off.IsDefined() || off.IsNull() || is_scalar(off)) {
    int v = off.IsDefined() && !off.IsNull() ? as_int(ctx, off, "offset") : 0;
    offsets.push_back(std::vector<int>(S, v));
    offset_nodes.push_back(off.IsDefined() ? off : pipe);
  } else if (is_list_of_lists(off)) {
    for (const auto& r : off) {
      if (is_scalar(r)) {
        offsets.push_back(std::vector<int>(S, as_int(ctx, r, "offset")));
      } else {
        offsets.push_back(int_list(ctx, r, S, "offset"));
      }
      offset_nodes.push_back(r);
    }
  } else {
    offsets.push_back(int_list(ctx, off, S, "offset"));
    offset_nodes.push_back(off);
  }
  cfg.rounds = static_cast<int>(offsets.size());
  for (int r = 0; r < cfg.rounds; ++r) {
    std::vector<int> layers(S);
    int sum = 0;
    for (int s = 0; s < S; ++s) {
      layers[s] = lps + offsets[r][s];
      if (layers[s] < 0)
        throw InputError(ctx.at(offset_nodes[r]), "round " + std::to_string(r + 1) + ": stage " +
                                                      std::to_string(s) + " gets " +
                                                      std::to_string(layers[s]) + " layers");
      sum += layers[s];
    }
    if (sum != cfg.layers)
      throw InputError(ctx.at(offset_nodes[r]),
                       "round " + std::to_string(r + 1) + ": offsets place " + std::to_string(sum) +
                           " layers on the stages (num_layer/pipeline_num = " + std::to_string(lps) +
                           " each + offset)" + " but num_layer is " + std::to_string(cfg.layers));
    cfg.stage_layers.push_back(std::move(layers));
  }

  // Recompute counts per round.
  YAML::Node rc = root["recompute_config"];
  const char* keys[3] = {"recompute", "select_recompute", "select_comm_recompute"};
  std::vector<std::array<std::vector<int>, 3>> counts(cfg.rounds);
  for (int k = 0; k < 3; ++k) {
    YAML::Node n = rc.IsDefined() && rc.IsMap() ? rc[keys[k]] : YAML::Node();
    const std::string what = std::string("recompute_config.") + keys[k];
    // Per round when it is a list whose entries are lists or bools and the yaml has several rounds.
    bool per_round = false;
    if (n.IsDefined() && n.IsSequence() && cfg.rounds > 1) {
      per_round = is_list_of_lists(n);
      if (!per_round) {
        bool all_bool = n.size() > 0;
        for (const auto& e : n) all_bool = all_bool && as_bool(e).has_value();
        per_round = all_bool && n.size() == static_cast<std::size_t>(cfg.rounds);
      }
      if (per_round && n.size() != static_cast<std::size_t>(cfg.rounds))
        throw InputError(ctx.at(n), what + ": has " + std::to_string(n.size()) + " rounds, offset has " +
                                        std::to_string(cfg.rounds));
    } else if (n.IsDefined() && is_list_of_lists(n) && cfg.rounds == 1) {
      if (n.size() != 1)
        throw InputError(ctx.at(n), what + ": has " + std::to_string(n.size()) + " rounds, offset has 1");
      per_round = true;
    }
    for (int r = 0; r < cfg.rounds; ++r) {
      YAML::Node v = per_round ? n[r] : n;
      counts[r][k] = recompute_round(ctx, v, cfg.stage_layers[r], what);
      for (int s = 0; s < S; ++s) {
        const int c = counts[r][k][s];
        if (c < 0 || c > cfg.stage_layers[r][s])
          throw InputError(ctx.at(v.IsDefined() ? v : root),
                           what + ": round " + std::to_string(r + 1) + " stage " + std::to_string(s) +
                               " asks for " + std::to_string(c) + " layers but the stage holds " +
                               std::to_string(cfg.stage_layers[r][s]));
      }
    }
  }
  cfg.stage_classes.resize(cfg.rounds);
  for (int r = 0; r < cfg.rounds; ++r)
    for (int s = 0; s < S; ++s) {
      YamlRecomputeCounts y{cfg.stage_layers[r][s], counts[r][0][s], counts[r][1][s], counts[r][2][s]};
      cfg.stage_classes[r].push_back(classes_from_yaml(y));
    }

  // Memories: from the init yaml, or one memory_usage file per round.
  auto add_obs = [&](const Ctx& c, int round, int stage, const YAML::Node& value, const std::string& what) {
    if (stage < 0 || stage >= S)
      throw InputError(c.at(value), what + ": stage id " + std::to_string(stage) + " is outside 0.." +
                                        std::to_string(S - 1));
    DryrunObservation o;
    o.round = round;
    o.stage = stage;
    o.layers = cfg.stage_layers[round][stage];
    o.classes = cfg.stage_classes[round][stage];
    o.peak_mb = as_number(c, value, what);
    if (!(o.peak_mb > 0)) throw InputError(c.at(value), what + ": memory must be a positive number of MB");
    o.where = c.at(value);
    cfg.observations.push_back(o);
  };
  // Body stages of one round from flat lists.
  auto add_body_round = [&](const Ctx& c, int r, const YAML::Node& ri, const YAML::Node& rm) {
    if (!ri.IsSequence() || !rm.IsSequence() || ri.size() != rm.size())
      throw InputError(c.at(rm), "memory_usage.body_memories: round " + std::to_string(r + 1) +
                                     ": stage_id and memories must be lists of the same length");
    for (std::size_t i = 0; i < ri.size(); ++i) {
      const int stage = as_int(c, ri[i], "stage_id");
      if (stage == 0 || stage == S - 1)
        throw InputError(c.at(ri[i]), "body_memories.stage_id " + std::to_string(stage) +
                                          " is the head or tail stage; give it as head_memory / tail_memory");
      add_obs(c, r, stage, rm[i], "body_memories.memories");
    }
  };
  std::vector<DryrunObservation> heads, tails;
  if (!memory_files.empty()) {
    if (static_cast<int>(memory_files.size()) != cfg.rounds)
      throw InputError("--memory", std::to_string(memory_files.size()) + " memory file(s) for " +
                                       std::to_string(cfg.rounds) + " dryrun round(s) in " + file.string());
    for (int r = 0; r < cfg.rounds; ++r) {
      Ctx mc{memory_files[r].string()};
      YAML::Node mroot = detail::load_yaml(memory_files[r], "cannot open memory file");
      if (!mroot.IsMap()) throw InputError(mc.file, "expected a memory_usage block");
      YAML::Node mu = child(mc, mroot, "memory_usage", "");
      YAML::Node body = child(mc, mu, "body_memories", "memory_usage");
      add_body_round(mc, r, child(mc, body, "stage_id", "memory_usage.body_memories"),
                     child(mc, body, "memories", "memory_usage.body_memories"));
      add_obs(mc, r, 0, child(mc, mu, "head_memory", "memory_usage"), "head_memory");
      heads.push_back(cfg.observations.back());
      cfg.observations.pop_back();
      add_obs(mc, r, S - 1, child(mc, mu, "tail_memory", "memory_usage"), "tail_memory");
      tails.push_back(cfg.observations.back());
      cfg.observations.pop_back();
    }
  } else {
    YAML::Node mu = child(ctx, root, "memory_usage", "");
    YAML::Node body = child(ctx, mu, "body_memories", "memory_usage");
    YAML::Node ids = child(ctx, body, "stage_id", "memory_usage.body_memories");
    YAML::Node mems = child(ctx, body, "memories", "memory_usage.body_memories");
    const bool body_rounds = is_list_of_lists(ids);
    if (body_rounds != is_list_of_lists(mems) || (body_rounds && ids.size() != mems.size()))
      throw InputError(ctx.at(mems),
                       "memory_usage.body_memories: stage_id and memories must have the same shape");
    if (body_rounds && ids.size() != static_cast<std::size_t>(cfg.rounds))
      throw InputError(ctx.at(ids), "memory_usage.body_memories.stage_id: " + std::to_string(ids.size()) +
                                        " rounds, offset has " + std::to_string(cfg.rounds));
    if (!body_rounds && cfg.rounds != 1)
      throw InputError(ctx.at(ids), "memory_usage.body_memories: offset has " + std::to_string(cfg.rounds) +
                                        " rounds; give stage_id and memories as one list per round");
    for (int r = 0; r < cfg.rounds; ++r)
      add_body_round(ctx, r, body_rounds ? ids[r] : ids, body_rounds ? mems[r] : mems);
    auto add_end = [&](const char* key, int stage, std::vector<DryrunObservation>& into) {
      YAML::Node n = child(ctx, mu, key, "memory_usage");
      if (n.IsSequence()) {
        if (n.size() != static_cast<std::size_t>(cfg.rounds))
          throw InputError(ctx.at(n), std::string(key) + ": " + std::to_string(n.size()) +
                                          " values, offset has " + std::to_string(cfg.rounds) + " rounds");
        for (int r = 0; r < cfg.rounds; ++r) {
          add_obs(ctx, r, stage, n[r], key);
          into.push_back(cfg.observations.back());
          cfg.observations.pop_back();
        }
      } else {
        add_obs(ctx, head_tail == HeadTailRound::First ? 0 : cfg.rounds - 1, stage, n, key);
        into.push_back(cfg.observations.back());
        cfg.observations.pop_back();
      }
    };
    add_end("head_memory", 0, heads);
    add_end("tail_memory", S - 1, tails);
  }
  cfg.observations.insert(cfg.observations.end(), heads.begin(), heads.end());
  cfg.observations.insert(cfg.observations.end(), tails.begin(), tails.end());

  // Times.
  YAML::Node tc = root["time_config"];
  if (tc.IsDefined() && tc.IsMap() && tc["head"].IsDefined() && tc["body"].IsDefined() &&
      tc["tail"].IsDefined())
    cfg.time_config = time_config_from(ctx, tc);
  YAML::Node pc = root["profiling_config"];
  if (pc.IsDefined() && pc.IsMap()) {
    ProfilingConfig p;
    if (pc["micro_batch_num"].IsDefined())
      p.micro_batch_num = as_int(ctx, pc["micro_batch_num"], "micro_batch_num");
    if (p.micro_batch_num < 1) throw InputError(ctx.at(pc), "profiling_config.micro_batch_num must be >= 1");
    if (pc["folder_path"].IsDefined() && pc["folder_path"].IsScalar()) {
      p.folder = pc["folder_path"].Scalar();
      if (p.folder.is_relative()) p.folder = file.parent_path() / p.folder;
    }
    p.head_layers = string_list(pc["head_layers"], p.head_layers);
    p.body_layers = string_list(pc["body_layers"], p.body_layers);
    p.tail_layers = string_list(pc["tail_layers"], p.tail_layers);
    cfg.profiling = p;
  }
  return cfg;
}

}  // namespace preflight::analyzer::balance
