#pragma once
/// @file units.hpp
/// Byte units and number formatting used in every printed table.
///
/// MiB = 2^20 bytes, GiB = 2^30 bytes.  Megatron prints "MB" meaning MiB
/// (`report_memory` divides by 1024*1024); we keep its labels in compatible
/// output and say MiB/GiB elsewhere.

#include <cstdint>
#include <string>

namespace preflight {

inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// bytes → MiB
inline constexpr double to_mib(double bytes) {
  return bytes / kMiB;
}
/// bytes → GiB
inline constexpr double to_gib(double bytes) {
  return bytes / kGiB;
}

/// Fixed-point formatting with `digits` decimals ("12.35").
std::string fixed(double value, int digits);

/// The same with its sign always written ("+4.1", "-0.3"): signed errors, (predicted − measured) / measured.
std::string signed_fixed(double value, int digits);

/// Integer with thousands separators ("6,642,245,632").
std::string with_commas(std::int64_t value);

/// Human size with a binary unit chosen by magnitude: "512 B", "1.50 KiB", "3.25 GiB".
std::string human_bytes(double bytes);

/// Human count with a decimal suffix: "8.03 B", "175.0 M" (B = 10^9).
std::string human_count(double count);

}  // namespace preflight
