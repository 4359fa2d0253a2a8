#include "preflight/common/error.hpp"

namespace preflight {

namespace {
std::string compose(const std::string& where, const std::string& what) {
  return where.empty() ? what : where + ": " + what;
}
}  // namespace

InputError::InputError(std::string where, std::string what)
    : std::runtime_error(compose(where, what)), where_(std::move(where)), detail_(std::move(what)) {}

std::string location(const std::string& file, std::int64_t line) {
  return file + ":" + std::to_string(line);
}

}  // namespace preflight
