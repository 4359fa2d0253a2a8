#include "preflight/analyzer/model/system_spec.hpp"

#include "preflight/common/error.hpp"

namespace preflight::analyzer {

double SystemSpec::mem_bytes() const {
  return mem_gib * 1024.0 * 1024.0 * 1024.0;
}

void SystemSpec::set_nic_gbps(double g) {
  if (!(g > 0 && g < 1e5)) throw InputError("--nic-gbps", "must be a positive bandwidth in GB/s per GPU");
  auto it = networks.find("inter_node");
  if (it == networks.end()) throw InputError("--nic-gbps", "system " + name + " has no inter_node network");
  it->second.bandwidth.gbps = g * num_per_node;
}

void SystemSpec::set_gpus_per_node(int n) {
  if (n < 1) throw InputError("--gpus-per-node", "must be at least 1, got " + std::to_string(n));
  if (auto it = networks.find("inter_node"); it != networks.end() && num_per_node > 0)
    it->second.bandwidth.gbps *= static_cast<double>(n) / num_per_node;
  num_per_node = n;
}

}  // namespace preflight::analyzer
