// SimuMax's configuration files (analyzer/data/simumax) as presets, from the embedded data.
#include "simumax_presets.hpp"

#include "embedded_data.hpp"

namespace preflight::analyzer::cost::presets {

namespace {

std::vector<Preset> list(const char* folder) {
  std::vector<Preset> out;
  for (const embedded::File* f : embedded::in_folder(std::string("simumax/") + folder))
    out.push_back({embedded::stem(*f), f->text});
  return out;
}

}  // namespace

const std::vector<Preset>& strategies() {
  static const std::vector<Preset> all = list("strategy");
  return all;
}
const std::vector<Preset>& systems() {
  // SimuMax's calibrated files, then the GPU presets from spec sheets (analyzer/data/systems).
  static const std::vector<Preset> all = [] {
    std::vector<Preset> v = list("system");
    for (const embedded::File* f : embedded::in_folder("systems")) v.push_back({embedded::stem(*f), f->text});
    return v;
  }();
  return all;
}
const std::vector<Preset>& models() {
  static const std::vector<Preset> all = list("models");
  return all;
}

}  // namespace preflight::analyzer::cost::presets
