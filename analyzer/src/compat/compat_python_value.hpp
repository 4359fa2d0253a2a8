#pragma once
// Private to the analyzer: a Python 3.11 number (int or float) with Python's arithmetic, so that a
// formula written here as `v * h / t + s * h` gives the very double (or int) the Python tool computes.
//
//  - int: arbitrary precision (GMP).  int + - * int stays exact; int // and % floor (Objects/longobject.c).
//  - int / int: true division, correctly rounded from the exact quotient (long_true_divide), so it is
//    not double(a) / double(b) once a or b exceeds 2^53; OverflowError when the result exceeds a double.
//  - int op float: the int is first converted with round-half-even (PyLong_AsDouble), OverflowError
//    when it does not fit; float op float is IEEE double arithmetic (compile with -ffp-contract=off).
//  - ZeroDivisionError for / // % by zero.
// Errors are thrown as compat::PythonError carrying the Python exception type.

#include <gmpxx.h>

#include <concepts>
#include <string>
#include <variant>

#include "preflight/analyzer/compat/compat_python.hpp"

namespace preflight::analyzer::compat {

/// PyLong_AsDouble: round-half-even; OverflowError past DBL_MAX.
double int_to_float(const mpz_class& z);
/// long_true_divide: correctly rounded a / b; ZeroDivisionError, OverflowError.
double int_true_divide(const mpz_class& a, const mpz_class& b);
/// int(x) of a float: truncation toward zero; ValueError for nan, OverflowError for inf.
mpz_class float_to_int(double x);
/// str(i) / format(i, ',') of an int; ValueError past 4300 digits (sys.int_info.default_max_str_digits).
std::string int_str(const mpz_class& z, bool thousands = false);

class PyNum {
 public:
  template <std::integral T>
  PyNum(T v) : v_(mpz_class(static_cast<long>(v))) {}  // NOLINT: implicit, like a Python literal
  PyNum(double v) : v_(v) {}                           // NOLINT
  PyNum(mpz_class v) : v_(std::move(v)) {}             // NOLINT

  bool is_int() const { return std::holds_alternative<mpz_class>(v_); }
  /// @pre is_int()
  const mpz_class& as_int() const { return std::get<mpz_class>(v_); }
  /// float(x)
  double as_float() const { return is_int() ? int_to_float(as_int()) : std::get<double>(v_); }

  friend PyNum operator+(const PyNum& a, const PyNum& b);
  friend PyNum operator-(const PyNum& a, const PyNum& b);
  friend PyNum operator*(const PyNum& a, const PyNum& b);
  /// true division `/`
  friend PyNum operator/(const PyNum& a, const PyNum& b);
  /// `a // b` and `a % b` (ints only here; the tool never floor-divides a float)
  friend PyNum floordiv(const PyNum& a, const PyNum& b);
  friend PyNum mod(const PyNum& a, const PyNum& b);
  /// numeric ==, <, <= between ints
  friend bool operator==(const PyNum& a, const PyNum& b);
  friend bool operator<(const PyNum& a, const PyNum& b);
  friend bool operator<=(const PyNum& a, const PyNum& b) { return !(b < a); }

 private:
  std::variant<mpz_class, double> v_;
};

/// str(x)
std::string py_str(const PyNum& x);
/// round(x, ndigits): float → float; int → int (unchanged for ndigits >= 0)
PyNum py_round(const PyNum& x, int ndigits);
/// int(x)
PyNum py_int(const PyNum& x);

}  // namespace preflight::analyzer::compat
