#pragma once
// Helpers shared by the test suites: running the preflight binary, locating test data.
#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace preflight::test {

/// tests/data in the source tree.
inline std::filesystem::path data_dir() {
  return PREFLIGHT_TEST_DATA;
}

/// The reference data folder: `PREFLIGHT_SHARED_DATA` from the environment, else ../shared/data next to
/// the checkout (or next to the main checkout of a git worktree; see tests/CMakeLists.txt).
/// Tests that need it call GTEST_SKIP() with shared_data_missing() when it is absent.
inline std::filesystem::path shared_data_dir() {
  const char* env = std::getenv("PREFLIGHT_SHARED_DATA");
  if (env && *env) return env;
  return PREFLIGHT_DEFAULT_SHARED_DATA;
}
inline bool shared_data_available() {
  return std::filesystem::is_directory(shared_data_dir());
}
inline std::string shared_data_missing() {
  return "reference data not found at " + shared_data_dir().string() +
         " (set PREFLIGHT_SHARED_DATA); this tier needs ../shared/data";
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes `text` to `p` (binary), creating its parent folders.
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
}

/// A fresh directory under the system temp dir (named `<prefix>XXXXXX`), removed with everything in it
/// on destruction. Throws std::runtime_error when it cannot be made.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "preflight_tmp_") {
    std::string t = (std::filesystem::temp_directory_path() / (prefix + "XXXXXX")).string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed for " + t);
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// A scratch directory for this test process, removed with everything in it when the process exits.
inline const std::filesystem::path& scratch_dir() {
  struct Scratch {
    std::filesystem::path path;
    Scratch() {
      path = std::filesystem::temp_directory_path() / ("preflight_test_" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Scratch s;
  return s.path;
}

/// Runs a shell command line, capturing stdout and stderr.
inline RunResult run_shell(const std::string& cmd) {
  namespace fs = std::filesystem;
  static int counter = 0;
  const fs::path& dir = scratch_dir();
  fs::path out = dir / ("out" + std::to_string(counter));
  fs::path err = dir / ("err" + std::to_string(counter++));
  std::string full = "( " + cmd + " ) >" + out.string() + " 2>" + err.string();
  int status = std::system(full.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(out);
  r.err = read_file(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

/// The words of a command line separated by spaces (no quoting): argument lists in tests written as one
/// string, `words("--num-layers 4 --hidden-size 64")`.
inline std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = line.find(' ', i);
    if (j == std::string::npos) j = line.size();
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

/// The model and size flags of a Mixtral 8x7B launch in the style of Megatron-LM's
/// examples/mixtral/train_mixtral_8x7b_distributed.sh (tests append their own).
inline std::string mixtral_8x7b_megatron_args() {
  return "--disable-bias-linear --seq-length 4096 --max-position-embeddings 32768 --num-layers 32 "
         "--hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --attention-dropout 0.0 "
         "--hidden-dropout 0.0 --normalization RMSNorm --position-embedding-type rope --swiglu "
         "--untie-embeddings-and-output-weights --group-query-attention --num-query-groups 8 --num-experts 8 "
         "--moe-router-topk 2 --tokenizer-type Llama2Tokenizer --bf16 ";
}

/// Quotes a word for /bin/sh.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

/// Runs `preflight <args>` (args already shell-quoted as needed).
inline RunResult run_preflight(const std::string& args) {
  return run_shell(shell_quote(PREFLIGHT_BINARY) + " " + args);
}

/// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace preflight::test
