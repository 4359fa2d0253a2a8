#pragma once
// Test helpers over the layer graph (tests of the analyzer's model).
#include <vector>

#include "preflight/analyzer/model/layer_graph.hpp"

namespace preflight::test {

/// The ops of decoder layer `layer` (0-based, global) in every chunk of `g`, in forward order.
inline std::vector<const analyzer::Op*> layer_ops(const analyzer::LayerGraph& g, int layer) {
  std::vector<const analyzer::Op*> out;
  for (const auto& c : g.chunks)
    for (const auto& op : c.ops)
      if (op.layer == layer) out.push_back(&op);
  return out;
}

}  // namespace preflight::test
