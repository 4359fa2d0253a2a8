#include "preflight/common/table.hpp"

#include <algorithm>
#include <stdexcept>

namespace preflight {

std::size_t display_width(const std::string& utf8) {
  std::size_t n = 0;
  for (unsigned char c : utf8)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad(const std::string& utf8, std::size_t width, bool right_align) {
  std::size_t w = display_width(utf8);
  if (w >= width) return utf8;
  std::string fill(width - w, ' ');
  return right_align ? fill + utf8 : utf8 + fill;
}

TextTable& TextTable::column(std::string header, Align align) {
  columns_.push_back({std::move(header), align});
  return *this;
}

TextTable& TextTable::row(std::vector<std::string> cells) {
  if (cells.size() != columns_.size())
    throw std::invalid_argument("TextTable::row: expected " + std::to_string(columns_.size()) +
                                " cells, got " + std::to_string(cells.size()));
  rows_.push_back(std::move(cells));
  return *this;
}

TextTable& TextTable::rule() {
  rows_.emplace_back();
  return *this;
}

std::string TextTable::render() const {
  std::vector<std::size_t> width(columns_.size());
  for (std::size_t c = 0; c < columns_.size(); ++c) width[c] = display_width(columns_[c].header);
  for (const auto& r : rows_)
    for (std::size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], display_width(r[c]));
  std::size_t total = 0;
  for (std::size_t c = 0; c < width.size(); ++c) total += width[c] + (c ? 2 : 0);

  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string out;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      bool right = !header && columns_[c].align == Align::Right;
      if (header) right = columns_[c].align == Align::Right;
      std::string cell = pad(cells[c], width[c], right);
      if (c + 1 == columns_.size() && !right) {
        while (!cell.empty() && cell.back() == ' ') cell.pop_back();
      }
      out += (c ? "  " : "") + cell;
    }
    return out + "\n";
  };
  std::string out;
  std::vector<std::string> headers;
  for (const auto& c : columns_) headers.push_back(c.header);
  out += line(headers, true);
  out += std::string(total, '-') + "\n";
  for (const auto& r : rows_) {
    if (r.empty())
      out += std::string(total, '-') + "\n";
    else
      out += line(r, false);
  }
  return out;
}

}  // namespace preflight
