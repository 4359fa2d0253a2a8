// CPython 3.11 number formatting, int() parsing, json length and int/float arithmetic, for --compat.
// See compat_python.hpp and compat_python_value.hpp for the contract and the CPython sources followed.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_set>
#include <vector>

#include "compat_python_value.hpp"
#include "preflight/analyzer/compat/compat_python.hpp"

namespace preflight::analyzer::compat {

namespace {

constexpr std::size_t kMaxStrDigits = 4300;  // sys.int_info.default_max_str_digits (CPython >= 3.11)

// ---------------------------------------------------------------- correctly rounded int -> double

/// The double nearest to m·2^e2 (ties to even), where m >= 0 and `sticky` says the true value lies
/// strictly between m·2^e2 and (m+1)·2^e2.  Callers pass at least two bits beyond the 53 kept.
double round_scaled(mpz_class m, long e2, bool sticky) {
  if (m == 0) return 0.0;
  const long bits = static_cast<long>(mpz_sizeinbase(m.get_mpz_t(), 2));
  const long top = bits - 1 + e2;  // binary exponent of the leading bit
  long prec = 53;
  if (top < -1022) prec = 53 - (-1022 - top);  // subnormal result: fewer bits are kept
  const long drop = bits - prec;
  if (drop > 0) {
    mpz_class kept = m >> static_cast<mp_bitcnt_t>(drop);
    const bool round_bit = mpz_tstbit(m.get_mpz_t(), static_cast<mp_bitcnt_t>(drop - 1)) != 0;
    const bool rest = sticky || mpz_scan1(m.get_mpz_t(), 0) < static_cast<mp_bitcnt_t>(drop - 1);
    if (round_bit && (rest || mpz_odd_p(kept.get_mpz_t()))) kept += 1;
    m = kept;
    e2 += drop;
  }
  return std::ldexp(m.get_d(), static_cast<int>(std::clamp<long>(e2, -100000, 100000)));
}

// ---------------------------------------------------------------- Unicode tables (Unicode 14.0)

// First code point ("0") of every run of ten Unicode decimal digits (category Nd) above ASCII.
constexpr std::array<char32_t, 65> kDecimalZeros = {
    0x660,   0x6f0,   0x7c0,   0x966,   0x9e6,   0xa66,   0xae6,   0xb66,   0xbe6,   0xc66,   0xce6,
    0xd66,   0xde6,   0xe50,   0xed0,   0xf20,   0x1040,  0x1090,  0x17e0,  0x1810,  0x1946,  0x19d0,
    0x1a80,  0x1a90,  0x1b50,  0x1bb0,  0x1c40,  0x1c50,  0xa620,  0xa8d0,  0xa900,  0xa9d0,  0xa9f0,
    0xaa50,  0xabf0,  0xff10,  0x104a0, 0x10d30, 0x11066, 0x110f0, 0x11136, 0x111d0, 0x112f0, 0x11450,
    0x114d0, 0x11650, 0x116c0, 0x11730, 0x118e0, 0x11950, 0x11c50, 0x11d50, 0x11da0, 0x16a60, 0x16ac0,
    0x16b50, 0x1d7ce, 0x1d7d8, 0x1d7e2, 0x1d7ec, 0x1d7f6, 0x1e140, 0x1e2f0, 0x1e950, 0x1fbf0};

// Non-ASCII code points for which str.isspace() is true.
constexpr std::array<char32_t, 19> kUnicodeSpaces = {0x85,   0xa0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
                                                     0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a,
                                                     0x2028, 0x2029, 0x202f, 0x205f, 0x3000};

int unicode_decimal(char32_t c) {
  for (char32_t z : kDecimalZeros)
    if (c >= z && c <= z + 9) return static_cast<int>(c - z);
  return -1;
}

bool unicode_space(char32_t c) {
  return std::find(kUnicodeSpaces.begin(), kUnicodeSpaces.end(), c) != kUnicodeSpaces.end();
}

/// Strict UTF-8 decoding of one code point at s[i] (CPython's "strict" utf-8 codec: no overlongs, no
/// surrogates, nothing above U+10FFFF).  Returns false on malformed input.
bool decode_utf8(std::string_view s, std::size_t& i, char32_t& out) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c0 = b(i);
  if (c0 < 0x80) {
    out = c0;
    ++i;
    return true;
  }
  int n = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (c0 >= 0xc2 && c0 <= 0xdf) {
    n = 1, cp = c0 & 0x1f, min = 0x80;
  } else if (c0 >= 0xe0 && c0 <= 0xef) {
    n = 2, cp = c0 & 0x0f, min = 0x800;
  } else if (c0 >= 0xf0 && c0 <= 0xf4) {
    n = 3, cp = c0 & 0x07, min = 0x10000;
  } else {
    return false;
  }
  if (i + static_cast<std::size_t>(n) >= s.size()) return false;  // truncated sequence
  for (int k = 1; k <= n; ++k) {
    const unsigned char c = b(i + static_cast<std::size_t>(k));
    if ((c & 0xc0) != 0x80) return false;
    cp = (cp << 6) | (c & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
  out = cp;
  i += static_cast<std::size_t>(n) + 1;
  return true;
}

/// Appends a code point as UTF-8; lone surrogates (from JSON \\u escapes) as their 3-byte form.
void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xc0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xe0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (c & 0x3f));
  }
}

