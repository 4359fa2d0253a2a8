#include "embedded_data.hpp"

#include <string_view>

namespace preflight::analyzer::embedded {

std::vector<const File*> in_folder(const std::string& folder) {
  std::vector<const File*> out;
  const std::string prefix = folder + "/";
  for (const File& f : files()) {
    std::string_view p = f.path;
    if (p.starts_with(prefix) && p.find('/', prefix.size()) == std::string_view::npos) out.push_back(&f);
  }
  return out;
}

const File* find(const std::string& path) {
  for (const File& f : files())
    if (path == f.path) return &f;
  return nullptr;
}

std::string stem(const File& f) {
  std::string_view p = f.path;
  p = p.substr(p.rfind('/') + 1);
  return std::string(p.substr(0, p.rfind('.')));
}

}  // namespace preflight::analyzer::embedded
