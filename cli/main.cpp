// The preflight binary: dispatch to subcommands; errors become `preflight: error: …` and exit 2.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "preflight/common/error.hpp"

namespace {

const char* kUsage =
    "preflight — will this LLM training run fit, how fast will it go, how should it be balanced\n"
    "\n"
    "usage: preflight <command> [options]\n"
    "\n"
    "  analyze [torchrun + Megatron args…]   Megatron-style memory and communication tables\n"
    "  balance [SAPP options]                pipeline layer/recompute balancing (MindFormers SAPP)\n";

int dispatch(int argc, char** argv) {
  using namespace preflight::cli;
  std::vector<std::string> words(argv + 1, argv + argc);
  if (!words.empty() && words[0] == "analyze") return run_analyze(Words(words.begin() + 1, words.end()));
  if (!words.empty() && words[0] == "balance") return run_balance(Words(words.begin() + 1, words.end()));

  CLI::App app{"preflight — will this LLM training run fit, how fast will it go, how should it be balanced"};
  app.name("preflight");
  app.require_subcommand(1);
  app.footer(
      "analyze [torchrun + Megatron args…]: Megatron-style memory and communication tables "
      "(see `preflight analyze --help`)\n"
      "balance [SAPP options]: pipeline layer/recompute balancing (see `preflight balance --help`)");
  std::function<int()> to_run;
  for (const Command& c : cli11_commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    auto run = c.add(*sub);
    sub->callback([&to_run, run]() { to_run = run; });
  }
  // Words after `--` that CLI11 would split as "[a,b]" lists are guarded (commands.hpp, kBracketGuard).
  std::vector<std::string> guarded(argv, argv + argc);
  bool after_dashes = false;
  for (std::size_t i = 1; i < guarded.size(); ++i) {
    std::string& w = guarded[i];
    if (after_dashes && w.size() >= 2 && w.front() == '[' && w.back() == ']')
      w.insert(w.begin(), kBracketGuard);
    after_dashes = after_dashes || w == "--";
  }
  std::vector<char*> guarded_argv;
  for (auto& w : guarded) guarded_argv.push_back(w.data());
  try {
    app.parse(argc, guarded_argv.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (words.empty()) {
      std::cerr << kUsage;
      return preflight::kExitBadInput;
    }
    std::cerr << "preflight: error: " << e.what() << "\n";
    return preflight::kExitBadInput;
  }
  return to_run ? to_run() : preflight::kExitOk;
}

}  // namespace

void preflight::cli::restore_bracket_words(Words& words) {
  for (auto& w : words)
    if (!w.empty() && w.front() == kBracketGuard) w.erase(w.begin());
}

namespace {

/// An analysis inside a wrapped script whose strict mode wrap switched off (set +eu): its exit status is
/// appended to $PREFLIGHT_STATUS_FILE, and the script's EXIT trap exits with the worst one (rewrite.cpp) — a
/// failure is not lost behind the script's later commands, nor a success hidden by an environment command
/// that failed after it.
int reported(int argc, char** argv, int code) {
  const char* file = std::getenv("PREFLIGHT_STATUS_FILE");
  if (!file || !*file || argc < 2) return code;
  const std::string sub = argv[1];
  if (sub == "analyze" || sub == "search" || (sub == "run" && code == preflight::kExitBadInput))
    std::ofstream(file, std::ios::app) << code << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return reported(argc, argv, dispatch(argc, argv));
  } catch (const preflight::InputError& e) {
    std::cerr << "preflight: error: " << e.what() << "\n";
    return reported(argc, argv, preflight::kExitBadInput);
  } catch (const std::exception& e) {
    std::cerr << "preflight: internal error: " << e.what() << "\n";
    return reported(argc, argv, 3);
  }
}
