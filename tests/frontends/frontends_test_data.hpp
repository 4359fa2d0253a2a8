#pragma once
// Where the front-end tests find their data: tests/data/frontends (see its README).
#include <filesystem>
#include <string>

namespace preflight::test {

inline std::filesystem::path frontends_data() {
  return std::filesystem::path(PREFLIGHT_SOURCE_DIR) / "tests" / "data" / "frontends";
}
/// The Hugging Face config.json of `model` (a folder name under hf/).
inline std::string hf_config_path(const std::string& model) {
  return (frontends_data() / "hf" / model / "config.json").string();
}

}  // namespace preflight::test
