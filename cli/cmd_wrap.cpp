// preflight wrap SCRIPT --mode analyze|trace|dryrun: rewrites the launch lines of a launch script.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "preflight/common/error.hpp"
#include "preflight/wrap/process.hpp"
#include "preflight/wrap/rewrite.hpp"

namespace preflight::cli {

namespace {

struct WrapCli {
  std::string script;
  std::string mode = "analyze";
  std::string output;
  bool in_place = false;
  bool sed = false;
  bool keep_placeholders = false;
  bool json = false;
  std::string preflight;
  LaunchCli launch;
  int stages = 0;
  std::string dryrun_dir = "output/preflight_dryrun";
  int jobs = 0;
  double timeout = 0;
  std::string python;
};

std::string read_script(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "cannot read the script");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::filesystem::path& path, const std::string& text,
                const std::filesystem::path& like) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError(path.string(), "cannot write");
  out << text;
  out.close();
  if (!out) throw InputError(path.string(), "write failed");
  std::error_code ec;
  auto perms = std::filesystem::status(like, ec).permissions();
  if (!ec) std::filesystem::permissions(path, perms, ec);
}

int run_wrap(const WrapCli& c) {
  if (c.in_place && !c.output.empty()) throw InputError("--in-place", "cannot be combined with -o");
  std::string text = read_script(c.script);
  std::string result_text;
  nlohmann::json report;
  report["script"] = c.script;
  report["mode"] = c.mode;

  if (c.sed) {
    if (c.mode != "analyze")
      throw InputError("--sed-compatible", "only reproduces the analyze recipe (--mode analyze)");
    std::size_t matches = 0;
    result_text = wrap::sed_compatible(text, matches);
    report["sed_matches"] = matches;
    if (matches == 0)
      std::cerr << "wrap: " << c.script << ": the public recipe's pattern '" << wrap::kRecipePattern
                << "' matches no line (array-style arguments, or the entry point on another line); "
                   "drop --sed-compatible to rewrite this script\n";
  } else {
    wrap::WrapOptions o;
    o.mode = wrap::parse_mode(c.mode);
    o.script_name = c.script;
    o.fix_placeholders = !c.keep_placeholders;
    o.preflight = c.preflight.empty() ? wrap::self_executable().string() : c.preflight;
    const LaunchCli& lc = c.launch;
    o.entries.globs.insert(o.entries.globs.end(), lc.entries.begin(), lc.entries.end());
    o.analyze_args = lc.analyze_args;
    std::vector<std::string> common;
    for (const std::string& e : lc.entries) common.insert(common.end(), {"--entry", e});
    o.run_args = launch_run_words(lc, o.mode == wrap::WrapMode::Analyze, o.mode == wrap::WrapMode::Trace);
    o.dryrun_out = c.dryrun_dir;
    o.dryrun_args = common;
    if (c.stages > 0) o.dryrun_args.insert(o.dryrun_args.end(), {"--stages", std::to_string(c.stages)});
    if (c.jobs > 0) o.dryrun_args.insert(o.dryrun_args.end(), {"-j", std::to_string(c.jobs)});
    if (c.timeout > 0) {
      std::ostringstream t;
      t << c.timeout;
      o.dryrun_args.insert(o.dryrun_args.end(), {"--timeout", t.str()});
    }
    if (!c.python.empty()) o.dryrun_args.insert(o.dryrun_args.end(), {"--python", c.python});

    wrap::WrapResult r = wrap::wrap_script(text, o);
    result_text = r.text;
    nlohmann::json launches = nlohmann::json::array();
    for (const auto& l : r.launches) {
      launches.push_back({{"line", l.line},
                          {"launcher", l.action == "already wrapped" ? "" : wrap::launcher_name(l.launcher)},
                          {"entry", l.entry},
                          {"action", l.action}});
      if (!c.json) {
        std::cerr << "wrap: " << c.script << ":" << l.line << ": ";
        if (l.action == "already wrapped")
          std::cerr << "already wrapped, left as is\n";
        else
          std::cerr << wrap::launcher_name(l.launcher) << " " << l.entry << " -> " << l.action << "\n";
      }
    }
    if (!c.json)
      for (const auto& n : r.notes) std::cerr << "wrap: " << n << "\n";
    report["launches"] = launches;
    report["notes"] = r.notes;
  }
  report["changed"] = result_text != text;

  if (c.in_place) {
    std::filesystem::path script(c.script);
    std::filesystem::path backup = script;
    backup += ".orig";
    if (result_text != text) {
      if (std::filesystem::exists(backup)) {
        if (read_script(backup.string()) != text)
          throw InputError(backup.string(), "a different backup already exists; move it away or use -o");
      } else {
        write_file(backup, text, script);
      }
      write_file(script, result_text, script);
    }
    report["output"] = c.script;
    report["backup"] = backup.string();
  } else if (!c.output.empty()) {
    write_file(c.output, result_text, c.script);
    report["output"] = c.output;
    std::error_code ec;
    bool same_dir = std::filesystem::equivalent(std::filesystem::absolute(c.output).parent_path(),
                                                std::filesystem::absolute(c.script).parent_path(), ec);
    bool self_located = text.find("BASH_SOURCE") != std::string::npos ||
                        text.find("dirname $0") != std::string::npos ||
                        text.find("dirname \"$0\"") != std::string::npos;
    if (!same_dir && self_located)
      std::cerr << "wrap: note: " << c.script
                << " finds files next to itself (BASH_SOURCE / dirname $0): run the rewritten copy from the "
                   "script's own folder, or write it there\n";
  } else if (!c.json) {
    std::cout << result_text;
  } else {
    report["text"] = result_text;
  }
  if (c.json) std::cout << report.dump(2) << "\n";
  return kExitOk;
}

}  // namespace

