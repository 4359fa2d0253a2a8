#pragma once
// Small ids for the strings a trace repeats (event names, layer paths): each distinct string is stored
// once and compared as a uint32_t afterwards.  Not thread-safe; one per reader.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace preflight::log_parse {

class StringInterner {
 public:
  /// The id of `s`, assigning the next one (0, 1, …) the first time it is seen.
  std::uint32_t id(std::string_view s) {
    auto it = ids_.find(std::string(s));
    if (it != ids_.end()) return it->second;
    auto n = static_cast<std::uint32_t>(names_.size());
    names_.emplace_back(s);
    ids_.emplace(names_.back(), n);
    return n;
  }
  /// The string of an id returned by id().
  const std::string& operator[](std::uint32_t i) const { return names_[i]; }
  std::size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::string, std::uint32_t> ids_;
  std::vector<std::string> names_;
};

}  // namespace preflight::log_parse
