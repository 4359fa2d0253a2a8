// `preflight calibrate`: predicted (analyze or estimate JSON) against measured (allocation traces of a real
// run) memory per rank, and least-squares coefficients fitted over several runs.  Wiring only; the work is in
// analyzer/calibrate.hpp and log_parse/memory_measurement.hpp.
#include <CLI/CLI.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.hpp"
#include "preflight/analyzer/calibrate/calibrate.hpp"
#include "preflight/analyzer/calibrate/log_prediction.hpp"
#include "preflight/analyzer/calibrate/time_fit.hpp"
#include "preflight/analyzer/cost/simumax_config.hpp"
#include "preflight/analyzer/frontends/bridge_config.hpp"
#include "preflight/analyzer/frontends/megatron_args.hpp"
#include "preflight/analyzer/frontends/nemo_config.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/trace_format.hpp"
#include "preflight/log_parse/megatron_log.hpp"
#include "preflight/log_parse/memory_measurement.hpp"
#include "preflight/log_parse/trace_reader.hpp"

namespace preflight::cli {
namespace {

namespace fs = std::filesystem;

struct CalibrateOptions {
  std::vector<std::string> predicted;
  std::vector<std::string> measured;
  std::string calibration;  // applied to the predictions before comparing
  bool fit = false;
  std::string output = "calibration.json";
  bool json = false;
  bool measure_only = false;
  double max_peak_error = -1;  // percent; exit 1 when exceeded
  bool fit_time = false;
  std::vector<std::string> runs;  // JSON files of runs with measured iteration times
  std::string system;
  bool fit_overlap = false;
  bool per_group = false;
  int world_size = 0;     // a Megatron-Bridge log's GPUs (its log does not print them)
  int gpus_per_node = 8;  // and a node's
};

/// --fit-time: runs from JSON files (read_time_corpus: Megatron command lines or MindFormers yamls) and
/// from Megatron logs (argument dump + the steady median of `elapsed time per iteration`).
int run_fit_time(const CalibrateOptions& o) {
  if (o.system.empty()) throw InputError("--system", "is required with --fit-time (the system the runs ran on)");
  std::vector<analyzer::TimedRun> runs;
  for (const auto& file : o.runs)
    for (auto& run : analyzer::read_time_corpus(file)) runs.push_back(std::move(run));
  for (const auto& path : o.measured) {
    log_parse::MegatronLog log = log_parse::read_megatron_log(path);
    std::vector<log_parse::MegatronLog> one{log};
    const auto summary = log_parse::summarize_megatron(one);
    if (summary.steady.empty() || !summary.steady.front().median_elapsed_ms)
      throw InputError(path, "no `elapsed time per iteration (ms)` to fit on");
    std::map<std::string, std::string> args = log.args;
    if (log.padded_vocab_size && !args.count("padded_vocab_size"))
      args["padded_vocab_size"] = std::to_string(*log.padded_vocab_size);
    const auto bridge = bridge_log_words(path, !log.args.empty(), o.world_size, o.gpus_per_node);
    const auto cfg =
        analyzer::parse_megatron_args(bridge ? *bridge : analyzer::megatron_words_from_args_dump(args, path));
    runs.push_back({path, cfg.model, cfg.strategy, *summary.steady.front().median_elapsed_ms});
  }
  const analyzer::SystemSpec system = analyzer::cost::load_simumax_system(o.system);
  if (o.per_group && o.fit_overlap)
    throw InputError("--per-group", "cannot be combined with --fit-overlap (one or the other)");
  const analyzer::TimeFit fit =
      o.per_group ? analyzer::fit_time_groups(runs, system) : analyzer::fit_time(runs, system, o.fit_overlap);
  nlohmann::json base = fs::is_regular_file(o.system)
                            ? analyzer::cost::read_json_file(o.system)
                            : analyzer::cost::parse_json_text(analyzer::cost::system_preset_json(o.system), o.system);
  const std::string out = o.output == "calibration.json" ? "fitted_system.json" : o.output;
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  if (!f) throw InputError("--output", "cannot write " + out);
  f << analyzer::scaled_system_json(base, fit).dump(1) << "\n";
  if (o.json) {
    nlohmann::json j = analyzer::time_fit_json(fit);
    j["system_file"] = out;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << analyzer::render_time_fit(fit) << "wrote " << out << " (use it as `--system " << out << "`)\n";
  }
  return kExitOk;
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot read");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path + "@" + std::to_string(e.byte), std::string("malformed JSON: ") + e.what());
  }
}

/// Measurements of one --measured value: a directory of rank*.pftrace traces and/or *.json measurements, a
/// trace file, or a JSON file holding one measurement or an array of them.  Traces of processes without a
/// rank (the torchrun agent) are skipped.
bool is_megatron_log(const std::string& path);

/// The file begins as libpreflight_hook.so's traces do (common/trace_format.hpp kMagic).
bool starts_with_trace_magic(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[sizeof trace::kMagic] = {};
  in.read(head, sizeof head);
  return in.gcount() == static_cast<std::streamsize>(sizeof head) &&
         std::memcmp(head, trace::kMagic, sizeof head) == 0;
}

std::vector<analyzer::MeasuredRank> load_measured(const std::string& what, std::vector<std::string>& notes) {
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::is_directory(what, ec)) {
    for (const auto& entry : fs::directory_iterator(what, ec)) {
      std::string ext = entry.path().extension().string();
      if (ext == ".pftrace" || ext == ".json") files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw InputError(what, "no *.pftrace traces or *.json measurements in this directory");
  } else {
    files.push_back(what);
  }
  std::vector<analyzer::MeasuredRank> out;
  int rankless = 0;
  for (const std::string& f : files) {
    if (fs::path(f).extension() == ".json") {
      nlohmann::json j = read_json_file(f);
      if (j.is_array()) {
        for (std::size_t i = 0; i < j.size(); ++i)
          out.push_back(analyzer::read_measured(j[i], f + "[" + std::to_string(i) + "]"));
      } else {
        out.push_back(analyzer::read_measured(j, f));
      }
      continue;
    }
    if (is_megatron_log(f) && !starts_with_trace_magic(f))
      throw InputError(
          f,
          "a training log, not a trace or a measurement JSON: with --predicted, --measured takes "
          "traces (rank*.pftrace) or measurement JSON; a Megatron log with its argument dump is "
          "compared alone (`preflight calibrate --measured LOG`), and `preflight logs megatron LOG` "
          "prints the peaks its lines give");
    if (log_parse::TraceReader(f).info().rank < 0) {
      ++rankless;
      continue;
    }
    log_parse::MemoryMeasurement m = log_parse::measure_memory(f);
    out.push_back(analyzer::read_measured(log_parse::measurement_json(m), f));
  }
  if (rankless > 0)
    notes.push_back(what + ": skipped " + std::to_string(rankless) +
                    " trace(s) of processes without a rank (the launcher and its helpers)");
  if (out.empty()) {
    // Name what was searched: a torchrun that stopped before starting its workers (its --master_port taken,
    // a bad argument) leaves only its own rankless trace here.
    std::string searched;
    for (std::size_t i = 0; i < files.size() && i < 4; ++i)
      searched += (i ? ", " : "") + fs::path(files[i]).filename().string();
    if (files.size() > 4) searched += ", …";
    throw InputError(
        what, "no rank measured: searched " + std::to_string(files.size()) + " file(s) (" + searched + ")" +
                  (rankless > 0 ? ", " + std::to_string(rankless) +
                                      " of them trace(s) of processes without a rank (RANK unset: "
                                      "the launcher); did the training processes start?"
                                : ""));
  }
  return out;
}

analyzer::Prediction load_prediction(const std::string& path, const std::string& calibration) {
  analyzer::Prediction p = analyzer::read_prediction(read_json_file(path), path);
  if (!calibration.empty())
    p = analyzer::apply_calibration(p, analyzer::read_calibration(read_json_file(calibration), calibration));
  return p;
}

/// A Megatron training log (text with an argument dump or memory lines), not a trace or measurement.
bool is_megatron_log(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return false;
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".pftrace" || ext == ".json") return false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string head(1 << 16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head.find("arguments ----") != std::string::npos || head.find("] (after ") != std::string::npos ||
         head.find("iteration ") != std::string::npos || ext == ".log" || ext == ".txt";
}

/// Predicted vs measured for Megatron logs: the argument dump and the `[Rank N] … max allocated` lines.
int run_calibrate_logs(const CalibrateOptions& o) {
  nlohmann::json out = {{"logs", nlohmann::json::array()}};
  double worst = 0;
  std::vector<analyzer::LogPrediction> all;
  for (const auto& path : o.measured)
    worst = std::max(worst, predict_megatron_log(path, o.calibration, o.json, &out["logs"], &all,
                                                 o.world_size, o.gpus_per_node));
  if (o.fit) {
    const analyzer::Calibration cal = analyzer::fit_log_overhead(all);
    nlohmann::json cj = analyzer::calibration_json(cal);
    std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError("--output", "cannot write " + o.output);
    f << cj.dump(2) << "\n";
    if (o.json) {
      out["calibration"] = cj;
      out["calibration_file"] = o.output;
    } else {
      std::cout << "fitted on " << all.size() << " log(s): overhead " << std::llround(cal.overhead_bytes / 1048576.0)
                << " MiB per rank; in-sample RMS peak error " << 100 * cal.rms_peak_error_before << " % → "
                << 100 * cal.rms_peak_error_after << " %\nwrote " << o.output
                << " (apply with `preflight analyze --calibration " << o.output << " …`)\n";
    }
  }
  if (o.json) std::cout << out.dump(2) << "\n";
  if (o.max_peak_error >= 0 && 100 * worst > o.max_peak_error) return kExitDoesNotFit;
  return kExitOk;
}

int run_calibrate(const CalibrateOptions& o) {
  std::vector<std::string> notes;
  if (o.fit_time) return run_fit_time(o);
  if (o.predicted.empty() && !o.measure_only && !o.measured.empty() &&
      std::all_of(o.measured.begin(), o.measured.end(), is_megatron_log)) {
    return run_calibrate_logs(o);
  }
  if (o.measure_only) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& m : o.measured) {
      std::error_code ec;
      std::vector<std::string> files;
      if (fs::is_directory(m, ec)) {
        for (const auto& entry : fs::directory_iterator(m, ec))
          if (entry.path().extension() == ".pftrace") files.push_back(entry.path().string());
        std::sort(files.begin(), files.end());
      } else {
        files.push_back(m);
      }
      for (const auto& f : files)
        if (log_parse::TraceReader(f).info().rank >= 0)
          all.push_back(log_parse::measurement_json(log_parse::measure_memory(f)));
    }
    std::cout << all.dump(2) << "\n";
    return kExitOk;
  }
  if (o.predicted.empty())
    throw InputError("--predicted", "required (the JSON of `preflight analyze --json` or `estimate --json`)");
  if (o.predicted.size() != o.measured.size())
    throw InputError("--measured", "give one --measured per --predicted (paired in order): " +
                                       std::to_string(o.predicted.size()) + " predicted, " +
                                       std::to_string(o.measured.size()) + " measured");
  std::vector<analyzer::CalibrationRun> runs;
  for (std::size_t i = 0; i < o.predicted.size(); ++i)
    runs.push_back({load_prediction(o.predicted[i], o.calibration), load_measured(o.measured[i], notes)});

  nlohmann::json out = {{"runs", nlohmann::json::array()}};
  double worst_peak = 0;
  for (const auto& r : runs) {
    analyzer::Comparison c = analyzer::compare(r.predicted, r.measured);
    worst_peak = std::max(worst_peak, c.max_abs_error("peak"));
    if (o.json) {
      nlohmann::json cj = analyzer::comparison_json(c);
      cj["predicted"] = r.predicted.source;
      out["runs"].push_back(cj);
    } else {
      std::cout << "== " << r.predicted.source << " vs " << r.measured.front().source
                << (r.measured.size() > 1 ? " (+" + std::to_string(r.measured.size() - 1) + " ranks)" : "")
                << "\n";
      std::cout << analyzer::render_comparison(c) << "\n";
    }
  }
  if (o.fit) {
    analyzer::Calibration cal = analyzer::fit_calibration(runs);
    nlohmann::json cj = analyzer::calibration_json(cal);
    std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
    if (!f) throw InputError("--output", "cannot write " + o.output);
    f << cj.dump(2) << "\n";
    if (!f) throw InputError("--output", "write failed: " + o.output);
    if (o.json) {
      out["calibration"] = cj;
      out["calibration_file"] = o.output;
    } else {
      std::cout << "fitted on " << runs.size() << " run(s): " << cal.modules.size()
                << " module kinds with coefficients, transient scale " << cal.transient_scale << ", overhead "
                << static_cast<long long>(cal.overhead_bytes) << " bytes per rank; in-sample RMS peak error "
                << 100 * cal.rms_peak_error_before << " % → " << 100 * cal.rms_peak_error_after << " %\n"
                << "wrote " << o.output << " (apply with `preflight analyze --calibration " << o.output
                << " …`)\n";
    }
  }
  if (o.json) {
    out["notes"] = notes;
    std::cout << out.dump(2) << "\n";
  } else {
    for (const auto& n : notes) std::cout << "note: " << n << "\n";
  }
  if (o.max_peak_error >= 0 && 100 * worst_peak > o.max_peak_error) return kExitDoesNotFit;
  return kExitOk;
}

}  // namespace