// ---------------------------------------------------------------- json.load, counting only

/// Python's C json scanner (Modules/_json.c, strict=True) over text already known to be UTF-8.
class JsonLen {
 public:
  explicit JsonLen(std::string_view s) : s_(s) {}

  std::uint64_t run() {
    if (s_.substr(0, 3) == "\xEF\xBB\xBF") fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0);
    skip_ws();
    std::uint64_t n = value(true);
    skip_ws();
    if (i_ != s_.size()) fail("Extra data", i_);
    return n;
  }

 private:
  // Nesting at which CPython 3.11 raises RecursionError inside get_training_info.py's json.load
  // (the recursion limit of 1000 less the Python frames already on the stack); measured.
  static constexpr int kMaxDepth = 992;

  [[noreturn]] void fail(const std::string& msg, std::size_t at) {
    throw PythonJsonError("JSONDecodeError", msg, at);
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  bool literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  // Parses a value at i_.  At top level returns len() of it; elsewhere the return is unused.
  std::uint64_t value(bool top) {
    if (i_ >= s_.size()) fail("Expecting value", i_);
    const char c = s_[i_];
    if (c == '"') {
      const std::uint64_t n = string(nullptr);
      return n;
    }
    if (c == '{' || c == '[') {
      if (++depth_ > kMaxDepth)
        throw PythonJsonError("RecursionError",
                              "maximum recursion depth exceeded while decoding a JSON " +
                                  std::string(c == '{' ? "object" : "array"),
                              i_);
      const std::uint64_t n = c == '{' ? object(top) : array();
      --depth_;
      return n;
    }
    if (literal("null") || literal("true") || literal("false") || literal("NaN") || literal("Infinity") ||
        literal("-Infinity")) {
      scalar_top(top);
      return 0;
    }
    number();
    scalar_top(top);
    return 0;
  }

  void scalar_top(bool top) {
    if (!top) return;
    // len() of a number/bool/None: the document must still be complete for json.load to return.
    skip_ws();
    if (i_ != s_.size()) fail("Extra data", i_);
    throw PythonJsonError("TypeError",
                          "the document is a single number, true, false or null, which has no len()", 0);
  }

  void number() {
    const std::size_t start = i_;
    std::size_t j = i_;
    if (j < s_.size() && s_[j] == '-') ++j;
    const auto digit = [&](std::size_t k) { return k < s_.size() && s_[k] >= '0' && s_[k] <= '9'; };
    if (!digit(j)) fail("Expecting value", start);
    std::size_t int_digits = 0;
    if (s_[j] == '0') {
      ++j, ++int_digits;
    } else {
      while (digit(j)) ++j, ++int_digits;
    }
    bool is_float = false;
    if (j < s_.size() && s_[j] == '.' && digit(j + 1)) {
      is_float = true;
      ++j;
      while (digit(j)) ++j;
    }
    if (j < s_.size() && (s_[j] == 'e' || s_[j] == 'E')) {
      std::size_t k = j + 1;
      if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
      if (digit(k)) {
        while (digit(k)) ++k;
        is_float = true;
        j = k;
      }
    }
    if (!is_float && int_digits > kMaxStrDigits)
      throw PythonJsonError("ValueError", "Exceeds the limit (4300 digits) for integer string conversion",
                            start);
    i_ = j;
  }

  // Parses a string starting at the opening quote; decodes it into *key when given.  Returns its length
  // in code points.
  std::uint64_t string(std::string* key) {
    const std::size_t open = i_++;
    std::uint64_t cps = 0;
    const auto hex4 = [&](std::size_t at, char32_t& out) {
      if (at + 4 > s_.size()) return false;
      out = 0;
      for (std::size_t k = at; k < at + 4; ++k) {
        const char h = s_[k];
        int v = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (v < 0) return false;
        out = (out << 4) | static_cast<char32_t>(v);
      }
      return true;
    };
    while (true) {
      if (i_ >= s_.size()) fail("Unterminated string starting at", open);
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return cps;
      }
      if (c < 0x20) fail("Invalid control character at", i_);
      if (c != '\\') {
        // Raw character (valid UTF-8 was checked before): copy one code point.
        std::size_t j = i_ + 1;
        while (j < s_.size() && (static_cast<unsigned char>(s_[j]) & 0xc0) == 0x80) ++j;
        if (key) key->append(s_.substr(i_, j - i_));
        i_ = j;
        ++cps;
        continue;
      }
      if (i_ + 1 >= s_.size()) fail("Unterminated string starting at", open);
      const char e = s_[i_ + 1];
      char32_t cp = 0;
      switch (e) {
        case '"':
          cp = '"';
          break;
        case '\\':
          cp = '\\';
          break;
        case '/':
          cp = '/';
          break;
        case 'b':
          cp = '\b';
          break;
        case 'f':
          cp = '\f';
          break;
        case 'n':
          cp = '\n';
          break;
        case 'r':
          cp = '\r';
          break;
        case 't':
          cp = '\t';
          break;
        case 'u': {
          if (!hex4(i_ + 2, cp)) fail("Invalid \\uXXXX escape", i_ + 1);
          std::size_t next = i_ + 6;
          if (cp >= 0xd800 && cp <= 0xdbff && next + 6 <= s_.size() && s_[next] == '\\' &&
              s_[next + 1] == 'u') {
            char32_t low = 0;
            if (!hex4(next + 2, low)) fail("Invalid \\uXXXX escape", next + 1);
            if (low >= 0xdc00 && low <= 0xdfff) {
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
              next += 6;
            }
          }
          if (key) append_utf8(*key, cp);
          ++cps;
          i_ = next;
          continue;
        }
        default:
          fail("Invalid \\escape", i_);
      }
      if (key) append_utf8(*key, cp);
      ++cps;
      i_ += 2;
    }
  }

  std::uint64_t object(bool top) {
    ++i_;  // '{'
    std::unordered_set<std::string> keys;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == '}') {
      ++i_;
      return 0;
    }
    while (true) {
      if (i_ >= s_.size() || s_[i_] != '"') fail("Expecting property name enclosed in double quotes", i_);
      std::string key;
      string(top ? &key : nullptr);
      if (top) keys.insert(std::move(key));
      skip_ws();
      if (i_ >= s_.size() || s_[i_] != ':') fail("Expecting ':' delimiter", i_);
      ++i_;
      skip_ws();
      value(false);
      skip_ws();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return keys.size();
      }
      if (i_ >= s_.size() || s_[i_] != ',') fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
    }
  }

  std::uint64_t array() {
    ++i_;  // '['
    std::uint64_t n = 0;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == ']') {
      ++i_;
      return 0;
    }
    while (true) {
      value(false);
      ++n;
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return n;
      }
      if (i_ >= s_.size() || s_[i_] != ',') fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

