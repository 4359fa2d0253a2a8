// The bash reader: commands and word spans, arrays, here-documents, compound commands, quoting helpers.
#include <gtest/gtest.h>

#include <random>

#include "preflight/common/error.hpp"
#include "preflight/wrap/shell_lexer.hpp"

using namespace preflight::wrap;

namespace {

std::vector<std::string> words_of(const SimpleCommand& c) {
  std::vector<std::string> w;
  for (const auto& x : c.words) w.push_back(x.raw);
  return w;
}

/// The commands that have words, as lists of raw words.
std::vector<std::vector<std::string>> commands(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  for (const auto& c : parse_shell(text).commands)
    if (!c.words.empty()) out.push_back(words_of(c));
  return out;
}

}  // namespace

TEST(ShellLexer, SpansPointAtTheWordsAsWritten) {
  const std::string s = "A=1\nfoo bar \\\n  \"b a z\" # comment\n";
  ShellScript sh = parse_shell(s);
  ASSERT_EQ(sh.commands.size(), 2u);
  ASSERT_EQ(sh.commands[0].assignments.size(), 1u);
  EXPECT_EQ(sh.commands[0].assignments[0].raw, "A=1");
  const auto& w = sh.commands[1].words;
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2].raw, "\"b a z\"");
  EXPECT_EQ(s.substr(w[2].begin, w[2].end - w[2].begin), "\"b a z\"");
  EXPECT_EQ(line_of(s, w[0].begin), 2u);
  EXPECT_EQ(line_of(s, w[2].begin), 3u);  // continuation: same command, next line
  EXPECT_TRUE(sh.complete);
}

TEST(ShellLexer, ArrayAssignmentSpansLinesWithComments) {
  const std::string s =
      "ARGS=(\n  --a 1   # the a flag (with parens)\n  # --b 2\n  \"--c 3\"\n)\ntorchrun ${ARGS[@]} x.py\n";
  ShellScript sh = parse_shell(s);
  ASSERT_EQ(sh.commands.size(), 2u);
  ASSERT_EQ(sh.commands[0].assignments.size(), 1u);
  EXPECT_EQ(sh.commands[0].assignments[0].raw.back(), ')');
  EXPECT_EQ(line_of(s, sh.commands[0].assignments[0].end), 5u);
  EXPECT_EQ(words_of(sh.commands[1]), (std::vector<std::string>{"torchrun", "${ARGS[@]}", "x.py"}));
}

TEST(ShellLexer, HereDocumentBodiesAreNotCommands) {
  const std::string s =
      "cat <<EOF > notes.txt\ntorchrun --nproc_per_node 8 pretrain_gpt.py\nEOF\n"
      "cat <<-'END'\n\ttorchrun a.py\n\tEND\necho done\n";
  auto cmds = commands(s);
  ASSERT_EQ(cmds.size(), 3u);
  EXPECT_EQ(cmds[0], (std::vector<std::string>{"cat"}));
  EXPECT_EQ(cmds[1], (std::vector<std::string>{"cat"}));
  EXPECT_EQ(cmds[2], (std::vector<std::string>{"echo", "done"}));
  ShellScript sh = parse_shell(s);
  ASSERT_EQ(sh.heredoc_bodies.size(), 2u);
  EXPECT_EQ(s.substr(sh.heredoc_bodies[0].first, sh.heredoc_bodies[0].second - sh.heredoc_bodies[0].first),
            "torchrun --nproc_per_node 8 pretrain_gpt.py\n");
  EXPECT_EQ(sh.commands[0].redirections.size(), 4u);  // << EOF > notes.txt
}

TEST(ShellLexer, QuotesAndSubstitutionsStayInOneWord) {
  auto cmds = commands("echo \"a;b\" 'c|d' $(x; y) `z w` ${V:-\"q r\"} $((1 + 2)) $'t\\'u'\n");
  ASSERT_EQ(cmds.size(), 1u);
  EXPECT_EQ(cmds[0], (std::vector<std::string>{"echo", "\"a;b\"", "'c|d'", "$(x; y)", "`z w`",
                                               "${V:-\"q r\"}", "$((1 + 2))", "$'t\\'u'"}));
}

TEST(ShellLexer, CompoundCommandsExposeTheirSimpleCommands) {
  auto cmds = commands(
      "if [ -f x ]; then torchrun a.py; else python b.py; fi\n"
      "for i in 1 2; do echo $i; done\n"
      "case $MODE in\n  train) msrun c.py ;;\n  a|b) deepspeed d.py ;;\nesac\n"
      "launch() { torchrun \"$@\"; }\n"
      "function other { nohup python3 e.py & }\n"
      "[[ $a < $b ]] && echo lt || echo ge\n"
      "( cd sub && exec torchrun f.py ) | tee log 2>&1\n"
      "while read -r l; do :; done < file\n");
  std::vector<std::vector<std::string>> want = {{"[", "-f", "x", "]"},
                                                {"torchrun", "a.py"},
                                                {"python", "b.py"},
                                                {"echo", "$i"},
                                                {"msrun", "c.py"},
                                                {"deepspeed", "d.py"},
                                                {"torchrun", "\"$@\""},
                                                {"nohup", "python3", "e.py"},
                                                {"echo", "lt"},
                                                {"echo", "ge"},
                                                {"cd", "sub"},
                                                {"exec", "torchrun", "f.py"},
                                                {"tee", "log"},
                                                {"read", "-r", "l"},
                                                {":"}};
  EXPECT_EQ(cmds, want);
}

