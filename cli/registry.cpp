// The list of CLI11 subcommands.  Each component's command adds one line here.
#include "commands.hpp"

namespace preflight::cli {

std::vector<Command> cli11_commands() {
  return {};
}

}  // namespace preflight::cli
