// Bash reader for launch scripts: tokens with byte spans, then simple commands.  See shell_lexer.hpp.
#include "preflight/wrap/shell_lexer.hpp"

#include <algorithm>

#include "preflight/common/error.hpp"

namespace preflight::wrap {

namespace {

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r';
}
bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

enum class TokKind { Word, Op, Newline };

struct Tok {
  TokKind kind;
  std::size_t begin;
  std::size_t end;
  std::string text;
};

/// `NAME=`, `NAME+=`, `NAME[sub]=` at the start of `w` (the whole prefix up to and including '=').
bool is_assignment_prefix(std::string_view w) {
  if (w.empty() || !is_name_start(w[0])) return false;
  std::size_t i = 1;
  while (i < w.size() && is_name_char(w[i])) ++i;
  if (i < w.size() && w[i] == '[') {
    auto close = w.find(']', i);
    if (close == std::string_view::npos) return false;
    i = close + 1;
  }
  if (i < w.size() && w[i] == '+') ++i;
  return i < w.size() && w[i] == '=';
}

class Lexer {
 public:
  explicit Lexer(std::string_view s) : s_(s) {}

  std::vector<Tok> run(ShellScript& out) {
    std::vector<Tok> toks;
    struct Pending {
      std::string delim;
      bool strip_tabs;
      std::size_t op;
      bool quoted;
    };
    std::vector<Pending> pending;
    bool want_delim = false;
    bool delim_strip = false;
    std::size_t delim_op = 0;
    const std::size_t n = s_.size();
    std::size_t p = 0;
    while (p < n) {
      char c = s_[p];
      if (is_blank(c)) {
        ++p;
        continue;
      }
      if (c == '\\' && at(p + 1) == '\n') {
        p += 2;
        continue;
      }
      if (c == '#') {
        while (p < n && s_[p] != '\n') ++p;
        continue;
      }
      if (c == '\n') {
        toks.push_back({TokKind::Newline, p, p + 1, "\n"});
        ++p;
        for (const Pending& h : pending) {
          out.heredoc_ops.push_back(h.op);
          out.heredoc_quoted.push_back(h.quoted);
          p = skip_heredoc(p, h.delim, h.strip_tabs, out);
        }
        pending.clear();
        continue;
      }
      // Operators, longest first.
      static const char* kOps[] = {";;&", ";;", ";&", "&&", "||", "|&", "&>>", "&>", "<<<", "<<-", "<<",
                                   "<>",  "<&", ">>", ">&", ">|", "|",  "&",   ";",  "<",   ">"};
      if (c == '(' && at(p + 1) == '(') {  // arithmetic command ((…)) or for ((…))
        std::size_t e = skip_parens(p);
        toks.push_back({TokKind::Word, p, e, std::string(s_.substr(p, e - p))});
        p = e;
        continue;
      }
      if ((c == '<' || c == '>') && at(p + 1) == '(') {  // process substitution is a word
        std::size_t e = scan_word(skip_parens(p + 1));
        toks.push_back({TokKind::Word, p, e, std::string(s_.substr(p, e - p))});
        p = e;
        continue;
      }
      if (c == '(' || c == ')') {
        toks.push_back({TokKind::Op, p, p + 1, std::string(1, c)});
        ++p;
        continue;
      }
      std::size_t op_start = p;
      std::size_t q = p;
      if (is_digit(c)) {  // fd prefix of a redirection: 2>&1, 1>>log
        while (q < n && is_digit(s_[q])) ++q;
        if (q >= n || (s_[q] != '<' && s_[q] != '>')) q = p;
      }
      bool matched = false;
      for (const char* op : kOps) {
        std::string_view o(op);
        if (s_.substr(q, o.size()) == o) {
          toks.push_back({TokKind::Op, op_start, q + o.size(),
                          std::string(s_.substr(op_start, q + o.size() - op_start))});
          if (o == "<<" || o == "<<-") {
            want_delim = true;
            delim_strip = o == "<<-";
            delim_op = op_start;
          }
          p = q + o.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
      std::size_t e = scan_word(p);
      if (e == p) e = p + 1;
      toks.push_back({TokKind::Word, p, e, std::string(s_.substr(p, e - p))});
      if (want_delim) {
        std::string delim;
        std::string_view w = s_.substr(p, e - p);
        const bool quoted = w.find_first_of("'\"\\") != std::string_view::npos;
        for (std::size_t i = 0; i < w.size(); ++i) {
          if (w[i] == '\'' || w[i] == '"') continue;
          if (w[i] == '\\' && i + 1 < w.size()) {
            delim += w[++i];
            continue;
          }
          delim += w[i];
        }
        pending.push_back({delim, delim_strip, delim_op, quoted});
        want_delim = false;
      }
      p = e;
    }
    if (!pending.empty()) complete_ = false;
    out.complete = complete_;
    return toks;
  }

 private:
  std::string_view s_;
  bool complete_ = true;

  char at(std::size_t i) const { return i < s_.size() ? s_[i] : '\0'; }

  std::size_t unterminated() {
    complete_ = false;
    return s_.size();
  }

  std::size_t skip_single(std::size_t i) {  // i at '
    auto j = s_.find('\'', i + 1);
    return j == std::string_view::npos ? unterminated() : j + 1;
  }

  std::size_t skip_ansi(std::size_t i) {  // i at $ of $'
    for (std::size_t j = i + 2; j < s_.size(); ++j) {
      if (s_[j] == '\\') {
        ++j;
        continue;
      }
      if (s_[j] == '\'') return j + 1;
    }
    return unterminated();
  }

  std::size_t skip_backquote(std::size_t i) {  // i at `
    for (std::size_t j = i + 1; j < s_.size(); ++j) {
      if (s_[j] == '\\') {
        ++j;
        continue;
      }
      if (s_[j] == '`') return j + 1;
    }
    return unterminated();
  }

  std::size_t skip_double(std::size_t i) {  // i at "
    std::size_t j = i + 1;
    while (j < s_.size()) {
      char c = s_[j];
      if (c == '\\') {
        j += 2;
      } else if (c == '"') {
        return j + 1;
      } else if (c == '$') {
        j = skip_dollar(j);
      } else if (c == '`') {
        j = skip_backquote(j);
      } else {
        ++j;
      }
    }
    return unterminated();
  }

  std::size_t skip_dollar(std::size_t i) {  // i at $
    char n = at(i + 1);
    if (n == '(') return skip_parens(i + 1);
    if (n == '{') return skip_braces(i + 1);
    if (n == '\'') return skip_ansi(i);
    return i + 1;
  }

  std::size_t skip_braces(std::size_t i) { return skip_balanced(i, '{', '}'); }  // i at { of ${

  /// Balanced ( … ) starting at i (an open paren); quotes, substitutions and comments inside.
  std::size_t skip_parens(std::size_t i) { return skip_balanced(i, '(', ')'); }

  /// Balanced `open` … `close` starting at i (at `open`); quotes and substitutions inside, and comments
  /// inside parentheses.
  std::size_t skip_balanced(std::size_t i, char open, char close) {
    int depth = 0;
    std::size_t j = i;
    while (j < s_.size()) {
      char c = s_[j];
      if (c == '\\') {
        j += 2;
        continue;
      }
      if (c == open) {
        ++depth;
      } else if (c == close) {
        if (--depth == 0) return j + 1;
      } else if (c == '\'') {
        j = skip_single(j);
        continue;
      } else if (c == '"') {
        j = skip_double(j);
        continue;
      } else if (c == '`') {
        j = skip_backquote(j);
        continue;
      } else if (c == '$') {
        std::size_t k = skip_dollar(j);
        if (k > j + 1) {
          j = k;
          continue;
        }
      } else if (open == '(' && c == '#' &&
                 (j == i || is_blank(s_[j - 1]) || s_[j - 1] == '\n' || s_[j - 1] == '(')) {
        while (j < s_.size() && s_[j] != '\n') ++j;
        continue;
      }
      ++j;
    }
    return unterminated();
  }

  std::size_t scan_word(std::size_t i) {
    std::size_t j = i;
    while (j < s_.size()) {
      char c = s_[j];
      if (is_blank(c) || c == '\n' || c == '|' || c == '&' || c == ';' || c == '<' || c == '>' || c == ')')
        break;
      if (c == '(') {
        std::string_view so_far = s_.substr(i, j - i);
        bool array = !so_far.empty() && so_far.back() == '=' && is_assignment_prefix(so_far);
        bool extglob = j > i && (s_[j - 1] == '@' || s_[j - 1] == '!' || s_[j - 1] == '+' ||
                                 s_[j - 1] == '*' || s_[j - 1] == '?');
        if (!array && !extglob) break;
        j = skip_parens(j);
        continue;
      }
      if (c == '\\') {
        j += 2;
      } else if (c == '\'') {
        j = skip_single(j);
      } else if (c == '"') {
        j = skip_double(j);
      } else if (c == '`') {
        j = skip_backquote(j);
      } else if (c == '$') {
        j = skip_dollar(j);
      } else {
        ++j;
      }
    }
    return std::min(j, s_.size());
  }

  std::size_t skip_heredoc(std::size_t p, const std::string& delim, bool strip_tabs, ShellScript& out) {
    std::size_t body = p;
    while (p < s_.size()) {
      std::size_t eol = s_.find('\n', p);
      std::size_t line_end = eol == std::string_view::npos ? s_.size() : eol;
      std::string_view line = s_.substr(p, line_end - p);
      if (strip_tabs) {
        while (!line.empty() && line.front() == '\t') line.remove_prefix(1);
      }
      if (line == delim) {
        out.heredoc_bodies.emplace_back(body, p);
        return eol == std::string_view::npos ? s_.size() : eol + 1;
      }
      p = eol == std::string_view::npos ? s_.size() : eol + 1;
    }
    complete_ = false;
    out.heredoc_bodies.emplace_back(body, s_.size());
    return s_.size();
  }
};

bool is_redirection(const std::string& op) {
  std::size_t i = 0;
  while (i < op.size() && is_digit(op[i])) ++i;
  std::string_view o = std::string_view(op).substr(i);
  return o == "<" || o == ">" || o == ">>" || o == "<<" || o == "<<-" || o == "<<<" || o == "<>" ||
         o == "<&" || o == ">&" || o == ">|" || o == "&>" || o == "&>>";
}

class Parser {
 public:
  Parser(const std::vector<Tok>& toks, ShellScript& out) : t_(toks), out_(out) {}

  void run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Tok& tok = t_[i];
      if (tok.kind == TokKind::Word) {
        word(tok);
        continue;
      }
      const std::string& op = tok.text;
      if (state_ == St::DoubleBracket) continue;
      if (tok.kind == TokKind::Op && is_redirection(op)) {
        if (state_ == St::Normal) {
          touch(tok);
          cur_.redirections.push_back({tok.begin, tok.end, tok.text});
          want_target_ = true;
        }
        continue;
      }
      if (op == "(" && state_ == St::Normal && cur_.words.size() == 1 && cur_.assignments.empty() &&
          i + 1 < t_.size() && t_[i + 1].text == ")") {  // name() { … }
        cur_ = {};
        started_ = false;
        ++i;
        continue;
      }
      if (state_ == St::CaseWord || state_ == St::CasePattern) {
        if (state_ == St::CasePattern && op == ")") state_ = St::Normal;
        continue;
      }
      finish();
      if (op == ";;" || op == ";&" || op == ";;&") {
        state_ = St::CasePattern;
      } else if (state_ == St::SkipToSeparator && (op == ";" || op == "\n")) {
        state_ = St::Normal;
      }
    }
    finish();
  }

