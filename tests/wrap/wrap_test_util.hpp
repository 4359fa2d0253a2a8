#pragma once
// Helpers for wrap's tests: scratch folders, test data, the JSON report inside a script's output.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace preflight::test {

namespace fs = std::filesystem;

/// tests/data/wrap/<name> in the source tree (see its README).
inline fs::path wrap_data(const std::string& name) {
  return fs::path(PREFLIGHT_SOURCE_DIR) / "tests" / "data" / "wrap" / name;
}

/// Copies a file from tests/data/wrap into `dir` (keeping its name unless `as` is given).
inline fs::path copy_data(const std::string& name, const fs::path& dir, const std::string& as = "") {
  fs::path to = dir / (as.empty() ? fs::path(name).filename().string() : as);
  fs::create_directories(to.parent_path());
  fs::copy_file(wrap_data(name), to, fs::copy_options::overwrite_existing);
  return to;
}

/// The first top-level JSON object in `out` (a line that is just "{" up to the last line that is just "}").
inline nlohmann::json json_in(const std::string& out) {
  std::size_t b = 0;
  if (out.rfind("{\n", 0) != 0) {
    b = out.find("\n{\n");
    if (b == std::string::npos) throw std::runtime_error("no JSON object in output:\n" + out);
    ++b;
  }
  auto e = out.rfind("\n}");
  if (e == std::string::npos || e < b)
    throw std::runtime_error("unterminated JSON object in output:\n" + out);
  return nlohmann::json::parse(out.substr(b, e + 2 - b));
}

/// `cd DIR && <cmd>` with /usr/bin first on PATH (Debian's python3 with torch, not a user's pyenv).
inline RunResult run_in(const fs::path& dir, const std::string& cmd) {
  return run_shell("cd " + shell_quote(dir.string()) + " && export PATH=/usr/bin:/bin:$PATH && " + cmd);
}

/// A TCP port free on 127.0.0.1 right now (for torchrun's --master_port in tests that run side by side).
inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot find a free port");
  int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

inline std::string preflight_bin() {
  return shell_quote(PREFLIGHT_BINARY);
}

}  // namespace preflight::test
