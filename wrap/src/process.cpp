// Process helpers for run and dryrun.  See process.hpp.
#include "preflight/wrap/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

#include "preflight/common/error.hpp"

extern char** environ;

namespace preflight::wrap {

namespace {

struct CStrings {
  std::vector<std::string> store;
  std::vector<char*> ptrs;
  char** get() {
    ptrs.clear();
    for (std::string& s : store) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
    return ptrs.data();
  }
};

CStrings env_block(const Environment& env) {
  CStrings c;
  for (const auto& [k, v] : env) {
    std::string kv;
    kv.reserve(k.size() + v.size() + 1);
    kv.append(k).append(1, '=').append(v);
    c.store.push_back(std::move(kv));
  }
  return c;
}

bool executable(const std::filesystem::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

bool same_dir(const std::filesystem::path& a, const std::filesystem::path& b) {
  if (b.empty()) return false;
  std::error_code ec;
  return std::filesystem::equivalent(a, b, ec);
}

std::filesystem::path resolve(const std::vector<std::string>& argv, const Environment& env,
                              const std::filesystem::path& skip_dir) {
  if (argv.empty()) throw InputError("", "empty command");
  auto it = env.find("PATH");
  auto found = find_program(argv[0], it == env.end() ? std::string("/usr/bin:/bin") : it->second, skip_dir);
  if (!found) {
    // A script named without a path (`preflight run train.sh`), or one not marked executable: say how to run
    // it.
    std::error_code ec;
    const bool file_here = std::filesystem::is_regular_file(argv[0], ec);
    if (file_here && argv[0].find('/') == std::string::npos)
      throw InputError(argv[0], "command not found (a file of that name is here: run it as ./" + argv[0] +
                                    (executable(argv[0]) ? "" : ", after chmod +x,") + " or as bash " +
                                    argv[0] + ")");
    if (file_here && !executable(argv[0]))
      throw InputError(argv[0], "not executable (run it as bash " + argv[0] + ", or chmod +x it)");
    throw InputError(argv[0], "command not found");
  }
  return *found;
}

volatile sig_atomic_t g_child = 0;

extern "C" void forward_signal(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

}  // namespace

Environment current_environment() {
  Environment env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

std::string env_get(const Environment& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

std::filesystem::path self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "preflight";
  return p;
}

std::optional<std::filesystem::path> find_program(const std::string& name, const std::string& path_var,
                                                  const std::filesystem::path& skip_dir) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (executable(name)) return std::filesystem::path(name);
    return std::nullopt;
  }
  std::size_t start = 0;
  while (start <= path_var.size()) {
    auto colon = path_var.find(':', start);
    std::string dir = path_var.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    start = colon == std::string::npos ? path_var.size() + 1 : colon + 1;
    if (dir.empty()) dir.assign(1, '.');
    if (same_dir(dir, skip_dir)) continue;
    std::filesystem::path candidate = std::filesystem::path(dir) / name;
    if (executable(candidate)) return candidate;
  }
  return std::nullopt;
}

std::string prepend_path(const std::string& dir, const std::string& list) {
  if (list.empty()) return dir;
  std::string s;
  s.reserve(dir.size() + list.size() + 1);
  s.append(dir).append(1, ':').append(list);
  return s;
}

void exec_program(const std::vector<std::string>& argv, const Environment& env,
                  const std::filesystem::path& skip_dir) {
  std::filesystem::path prog = resolve(argv, env, skip_dir);
  CStrings args;
  args.store = argv;
  CStrings envs = env_block(env);
  ::execve(prog.c_str(), args.get(), envs.get());
  throw InputError(argv[0], std::string("cannot execute: ") + std::strerror(errno));
}

pid_t spawn_program(const std::vector<std::string>& argv, const Environment& env,
                    const std::optional<std::filesystem::path>& log, const std::filesystem::path& skip_dir,
                    bool own_process_group) {
  std::filesystem::path prog = resolve(argv, env, skip_dir);
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  if (own_process_group) {
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
  }
  if (log) {
    posix_spawn_file_actions_addopen(&actions, 1, log->c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  }
  CStrings args;
  args.store = argv;
  CStrings envs = env_block(env);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, prog.c_str(), &actions, &attr, args.get(), envs.get());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw InputError(argv[0], std::string("cannot start: ") + std::strerror(rc));
  return pid;
}

int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

int run_program(const std::vector<std::string>& argv, const Environment& env,
                const std::filesystem::path& skip_dir) {
  std::filesystem::path prog = resolve(argv, env, skip_dir);
  CStrings args;
  args.store = argv;
  CStrings envs = env_block(env);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, prog.c_str(), nullptr, nullptr, args.get(), envs.get());
  if (rc != 0) throw InputError(argv[0], std::string("cannot start: ") + std::strerror(rc));
  return wait_foreground(pid);
}

int wait_foreground(pid_t pid) {
  struct sigaction ignore {
  }, forward{}, old_int{}, old_quit{}, old_term{}, old_hup{};
  ignore.sa_handler = SIG_IGN;
  forward.sa_handler = forward_signal;
  sigemptyset(&ignore.sa_mask);
  sigemptyset(&forward.sa_mask);
  g_child = pid;
  ::sigaction(SIGINT, &ignore, &old_int);
  ::sigaction(SIGQUIT, &ignore, &old_quit);
  ::sigaction(SIGTERM, &forward, &old_term);
  ::sigaction(SIGHUP, &forward, &old_hup);
  int status = 0;
  int rc = 0;
  while ((rc = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGQUIT, &old_quit, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  ::sigaction(SIGHUP, &old_hup, nullptr);
  g_child = 0;
  return rc < 0 ? 1 : exit_code_of(status);
}

}  // namespace preflight::wrap
