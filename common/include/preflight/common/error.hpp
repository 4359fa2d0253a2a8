#pragma once
/// @file error.hpp
/// The one error type for bad user input, shared by every component.
///
/// Convention (DESIGN.md "Command line"): a bad input is reported as
/// `preflight: error: <where>: <what>` and the process exits with status 2.
/// `<where>` names the file and line (`train.log:1234`), the byte offset
/// (`trace.json@5120`), the command-line flag (`--num-layers`) or the JSON/YAML
/// field (`config.json: num_attention_heads`) that is wrong.

#include <cstdint>
#include <stdexcept>
#include <string>

namespace preflight {

/// Exit statuses of the `preflight` binary.
enum ExitCode : int {
  kExitOk = 0,          ///< the answer is "fits" / "checks passed"
  kExitDoesNotFit = 1,  ///< the answer is "does not fit" / "checks failed"
  kExitBadInput = 2,    ///< the input could not be used; an InputError was printed
};

/// Thrown for any input the user must fix: malformed files, inconsistent
/// parallel sizes, missing ranks.  Never thrown for internal bugs.
class InputError : public std::runtime_error {
 public:
  /// @param where  location of the problem (file:line, flag or field); may be empty
  /// @param what   what is wrong, as one sentence without a trailing period
  InputError(std::string where, std::string what);

  /// Location part of the message (may be empty).
  const std::string& where() const noexcept { return where_; }
  /// Description part of the message.
  const std::string& detail() const noexcept { return detail_; }

 private:
  std::string where_;
  std::string detail_;
};

/// Builds a `file:line` location string.
std::string location(const std::string& file, std::int64_t line);

}  // namespace preflight
