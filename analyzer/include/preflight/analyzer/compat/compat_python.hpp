#pragma once
/// @file compat_python.hpp
/// The few pieces of CPython 3.11 behaviour that `--compat` output depends on, written so that our
/// text is byte-identical to what a Python tool prints: float repr, round(), int() of a command-line
/// word, and len(json.load(f)).
///
/// Reference: CPython 3.11 (Debian 12's /usr/bin/python3): Objects/floatobject.c (float_repr,
/// double_round), Python/pystrtod.c (format_float_short, 'r' mode), Objects/longobject.c
/// (PyLong_FromString, the 4300-digit int_max_str_digits limit), Modules/_json.c (scanner).
/// Arithmetic on Python ints and floats (arbitrary-precision ints, correctly rounded int/int true
/// division) lives with the renderer in analyzer/src/compat/compat_python_value.hpp.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace preflight::analyzer::compat {

/// A Python exception the original program would raise at this point (it would crash there).
/// `type()` is the Python exception class name ("OverflowError", "JSONDecodeError", …).
class PythonError : public std::runtime_error {
 public:
  PythonError(std::string type, const std::string& message)
      : std::runtime_error(type + ": " + message), type_(std::move(type)) {}
  const std::string& type() const noexcept { return type_; }

 private:
  std::string type_;
};

/// Python's `repr(x)` (= `str(x)`) of a float: the shortest digits that round-trip, fixed notation
/// when the decimal exponent is in [-4, 16), else `d.ddde±XX`; "inf", "-inf", "nan", "-0.0".
/// Examples: 394.0 → "394.0", 1e16 → "1e+16", 1e-05 → "1e-05", 0.1+0.2 → "0.30000000000000004".
std::string python_float_repr(double x);

/// Python's `round(x, ndigits)` for a float: the double nearest to x rounded to `ndigits` decimals,
/// the decimal rounding done on the exact binary value with ties to even (round(0.25, 1) == 0.2,
/// round(2.675, 2) == 2.67).  inf and nan are returned unchanged.  @pre 0 <= ndigits <= 20.
double python_round(double x, int ndigits);

/// Python 3.11's `int(text)` for base 10 as argparse's `type=int` calls it on a command-line word
/// (UTF-8): surrounding whitespace, one sign, digits with single underscores between them, Unicode
/// decimal digits and spaces (Unicode 14).  Returns the value as canonical decimal text ("-42"), or
/// nullopt where Python raises ValueError (including more than 4300 digits).
std::optional<std::string> python_int_literal(std::string_view text);

/// Raised by python_json_len(): the Python exception plus the byte offset where the scanner stopped.
class PythonJsonError : public PythonError {
 public:
  PythonJsonError(std::string type, const std::string& message, std::size_t offset)
      : PythonError(std::move(type), message), offset_(offset) {}
  std::size_t offset() const noexcept { return offset_; }

 private:
  std::size_t offset_;
};

/// `len(json.load(open(path)))` of Python 3.11 over the file's raw bytes: strict UTF-8 (a BOM is an
/// error), the json module's grammar (NaN, Infinity and -Infinity are accepted; integers longer than
/// 4300 digits are not), an object counts its distinct keys, an array its items, a string its code
/// points (a \\uD83D\\uDE00 escape pair is one).
/// @throws PythonJsonError (UnicodeDecodeError, JSONDecodeError, ValueError, RecursionError, or
///         TypeError when the document is a number, true, false or null) with the byte offset.
std::uint64_t python_json_len(std::string_view bytes);

}  // namespace preflight::analyzer::compat
