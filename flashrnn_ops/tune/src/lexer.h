// Splits problem text into tokens that remember their line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashrnn::tune::detail {

struct Token {
  enum class Kind { kName, kInteger, kSymbol, kEndOfLine, kEndOfText };
  Kind kind;
  std::string text;   // as written ("" for the two ends)
  int64_t value = 0;  // kInteger
  int line = 0;
  int column = 0;

  bool is(std::string_view symbol) const {
    return (kind == Kind::kSymbol || kind == Kind::kName) && text == symbol;
  }
  bool ends_statement() const { return kind == Kind::kEndOfLine || kind == Kind::kEndOfText; }
};

// Throws ParseError (naming `file`) at an unexpected character or an integer
// outside ±(2^62 − 1). Comments (# to the end of the line) are dropped.
std::vector<Token> tokenize(std::string_view text, const std::string& file);

}  // namespace flashrnn::tune::detail