 private:
  enum class St { Normal, SkipToSeparator, CaseWord, CasePattern, DoubleBracket };
  const std::vector<Tok>& t_;
  ShellScript& out_;
  SimpleCommand cur_;
  bool started_ = false;
  bool want_target_ = false;
  bool skip_function_name_ = false;
  St state_ = St::Normal;

  void touch(const Tok& tok) {
    if (!started_) {
      cur_.begin = tok.begin;
      started_ = true;
    }
    cur_.end = tok.end;
  }

  void finish() {
    if (!cur_.words.empty() || !cur_.assignments.empty() || !cur_.redirections.empty())
      out_.commands.push_back(cur_);
    cur_ = {};
    started_ = false;
    want_target_ = false;
  }

  void word(const Tok& tok) {
    ShellWord w{tok.begin, tok.end, tok.text};
    if (want_target_) {
      touch(tok);
      cur_.redirections.push_back(w);
      want_target_ = false;
      return;
    }
    switch (state_) {
      case St::SkipToSeparator:
        return;
      case St::CaseWord:
        if (tok.text == "in") state_ = St::CasePattern;
        return;
      case St::CasePattern:
        if (tok.text == "esac") state_ = St::Normal;
        return;
      case St::DoubleBracket:
        if (tok.text == "]]") state_ = St::Normal;
        return;
      case St::Normal:
        break;
    }
    if (skip_function_name_) {
      skip_function_name_ = false;
      return;
    }
    if (cur_.words.empty() && cur_.assignments.empty()) {
      static const char* kPrefixKeywords[] = {"if", "then", "else", "elif", "do",   "while", "until",
                                              "{",  "}",    "!",    "fi",   "done", "esac",  "time"};
      for (const char* k : kPrefixKeywords)
        if (tok.text == k) return;
      if (tok.text == "for" || tok.text == "select") {
        state_ = St::SkipToSeparator;
        return;
      }
      if (tok.text == "case") {
        state_ = St::CaseWord;
        return;
      }
      if (tok.text == "function") {
        skip_function_name_ = true;
        return;
      }
      if (tok.text == "[[") {
        state_ = St::DoubleBracket;
        return;
      }
    }
    touch(tok);
    if (cur_.words.empty() && is_assignment_prefix(tok.text)) {
      cur_.assignments.push_back(w);
      return;
    }
    cur_.words.push_back(w);
  }
};

}  // namespace

