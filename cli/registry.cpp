// The list of CLI11 subcommands.  Each component's command adds one line here.
#include "commands.hpp"

#include <algorithm>
#include <filesystem>

#include "preflight/common/error.hpp"

namespace preflight::cli {

Words expand_file_arguments(const Words& inputs, const std::vector<std::string>& suffixes, bool recursive,
                            const std::string& what) {
  namespace fs = std::filesystem;
  Words files;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (!fs::is_directory(in, ec)) {
      files.push_back(in);
      continue;
    }
    Words found;
    auto take = [&](const fs::directory_entry& e) {
      const std::string name = e.path().filename().string();
      for (const auto& s : suffixes)
        if (name.ends_with(s) && e.is_regular_file(ec)) {
          found.push_back(e.path().string());
          return;
        }
    };
    if (recursive) {
      for (fs::recursive_directory_iterator it(in, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec))
        take(*it);
    } else {
      for (fs::directory_iterator it(in, ec), end; !ec && it != end; it.increment(ec)) take(*it);
    }
    if (ec) throw InputError(in, "cannot list: " + ec.message());
    if (found.empty())
      throw InputError(in, "no " + what + (recursive ? " under this directory" : " in this directory"));
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

std::vector<Command> cli11_commands() {
  return {
      {"logs", "harvest dryrun memory blocks per stage; Megatron memory and iteration lines per rank",
       add_logs_command},
      {"timeline",
       "profiler timelines (PyTorch, Ascend) → per-layer forward/backward ms; SAPP head/body/tail",
       add_timeline_command},
      trace_command(),
      wrap_command(),
      run_command(),
      dryrun_command(),
      estimate_command(),
      search_command(),
      calibrate_command(),
  };
}

}  // namespace preflight::cli