std::optional<std::vector<std::string>> bridge_log_words(const std::string& path, bool has_argument_dump,
                                                         int world_size, int gpus_per_node) {
  if (has_argument_dump) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (analyzer::is_nemo1_config(text)) {  // a NeMo 1 log: its configuration, whose trainer gives the world
    std::vector<std::string> world;
    if (world_size > 0) {
      if (gpus_per_node <= 0) throw InputError("--gpus-per-node", "must be positive");
      const int per_node = std::min(world_size, gpus_per_node);
      world = {"--nproc_per_node", std::to_string(per_node), "--nnodes",
               std::to_string(world_size / per_node)};
    }
    return analyzer::nemo_config_text_to_megatron_args(text, path, world).args;
  }
  if (text.find("Task Configuration") == std::string::npos) return std::nullopt;
  if (world_size <= 0)
    throw InputError(path,
                     "a Megatron-Bridge log (its settings are the Task Configuration YAML, not an argument "
                     "dump) does not print the world size: give --world-size N (and --gpus-per-node)");
  if (gpus_per_node <= 0) throw InputError("--gpus-per-node", "must be positive");
  const int per_node = std::min(world_size, gpus_per_node);
  if (world_size % per_node != 0)
    throw InputError("--world-size",
                     std::to_string(world_size) + " GPUs do not fill nodes of " + std::to_string(per_node));
  return analyzer::bridge_config_text_to_megatron_args(text, path,
                                                       {"--nproc_per_node", std::to_string(per_node),
                                                        "--nnodes", std::to_string(world_size / per_node)})
      .args;
}

