#include "preflight/common/units.hpp"

#include <cmath>
#include <cstdio>

namespace preflight {

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string signed_fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.*f", digits, value);
  return buf;
}

std::string with_commas(std::int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  return u == 0 ? fixed(v, 0) + " B" : fixed(v, 2) + " " + units[u];
}

std::string human_count(double count) {
  const char* units[] = {"", " K", " M", " B", " T"};
  int u = 0;
  double v = count;
  while (std::fabs(v) >= 1000.0 && u < 4) {
    v /= 1000.0;
    ++u;
  }
  return u == 0 ? fixed(v, 0) : fixed(v, 2) + units[u];
}

}  // namespace preflight