// ---------------------------------------------------------------- public helpers

std::string python_float_repr(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  std::string out;
  if (sci[0] == '-') {
    out = "-";
    sci.erase(0, 1);
  }
  const std::size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::atoi(sci.c_str() + e + 1);
  const int decpt = exp10 + 1;  // value = 0.DIGITS × 10^decpt
  const int nd = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
    } else if (decpt >= nd) {
      out += digits + std::string(static_cast<std::size_t>(decpt - nd), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<std::size_t>(decpt)) + "." +
             digits.substr(static_cast<std::size_t>(decpt));
    }
  } else {
    out += digits.substr(0, 1);
    if (nd > 1) out += "." + digits.substr(1);
    const int ae = std::abs(exp10);
    out += exp10 < 0 ? "e-" : "e+";
    if (ae < 10) out += "0";
    out += std::to_string(ae);
  }
  return out;
}

double python_round(double x, int ndigits) {
  if (!std::isfinite(x)) return x;
  // glibc printf rounds the exact binary value, ties to even, as CPython's _Py_dg_dtoa mode 3 does.
  const int n = std::snprintf(nullptr, 0, "%.*f", ndigits, x);
  std::vector<char> buf(static_cast<std::size_t>(n) + 1);
  std::snprintf(buf.data(), buf.size(), "%.*f", ndigits, x);
  return std::strtod(buf.data(), nullptr);
}

