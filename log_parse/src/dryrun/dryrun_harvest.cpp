#include "preflight/log_parse/dryrun_harvest.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"

namespace preflight::log_parse {

namespace fs = std::filesystem;

namespace {

struct PathIdentity {
  std::optional<int> rank, stage;
  bool worker = false;  // msrun worker_<i>.log: the number is the file index, not necessarily the rank
};

std::optional<int> to_int(const std::string& digits) {
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  return std::stoi(digits);
}

// Looks at the path components from the file upwards; the deepest match wins.
PathIdentity identity_from_path(const fs::path& relative) {
  static const RE2 stage_rank(R"((?i)stage_?(\d+)[_-](?:rank_?)?(\d+))");
  static const RE2 stage_only(R"((?i)stage_?(\d+))");
  static const RE2 rank_only(R"((?i)rank_?(\d+))");
  static const RE2 worker(R"((?i)worker_(\d+))");
  PathIdentity id;
  std::vector<std::string> parts;
  for (const auto& p : relative.parent_path()) parts.push_back(p.string());
  parts.push_back(relative.stem().string());
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    std::string a, b;
    if (!id.stage && !id.rank && RE2::FullMatch(*it, stage_rank, &a, &b)) {
      id.stage = to_int(a);
      id.rank = to_int(b);
    } else if (!id.stage && RE2::FullMatch(*it, stage_only, &a)) {
      id.stage = to_int(a);
    } else if (!id.rank && RE2::FullMatch(*it, rank_only, &a)) {
      id.rank = to_int(a);
    } else if (!id.rank && it == parts.rbegin() && RE2::FullMatch(*it, worker, &a)) {
      id.rank = to_int(a);
      id.worker = true;
    }
  }
  return id;
}

std::string where_line(const RankLog& log, std::int64_t line) {
  return location(log.path, line);
}

std::string block_values(const DryrunMemoryBlock& b) {
  auto v = [](const std::optional<LogValue>& x) { return x ? std::to_string(x->value) : std::string("-"); };
  return "used peak " + v(b.used_peak_mib) + " MiB, actual peak " + v(b.actual_peak_mib) + " MiB, device " +
         v(b.device_memory_mib) + " MiB, used " + v(b.used_memory_mib) + " MiB";
}

bool same_values(const DryrunMemoryBlock& a, const DryrunMemoryBlock& b) {
  auto eq = [](const std::optional<LogValue>& x, const std::optional<LogValue>& y) {
    return x.has_value() == y.has_value() && (!x || x->value == y->value);
  };
  return eq(a.device_memory_mib, b.device_memory_mib) && eq(a.used_memory_mib, b.used_memory_mib) &&
         eq(a.used_peak_mib, b.used_peak_mib) && eq(a.actual_peak_mib, b.actual_peak_mib);
}

bool has_complete_block(const RankLog& l) {
  return l.scan.block && l.scan.block->complete();
}

std::string error_hint(const DryrunLogScan& s) {
  if (!s.last_error) return "no error line either (did the run reach the end? is MS_MEMORY_STATISTIC=1 set?)";
  return "last error line " + std::to_string(s.last_error->line) + ": " + s.last_error->text;
}

std::vector<fs::path> find_logs(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw InputError(root.string(), "cannot list directory: " + ec.message());
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) throw InputError(root.string(), "cannot list directory: " + ec.message());
    const fs::directory_entry& e = *it;
    const fs::path& p = e.path();
    if (p.extension() != ".log" || p.filename() == "scheduler.log") continue;
    std::error_code tec;
    if (!e.is_regular_file(tec)) continue;
    files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  return files;
}

