#include "flashtrain/config/value.h"

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

namespace flashtrain::config {
namespace {

// The shortest digits that read back to exactly `x` (std::to_chars), written
// in plain notation for exponents -5..15 (0.0003, 500000) and in scientific
// notation beyond (1e-08), where plain would be hard to read.
std::string shortest_float(double x) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x, std::chars_format::scientific);
  const std::string scientific(buffer, result.ptr);  // "-1.2345e-04", or "inf"/"nan"
  const std::size_t e = scientific.find('e');
  if (e == std::string::npos) return scientific;
  const int exponent = std::stoi(scientific.substr(e + 1));
  if (exponent < -5 || exponent > 15) return scientific;

  const bool negative = scientific[0] == '-';
  std::string digits;  // the significant digits, without sign and point
  for (std::size_t i = negative ? 1 : 0; i < e; ++i)
    if (scientific[i] != '.') digits += scientific[i];
  std::string plain;
  if (exponent < 0) {
    plain = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const auto integer_digits = static_cast<std::size_t>(exponent) + 1;
    if (digits.size() < integer_digits) digits.append(integer_digits - digits.size(), '0');
    plain = digits.substr(0, integer_digits);
    if (digits.size() > integer_digits) plain += "." + digits.substr(integer_digits);
  }
  return (negative ? "-" : "") + plain;
}

template <class Quote>
std::string format_list(const std::vector<std::string>& items, Quote quote) {
  std::string text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) text += (i ? ", " : "") + quote(items[i]);
  return text + "]";
}

}  // namespace

const char* type_description(ValueType type) {
  switch (type) {
    case ValueType::kBool: return "a boolean";
    case ValueType::kInt: return "an integer";
    case ValueType::kFloat: return "a float";
    case ValueType::kString: return "a string";
    case ValueType::kStringList: return "a string or an array of strings";
  }
  return "a value";
}

std::string format_value(const Value& value) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<std::int64_t>(&value)) return std::to_string(*i);
  if (const auto* x = std::get_if<double>(&value)) return shortest_float(*x);
  const auto single_quote = [](const std::string& s) { return "'" + s + "'"; };
  if (const auto* s = std::get_if<std::string>(&value)) return single_quote(*s);
  return format_list(std::get<std::vector<std::string>>(value), single_quote);
}

std::string quote_toml_string(const std::string& text) {
  std::string quoted = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (byte < 0x20 || byte == 0x7f) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", byte);
      quoted += escape;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

std::string to_toml_literal(const Value& value) {
  if (const auto* x = std::get_if<double>(&value)) {
    std::string text = shortest_float(*x);
    // "10000" would read back as an integer; TOML floats need '.' or an exponent.
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
    return text;
  }
  if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
    if (list->size() == 1) return quote_toml_string(list->front());
    return format_list(*list, quote_toml_string);
  }
  if (const auto* s = std::get_if<std::string>(&value)) return quote_toml_string(*s);
  return format_value(value);
}

}  // namespace flashtrain::config
