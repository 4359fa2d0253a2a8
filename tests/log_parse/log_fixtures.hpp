#pragma once
// Helpers for the log_parse tests: temporary directories and MindSpore-like dryrun logs written by the test.
#include <string>

#include "test_support.hpp"

namespace preflight::test {

/// `n` lines of MindSpore/MindFormers-like chatter (no memory keys), numbered from `from`.
inline std::string filler_lines(int n, int from = 0) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    int k = from + i;
    if (k % 3 == 0)
      s += "[WARNING] ME(3012345:281473166417936,MainProcess):2025-03-12-10:21:45.123.456 "
           "[mindspore/ccsrc/pipeline/jit/ps/action.cc:" +
           std::to_string(k) + "] step " + std::to_string(k) + "\n";
    else if (k % 3 == 1)
      s += "2025-03-12 10:21:45,123 - mindformers[mindformers/core/callback.py:" + std::to_string(k) +
           "] - INFO - compile graph for cell " + std::to_string(k) + "\n";
    else
      s += "[INFO] PRE_ACT(3012345,ffff9c8e3020,python):2025-03-12-10:21:46.000.001 some pass " +
           std::to_string(k) + " memory reuse\n";
  }
  return s;
}

/// MindSpore's DevMemStatistics block, exactly as printed (5 lines).
inline std::string memory_block(long used_peak, long actual_peak, long device = 62432, long used = 59392,
                                const std::string& spelling = "MOC") {
  return "Device " + spelling + " memory size: " + std::to_string(device) + "M\n" +
         "MindSpore Used memory size: " + std::to_string(used) + "M\n" +
         "MindSpore memory base address: 0\n" +
         "Used peak memory usage (without fragments): " + std::to_string(used_peak) + "M\n" +
         "Actual peak memory usage (with fragments): " + std::to_string(actual_peak) + "M\n";
}

}  // namespace preflight::test
