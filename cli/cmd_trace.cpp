// `preflight trace summarize|export FILE…`: allocation traces written by libpreflight_hook.so
// (allocator_hook/README.md).  Wiring only; the work is in log_parse/trace_*.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/common/error.hpp"
#include "preflight/common/trace_format.hpp"
#include "preflight/log_parse/trace_export.hpp"
#include "preflight/log_parse/trace_summary.hpp"

namespace preflight::cli {
namespace {

namespace fs = std::filesystem;

// A directory stands for the *.pftrace files in it (sorted).
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  return expand_file_arguments(inputs, {trace::kFileSuffix}, false,
                               std::string("*") + trace::kFileSuffix + " trace files");
}

struct SummarizeOptions {
  std::vector<std::string> files;
  bool json = false;
  int top = 10;
};

int run_summarize(const SummarizeOptions& o) {
  std::vector<log_parse::TraceSummary> summaries;
  for (const std::string& f : expand_inputs(o.files)) summaries.push_back(log_parse::summarize_trace(f));
  if (o.json) {
    nlohmann::json processes = nlohmann::json::array();
    for (const auto& s : summaries) processes.push_back(log_parse::summary_json(s));
    nlohmann::json out{
        {"format", "preflight-trace-summary"}, {"version", 1}, {"processes", std::move(processes)}};
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << log_parse::render_summaries(summaries, o.top);
  }
  for (const auto& s : summaries) {
    if (s.process.dropped > 0)
      std::cerr << "preflight: warning: " << s.process.file << ": " << s.process.dropped
                << " records were dropped by the writer; counts are lower bounds\n";
  }
  return kExitOk;
}

struct ExportOptions {
  std::vector<std::string> files;
  std::string format;
  std::string output;
  std::string space = "auto";
  std::string viz_version = "auto";
};

/// torch's version as the local `python3` (on PATH, else the system's /usr/bin/python3) imports it; "" when
/// neither imports torch.
std::string local_torch_version() {
  for (const char* python : {"python3", "/usr/bin/python3"}) {
    std::string cmd =
        std::string(python) + " -c 'import torch, sys; sys.stdout.write(torch.__version__)' 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) continue;
    std::string out;
    char buf[256];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    if (::pclose(p) == 0 && !out.empty()) return out;
  }
  return "";
}

/// --memory-viz-version: "2.1" (or later), "1.13", or auto: the layout the local torch reads.
log_parse::MemoryVizLayout memory_viz_layout(const std::string& version) {
  using log_parse::MemoryVizLayout;
  if (version != "auto") {
    auto l = log_parse::memory_viz_layout_for_torch(version);
    if (!l)
      throw InputError("--memory-viz-version",
                       "expected a torch version (2.1, 1.13) or auto, got '" + version + "'");
    return *l;
  }
  std::string local = local_torch_version();
  auto l = log_parse::memory_viz_layout_for_torch(local);
  if (!l) {
    std::cerr
        << "preflight: note: no torch found (python3, /usr/bin/python3): writing the torch >= 2.1 layout "
           "(pytorch.org/memory_viz); --memory-viz-version 1.13 for torch 1.13's reader\n";
    return MemoryVizLayout::kDeviceTraces;
  }
  std::cerr << "preflight: note: the layout torch " << local << " reads ("
            << (*l == MemoryVizLayout::kSegments ? "1.13: segments at the peak" : ">= 2.1: device_traces")
            << "); --memory-viz-version chooses another\n";
  return *l;
}

int run_export(const ExportOptions& o) {
  const std::vector<std::string> files = expand_inputs(o.files);
  std::ofstream file;
  std::ostream* out = &std::cout;
  if (!o.output.empty() && o.output != "-") {
    file.open(o.output, std::ios::binary | std::ios::trunc);
    if (!file) throw InputError("--output", "cannot write " + o.output);
    out = &file;
  }
  if (o.format == "jsonl") {
    for (const std::string& f : files) log_parse::export_trace_jsonl(f, *out);
  } else {
    if (files.size() != 1)
      throw InputError("--format memory-viz", "takes exactly one trace file (one process)");
    if (out == &std::cout)
      throw InputError("--output", "memory-viz writes a binary pickle: give -o FILE.pickle");
    const log_parse::TraceSpace space = o.space == "host"   ? log_parse::TraceSpace::kHost
                                        : o.space == "cuda" ? log_parse::TraceSpace::kCuda
                                                            : log_parse::TraceSpace::kAuto;
    log_parse::export_trace_memory_viz(files[0], *out, space, memory_viz_layout(o.viz_version));
  }
  out->flush();
  if (!*out) throw InputError("--output", "write failed: " + (o.output.empty() ? "stdout" : o.output));
  return kExitOk;
}

}  // namespace

Command trace_command() {
  return {
      "trace", "allocation traces of libpreflight_hook.so: summarize, export", [](CLI::App& sub) {
        sub.require_subcommand(1);
        auto summarize = std::make_shared<SummarizeOptions>();
        auto exp = std::make_shared<ExportOptions>();
        auto which = std::make_shared<int>(0);

        CLI::App* s = sub.add_subcommand(
            "summarize",
            "per process: peak live bytes and when, live bytes at the peak by module/layer/phase, bytes "
            "per iteration, activations kept by each forward pass, leaks");
        s->add_option("files", summarize->files, "trace files (*.pftrace) or directories of them")
            ->required();
        s->add_flag("--json", summarize->json, "JSON (keys in allocator_hook/README.md)");
        s->add_option("--top", summarize->top, "rows per breakdown table")->check(CLI::PositiveNumber);
        s->callback([which] { *which = 1; });

        CLI::App* x =
            sub.add_subcommand("export", "PyTorch snapshot vocabulary: JSONL or a memory_viz pickle");
        x->add_option("files", exp->files, "trace files (*.pftrace) or directories of them")->required();
        x->add_option("--format", exp->format, "jsonl | memory-viz")
            ->required()
            ->check(CLI::IsMember({"jsonl", "memory-viz"}));
        x->add_option("-o,--output", exp->output, "output file (default stdout; required for memory-viz)");
        x->add_option("--space", exp->space, "memory-viz: auto | host | cuda")
            ->check(CLI::IsMember({"auto", "host", "cuda"}));
        x->add_option(
             "--memory-viz-version", exp->viz_version,
             "memory-viz: the torch whose reader loads it: 2.1 (or later; also pytorch.org/memory_viz), "
             "1.13 (segments at the peak), auto (the local python3's torch)")
            ->capture_default_str();
        x->callback([which] { *which = 2; });

        return std::function<int()>(
            [summarize, exp, which] { return *which == 1 ? run_summarize(*summarize) : run_export(*exp); });
      }};
}

}  // namespace preflight::cli
