#include "preflight/analyzer/model/system_spec.hpp"

namespace preflight::analyzer {

double SystemSpec::mem_bytes() const {
  return mem_gib * 1024.0 * 1024.0 * 1024.0;
}

}  // namespace preflight::analyzer
