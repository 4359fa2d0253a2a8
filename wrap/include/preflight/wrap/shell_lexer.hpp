#pragma once
/// @file shell_lexer.hpp
/// A bash reader for launch scripts: finds the simple commands of a script and the byte span of each word,
/// so that a launch line can be rewritten in place without touching anything else.
///
/// It works on text and never runs bash: scripts that `bash -n` rejects (Megatron's `<Specify path>`
/// placeholders) are read as well as valid ones.  What it understands: single, double and `$'…'` quotes,
/// `$(…)`, `$((…))`, `${…}` and backquotes (nested, spanning lines), backslash-newline continuations,
/// comments (also inside arrays), array assignments `NAME=( … )` spanning lines, here-documents
/// (`<<EOT`, `<<-EOT`, quoted delimiters), redirections, pipelines and lists, `if/while/until/for/case`,
/// function definitions, subshells and groups.  It does not expand anything: words are kept as written.
/// An unterminated quote or parenthesis ends the word at the end of the text (`complete` is then false).
///
/// No errors are thrown: any byte sequence gives a result.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace preflight::wrap {

/// One word as written in the script.
struct ShellWord {
  std::size_t begin = 0;  ///< byte offset of its first character in the script text
  std::size_t end = 0;    ///< byte offset one past its last character
  std::string raw;        ///< the text as written: quotes, expansions and continuations included
};

/// A simple command: `[NAME=value…] [word…]` with its redirections taken out.
struct SimpleCommand {
  std::vector<ShellWord> assignments;   ///< leading `NAME=value` / `NAME+=(…)` words
  std::vector<ShellWord> words;         ///< command name and arguments, in order
  std::vector<ShellWord> redirections;  ///< redirection operators and their targets, in order
  std::size_t begin = 0;                ///< byte offset of the first token of the command
  std::size_t end = 0;                  ///< byte offset one past its last token
};

/// The commands of a script, in the order they appear.
struct ShellScript {
  std::vector<SimpleCommand> commands;
  /// Byte spans [begin, end) of here-document bodies (not commands of this script).
  std::vector<std::pair<std::size_t, std::size_t>> heredoc_bodies;
  /// Per body (same order): offset of the `<<` / `<<-` that opened it (inside its command's span), and
  /// whether the delimiter was quoted (`<<'EOF'`: the body is not expanded by this shell).
  std::vector<std::size_t> heredoc_ops;
  std::vector<bool> heredoc_quoted;
  bool complete = true;  ///< false when a quote, substitution or here-document was not terminated
};

/// Reads a script.  Never throws for any input.
ShellScript parse_shell(std::string_view text);

/// True for a `set` command that turns errexit or nounset on: `set -e`, `set -x -e`, `set -euo pipefail`,
/// `set -o errexit` / `-o nounset` (options after `--` are positional parameters, not options).
bool turns_on_errexit_or_nounset(const SimpleCommand& c);

/// The value of a word that contains no expansion: quotes removed, escapes and continuations resolved.
/// `"pretrain_gpt.py"` → pretrain_gpt.py; `$X`, `$(cmd)`, `` `cmd` ``, `~` or globs → nullopt.
std::optional<std::string> literal_value(std::string_view raw);

/// The value of a word up to its first expansion (`$`, backquote), quotes removed:
/// `"run_mindformer.py --config $CONFIG"` → `run_mindformer.py --config `.  nullopt for an unterminated
/// quote.
std::optional<std::string> literal_head(std::string_view raw);

/// When `raw` is exactly one parameter expansion — `$NAME`, `${NAME}`, `"$NAME"`, `"${NAME}"`,
/// `${NAME:-default}` (with or without double quotes) — its name and, if any, its default text.
struct ParameterRef {
  std::string name;
  std::optional<std::string> default_raw;  ///< the raw text after `:-` or `-`
  bool quoted = false;                     ///< inside double quotes (one word after expansion)
};
std::optional<ParameterRef> parameter_ref(std::string_view raw);

/// Splits a string into words the way the shell does for a command line with no expansions to do
/// (quotes and backslashes honoured; `\<newline>` removed).  Used for the command string that
/// MindFormers' msrun_launcher.sh `eval`s.
/// @throws preflight::InputError (where = `context`) on an unterminated quote
std::vector<std::string> split_shell_words(std::string_view text, const std::string& context);

/// Quotes a word for bash so that it reads back as exactly `word` (single quotes unless it is plain).
std::string shell_quote(std::string_view word);

/// 1-based line number of byte `offset` in `text`.
std::size_t line_of(std::string_view text, std::size_t offset);

}  // namespace preflight::wrap
