// preflight logs dryrun DIR · preflight logs megatron FILE…
#include <CLI/CLI.hpp>
#include <algorithm>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/common/error.hpp"
#include "preflight/log_parse/dryrun_harvest.hpp"
#include "preflight/log_parse/megatron_log.hpp"

namespace preflight::cli {

namespace {

struct DryrunOptions {
  std::string root;
  std::optional<int> pp;
  std::optional<int> world;
  bool json = false;
  bool csv = false;
  bool sapp = false;
  bool per_rank = false;
  std::string peak = "actual";
  unsigned jobs = 0;
};

int run_logs_dryrun(const DryrunOptions& o) {
  log_parse::HarvestOptions h;
  h.pp = o.pp;
  h.world_size = o.world;
  h.jobs = o.jobs;
  log_parse::DryrunHarvest harvest = log_parse::harvest_dryrun_logs(o.root, h);
  if (o.sapp) {
    auto peak = o.peak == "used" ? log_parse::PeakKind::Used : log_parse::PeakKind::Actual;
    std::cout << log_parse::sapp_memory_usage_yaml(harvest, peak);
    for (const auto& p : harvest.problems) std::cerr << "preflight: " << p.where << ": " << p.what << "\n";
  } else if (o.json) {
    std::cout << log_parse::harvest_json(harvest).dump(2) << "\n";
  } else if (o.csv) {
    std::cout << log_parse::harvest_csv(harvest);
    for (const auto& p : harvest.problems) std::cerr << "preflight: " << p.where << ": " << p.what << "\n";
  } else {
    std::cout << log_parse::harvest_text(harvest, o.per_rank);
  }
  return harvest.ok() ? kExitOk : kExitDoesNotFit;
}

struct MegatronOptions {
  std::vector<std::string> files;
  bool json = false;
  int warmup = -1;
  bool predict = false;
  std::string calibration;
};

int run_logs_megatron(const MegatronOptions& o) {
  // A directory: every log under it (a job's rank_<r>.log, torchrun --log-dir's
  // <run>/attempt_0/<r>/stdout.log).
  const Words files = expand_file_arguments(o.files, {".log", ".txt", ".out", ".err", ".jsonl"}, true,
                                            "log (*.log, *.txt, *.out, *.err, *.jsonl)");
  if (o.predict) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& f : files) predict_megatron_log(f, o.calibration, o.json, &out);
    if (o.json) std::cout << nlohmann::json{{"logs", out}}.dump(2) << "\n";
    return kExitOk;
  }
  std::vector<log_parse::MegatronLog> logs;
  for (const std::string& f : files) logs.push_back(log_parse::read_megatron_log(f));
  // Not one record in any file: the wrong file (or a log cut before training printed anything) — said, not
  // reported as an empty summary with success.
  const bool any = std::any_of(logs.begin(), logs.end(), [](const log_parse::MegatronLog& l) {
    return !l.memory.empty() || !l.deepspeed_memory.empty() || !l.iterations.empty() || l.theoretical ||
           !l.param_counts.empty() || !l.rank_params.empty() || !l.sizes.empty() || !l.args.empty();
  });
  if (!any) {
    std::int64_t lines = 0;
    for (const auto& l : logs) lines += l.lines;
    throw InputError(files.size() == 1 ? files.front() : o.files.front(),
                     "no Megatron memory, iteration, parameter-count or argument line in " +
                         (files.size() == 1 ? std::string("its ")
                                            : "any of the " + std::to_string(files.size()) + " logs (") +
                         std::to_string(lines) + " lines" + (files.size() == 1 ? "" : ")") +
                         " — is this a Megatron-LM training log?");
  }
  log_parse::MegatronSummary summary = log_parse::summarize_megatron(logs, o.warmup);
  if (o.json)
    std::cout << log_parse::megatron_json(logs, summary).dump(2) << "\n";
  else
    std::cout << log_parse::megatron_text(logs, summary);
  return kExitOk;
}

}  // namespace

std::function<int()> add_logs_command(CLI::App& sub) {
  sub.require_subcommand(1);
  auto chosen = std::make_shared<std::function<int()>>();

  auto dry = std::make_shared<DryrunOptions>();
  CLI::App* d = sub.add_subcommand(
      "dryrun",
      "Per-stage device memory from MindSpore dryrun logs: Used/Actual peak (MiB) with file:line, missing "
      "stages, logs without a memory block, disagreeing duplicates. Exit 1 when a check fails.");
  d->add_option("DIR", dry->root,
                "dryrun output directory (stage_<s>_rank_<r>/, rank_<r>/, worker_<r>.log, *.log) or one log")
      ->required();
  d->add_option("--pp", dry->pp, "pipeline stages (default: from the logs or the paths)");
  d->add_option("--world", dry->world, "ranks in the job, to map rank-only logs to stages");
  d->add_flag("--json", dry->json, "JSON with every log, value and line");
  d->add_flag("--csv", dry->csv, "CSV, one row per log");
  d->add_flag("--sapp", dry->sapp,
              "print SAPP's init-YAML memory_usage: block (head, tail, body stage ids and memories)");
  d->add_option("--peak", dry->peak, "peak used for --sapp: actual (with fragments, SAPP readme) or used")
      ->check(CLI::IsMember({"actual", "used"}));
  d->add_flag("--per-rank", dry->per_rank, "table: one row per log instead of per stage");
  d->add_option("-j,--jobs", dry->jobs, "reader threads (default: all cores)");
  d->callback([chosen, dry] { *chosen = [dry] { return run_logs_dryrun(*dry); }; });

  auto meg = std::make_shared<MegatronOptions>();
  CLI::App* m = sub.add_subcommand("megatron",
                                   "Megatron-LM logs: per-rank memory lines (allocated, max allocated, "
                                   "reserved, max reserved), iteration lines, "
                                   "theoretical memory and parameter counts, with file:line; per-rank peak "
                                   "and steady-state iteration time.");
  m->add_option("FILE", meg->files,
                "Megatron stdout logs (one per rank or merged), or directories of them (every *.log, *.txt, "
                "*.out, *.err, *.jsonl under it, e.g. torchrun --log-dir's, ms-swift's logging.jsonl)")
      ->required();
  m->add_flag("--json", meg->json, "every record as JSON, with its line");
  m->add_option("--warmup", meg->warmup,
                "iteration lines left out before the steady-state median (default: the first line and "
                "iterations <= 2)");
  m->add_flag("--predict", meg->predict,
              "predict every logged rank's peak from the log's argument dump and compare with its `max "
              "allocated` (as `preflight calibrate --measured LOG`)");
  m->add_option("--calibration", meg->calibration, "with --predict: apply this calibration file first");
  m->callback([chosen, meg] { *chosen = [meg] { return run_logs_megatron(*meg); }; });

  return [chosen] { return (*chosen)(); };
}

}  // namespace preflight::cli
