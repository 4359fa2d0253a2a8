#pragma once
// Private to wrap: small word helpers shared by launch recognition (launch.cpp) and the launcher table and
// world-size readers (launchers.cpp).
#include <optional>
#include <string>
#include <string_view>

namespace preflight::wrap::detail {

/// A positive whole number of at most 6 digits, else nullopt (a variable, a range, a placeholder, a typo): a
/// job header's or sbatch option's size.
std::optional<int> positive_count(std::string_view s);
/// Last path component ("pretrain_gpt.py" of "/a/b/pretrain_gpt.py/").
std::string_view basename_of(std::string_view path);
/// python, python3, python3.11 …
bool is_python(std::string_view name);
/// NAME=value
bool is_assignment(std::string_view w);
/// Commands that run the command after their options (profilers, environment and container runners:
/// nsys, uv, numactl, apptainer, singularity, …).
bool is_runner(std::string_view name);
/// Flags compared with '_' read as '-'.
std::string normalize_flag(std::string_view f);

}  // namespace preflight::wrap::detail
