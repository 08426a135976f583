#include "lexer.h"

#include <cctype>

#include "flashrnn/tune/domain.h"
#include "flashrnn/tune/problem_parser.h"

namespace flashrnn::tune::detail {
namespace {

// Longest first, so "<=" is not read as "<" then "=".
constexpr std::string_view kSymbols[] = {"..", "==", "<=", ">=", ",", "{", "}", "(", ")",
                                         "+",  "-",  "*",  "%",  ":", "<", ">", "="};

bool starts_name(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool continues_name(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

}  // namespace

std::vector<Token> tokenize(std::string_view text, const std::string& file) {
  std::vector<Token> tokens;
  int line = 1;
  size_t line_start = 0;
  size_t i = 0;
  auto column = [&](size_t at) { return int(at - line_start) + 1; };
  while (i < text.size()) {
    const char c = text[i];
    if (c == '\n') {
      tokens.push_back({Token::Kind::kEndOfLine, "", 0, line, column(i)});
      ++line;
      line_start = ++i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (starts_name(c)) {
      const size_t start = i;
      while (i < text.size() && continues_name(text[i])) ++i;
      tokens.push_back({Token::Kind::kName, std::string(text.substr(start, i - start)), 0, line,
                        column(start)});
    } else if (is_digit(c)) {
      const size_t start = i;
      __int128 value = 0;
      while (i < text.size() && is_digit(text[i])) {
        value = value * 10 + (text[i] - '0');
        if (value > kMaxMagnitude)
          throw ParseError(file, line, column(start),
                           "integer " + std::string(text.substr(start, i - start + 1)) +
                               "... is outside the supported range ±(2^62 - 1)");
        ++i;
      }
      if (i < text.size() && continues_name(text[i]))
        throw ParseError(file, line, column(i),
                         "unexpected '" + std::string(1, text[i]) + "' after the number " +
                             std::string(text.substr(start, i - start)));
      tokens.push_back({Token::Kind::kInteger, std::string(text.substr(start, i - start)),
                        int64_t(value), line, column(start)});
    } else {
      bool matched = false;
      for (std::string_view s : kSymbols)
        if (text.substr(i, s.size()) == s) {
          tokens.push_back({Token::Kind::kSymbol, std::string(s), 0, line, column(i)});
          i += s.size();
          matched = true;
          break;
        }
      if (!matched)
        throw ParseError(file, line, column(i), "unexpected character '" + std::string(1, c) + "'");
    }
  }
  tokens.push_back({Token::Kind::kEndOfText, "", 0, line, column(i)});
  return tokens;
}

}  // namespace flashrnn::tune::detail
