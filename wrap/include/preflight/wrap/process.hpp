#pragma once
/// @file process.hpp
/// Starting programs for `preflight run` and `preflight dryrun`: PATH lookup (optionally skipping the shim
/// directory), an explicit environment, posix_spawn with the output sent to a log file and the child in its
/// own process group (so a timeout or Ctrl-C stops the whole stage), and exec for handing over to a launcher.

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace preflight::wrap {

using Environment = std::map<std::string, std::string>;

/// The current process environment.
Environment current_environment();

/// env[key], or "" when `key` is not set.
std::string env_get(const Environment& env, const std::string& key);

/// Absolute path of the running executable (/proc/self/exe).
std::filesystem::path self_executable();

/// Looks `name` up like the shell: a name with a '/' is returned as is (if executable); otherwise each
/// directory of `path_var` in order, skipping `skip_dir` (the shim directory).  nullopt when not found.
std::optional<std::filesystem::path> find_program(const std::string& name, const std::string& path_var,
                                                  const std::filesystem::path& skip_dir = {});

/// `dir` prepended to a colon-separated list (no trailing ':' when the list was empty).
std::string prepend_path(const std::string& dir, const std::string& list);

/// Replaces the current process with `argv` (looked up on env["PATH"], skipping `skip_dir`).
/// @throws InputError (where = argv[0]) when it cannot be found or executed
[[noreturn]] void exec_program(const std::vector<std::string>& argv, const Environment& env,
                               const std::filesystem::path& skip_dir = {});

/// Starts `argv` with `env`; stdout and stderr go to `log` (created/truncated, stdin from /dev/null) when
/// given.  With `own_process_group` the child leads a new process group (a dryrun stage that a timeout stops
/// as a whole); otherwise it stays in ours (a foreground run that Ctrl-C reaches).
/// @return its pid.  @throws InputError (where = argv[0]) when it cannot be started
pid_t spawn_program(const std::vector<std::string>& argv, const Environment& env,
                    const std::optional<std::filesystem::path>& log,
                    const std::filesystem::path& skip_dir = {}, bool own_process_group = true);

/// Exit status of a waitpid() status: the exit code, or 128 + signal number.
int exit_code_of(int wait_status);

/// Waits for a child started in our process group and returns its exit code.  While waiting, SIGINT and
/// SIGQUIT are ignored here (the terminal delivers them to the child too) and SIGTERM/SIGHUP are passed on.
int wait_foreground(pid_t pid);

/// Runs `argv` in the foreground (same process group, inherits stdio) and returns its exit code.
int run_program(const std::vector<std::string>& argv, const Environment& env,
                const std::filesystem::path& skip_dir = {});

}  // namespace preflight::wrap