std::optional<std::string> python_int_literal(std::string_view text) {
  // _PyUnicode_TransformDecimalAndSpaceToASCII: non-ASCII spaces → ' ', non-ASCII decimals → '0'..'9'.
  std::string ascii;
  for (std::size_t i = 0; i < text.size();) {
    char32_t c = 0;
    if (!decode_utf8(text, i, c)) return std::nullopt;  // surrogate-escaped bytes are not digits
    if (c < 127) {
      ascii += static_cast<char>(c);
    } else if (unicode_space(c)) {
      ascii += ' ';
    } else if (int d = unicode_decimal(c); d >= 0) {
      ascii += static_cast<char>('0' + d);
    } else {
      return std::nullopt;
    }
  }
  // PyLong_FromString(base=10)
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  std::size_t i = 0;
  while (i < ascii.size() && space(ascii[i])) ++i;
  bool negative = false;
  if (i < ascii.size() && (ascii[i] == '+' || ascii[i] == '-')) negative = ascii[i++] == '-';
  std::string digits;
  char prev = 0;
  if (i < ascii.size() && ascii[i] == '_') return std::nullopt;
  for (; i < ascii.size() && ((ascii[i] >= '0' && ascii[i] <= '9') || ascii[i] == '_'); ++i) {
    if (ascii[i] == '_' && prev == '_') return std::nullopt;
    if (ascii[i] != '_') digits += ascii[i];
    prev = ascii[i];
  }
  if (prev == '_' || digits.empty()) return std::nullopt;
  while (i < ascii.size() && space(ascii[i])) ++i;
  if (i != ascii.size()) return std::nullopt;
  if (digits.size() > kMaxStrDigits) return std::nullopt;
  const std::size_t nz = digits.find_first_not_of('0');
  if (nz == std::string::npos) return std::string("0");
  return (negative ? "-" : "") + digits.substr(nz);
}

std::uint64_t python_json_len(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t at = i;
    char32_t c = 0;
    if (!decode_utf8(bytes, i, c))
      throw PythonJsonError("UnicodeDecodeError", "'utf-8' codec can't decode the byte at this position", at);
  }
  return JsonLen(bytes).run();
}

// ---------------------------------------------------------------- Python int / float arithmetic

double int_to_float(const mpz_class& z) {
  const double r = round_scaled(abs(z), 0, false);
  if (std::isinf(r)) throw PythonError("OverflowError", "int too large to convert to float");
  return z < 0 ? -r : r;
}

double int_true_divide(const mpz_class& a, const mpz_class& b) {
  if (b == 0) throw PythonError("ZeroDivisionError", "division by zero");
  const bool negate = (a < 0) != (b < 0);
  const mpz_class na = abs(a);
  const mpz_class nb = abs(b);
  if (na == 0) return negate ? -0.0 : 0.0;
  const long bits_a = static_cast<long>(mpz_sizeinbase(na.get_mpz_t(), 2));
  const long bits_b = static_cast<long>(mpz_sizeinbase(nb.get_mpz_t(), 2));
  const long k = 56 - bits_a + bits_b;  // the quotient na·2^k / nb then has at least 55 bits
  mpz_class num = na, den = nb;
  if (k >= 0)
    num <<= static_cast<mp_bitcnt_t>(k);
  else
    den <<= static_cast<mp_bitcnt_t>(-k);
  mpz_class q, r;
  mpz_tdiv_qr(q.get_mpz_t(), r.get_mpz_t(), num.get_mpz_t(), den.get_mpz_t());
  const double v = round_scaled(q, -k, r != 0);
  if (std::isinf(v)) throw PythonError("OverflowError", "integer division result too large for a float");
  return negate ? -v : v;
}

