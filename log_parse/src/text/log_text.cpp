#include "text/log_text.hpp"

namespace preflight::log_parse::detail {

bool is_blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r') return false;
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

namespace {

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

// "RuntimeError: …", "torch.cuda.OutOfMemoryError: …", "MemoryError", "KeyboardInterrupt".
bool python_exception_line(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && is_ident_char(s[i])) ++i;
  if (i == 0 || (i < s.size() && s[i] != ':')) return false;
  std::string_view name = s.substr(0, i);
  for (std::string_view suffix : {"Error", "Exception", "KeyboardInterrupt"})
    if (name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix) return true;
  return false;
}

}  // namespace

bool looks_like_error(std::string_view line) {
  std::string_view s = trim(line);
  if (s.empty()) return false;
  if (s.starts_with("Traceback (most recent call last)") || s.starts_with("Killed")) return true;
  if (python_exception_line(s)) return true;
  for (std::string_view needle : {"[ERROR]", "[CRITICAL]", " - ERROR - ", "Out of Memory", "out of memory",
                                  "Out of memory", "Segmentation fault"})
    if (s.find(needle) != std::string_view::npos) return true;
  return false;
}

std::string clip_line(std::string_view line) {
  constexpr std::size_t kMax = 400;
  if (line.size() <= kMax) return std::string(line);
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  return std::string(line.substr(0, cut)) + "…";
}

}  // namespace preflight::log_parse::detail