ShellScript parse_shell(std::string_view text) {
  ShellScript out;
  Lexer lexer(text);
  std::vector<Tok> toks = lexer.run(out);
  Parser parser(toks, out);
  parser.run();
  return out;
}

namespace {

/// What an expansion (`$…`, backquote) does to unquoting.
enum class Expansions {
  Fail,  ///< the word has no value without running the script
  Stop,  ///< the value ends before it
  Keep,  ///< it is text like any other (a command string run later by another shell)
};

struct Unquoted {
  std::string value;
  std::size_t next = 0;       ///< offset after the word (or of the expansion that ended it)
  bool have = false;          ///< a word was read (quotes count, a lone continuation does not)
  bool expansion = false;     ///< stopped at an expansion (or an unquoted glob / parenthesis)
  char unterminated = '\0';  ///< the quote left open at the end of the text
};

/// The one unquoting of this file, as bash removes quotes from a word: backslash escapes and
/// continuations, '…', "…" with its four escapes (\$ \` \" \\) and continuations.  Reads from `i`; with
/// `split` an unquoted blank or newline ends the word; with `globs_fail` an unquoted * ? ( ) counts as an
/// expansion.
Unquoted unquote(std::string_view t, std::size_t i, Expansions ex, bool split, bool globs_fail) {
  Unquoted r;
  const std::size_t n = t.size();
  auto expansion_at = [&](std::size_t at) {
    r.expansion = true;
    r.next = at;
    return r;
  };
  while (i < n) {
    char c = t[i];
    if (split && (is_blank(c) || c == '\n')) break;
    if (c == '\\') {
      if (i + 1 < n && t[i + 1] != '\n') {
        r.value += t[i + 1];
        r.have = true;
      }
      i += 2;
    } else if (c == '\'') {
      auto j = t.find('\'', i + 1);
      if (j == std::string_view::npos) {
        r.unterminated = '\'';
        r.next = n;
        return r;
      }
      r.value.append(t.substr(i + 1, j - i - 1));
      r.have = true;
      i = j + 1;
    } else if (c == '"') {
      std::size_t j = i + 1;
      while (j < n && t[j] != '"') {
        if (t[j] == '\\' && j + 1 < n &&
            (t[j + 1] == '$' || t[j + 1] == '`' || t[j + 1] == '"' || t[j + 1] == '\\' || t[j + 1] == '\n')) {
          if (t[j + 1] != '\n') r.value += t[j + 1];
          j += 2;
        } else if ((t[j] == '$' || t[j] == '`') && ex != Expansions::Keep) {
          return expansion_at(j);
        } else {
          r.value += t[j++];
        }
      }
      if (j >= n) {
        r.unterminated = '"';
        r.next = n;
        return r;
      }
      r.have = true;
      i = j + 1;
    } else if (((c == '$' || c == '`') && ex != Expansions::Keep) ||
               (globs_fail && (c == '*' || c == '?' || c == '(' || c == ')'))) {
      return expansion_at(i);
    } else {
      r.value += c;
      r.have = true;
      ++i;
    }
  }
  r.next = i;
  return r;
}

}  // namespace

