// `preflight analyze --compat get_training_info`: byte-for-byte against the original tool's stdout.
// Cases (arguments + golden file) are in tests/data/megatron_info/cases.json; the goldens were printed by
// Megatron-LM PR 482's get_training_info.py itself (see the README there).  Error cases are arguments on
// which the original exits with an argparse error, fails an assert or crashes (its message is recorded).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace fs = std::filesystem;
using preflight::test::read_file;
using preflight::test::run_preflight;
using preflight::test::shell_quote;

namespace {

fs::path cases_dir() {
  return preflight::test::data_dir() / "megatron_info";
}

const nlohmann::json& cases() {
  static const nlohmann::json c = nlohmann::json::parse(read_file(cases_dir() / "cases.json"));
  return c;
}

/// A GPT-2-style vocab file: a JSON object with n distinct keys (only its entry count matters).
fs::path vocab_file(int n) {
  fs::path p = preflight::test::scratch_dir() / ("vocab" + std::to_string(n) + ".json");
  if (!fs::exists(p)) {
    std::ofstream out(p);
    out << "{";
    for (int k = 0; k < n; ++k) out << (k ? ", " : "") << "\"tok" << k << "\": " << k;
    out << "}";
  }
  return p;
}

/// Replaces @VOCAB:N@ (generated vocab file) and @DATA:name@ (file in tests/data/megatron_info).
std::string substitute(std::string a) {
  for (std::size_t i; (i = a.find("@VOCAB:")) != std::string::npos;) {
    const std::size_t j = a.find('@', i + 1);
    a = a.substr(0, i) + vocab_file(std::stoi(a.substr(i + 7, j - i - 7))).string() + a.substr(j + 1);
  }
  for (std::size_t i; (i = a.find("@DATA:")) != std::string::npos;) {
    const std::size_t j = a.find('@', i + 1);
    a = a.substr(0, i) + (cases_dir() / a.substr(i + 6, j - i - 6)).string() + a.substr(j + 1);
  }
  return a;
}

std::string command(const nlohmann::json& args) {
  std::string cmd = "analyze --compat get_training_info";
  for (const auto& a : args) cmd += " " + shell_quote(substitute(a.get<std::string>()));
  return cmd;
}

/// First differing line, for a readable failure.
std::string first_difference(const std::string& want, const std::string& got) {
  std::size_t line = 1, i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) line += want[i++] == '\n';
  const auto line_at = [](const std::string& s, std::size_t at) {
    const std::size_t b = s.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t start = b == std::string::npos ? 0 : b + 1;
    return s.substr(start, s.find('\n', start) - start);
  };
  return "line " + std::to_string(line) + "\n  want: " + line_at(want, i) + "\n  got:  " + line_at(got, i);
}

std::vector<std::string> names(const char* kind) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < cases()[kind].size(); ++k) out.push_back(std::to_string(k));
  return out;
}

}  // namespace

class CompatGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(CompatGolden, StdoutIsByteIdentical) {
  const auto& c = cases()["goldens"][std::stoul(GetParam())];
  SCOPED_TRACE(c["golden"].get<std::string>());
  const std::string want = read_file(cases_dir() / c["golden"].get<std::string>());
  ASSERT_FALSE(want.empty());
  auto r = run_preflight(command(c["args"]));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_TRUE(r.out == want) << first_difference(want, r.out);
}

INSTANTIATE_TEST_SUITE_P(Goldens, CompatGolden, ::testing::ValuesIn(names("goldens")),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string n = cases()["goldens"][std::stoul(param_info.param)]["golden"];
                           n = n.substr(n.find('/') + 1);
                           n = n.substr(0, n.find('.'));
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

class CompatError : public ::testing::TestWithParam<std::string> {};

TEST_P(CompatError, ExitsTwoNamingWhere) {
  const auto& c = cases()["errors"][std::stoul(GetParam())];
  SCOPED_TRACE(c["original"].get<std::string>());
  auto r = run_preflight(command(c["args"]));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "") << "nothing is printed where the original stops";
  const std::string where = c["where"];
  // where may be a path suffix (vocab file:line:column); the message starts with `preflight: error: `
  EXPECT_EQ(r.err.rfind("preflight: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(where + (where.back() == ':' ? "" : ":")), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

INSTANTIATE_TEST_SUITE_P(Errors, CompatError, ::testing::ValuesIn(names("errors")));

// The copies in tests/data are the reference files in ../shared/data/megatron_info/golden.
TEST(CompatSharedGoldens, InRepoCopiesMatchReferenceData) {
  if (!preflight::test::shared_data_available()) GTEST_SKIP() << preflight::test::shared_data_missing();
  const fs::path shared = preflight::test::shared_data_dir() / "megatron_info" / "golden";
  int compared = 0;
  for (const auto& e : fs::directory_iterator(shared)) {
    if (e.path().extension() != ".txt") continue;
    const fs::path copy = cases_dir() / "golden" / e.path().filename();
    ASSERT_TRUE(fs::exists(copy)) << copy;
    EXPECT_EQ(read_file(copy), read_file(e.path())) << e.path();
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

TEST(CompatCli, UnknownToolIsRejected) {
  auto r = run_preflight("analyze --compat simumax --num-layers 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --compat: unknown tool 'simumax'"), std::string::npos) << r.err;
}

TEST(CompatCli, HelpAbbreviationIsAnErrorNotAHang) {
  // argparse would print its help for "--he"; we do not reproduce that text and say so.
  auto r = run_preflight("analyze --compat get_training_info --he");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --he: "), std::string::npos) << r.err;
}

TEST(CompatCli, VocabPaddingUsesUnderscoreFlagOnly) {
  // 50257 entries padded for tp 2: to a multiple of 128·2 = 256 → 50432 with the underscore spelling;
  // the hyphenated Megatron spelling is ignored by the original (still 128·2), so the table is the same.
  const std::string common =
      "--use-flash-attn --use-distributed-optimizer --swiglu --vocab-file " +
      shell_quote(vocab_file(50257).string()) +
      " --nproc_per_node 2 --tensor-model-parallel-size 2 --num-layers 2 --hidden-size 64"
      " --seq-length 32 --micro-batch-size 1 --global-batch-size 8 --bf16";
  auto a =
      run_preflight("analyze --compat get_training_info " + common + " --make-vocab-size-divisible-by 1");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("w=[50432,64]"), std::string::npos);
  auto b =
      run_preflight("analyze --compat get_training_info " + common + " --make_vocab_size_divisible_by 1");
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("w=[50258,64]"), std::string::npos);  // multiple of 1·2
}

TEST(CompatCli, JsonIsRejectedInCompatMode) {
  auto r = run_preflight("analyze --compat get_training_info --json --num-layers 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("preflight: error: --json: "), std::string::npos) << r.err;
}