TEST(ShellLexer, RedirectionsAndFdPrefixesAreNotWords) {
  ShellScript sh = parse_shell("torchrun x.py --a 1 > out.log 2>&1 &> all.log 1>>more\n");
  ASSERT_EQ(sh.commands.size(), 1u);
  EXPECT_EQ(words_of(sh.commands[0]), (std::vector<std::string>{"torchrun", "x.py", "--a", "1"}));
  EXPECT_EQ(sh.commands[0].redirections.size(), 8u);
}

TEST(ShellLexer, UnterminatedInputIsReadNotRejected) {
  ShellScript a = parse_shell("echo \"never closed\ntorchrun x.py\n");
  EXPECT_FALSE(a.complete);
  ShellScript b = parse_shell("cat <<EOF\nbody without end\n");
  EXPECT_FALSE(b.complete);
  ShellScript c = parse_shell("X=$(echo (\n");
  EXPECT_FALSE(c.complete);
}

TEST(ShellLexer, NeverCrashesOnArbitraryBytes) {
  // Deterministic pseudo-random scripts built from shell metacharacters: any input must give a result.
  const std::string alphabet = "ab =-$(){}[]\"'`\\|&;<>#\n\t*?!@~0123456789EOF";
  std::mt19937 rng(12345);
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    int len = static_cast<int>(rng() % 60);
    for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
    ShellScript sh = parse_shell(s);
    for (const auto& c : sh.commands)
      for (const auto& w : c.words) {
        ASSERT_LE(w.begin, w.end);
        ASSERT_LE(w.end, s.size());
        ASSERT_EQ(s.substr(w.begin, w.end - w.begin), w.raw);
      }
  }
}

TEST(ShellWords, LiteralValue) {
  EXPECT_EQ(literal_value("pretrain_gpt.py"), "pretrain_gpt.py");
  EXPECT_EQ(literal_value("\"pretrain_gpt.py\""), "pretrain_gpt.py");
  EXPECT_EQ(literal_value("'a b'\"c\"d\\ e"), "a bcd e");
  EXPECT_EQ(literal_value("\"a\\\"b\\$c\""), "a\"b$c");
  EXPECT_EQ(literal_value("$X"), std::nullopt);
  EXPECT_EQ(literal_value("\"${X}/a.py\""), std::nullopt);
  EXPECT_EQ(literal_value("`pwd`/a.py"), std::nullopt);
  EXPECT_EQ(literal_value("*.py"), std::nullopt);
  EXPECT_EQ(literal_value("~/a.py"), std::nullopt);
  EXPECT_EQ(literal_value("'unterminated"), std::nullopt);
}

TEST(ShellWords, ParameterRef) {
  auto a = parameter_ref("\"$PRETRAIN_SCRIPT_PATH\"");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->name, "PRETRAIN_SCRIPT_PATH");
  EXPECT_TRUE(a->quoted);
  auto b = parameter_ref("${1:-\"checkpoints/x\"}");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->name, "1");
  EXPECT_EQ(b->default_raw, "\"checkpoints/x\"");
  EXPECT_FALSE(b->quoted);
  EXPECT_EQ(parameter_ref("${ARGS[@]}"), std::nullopt);
  EXPECT_EQ(parameter_ref("$A$B"), std::nullopt);
  EXPECT_EQ(parameter_ref("x$A"), std::nullopt);
}

TEST(ShellWords, SplitAsEvalWould) {
  // MindFormers' README: an escaped quote inside the command string handed to msrun_launcher.sh.
  auto w = split_shell_words(
      "run_mindformer.py \\\n --run_mode predict \\\n --predict_data \"I love Beijing, because\" 'a b'\\ c",
      "t");
  EXPECT_EQ(w, (std::vector<std::string>{"run_mindformer.py", "--run_mode", "predict", "--predict_data",
                                         "I love Beijing, because", "a b c"}));
  EXPECT_THROW(split_shell_words("a 'b", "t"), preflight::InputError);
  EXPECT_THROW(split_shell_words("a \"b", "t"), preflight::InputError);
}

TEST(ShellWords, QuoteReadsBackExactly) {
  for (std::string w : {"plain", "a b", "it's", "$HOME", "", "tab\there", "--flag=x y", "a\"b\\c"}) {
    std::string q = shell_quote(w);
    auto back = split_shell_words(q, "t");
    if (w.empty()) {
      EXPECT_EQ(q, "''");
      continue;
    }
    ASSERT_EQ(back.size(), 1u) << q;
    EXPECT_EQ(back[0], w);
  }
  EXPECT_EQ(shell_quote("pretrain_gpt.py"), "pretrain_gpt.py");
}

// The `set` commands wrap and run switch off for an analysis: errexit / nounset in any spelling — a cluster
// with an `o` taking the next word (`set -euo pipefail`, which had been missed: its 'o' was not among the
// letters read) — and not a `set` that only sets other options or positional parameters.
TEST(ShellLexer, SetCommandsThatTurnOnErrexitOrNounset) {
  auto turns_on = [](const std::string& text) {
    const ShellScript sh = parse_shell(text);
    return !sh.commands.empty() && turns_on_errexit_or_nounset(sh.commands.front());
  };
  EXPECT_TRUE(turns_on("set -e"));
  EXPECT_TRUE(turns_on("set -euo pipefail"));
  EXPECT_TRUE(turns_on("set -x -e"));
  EXPECT_TRUE(turns_on("set -o nounset"));
  EXPECT_FALSE(turns_on("set -o pipefail"));
  EXPECT_FALSE(turns_on("set -x"));
  EXPECT_FALSE(turns_on("set -- -e 2"));
  EXPECT_FALSE(turns_on("set +e"));
  EXPECT_FALSE(turns_on("echo -e x"));
}
