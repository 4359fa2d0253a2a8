#pragma once
// Helpers of the allocator_hook tests: temporary trace directories, running a program under the hook,
// finding its traces, looking up markers in summaries.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "preflight/log_parse/trace_summary.hpp"
#include "test_support.hpp"

namespace preflight::test {

namespace fs = std::filesystem;

inline std::string hook_program(const std::string& name) {
  return std::string(HOOK_PROGRAM_DIR) + "/" + name;
}

/// The environment that turns tracing on into `dir` (plus `extra`, "NAME=value …").
inline std::string hook_env(const TempDir& dir, const std::string& extra = "",
                            const std::string& lib = PREFLIGHT_HOOK_LIB) {
  return "env PREFLIGHT_TRACE_DIR=" + shell_quote(dir.str()) + " LD_PRELOAD=" + shell_quote(lib) + " " +
         extra + " ";
}

/// The *.pftrace files in `dir`, sorted.
inline std::vector<std::string> trace_files(const TempDir& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir.path()))
    if (e.path().extension() == ".pftrace") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

inline const log_parse::SpaceSummary* find_space(const log_parse::TraceSummary& s, const std::string& name) {
  for (const auto& sp : s.spaces)
    if (sp.space == name) return &sp;
  return nullptr;
}

inline const log_parse::MarkerTotals* find_marker(const log_parse::SpaceSummary& sp,
                                                  const std::string& name) {
  for (const auto& m : sp.markers)
    if (m.marker == name) return &m;
  return nullptr;
}

inline const log_parse::BytesBy* find_bytes(const std::vector<log_parse::BytesBy>& v,
                                            const std::string& key) {
  for (const auto& b : v)
    if (b.key == key) return &b;
  return nullptr;
}

/// "key value" lines printed by the test programs.
inline std::map<std::string, std::uint64_t> parse_key_values(const std::string& text) {
  std::map<std::string, std::uint64_t> out;
  std::istringstream in(text);
  std::string key;
  std::uint64_t value = 0;
  while (in >> key >> value) out[key] = value;
  return out;
}

}  // namespace preflight::test