mpz_class float_to_int(double x) {
  if (std::isnan(x)) throw PythonError("ValueError", "cannot convert float NaN to integer");
  if (std::isinf(x)) throw PythonError("OverflowError", "cannot convert float infinity to integer");
  return mpz_class(std::trunc(x));
}

std::string int_str(const mpz_class& z, bool thousands) {
  std::string s = z.get_str(10);
  const bool neg = !s.empty() && s[0] == '-';
  if (s.size() - (neg ? 1 : 0) > kMaxStrDigits)
    throw PythonError("ValueError", "Exceeds the limit (4300 digits) for integer string conversion");
  if (!thousands) return s;
  std::string digits = neg ? s.substr(1) : s;
  std::string out;
  const std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (neg ? "-" : "") + out;
}

PyNum operator+(const PyNum& a, const PyNum& b) {
  if (a.is_int() && b.is_int()) return PyNum(mpz_class(a.as_int() + b.as_int()));
  return PyNum(a.as_float() + b.as_float());
}

PyNum operator-(const PyNum& a, const PyNum& b) {
  if (a.is_int() && b.is_int()) return PyNum(mpz_class(a.as_int() - b.as_int()));
  return PyNum(a.as_float() - b.as_float());
}

PyNum operator*(const PyNum& a, const PyNum& b) {
  if (a.is_int() && b.is_int()) return PyNum(mpz_class(a.as_int() * b.as_int()));
  return PyNum(a.as_float() * b.as_float());
}

PyNum operator/(const PyNum& a, const PyNum& b) {
  if (a.is_int() && b.is_int()) return PyNum(int_true_divide(a.as_int(), b.as_int()));
  const double x = a.as_float();
  const double y = b.as_float();
  if (y == 0) throw PythonError("ZeroDivisionError", "float division by zero");
  return PyNum(x / y);
}

namespace {
void require_ints(const PyNum& a, const PyNum& b) {
  if (!a.is_int() || !b.is_int())
    throw std::logic_error("compat: floor division of floats is not used by get_training_info.py");
  if (b.as_int() == 0) throw PythonError("ZeroDivisionError", "integer division or modulo by zero");
}
}  // namespace

PyNum floordiv(const PyNum& a, const PyNum& b) {
  require_ints(a, b);
  mpz_class q;
  mpz_fdiv_q(q.get_mpz_t(), a.as_int().get_mpz_t(), b.as_int().get_mpz_t());
  return PyNum(q);
}

PyNum mod(const PyNum& a, const PyNum& b) {
  require_ints(a, b);
  mpz_class r;
  mpz_fdiv_r(r.get_mpz_t(), a.as_int().get_mpz_t(), b.as_int().get_mpz_t());
  return PyNum(r);
}

bool operator==(const PyNum& a, const PyNum& b) {
  if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
  throw std::logic_error("compat: float comparison is not used by get_training_info.py");
}

bool operator<(const PyNum& a, const PyNum& b) {
  if (a.is_int() && b.is_int()) return a.as_int() < b.as_int();
  throw std::logic_error("compat: float comparison is not used by get_training_info.py");
}

std::string py_str(const PyNum& x) {
  return x.is_int() ? int_str(x.as_int()) : python_float_repr(x.as_float());
}

PyNum py_round(const PyNum& x, int ndigits) {
  if (x.is_int()) return x;
  return PyNum(python_round(x.as_float(), ndigits));
}

PyNum py_int(const PyNum& x) {
  return x.is_int() ? x : PyNum(float_to_int(x.as_float()));
}

}  // namespace preflight::analyzer::compat
