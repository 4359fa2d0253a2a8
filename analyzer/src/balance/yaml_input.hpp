#pragma once
// Reading the balance YAML inputs (init/time/memory configs, manual strategies, training yaml): loading a
// file with errors that name it, and positions of nodes as FILE:LINE. Private to analyzer/src/balance.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "preflight/common/error.hpp"

namespace preflight::analyzer::balance::detail {

/// The file a YAML tree came from; at(n) = "FILE:LINE" of node `n` (1-based), or FILE when `n` has no mark.
struct YamlCtx {
  std::string file;
  std::string at(const YAML::Node& n) const {
    const auto mark = n.Mark();
    return mark.line < 0 ? file : location(file, mark.line + 1);
  }
};

/// The YAML document in `file`.
/// @throws InputError (where = the file) with `cannot_open` when it cannot be read, and
///         (where = FILE:LINE) "malformed yaml: …" when yaml-cpp rejects it.
inline YAML::Node load_yaml(const std::filesystem::path& file, const std::string& cannot_open) {
  std::ifstream in(file);
  if (!in) throw InputError(file.string(), cannot_open);
  try {
    return YAML::Load(in);
  } catch (const YAML::Exception& e) {
    throw InputError(location(file.string(), e.mark.line + 1), "malformed yaml: " + e.msg);
  }
}

/// true/True/TRUE and false/False/FALSE as a bool; anything else (or no scalar) → nullopt.
inline std::optional<bool> as_bool(const YAML::Node& n) {
  if (!n.IsDefined() || !n.IsScalar()) return std::nullopt;
  const std::string s = n.Scalar();
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

}  // namespace preflight::analyzer::balance::detail
