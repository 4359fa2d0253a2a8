#include "preflight/analyzer/balance/recompute.hpp"

#include <algorithm>

namespace preflight::analyzer::balance {

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "none";
    case Recompute::Select:
      return "select";
    case Recompute::Comm:
      return "comm";
    case Recompute::Both:
      return "both";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

const char* activation_json_key(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "memory_activation";
    case Recompute::Select:
      return "memory_select_rec";
    case Recompute::Comm:
      return "memory_select_comm";
    case Recompute::Both:
      return "memory_both_comm_select";
    case Recompute::Full:
      return "memory_recompute";
  }
  return "?";
}

const char* backward_time_json_key(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "backward_time";
    case Recompute::Select:
      return "select_rec_time";
    case Recompute::Comm:
      return "select_comm_time";
    case Recompute::Both:
      return "both_comm_select_time";
    case Recompute::Full:
      return "recompute_time ";
  }
  return "?";
}

const char* backward_coef_json_key(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "backward_coef";
    case Recompute::Select:
      return "select_rec_coef";
    case Recompute::Comm:
      return "select_comm_coef";
    case Recompute::Both:
      return "both_comm_select_coef";
    case Recompute::Full:
      return "recompute_coef";
  }
  return "?";
}

double default_backward_coef(Recompute r) {
  switch (r) {
    case Recompute::None:
      return 0.0;
    case Recompute::Select:
      return 0.04;
    case Recompute::Comm:
      return 0.125;
    case Recompute::Both:
      return 0.165;
    case Recompute::Full:
      return 0.5;
  }
  return 0.0;
}

PerRecompute<int> classes_from_yaml(const YamlRecomputeCounts& y) {
  PerRecompute<int> c{};
  const int full = y.full;
  const int both = std::max(std::min(y.select - full, y.comm - full), 0);
  const int select = std::max(y.select - full - both, 0);
  const int comm = std::max(y.comm - full - both, 0);
  c[static_cast<int>(Recompute::Full)] = full;
  c[static_cast<int>(Recompute::Both)] = both;
  c[static_cast<int>(Recompute::Select)] = select;
  c[static_cast<int>(Recompute::Comm)] = comm;
  c[static_cast<int>(Recompute::None)] = y.layers - full - both - select - comm;
  return c;
}

YamlRecomputeCounts yaml_from_classes(const PerRecompute<int>& c) {
  YamlRecomputeCounts y;
  const int full = c[static_cast<int>(Recompute::Full)];
  const int both = c[static_cast<int>(Recompute::Both)];
  y.layers = c[0] + c[1] + c[2] + c[3] + c[4];
  y.full = full;
  y.select = c[static_cast<int>(Recompute::Select)] + both + full;
  y.comm = c[static_cast<int>(Recompute::Comm)] + both + full;
  return y;
}

}  // namespace preflight::analyzer::balance
