// preflight timeline FILE… — profiler timelines (PyTorch Chrome traces, Ascend trace_view.json) → layer
// times.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/common/error.hpp"
#include "preflight/log_parse/sapp_timeline.hpp"

namespace preflight::cli {

namespace {

struct TimelineOptions {
  std::vector<std::string> inputs;
  bool sapp = false;
  bool sapp_compat = false;
  bool json = false;
  int micro_batches = 0;
  std::vector<std::string> head, body, tail;
};

int run_timeline(const TimelineOptions& o) {
  std::vector<std::filesystem::path> inputs(o.inputs.begin(), o.inputs.end());
  if (o.sapp || o.sapp_compat) {
    log_parse::SappTimelineOptions s;
    if (!o.head.empty()) s.names.head = o.head;
    if (!o.body.empty()) s.names.body = o.body;
    if (!o.tail.empty()) s.names.tail = o.tail;
    s.micro_batches = o.micro_batches;
    s.compat = o.sapp_compat;
    log_parse::SappTimes t = log_parse::sapp_timeline_times(inputs, s);
    if (o.json) {
      std::cout << log_parse::sapp_times_json(t).dump(2) << "\n";
    } else {
      std::cout << log_parse::sapp_time_config_yaml(t);
      std::cerr << log_parse::sapp_times_text(t);
    }
    return kExitOk;
  }
  throw InputError("--sapp", "per-layer timing without --sapp is not available yet; pass --sapp");
}

}  // namespace

std::function<int()> add_timeline_command(CLI::App& sub) {
  auto o = std::make_shared<TimelineOptions>();
  sub.add_option(
         "FILE", o->inputs,
         "Chrome trace files (.json or .json.gz: PyTorch profiler, Ascend trace_view.json, msprof*.json) or "
         "folders of them")
      ->required();
  sub.add_flag(
      "--sapp", o->sapp,
      "SAPP head/body/tail forward ms per micro batch (init-YAML time_config block on stdout, details on "
      "stderr)");
  sub.add_flag(
      "--sapp-compat", o->sapp_compat,
      "--sapp with SAPP's own behaviour where we fix it (pid 3 fallback, file-order markers, last file's "
      "step count, zero-time instances in the body mean)");
  sub.add_option(
      "--micro-batches", o->micro_batches,
      "micro batches per step when profiling (SAPP profiling_config.micro_batch_num; default: forward "
      "windows per step)");
  sub.add_option("--head", o->head, "head layer names (comma separated; SAPP default LlamaEmbedding)")
      ->delimiter(',');
  sub.add_option("--body", o->body, "body layer names (SAPP default LLamaDecodeLayer)")->delimiter(',');
  sub.add_option("--tail", o->tail, "tail layer names (SAPP default lm_head-Linear,LlamaRMSNorm)")
      ->delimiter(',');
  sub.add_flag("--json", o->json, "JSON with per-layer and per-file numbers");
  return [o] { return run_timeline(*o); };
}

}  // namespace preflight::cli
