#pragma once
// The SimuMax configuration files embedded at build time (analyzer/data/simumax, through
// embedded_data.hpp).
#include <string>
#include <vector>

namespace preflight::analyzer::cost::presets {

struct Preset {
  std::string name;  ///< file name without .json
  const char* json;  ///< file content
};

const std::vector<Preset>& strategies();
const std::vector<Preset>& systems();
const std::vector<Preset>& models();

}  // namespace preflight::analyzer::cost::presets