Command wrap_command() {
  return {"wrap", "rewrite a launch script so its launches run preflight analyze, a traced run, or a dryrun",
          [](CLI::App& sub) -> std::function<int()> {
            auto c = std::make_shared<WrapCli>();
            sub.add_option("script", c->script, "launch script to rewrite")->required();
            sub.add_option("--mode", c->mode, "analyze (default) | trace | dryrun")
                ->check(CLI::IsMember({"analyze", "trace", "dryrun"}));
            sub.add_option("-o,--output", c->output, "write the rewritten script here (default: stdout)");
            sub.add_flag("--in-place", c->in_place, "rewrite SCRIPT itself, keeping SCRIPT.orig");
            sub.add_flag(
                "--sed-compatible", c->sed,
                "byte-exact output of the public recipe's sed (torchrun $DISTRIBUTED_ARGS pretrain_gpt.py "
                "-> python ../get_training_info.py $DISTRIBUTED_ARGS )");
            sub.add_option(
                "--preflight", c->preflight,
                "preflight command baked into the script (default: this binary; $PREFLIGHT overrides it "
                "when the script runs)");
            sub.add_flag("--keep-placeholders", c->keep_placeholders,
                         "leave NAME=<Specify path> placeholders as they are (bash rejects them)");
            add_launch_options(sub, c->launch);
            sub.add_option("--stages", c->stages,
                           "dryrun mode: pipeline stages (default: from the YAML --config)");
            sub.add_option("--dryrun-dir", c->dryrun_dir, "dryrun mode: output directory for the stage logs");
            sub.add_option("-j,--jobs", c->jobs, "dryrun mode: stages run at once");
            sub.add_option("--timeout", c->timeout, "dryrun mode: seconds before a stage is stopped");
            sub.add_option("--python", c->python, "dryrun mode: interpreter for the entry point");
            sub.add_flag("--json", c->json,
                         "print a JSON report (with the script text unless -o/--in-place)");
            return [c]() { return run_wrap(*c); };
          }};
}

}  // namespace preflight::cli
