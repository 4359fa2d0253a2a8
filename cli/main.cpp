// The preflight binary: dispatch to subcommands; errors become `preflight: error: …` and exit 2.
#include <CLI/CLI.hpp>

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
  try {
    app.parse(argc, argv);
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

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const preflight::InputError& e) {
    std::cerr << "preflight: error: " << e.what() << "\n";
    return preflight::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "preflight: internal error: " << e.what() << "\n";
    return 3;
  }
}