void scan_all(const std::vector<fs::path>& files, const std::vector<bool>& identity, unsigned jobs,
              std::vector<RankLog>& logs) {
  std::vector<std::string> errors(files.size());
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
      try {
        DryrunScanOptions o;
        o.identity = identity[i];
        std::string label = logs[i].path;
        logs[i].scan = scan_dryrun_log(files[i], o);
        logs[i].scan.file = std::move(label);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  unsigned n = jobs ? jobs : std::max(1u, std::thread::hardware_concurrency());
  n = static_cast<unsigned>(std::min<std::size_t>(n, files.size()));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (std::size_t i = 0; i < files.size(); ++i)
    if (!errors[i].empty()) throw InputError(logs[i].path, errors[i]);
}

}  // namespace

const StageMemory* DryrunHarvest::stage(int s) const {
  for (const StageMemory& m : stages)
    if (m.stage == s) return &m;
  return nullptr;
}

DryrunHarvest harvest_dryrun_logs(const fs::path& root, const HarvestOptions& options) {
  using Kind = HarvestProblem::Kind;
  if (options.pp && *options.pp < 1) throw InputError("--pp", "must be at least 1");
  if (options.world_size && *options.world_size < 1) throw InputError("--world", "must be at least 1");
  if (options.pp && options.world_size && *options.world_size % *options.pp != 0)
    throw InputError("--world", std::to_string(*options.world_size) + " ranks cannot be split into " +
                                    std::to_string(*options.pp) + " pipeline stages");
  std::error_code ec;
  if (!fs::exists(root, ec)) throw InputError(root.string(), "no such file or directory");

  DryrunHarvest h;
  h.root = root.string();
  std::vector<fs::path> files;
  bool single_file = !fs::is_directory(root, ec);
  if (single_file)
    files.push_back(root);
  else
    files = find_logs(root);
  if (files.empty()) throw InputError(root.string(), "no *.log files under this directory");

  // Identity from the paths; the logs are read for "Global rank id" only where the path is not enough.
  std::vector<PathIdentity> ids(files.size());
  std::vector<bool> identity(files.size());
  h.logs.resize(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    fs::path rel = single_file ? files[i].filename() : files[i].lexically_relative(root);
    h.logs[i].path = single_file ? files[i].string() : rel.string();
    ids[i] = identity_from_path(rel);
    identity[i] = !ids[i].rank || ids[i].worker;
  }
  if (!options.pp) identity[0] = true;  // for MindFormers' "pipeline_stages = N"
  scan_all(files, identity, options.jobs, h.logs);

  // Ranks.
  for (std::size_t i = 0; i < files.size(); ++i) {
    RankLog& l = h.logs[i];
    const PathIdentity& id = ids[i];
    if (id.rank) {
      l.rank = id.rank;
      l.rank_from = "path";
    }
    if (l.scan.global_rank && !l.scan.global_rank->unterminated) {
      int r = static_cast<int>(l.scan.global_rank->value);
      if (!l.rank) {
        l.rank = r;
        l.rank_from = "log";
      } else if (id.worker && r != *l.rank) {
        h.notes.push_back(where_line(l, l.scan.global_rank->line) + ": msrun worker file number " +
                          std::to_string(*l.rank) + " is global rank " + std::to_string(r) +
                          " (multi-node log numbering); using " + std::to_string(r));
        l.rank = r;
        l.rank_from = "log";
      }
    }
    if (id.stage) {
      l.stage = id.stage;
      l.stage_from = "path";
    }
  }

  // Pipeline size.
  if (options.pp) {
    h.pp = options.pp;
    h.pp_from = "--pp";
  } else {
    for (const RankLog& l : h.logs)
      if (l.scan.pipeline_stages && l.scan.pipeline_stages->value > 0) {
        h.pp = static_cast<int>(l.scan.pipeline_stages->value);
        h.pp_from = "log";
        h.notes.push_back(where_line(l, l.scan.pipeline_stages->line) +
                          ": pipeline_stages = " + std::to_string(*h.pp));
        break;
      }
    if (!h.pp) {
      int max_stage = -1;
      for (const RankLog& l : h.logs)
        if (l.stage) max_stage = std::max(max_stage, *l.stage);
      if (max_stage >= 0) {
        h.pp = max_stage + 1;
        h.pp_from = "paths";
        h.notes.push_back(
            "pp " + std::to_string(*h.pp) +
            " taken from the highest stage in the paths; pass --pp to check for missing last stages");
      }
    }
  }

  // World size.
  if (options.world_size) {
    h.world_size = options.world_size;
    h.world_from = "--world";
  } else {
    bool needs_world = false;
    std::set<int> ranks;
    for (const RankLog& l : h.logs) {
      if (l.rank) ranks.insert(*l.rank);
      if (!l.stage && l.rank) needs_world = true;
    }
    if (needs_world && h.pp && *h.pp > 1 && !ranks.empty() && *ranks.begin() == 0 &&
        *ranks.rbegin() + 1 == static_cast<int>(ranks.size()) &&
        static_cast<int>(ranks.size()) % *h.pp == 0) {
      h.world_size = static_cast<int>(ranks.size());
      h.world_from = "rank logs";
      h.notes.push_back("world size " + std::to_string(*h.world_size) + " taken from rank logs 0…" +
                        std::to_string(*h.world_size - 1) + "; pass --world if ranks are missing");
    }
  }
  if (h.pp && h.world_size && *h.world_size % *h.pp != 0)
    throw InputError(h.world_from == "--world" ? "--world" : h.root,
                     "world size " + std::to_string(*h.world_size) + " (from " + h.world_from +
                         ") cannot be split into " + std::to_string(*h.pp) + " pipeline stages (from " +
                         h.pp_from + ")");

  // Stages and range checks.
  std::vector<bool> usable(h.logs.size(), true);
  for (std::size_t i = 0; i < h.logs.size(); ++i) {
    RankLog& l = h.logs[i];
    std::optional<int> derived;
    if (h.pp && *h.pp == 1)
      derived = 0;
    else if (l.rank && h.pp && h.world_size)
      derived = *l.rank / (*h.world_size / *h.pp);
    if (l.rank && h.world_size && *l.rank >= *h.world_size) {
      h.problems.push_back({Kind::StageMismatch, l.path,
                            "rank " + std::to_string(*l.rank) + " is outside the world size " +
                                std::to_string(*h.world_size) + " (from " + h.world_from + ")"});
      usable[i] = false;
      continue;
    }
    if (l.stage && derived && *l.stage != *derived) {
      h.problems.push_back({Kind::StageMismatch, l.path,
                            "the path says stage " + std::to_string(*l.stage) + " but rank " +
                                std::to_string(*l.rank) + " of " + std::to_string(*h.world_size) +
                                " ranks in " + std::to_string(*h.pp) + " stages is in stage " +
                                std::to_string(*derived)});
      usable[i] = false;
      continue;
    }
    if (!l.stage && derived) {
      l.stage = derived;
      l.stage_from = "pp/world";
    }
    if (l.stage && h.pp && *l.stage >= *h.pp) {
      h.problems.push_back({Kind::StageMismatch, l.path,
                            "stage " + std::to_string(*l.stage) + " is outside the " + std::to_string(*h.pp) +
                                " pipeline stages (from " + h.pp_from + ")"});
      usable[i] = false;
    }
  }

  // Per-log checks.
  for (std::size_t i = 0; i < h.logs.size(); ++i) {
    RankLog& l = h.logs[i];
    const DryrunLogScan& s = l.scan;
    if (s.first_nul_offset >= 0)
      h.problems.push_back({Kind::BinaryLog, l.path + "@" + std::to_string(s.first_nul_offset),
                            "NUL byte in a text log (binary data or a crash-truncated file)"});
    if (s.partial_last_line)
      h.notes.push_back(location(l.path, s.lines) +
                        ": the last line has no newline (log still being written?)");
    if (s.out_of_memory) {
      const DryrunOutOfMemory& oom = *s.out_of_memory;
      std::string what = "out of memory";
      if (l.stage) what += " on stage " + std::to_string(*l.stage);
      if (l.rank) what += " (rank " + std::to_string(*l.rank) + ")";
      what += ": MindSpore could not allocate " + std::to_string(oom.requested_bytes) + " bytes (" +
              fixed(static_cast<double>(oom.requested_bytes) / 1048576.0, 1) + " MiB)";
      if (oom.device_mib) what += " on a " + std::to_string(*oom.device_mib) + " MiB device";
      h.problems.push_back({Kind::OutOfMemory, where_line(l, oom.line), what});
      if (l.stage) h.out_of_memory.emplace_back(*l.stage, i);
      // Its memory statistic, cut when the process died, is part of this report.
      if (s.block && s.block->first_line() >= oom.line) continue;
    }
    if (s.block && !s.block->complete()) {
      std::string missing;
      for (const std::string& m : s.block->missing()) missing += (missing.empty() ? "" : ", ") + m;
      std::string what = s.block_at_end ? "the log ends inside the memory block (missing " + missing + ")"
                                        : "the memory block lacks " + missing;
      h.problems.push_back({Kind::IncompleteBlock, where_line(l, s.block->last_line()), what});
    }
  }

  // One block per rank (or per log when the rank is unknown); duplicates must agree.
  // Key: (0, rank) per rank; (1, stage) when only the stage is known; (2, index) for a log on its own.
  std::map<std::pair<int, int>, std::vector<std::size_t>> by_key;
  for (std::size_t i = 0; i < h.logs.size(); ++i) {
    const RankLog& l = h.logs[i];
    if (!usable[i]) continue;
    std::pair<int, int> k = l.rank    ? std::pair(0, *l.rank)
                            : l.stage ? std::pair(1, *l.stage)
                                      : std::pair(2, int(i));
    by_key[k].push_back(i);
  }
  for (auto& [key, members] : by_key) {
    std::vector<std::size_t> complete;
    for (std::size_t i : members)
      if (has_complete_block(h.logs[i])) complete.push_back(i);
    const std::string who = key.first == 0   ? "rank " + std::to_string(key.second)
                            : key.first == 1 ? "stage " + std::to_string(key.second)
                                             : h.logs[members[0]].path;
    if (complete.empty()) {
      for (std::size_t i : members) {
        const RankLog& l = h.logs[i];
        if (l.scan.block) continue;  // reported as an incomplete block
        std::string where = l.scan.last_error ? where_line(l, l.scan.last_error->line) : l.path;
        h.problems.push_back(
            {Kind::NoMemoryBlock, where, "no memory block in the log of " + who + "; " + error_hint(l.scan)});
      }
      continue;
    }
    std::size_t chosen = complete[0];
    for (std::size_t i : complete)
      if (h.logs[i].scan.block->actual_peak_mib->value > h.logs[chosen].scan.block->actual_peak_mib->value)
        chosen = i;
    for (std::size_t i : complete) {
      if (i == chosen) continue;
      const RankLog& a = h.logs[chosen];
      const RankLog& b = h.logs[i];
      if (same_values(*a.scan.block, *b.scan.block)) {
        h.notes.push_back(b.path + " repeats the memory block of " + a.path + " (" + who + ")");
      } else {
        h.problems.push_back({Kind::DisagreeingDuplicate, who,
                              "two logs disagree: " + where_line(a, a.scan.block->first_line()) + " says " +
                                  block_values(*a.scan.block) + "; " +
                                  where_line(b, b.scan.block->first_line()) + " says " +
                                  block_values(*b.scan.block) + " (the higher actual peak is used)"});
      }
    }
    RankLog& c = h.logs[chosen];
    if (!c.stage) {
      h.problems.push_back(
          {Kind::Unmapped, c.path,
           "cannot tell the pipeline stage of this log: name its folder stage_<s>_rank_<r>/, "
           "rank_<r>/ or the file worker_<r>.log, and pass --pp and --world"});
      continue;
    }
    c.used = true;
  }

  // Stage rows.
  std::map<int, StageMemory> rows;
  for (std::size_t i = 0; i < h.logs.size(); ++i) {
    const RankLog& l = h.logs[i];
    if (!l.used) continue;
    StageMemory& m = rows[*l.stage];
    m.stage = *l.stage;
    m.logs.push_back(i);
  }
  for (auto& [s, m] : rows) {
    std::sort(m.logs.begin(), m.logs.end(), [&](std::size_t a, std::size_t b) {
      return h.logs[a].rank.value_or(-1) < h.logs[b].rank.value_or(-1);
    });
    m.peak_log = m.logs[0];
    bool first = true;
    for (std::size_t i : m.logs) {
      const DryrunMemoryBlock& b = *h.logs[i].scan.block;
      if (b.actual_peak_mib->value > h.logs[m.peak_log].scan.block->actual_peak_mib->value) m.peak_log = i;
      std::int64_t a = b.actual_peak_mib->value, u = b.used_peak_mib->value;
      m.min_actual_peak_mib = first ? a : std::min(m.min_actual_peak_mib, a);
      m.min_used_peak_mib = first ? u : std::min(m.min_used_peak_mib, u);
      m.max_used_peak_mib = first ? u : std::max(m.max_used_peak_mib, u);
      first = false;
    }
    h.stages.push_back(m);
  }
  if (h.pp) {
    for (int s = 0; s < *h.pp; ++s) {
      if (rows.count(s)) continue;
      h.missing_stages.push_back(s);
      bool oom = std::any_of(h.out_of_memory.begin(), h.out_of_memory.end(),
                             [&](const auto& o) { return o.first == s; });
      if (oom) continue;  // reported as out of memory
      std::string what = "no log with a complete memory block";
      std::vector<std::string> seen;
      for (const RankLog& l : h.logs)
        if (l.stage && *l.stage == s) seen.push_back(l.path);
      if (!seen.empty()) {
        what += " (read: " + seen[0];
        if (seen.size() > 1) what += " and " + std::to_string(seen.size() - 1) + " more";
        what += ")";
      }
      h.problems.push_back({Kind::MissingStage, "stage " + std::to_string(s), what});
    }
  }

  // Logs sorted by stage then rank then path; unmapped last.
  std::vector<std::size_t> order(h.logs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto key = [&](std::size_t i) {
    const RankLog& l = h.logs[i];
    return std::make_tuple(l.stage ? 0 : 1, l.stage.value_or(0), l.rank.value_or(-1), l.path);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<std::size_t> new_index(order.size());
  std::vector<RankLog> sorted;
  sorted.reserve(h.logs.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    new_index[order[k]] = k;
    sorted.push_back(std::move(h.logs[order[k]]));
  }
  h.logs = std::move(sorted);
  for (StageMemory& m : h.stages) {
    for (std::size_t& i : m.logs) i = new_index[i];
    m.peak_log = new_index[m.peak_log];
  }
  for (auto& [stage, i] : h.out_of_memory) i = new_index[i];
  std::sort(h.out_of_memory.begin(), h.out_of_memory.end());
  return h;
}

// ---- output ------------------------------------------------------------------------------------------

namespace {

nlohmann::json value_json(const std::optional<LogValue>& v) {
  if (!v) return nullptr;
  nlohmann::json j{{"mib", v->value}, {"line", v->line}};
  if (v->unterminated) j["unterminated"] = true;
  return j;
}

nlohmann::json block_json(const DryrunMemoryBlock& b) {
  return {{"device_memory", value_json(b.device_memory_mib)}, {"device_spelling", b.device_spelling},
          {"used_memory", value_json(b.used_memory_mib)},     {"used_peak", value_json(b.used_peak_mib)},
          {"actual_peak", value_json(b.actual_peak_mib)},     {"complete", b.complete()}};
}

const char* kind_name(HarvestProblem::Kind k) {
  using Kind = HarvestProblem::Kind;
  switch (k) {
    case Kind::MissingStage:
      return "missing_stage";
    case Kind::NoMemoryBlock:
      return "no_memory_block";
    case Kind::IncompleteBlock:
      return "incomplete_block";
    case Kind::DisagreeingDuplicate:
      return "disagreeing_duplicate";
    case Kind::Unmapped:
      return "unmapped";
    case Kind::StageMismatch:
      return "stage_mismatch";
    case Kind::BinaryLog:
      return "binary_log";
    case Kind::OutOfMemory:
      return "out_of_memory";
  }
  return "unknown";
}

std::string opt_int(const std::optional<int>& v) {
  return v ? std::to_string(*v) : std::string("?");
}

std::string block_range(const RankLog& l) {
  const DryrunMemoryBlock& b = *l.scan.block;
  std::int64_t a = b.first_line(), z = b.last_line();
  return l.path + ":" + std::to_string(a) + (z != a ? "-" + std::to_string(z) : "");
}

std::string mib(const std::optional<LogValue>& v) {
  return v ? std::to_string(v->value) : "-";
}

}  // namespace

nlohmann::json harvest_json(const DryrunHarvest& h) {
  nlohmann::json j;
  j["root"] = h.root;
  j["pp"] = h.pp ? nlohmann::json(*h.pp) : nlohmann::json(nullptr);
  j["pp_from"] = h.pp_from;
  j["world_size"] = h.world_size ? nlohmann::json(*h.world_size) : nlohmann::json(nullptr);
  j["world_from"] = h.world_from;
  j["stages"] = nlohmann::json::array();
  for (const StageMemory& m : h.stages) {
    const RankLog& p = h.logs[m.peak_log];
    nlohmann::json ranks = nlohmann::json::array();
    for (std::size_t i : m.logs) ranks.push_back(h.logs[i].rank ? nlohmann::json(*h.logs[i].rank) : nullptr);
    j["stages"].push_back({{"stage", m.stage},
                           {"rank", p.rank ? nlohmann::json(*p.rank) : nlohmann::json(nullptr)},
                           {"file", p.path},
                           {"device_memory_mib", p.scan.block->device_memory_mib->value},
                           {"used_memory_mib", p.scan.block->used_memory_mib->value},
                           {"used_peak_mib", p.scan.block->used_peak_mib->value},
                           {"actual_peak_mib", p.scan.block->actual_peak_mib->value},
                           {"block", block_json(*p.scan.block)},
                           {"ranks", ranks},
                           {"min_used_peak_mib", m.min_used_peak_mib},
                           {"max_used_peak_mib", m.max_used_peak_mib},
                           {"min_actual_peak_mib", m.min_actual_peak_mib}});
  }
  j["missing_stages"] = h.missing_stages;
  j["out_of_memory"] = nlohmann::json::array();
  for (const auto& [stage, i] : h.out_of_memory) {
    const RankLog& l = h.logs[i];
    const DryrunOutOfMemory& oom = *l.scan.out_of_memory;
    j["out_of_memory"].push_back(
        {{"stage", stage},
         {"rank", l.rank ? nlohmann::json(*l.rank) : nlohmann::json(nullptr)},
         {"file", l.path},
         {"line", oom.line},
         {"requested_bytes", oom.requested_bytes},
         {"device_memory_mib", oom.device_mib ? nlohmann::json(*oom.device_mib) : nullptr}});
  }
  j["logs"] = nlohmann::json::array();
  for (const RankLog& l : h.logs) {
    nlohmann::json e{{"file", l.path},
                     {"rank", l.rank ? nlohmann::json(*l.rank) : nlohmann::json(nullptr)},
                     {"rank_from", l.rank_from},
                     {"stage", l.stage ? nlohmann::json(*l.stage) : nlohmann::json(nullptr)},
                     {"stage_from", l.stage_from},
                     {"lines", l.scan.lines},
                     {"bytes", l.scan.bytes},
                     {"partial_last_line", l.scan.partial_last_line},
                     {"block", l.scan.block ? block_json(*l.scan.block) : nlohmann::json(nullptr)},
                     {"used", l.used}};
    if (l.scan.last_error)
      e["last_error"] = {{"line", l.scan.last_error->line}, {"text", l.scan.last_error->text}};
    if (l.scan.out_of_memory)
      e["out_of_memory"] = {
          {"line", l.scan.out_of_memory->line},
          {"requested_bytes", l.scan.out_of_memory->requested_bytes},
          {"device_memory_mib",
           l.scan.out_of_memory->device_mib ? nlohmann::json(*l.scan.out_of_memory->device_mib) : nullptr}};
    j["logs"].push_back(std::move(e));
  }
  j["problems"] = nlohmann::json::array();
  for (const HarvestProblem& p : h.problems)
    j["problems"].push_back({{"kind", kind_name(p.kind)}, {"where", p.where}, {"what", p.what}});
  j["notes"] = h.notes;
  j["ok"] = h.ok();
  return j;
}

std::string harvest_text(const DryrunHarvest& h, bool per_log) {
  std::ostringstream out;
  out << h.root << ": " << h.logs.size() << (h.logs.size() == 1 ? " log" : " logs") << ", pp "
      << opt_int(h.pp) << (h.pp_from.empty() ? "" : " (" + h.pp_from + ")") << ", world "
      << opt_int(h.world_size) << (h.world_from.empty() ? "" : " (" + h.world_from + ")")
      << "; memory in MiB\n\n";
  TextTable t;
  using A = TextTable::Align;
  t.column("stage", A::Right).column("rank", A::Right);
  if (!per_log) t.column("ranks", A::Right);
  t.column("device", A::Right)
      .column("used", A::Right)
      .column("used peak", A::Right)
      .column("actual peak", A::Right)
      .column("source");
  if (per_log) {
    for (const RankLog& l : h.logs) {
      std::vector<std::string> row{opt_int(l.stage), opt_int(l.rank)};
      if (l.scan.block) {
        const DryrunMemoryBlock& b = *l.scan.block;
        row.insert(row.end(), {mib(b.device_memory_mib), mib(b.used_memory_mib), mib(b.used_peak_mib),
                               mib(b.actual_peak_mib), block_range(l)});
      } else {
        row.insert(row.end(), {"-", "-", "-", "-", l.path + " (no memory block)"});
      }
      t.row(row);
    }
  } else {
    for (const StageMemory& m : h.stages) {
      const RankLog& p = h.logs[m.peak_log];
      const DryrunMemoryBlock& b = *p.scan.block;
      std::string used_peak = mib(b.used_peak_mib), actual_peak = mib(b.actual_peak_mib);
      if (m.logs.size() > 1 && m.min_actual_peak_mib != b.actual_peak_mib->value)
        actual_peak += " (min " + std::to_string(m.min_actual_peak_mib) + ")";
      t.row({std::to_string(m.stage), opt_int(p.rank), std::to_string(m.logs.size()),
             mib(b.device_memory_mib), mib(b.used_memory_mib), used_peak, actual_peak, block_range(p)});
    }
    for (const auto& [stage, i] : h.out_of_memory) {
      if (h.stage(stage)) continue;  // another rank of the stage printed a block
      const RankLog& l = h.logs[i];
      const DryrunOutOfMemory& oom = *l.scan.out_of_memory;
      t.row({std::to_string(stage), opt_int(l.rank), "1",
             oom.device_mib ? std::to_string(*oom.device_mib) : "-", "-", "-",
             "OUT OF MEMORY (+" + fixed(static_cast<double>(oom.requested_bytes) / 1048576.0, 1) +
                 " requested)",
             location(l.path, oom.line)});
    }
  }
  out << t.render();
  if (!h.problems.empty()) {
    out << "\nproblems (" << h.problems.size() << "):\n";
    for (const HarvestProblem& p : h.problems) out << "  " << p.where << ": " << p.what << "\n";
  }
  if (!h.notes.empty()) {
    out << "\nnotes:\n";
    for (const std::string& n : h.notes) out << "  " << n << "\n";
  }
  return out.str();
}

std::string harvest_csv(const DryrunHarvest& h) {
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto cell = [](const std::optional<LogValue>& v, bool line) {
    return v ? std::to_string(line ? v->line : v->value) : std::string();
  };
  std::ostringstream out;
  out << "stage,rank,file,device_mib,device_line,used_mib,used_line,used_peak_mib,used_peak_line,actual_peak_"
         "mib,"
         "actual_peak_line,status,oom_requested_bytes\n";
  for (const RankLog& l : h.logs) {
    out << (l.stage ? std::to_string(*l.stage) : "") << ',' << (l.rank ? std::to_string(*l.rank) : "") << ','
        << quote(l.path);
    std::string status = l.used                      ? "ok"
                         : l.scan.out_of_memory      ? "out_of_memory"
                         : !l.scan.block             ? "no_block"
                         : !l.scan.block->complete() ? "incomplete"
                                                     : "unused";
    if (l.scan.block) {
      const DryrunMemoryBlock& b = *l.scan.block;
      for (const auto* v : {&b.device_memory_mib, &b.used_memory_mib, &b.used_peak_mib, &b.actual_peak_mib})
        out << ',' << cell(*v, false) << ',' << cell(*v, true);
    } else {
      out << ",,,,,,,,";
    }
    out << ',' << status << ','
        << (l.scan.out_of_memory ? std::to_string(l.scan.out_of_memory->requested_bytes) : std::string())
        << '\n';
  }
  return out.str();
}

std::string sapp_memory_usage_yaml(const DryrunHarvest& h, PeakKind peak) {
  if (!h.pp || *h.pp < 2)
    throw InputError("--sapp",
                     "SAPP balances two or more pipeline stages; pp is " + opt_int(h.pp) + " (pass --pp)");
  int last = *h.pp - 1;
  const StageMemory* head = h.stage(0);
  const StageMemory* tail = h.stage(last);
  if (!head || !tail)
    throw InputError("--sapp", std::string("no complete memory block for ") +
                                   (!head ? "stage 0 (head)" : "stage " + std::to_string(last) + " (tail)") +
                                   "; SAPP needs both the head and the tail stage");
  auto value = [&](const StageMemory& m) {
    const DryrunMemoryBlock& b = *h.logs[m.peak_log].scan.block;
    return peak == PeakKind::Actual ? b.actual_peak_mib->value : b.used_peak_mib->value;
  };
  std::ostringstream ids, mems;
  bool first = true;
  for (const StageMemory& m : h.stages) {
    if (m.stage == 0 || m.stage == last) continue;
    ids << (first ? "" : ", ") << m.stage;
    mems << (first ? "" : ", ") << value(m);
    first = false;
  }
  std::ostringstream out;
  out << "# preflight logs dryrun " << h.root << " --sapp: "
      << (peak == PeakKind::Actual ? "Actual peak memory usage (with fragments)"
                                   : "Used peak memory usage (without fragments)")
      << ", MiB, highest rank per stage\n";
  std::vector<int> missing_body;
  for (int s : h.missing_stages)
    if (s != 0 && s != last) missing_body.push_back(s);
  if (!missing_body.empty()) {
    out << "# no complete memory block for stage" << (missing_body.size() > 1 ? "s " : " ");
    for (std::size_t i = 0; i < missing_body.size(); ++i) out << (i ? ", " : "") << missing_body[i];
    out << " (left out)\n";
  }
  out << "memory_usage:\n"
      << "  head_memory: " << value(*head) << "\n"
      << "  tail_memory: " << value(*tail) << "\n"
      << "  body_memories:\n"
      << "    stage_id: [" << ids.str() << "]\n"
      << "    memories: [" << mems.str() << "]\n";
  return out.str();
}

}  // namespace preflight::log_parse
