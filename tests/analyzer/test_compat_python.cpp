// CPython 3.11 behaviours that --compat output depends on.  Expected values are what Python 3.11 prints
// (checked with /usr/bin/python3 on Debian 12; each is also derivable by hand from the rule named).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "preflight/analyzer/compat/compat_python.hpp"

using namespace preflight::analyzer::compat;

TEST(CompatPython, FloatReprShortestRoundTrip) {
  EXPECT_EQ(python_float_repr(394.0), "394.0");
  EXPECT_EQ(python_float_repr(0.0), "0.0");
  EXPECT_EQ(python_float_repr(-0.0), "-0.0");
  EXPECT_EQ(python_float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(python_float_repr(1320.0), "1320.0");
  // fixed notation up to 16 integer digits, exponent from 1e16 on; below 1e-4 exponent notation
  EXPECT_EQ(python_float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(python_float_repr(1e16), "1e+16");
  EXPECT_EQ(python_float_repr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(python_float_repr(0.00001), "1e-05");
  EXPECT_EQ(python_float_repr(-1.5e-7), "-1.5e-07");
  EXPECT_EQ(python_float_repr(1e100), "1e+100");
  EXPECT_EQ(python_float_repr(9.5947265625e18), "9.5947265625e+18");
  EXPECT_EQ(python_float_repr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(python_float_repr(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(python_float_repr(std::nan("")), "nan");
}

TEST(CompatPython, RoundIsCorrectlyRoundedHalfEven) {
  EXPECT_EQ(python_round(0.25, 1), 0.2);    // exact tie → even
  EXPECT_EQ(python_round(0.75, 1), 0.8);    // exact tie → even
  EXPECT_EQ(python_round(0.35, 1), 0.3);    // 0.35 is 0.34999999999999997779…
  EXPECT_EQ(python_round(2.675, 2), 2.67);  // 2.67499999999999982236431605997495353221893310546875
  EXPECT_EQ(python_round(12.35, 1), 12.3);  // 12.3499999999999996447…
  EXPECT_EQ(python_round(44.75, 1), 44.8);  // exact tie → even (8)
  EXPECT_EQ(python_round(44.85, 1), 44.9);  // 44.85000000000000142… is above the tie
  EXPECT_TRUE(std::signbit(python_round(-0.04, 1)));
  EXPECT_EQ(python_round(1e300, 1), 1e300);
}

TEST(CompatPython, IntLiteralLikeIntOfStr) {
  EXPECT_EQ(python_int_literal("8"), "8");
  EXPECT_EQ(python_int_literal(" 8\t"), "8");
  EXPECT_EQ(python_int_literal("+4"), "4");
  EXPECT_EQ(python_int_literal("-0"), "0");
  EXPECT_EQ(python_int_literal("08"), "8");
  EXPECT_EQ(python_int_literal("1_000"), "1000");
  EXPECT_EQ(python_int_literal("-12"), "-12");
  EXPECT_EQ(python_int_literal("\xd9\xa3"), "3");  // ARABIC-INDIC DIGIT THREE
  EXPECT_EQ(python_int_literal("\xc2\xa0"
                               "12\xe3\x80\x80"),
            "12");  // NBSP and ideographic space
  EXPECT_EQ(python_int_literal("123456789012345678901234567890"), "123456789012345678901234567890");
  for (const char* bad : {"", " ", "x", "1_", "_1", "1__0", "0x10", "1.0", "1e3", "--1",
                          "\x1c"
                          "1",
                          "4 4", "\xff"})
    EXPECT_FALSE(python_int_literal(bad).has_value()) << "'" << bad << "'";
  EXPECT_TRUE(python_int_literal(std::string(4300, '7')).has_value());
  EXPECT_FALSE(python_int_literal(std::string(4301, '7')).has_value());  // int_max_str_digits
}

TEST(CompatPython, JsonLenLikeLenOfJsonLoad) {
  EXPECT_EQ(python_json_len(R"({"a": 1, "b": [1, 2]})"), 2u);
  EXPECT_EQ(python_json_len(R"({"a": 1, "a": 2, "b": 3})"), 2u);                  // duplicate keys collapse
  EXPECT_EQ(python_json_len(R"({"\u00e9": 1, "é": 2})"), 1u);                     // escape == raw character
  EXPECT_EQ(python_json_len(R"({"\ud83d\ude00": 1, "😀": 2, "\ud800": 3})"), 2u);  // pair joined; lone kept
  EXPECT_EQ(python_json_len(" [1, [2, 3], {\"x\": null}, NaN, -Infinity]\r\n"), 5u);
  EXPECT_EQ(python_json_len(R"("h\u00e9llo\ud83d\ude00")"), 6u);  // code points
  EXPECT_EQ(python_json_len("{}"), 0u);
  const auto type_of = [](std::string_view text) {
    try {
      python_json_len(text);
    } catch (const PythonJsonError& e) {
      return e.type() + "@" + std::to_string(e.offset());
    }
    return std::string("ok");
  };
  EXPECT_EQ(type_of("42"), "TypeError@0");
  EXPECT_EQ(type_of("{\"a\": 1,}"), "JSONDecodeError@8");
  EXPECT_EQ(type_of("[1 2]"), "JSONDecodeError@3");
  EXPECT_EQ(type_of(""), "JSONDecodeError@0");
  EXPECT_EQ(type_of("[01]"), "JSONDecodeError@2");
  EXPECT_EQ(type_of("{} x"), "JSONDecodeError@3");
  EXPECT_EQ(type_of("\xEF\xBB\xBF{}"), "JSONDecodeError@0");
  EXPECT_EQ(type_of("[\"a\tb\"]"), "JSONDecodeError@3");  // raw control character
  EXPECT_EQ(type_of("{\"a\": \"\xff\"}"), "UnicodeDecodeError@7");
  EXPECT_EQ(type_of("[" + std::string(4301, '1') + "]"), "ValueError@1");
  EXPECT_EQ(type_of("[" + std::string(4301, '1') + ".5]"), "ok");
  EXPECT_EQ(type_of(std::string(992, '[') + std::string(992, ']')), "ok");
  EXPECT_EQ(type_of(std::string(993, '[') + std::string(993, ']')), "RecursionError@992");
}