std::optional<std::string> literal_value(std::string_view raw) {
  if (!raw.empty() && raw[0] == '~') return std::nullopt;
  Unquoted u = unquote(raw, 0, Expansions::Fail, false, true);
  if (u.expansion || u.unterminated) return std::nullopt;
  return u.value;
}

std::optional<std::string> literal_head(std::string_view raw) {
  Unquoted u = unquote(raw, 0, Expansions::Stop, false, false);
  if (u.unterminated) return std::nullopt;
  return u.value;
}

std::optional<ParameterRef> parameter_ref(std::string_view raw) {
  ParameterRef ref;
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"') {
    raw = raw.substr(1, raw.size() - 2);
    ref.quoted = true;
  }
  if (raw.size() < 2 || raw[0] != '$') return std::nullopt;
  if (raw[1] == '{') {
    if (raw.back() != '}') return std::nullopt;
    std::string_view body = raw.substr(2, raw.size() - 3);
    std::size_t i = 0;
    while (i < body.size() && (is_name_char(body[i]))) ++i;
    if (i == 0) return std::nullopt;
    ref.name = std::string(body.substr(0, i));
    std::string_view rest = body.substr(i);
    if (rest.empty()) return ref;
    if (rest.substr(0, 2) == ":-") {
      ref.default_raw = std::string(rest.substr(2));
      return ref;
    }
    if (rest[0] == '-') {
      ref.default_raw = std::string(rest.substr(1));
      return ref;
    }
    return std::nullopt;
  }
  std::string_view body = raw.substr(1);
  if (is_digit(body[0]) && body.size() == 1) {
    ref.name = std::string(body);
    return ref;
  }
  for (char c : body)
    if (!is_name_char(c)) return std::nullopt;
  if (!is_name_start(body[0])) return std::nullopt;
  ref.name = std::string(body);
  return ref;
}