double predict_megatron_log(const std::string& path, const std::string& calibration, bool json,
                            void* json_out, void* prediction_out, int world_size, int gpus_per_node) {
  std::optional<analyzer::Calibration> cal;
  if (!calibration.empty()) cal = analyzer::read_calibration(read_json_file(calibration), calibration);
  log_parse::MegatronLog log = log_parse::read_megatron_log(path);
  std::vector<log_parse::MegatronLog> one{log};
  const log_parse::MegatronSummary summary = log_parse::summarize_megatron(one);
  std::vector<analyzer::LoggedRankPeak> measured;
  for (const auto& r : summary.ranks)
    measured.push_back({r.rank, r.max_allocated_mib, r.max_reserved_mib, location(r.file, r.line)});
  if (measured.empty())
    throw InputError(path, "no `[Rank N] (after K iterations) memory (MB) | … max allocated` lines to compare");
  std::map<std::string, std::string> args = log.args;
  if (log.padded_vocab_size && !args.count("padded_vocab_size"))
    args["padded_vocab_size"] = std::to_string(*log.padded_vocab_size);
  const auto bridge = bridge_log_words(path, !log.args.empty(), world_size, gpus_per_node);
  const analyzer::LogPrediction p =
      bridge ? analyzer::predict_logged_ranks(*bridge, measured, path, cal ? &*cal : nullptr)
             : analyzer::predict_logged_ranks(args, measured, path, cal ? &*cal : nullptr);
  if (prediction_out) static_cast<std::vector<analyzer::LogPrediction>*>(prediction_out)->push_back(p);
  if (json && json_out)
    static_cast<nlohmann::json*>(json_out)->push_back(analyzer::log_prediction_json(p));
  else
    std::cout << analyzer::render_log_prediction(p) << "\n";
  return p.max_abs_error();
}

