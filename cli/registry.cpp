// The list of CLI11 subcommands.  Each component's command adds one line here.
#include "commands.hpp"

namespace preflight::cli {

std::vector<Command> cli11_commands() {
  return {
      {"logs", "harvest dryrun memory blocks per stage; Megatron memory and iteration lines per rank",
       add_logs_command},
  };
}

}  // namespace preflight::cli