std::vector<std::string> split_shell_words(std::string_view text, const std::string& context) {
  std::vector<std::string> words;
  std::size_t i = 0;
  while (i < text.size()) {
    if (is_blank(text[i]) || text[i] == '\n') {
      ++i;
      continue;
    }
    Unquoted u = unquote(text, i, Expansions::Keep, true, false);
    if (u.unterminated)
      throw InputError(context, std::string("unterminated ") + (u.unterminated == '\'' ? "single" : "double") +
                                    " quote in command string");
    if (u.have) words.push_back(std::move(u.value));
    i = u.next;
  }
  return words;
}

std::string shell_quote(std::string_view word) {
  bool plain = !word.empty();
  for (char c : word) {
    if (!(is_name_char(c) || c == '.' || c == '/' || c == ':' || c == '=' || c == '@' || c == '%' ||
          c == '+' || c == ',' || c == '-')) {
      plain = false;
      break;
    }
  }
  if (plain) return std::string(word);
  std::string q = "'";
  for (char c : word) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::size_t line_of(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<std::size_t>(
                 std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

bool turns_on_errexit_or_nounset(const SimpleCommand& c) {
  if (c.words.size() < 2 || c.words[0].raw != "set") return false;
  for (std::size_t k = 1; k < c.words.size(); ++k) {
    const std::string& w = c.words[k].raw;
    if (w == "--") break;
    // A cluster of single-letter options; its 'o' takes the next word (`-euo pipefail`).
    if (w.size() > 1 && w[0] == '-' && w[1] != '-' && w.find_first_of("eu") != std::string::npos &&
        w.find_first_not_of("-abefhkmnoptuvxBCEHPT") == std::string::npos)
      return true;
    if (w == "-o" && k + 1 < c.words.size() &&
        (c.words[k + 1].raw == "errexit" || c.words[k + 1].raw == "nounset"))
      return true;
  }
  return false;
}

}  // namespace preflight::wrap