Command calibrate_command() {
  return {"calibrate",
          "predicted vs measured memory per rank (signed % error); --fit writes coefficients for analyze "
          "--calibration",
          [](CLI::App& sub) {
            auto o = std::make_shared<CalibrateOptions>();
            sub.add_option(
                "--predicted", o->predicted,
                "JSON of `preflight analyze --json` or `preflight estimate --json` (repeat for several runs, "
                "paired with --measured; --fit needs analyze's per-op predictions)");
            sub.add_option(
                   "--measured", o->measured,
                   "traces of the run: a directory of rank*.pftrace (or of measurement *.json), a trace, or "
                   "a measurement JSON; or Megatron training logs (argument dump + `[Rank N] … max "
                   "allocated` lines), predicted from the log itself");
            sub.add_option("--calibration", o->calibration,
                           "apply this calibration file to the predictions first");
            sub.add_flag("--fit", o->fit, "least-squares fit over all runs; writes --output");
            sub.add_option("-o,--output", o->output,
                           "calibration file written by --fit (default calibration.json)");
            sub.add_flag("--json", o->json, "JSON output");
            sub.add_flag("--measure-only", o->measure_only,
                         "print the measurements of the traces (JSON) without comparing");
            sub.add_flag("--fit-time", o->fit_time,
                         "fit the system's compute and network efficiency to measured iteration times (--runs "
                         "FILE.json and/or Megatron logs as --measured) on --system; writes the fitted system "
                         "(-o, default fitted_system.json) and prints in-sample and leave-one-out errors");
            sub.add_option("--runs", o->runs,
                           "with --fit-time: JSON of runs {\"runs\": [{\"name\", \"args\": [Megatron command "
                           "line], \"measured_iteration_ms\"}]}");
            sub.add_option("--system", o->system, "with --fit-time: the system the runs ran on (preset or file)");
            sub.add_option(
                "--world-size", o->world_size,
                "GPUs of a Megatron-Bridge log's run (read from its Task Configuration YAML; Bridge logs "
                "do not print the world size)");
            sub.add_option("--gpus-per-node", o->gpus_per_node, "with --world-size: GPUs a node (default 8)");
            sub.add_flag("--fit-overlap", o->fit_overlap,
                         "with --fit-time: also fit tp_overlap_exposed, the part of Megatron's overlapped "
                         "tensor-parallel backward communication that still costs time (0…1)");
            sub.add_flag(
                "--per-group", o->per_group,
                "with --fit-time: one scale per efficiency group — GEMMs, FP8 GEMMs (when a run has them), "
                "attention, memory-bound ops, and each collective (all_reduce, all_gather, reduce_scatter, "
                "all2all, p2p) — ridge least "
                "squares pulled towards the system's values, instead of one compute and one network scale");
            sub.add_option("--max-peak-error", o->max_peak_error,
                           "exit 1 when a rank's peak error exceeds this many percent");
            return std::function<int()>([o] { return run_calibrate(*o); });
          }};
}

}  // namespace preflight::cli
