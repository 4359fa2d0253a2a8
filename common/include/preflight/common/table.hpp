#pragma once
/// @file table.hpp
/// A plain-text table for human output: left-aligned text columns,
/// right-aligned numeric columns, widths measured in terminal columns
/// (UTF-8 code points, so box-drawing characters count as one).

#include <cstddef>
#include <string>
#include <vector>

namespace preflight {

/// Number of terminal columns a UTF-8 string occupies (one per code point).
std::size_t display_width(const std::string& utf8);

/// Pads `utf8` on the right (or left when `right_align`) to `width` columns.
std::string pad(const std::string& utf8, std::size_t width, bool right_align = false);

class TextTable {
 public:
  enum class Align { Left, Right };

  /// Adds a column.  Columns are printed in the order added.
  TextTable& column(std::string header, Align align = Align::Left);
  /// Adds a row; it must have exactly one cell per column (std::invalid_argument otherwise).
  TextTable& row(std::vector<std::string> cells);
  /// Adds a horizontal rule at this position.
  TextTable& rule();

  /// Renders with two spaces between columns and a rule under the header.
  std::string render() const;

 private:
  struct Column {
    std::string header;
    Align align;
  };
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;  // an empty row is a rule
};

}  // namespace preflight
