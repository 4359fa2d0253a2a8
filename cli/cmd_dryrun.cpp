// preflight dryrun [options] -- CMD…: one simulated MindSpore process per pipeline stage, run in parallel,
// then each stage's exit status, log and memory block (read with log_parse).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/table.hpp"
#include "preflight/common/units.hpp"
#include "preflight/log_parse/dryrun_log.hpp"
#include "preflight/wrap/dryrun.hpp"
#include "preflight/wrap/shell_lexer.hpp"

namespace preflight::cli {

namespace fs = std::filesystem;

namespace {

/// The last non-empty line of a log (at most 200 characters), "" when it cannot be read or is empty.
std::string last_line_of(const fs::path& log) {
  std::ifstream in(log, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 4096 ? size - 4096 : 0;
  in.seekg(from);
  std::string tail((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r' || tail.back() == ' ')) tail.pop_back();
  const auto nl = tail.rfind('\n');
  std::string last = nl == std::string::npos ? tail : tail.substr(nl + 1);
  if (last.size() > 200) last = last.substr(0, 197) + "...";
  return last;
}

struct DryrunCli {
  int stages = 0;
  int rank_size = 0;
  std::string out = "output/preflight_dryrun";
  int jobs = 0;
  double timeout = 0;
  std::string python;
  std::vector<std::string> env;
  std::vector<std::string> entries;
  bool json = false;
  std::vector<std::string> command;
};

struct StageReport {
  wrap::StageResult result;
  std::optional<log_parse::DryrunLogScan> scan;
  std::string status;  ///< "ok", "exit N", "timeout", "out of memory (…)", "no memory block", "incomplete
                       ///< block", "not started"
  bool ok = false;
};

std::string value_or_dash(const std::optional<log_parse::LogValue>& v) {
  return v ? std::to_string(v->value) : std::string("-");
}

nlohmann::json value_json(const std::optional<log_parse::LogValue>& v) {
  if (!v) return nullptr;
  return {{"mib", v->value}, {"line", v->line}};
}

std::string relative_to_cwd(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::relative(p, fs::current_path(ec), ec);
  if (ec || r.empty() || r.string().rfind("..", 0) == 0) return p.string();
  return r.string();
}

int run_dryrun_command(DryrunCli c) {
  restore_bracket_words(c.command);
  if (c.command.empty()) throw InputError("dryrun", "expects a command after --");
  wrap::DryrunOptions o;
  if (c.stages > 0) o.stages = c.stages;
  if (c.rank_size > 0) o.rank_size = c.rank_size;
  o.out = c.out;
  if (!c.python.empty()) o.python = c.python;
  for (const std::string& kv : c.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--env", "expected NAME=VALUE, got '" + kv + "'");
    o.env.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  o.entries.globs.insert(o.entries.globs.end(), c.entries.begin(), c.entries.end());
  wrap::DryrunPlan plan = wrap::plan_dryrun(c.command, o, wrap::current_environment());

  std::string cmd;
  for (const auto& w : plan.command) cmd += (cmd.empty() ? "" : " ") + wrap::shell_quote(w);
  std::cerr << "dryrun: " << plan.stages << " stage" << (plan.stages == 1 ? "" : "s") << " of "
            << plan.rank_size << " ranks (stages from " << plan.stages_from << ", ranks from "
            << plan.rank_size_from << ")\n"
            << "dryrun: each stage runs " << cmd << "\n";
  for (const auto& n : plan.notes) std::cerr << "dryrun: note: " << n << "\n";
  int jobs = c.jobs > 0 ? c.jobs : plan.stages;
  std::optional<double> timeout;
  if (c.timeout > 0) timeout = c.timeout;
  std::vector<wrap::StageResult> results = wrap::run_dryrun(plan, jobs, timeout, &std::cerr);

  std::vector<StageReport> reports;
  bool all_ok = true;
  bool interrupted = false;
  for (const auto& r : results) {
    StageReport rep;
    rep.result = r;
    if (r.exit_code < 0) {
      rep.status = r.start_error.empty() ? "not started" : "cannot start";
      interrupted = interrupted || r.start_error.empty();
    } else {
      if (fs::exists(r.log)) rep.scan = log_parse::scan_dryrun_log(r.log);
      bool block = rep.scan && rep.scan->block;
      bool complete = block && rep.scan->block->complete();
      if (r.timed_out) {
        rep.status = "timeout";
      } else if (rep.scan && rep.scan->out_of_memory) {
        const auto& oom = *rep.scan->out_of_memory;
        rep.status =
            "out of memory (" + fixed(static_cast<double>(oom.requested_bytes) / 1048576.0, 1) +
            " MiB requested" +
            (oom.device_mib ? " of a " + std::to_string(*oom.device_mib) + " MiB device" : std::string()) +
            ")";
      } else if (r.exit_code != 0) {
        rep.status = "exit " + std::to_string(r.exit_code);
      } else if (!block) {
        rep.status = "no memory block";
      } else if (!complete) {
        rep.status = "incomplete block";
      } else {
        rep.status = "ok";
        rep.ok = true;
      }
    }
    all_ok = all_ok && rep.ok;
    reports.push_back(std::move(rep));
  }

  if (c.json) {
    nlohmann::json j;
    j["out"] = plan.out.string();
    j["stages"] = plan.stages;
    j["rank_size"] = plan.rank_size;
    j["stages_from"] = plan.stages_from;
    j["rank_size_from"] = plan.rank_size_from;
    j["command"] = plan.command;
    j["notes"] = plan.notes;
    j["results"] = nlohmann::json::array();
    for (const auto& rep : reports) {
      nlohmann::json s;
      s["stage"] = rep.result.stage;
      s["rank"] = rep.result.rank;
      s["status"] = rep.status;
      s["ok"] = rep.ok;
      s["exit_code"] =
          rep.result.exit_code < 0 ? nlohmann::json(nullptr) : nlohmann::json(rep.result.exit_code);
      s["timed_out"] = rep.result.timed_out;
      s["seconds"] = rep.result.seconds;
      s["log"] = rep.result.log.string();
      if (rep.scan && rep.scan->block) {
        const auto& b = *rep.scan->block;
        s["memory"] = {{"device_mib", value_json(b.device_memory_mib)},
                       {"used_mib", value_json(b.used_memory_mib)},
                       {"used_peak_mib", value_json(b.used_peak_mib)},
                       {"actual_peak_mib", value_json(b.actual_peak_mib)},
                       {"complete", b.complete()}};
      } else {
        s["memory"] = nullptr;
      }
      if (rep.scan && rep.scan->last_error)
        s["last_error"] = {{"line", rep.scan->last_error->line}, {"text", rep.scan->last_error->text}};
      else
        s["last_error"] = nullptr;
      if (rep.scan && rep.scan->out_of_memory)
        s["out_of_memory"] = {{"line", rep.scan->out_of_memory->line},
                              {"requested_bytes", rep.scan->out_of_memory->requested_bytes},
                              {"device_memory_mib", rep.scan->out_of_memory->device_mib
                                                        ? nlohmann::json(*rep.scan->out_of_memory->device_mib)
                                                        : nullptr}};
      j["results"].push_back(s);
    }
    j["ok"] = all_ok;
    std::cout << j.dump(2) << "\n";
  } else {
    TextTable t;
    t.column("stage", TextTable::Align::Right)
        .column("rank", TextTable::Align::Right)
        .column("status")
        .column("seconds", TextTable::Align::Right)
        .column("device MiB", TextTable::Align::Right)
        .column("used peak MiB", TextTable::Align::Right)
        .column("actual peak MiB", TextTable::Align::Right)
        .column("log");
    for (const auto& rep : reports) {
      std::optional<log_parse::DryrunMemoryBlock> b;
      if (rep.scan) b = rep.scan->block;
      t.row({std::to_string(rep.result.stage), std::to_string(rep.result.rank), rep.status,
             rep.result.exit_code < 0 ? std::string("-") : fixed(rep.result.seconds, 1),
             b ? value_or_dash(b->device_memory_mib) : "-", b ? value_or_dash(b->used_peak_mib) : "-",
             b ? value_or_dash(b->actual_peak_mib) : "-", relative_to_cwd(rep.result.log)});
    }
    std::cout << "MindSpore dryrun, one rank per pipeline stage (MiB = 2^20 bytes, as MindSpore prints)\n"
              << t.render();
    for (const auto& rep : reports) {
      if (rep.ok) continue;
      std::cout << "stage " << rep.result.stage << ": " << rep.status;
      if (!rep.result.start_error.empty()) std::cout << ": " << rep.result.start_error;
      if (rep.scan && rep.scan->last_error) {
        std::cout << "; last error at " << relative_to_cwd(rep.result.log) << ":"
                  << rep.scan->last_error->line << ": " << rep.scan->last_error->text;
      } else if (const std::string last = last_line_of(rep.result.log); !last.empty()) {
        // no error line MindSpore's way: the log's own last words (python: can't open file …)
        std::cout << "; its log ends: " << last;
      }
      std::cout << "\n";
    }
    std::cout << "logs: " << relative_to_cwd(plan.out) << "  (preflight logs dryrun "
              << relative_to_cwd(plan.out) << " --sapp  gives SAPP's memory_usage block)\n";
  }
  if (interrupted) return 130;
  return all_ok ? kExitOk : kExitDoesNotFit;
}

}  // namespace

Command dryrun_command() {
  return {
      "dryrun", "MindSpore dryrun of one rank per pipeline stage, in parallel; per-stage memory blocks",
      [](CLI::App& sub) -> std::function<int()> {
        auto c = std::make_shared<DryrunCli>();
        sub.add_option("--stages", c->stages,
                       "pipeline stages (default: parallel_config.pipeline_stage of the --config YAML)");
        sub.add_option(
            "--rank-size", c->rank_size,
            "ranks in the whole job (default: the msrun/msrun_launcher.sh worker count, or RANK_SIZE)");
        sub.add_option("--out", c->out, "folder for stage_<s>_rank_<r>/mindformer.log")
            ->capture_default_str();
        sub.add_option("-j,--jobs", c->jobs, "stages run at once (default: all)");
        sub.add_option("--timeout", c->timeout, "seconds before a stage is stopped (default: none)");
        sub.add_option("--python", c->python,
                       "interpreter for a MindSpore entry point (default: python, else python3)");
        sub.add_option("--env", c->env, "NAME=VALUE set in every stage, after preflight's own")
            ->allow_extra_args(false);
        sub.add_option(
               "--entry", c->entries,
               "another training entry point (file-name glob), besides pretrain_*.py and run_mindformer.py")
            ->allow_extra_args(false);
        sub.add_flag("--json", c->json, "print the report as JSON");
        sub.add_option("command", c->command, "the launch or command to run per stage, after --");
        sub.prefix_command();
        sub.footer("usage: preflight dryrun [options] -- CMD [ARGS…]");
        CLI::App* app = &sub;
        return [c, app]() {
          check_command_after_dashes(app->remaining(), "dryrun");
          return run_dryrun_command(*c);
        };
      }};
}

}  // namespace preflight::cli
