#include "flashtrain/config/overrides.h"

#include <charconv>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "unknown_names.h"

namespace flashtrain::config {
namespace {

// One flag, split: --section.key=value.
struct Flag {
  std::string text;  // the whole flag, the location of every error about it
  std::string section;
  std::string key;
  std::optional<std::string> value;  // none for a bare "--debug.deterministic"
};

[[noreturn]] void fail(const std::string& flag, std::string message) {
  throw ConfigError(flag, 0, 0, std::move(message));
}

// Command-line options that set a config key under a shorter name
// (command_line.cpp passes them on as written, so that an error about the
// value names the flag the user typed).
struct Alias {
  std::string_view name, section, key;
};
constexpr Alias kAliases[] = {{"resume", "checkpoint", "resume"},
                              {"nproc", "parallelism", "nproc"},
                              {"profile", "training", "profile_steps"}};

Flag split_flag(std::string_view text) {
  Flag flag{std::string(text), {}, {}, {}};
  for (const Alias& alias : kAliases) {
    const std::string prefix = "--" + std::string(alias.name) + "=";
    if (text.rfind(prefix, 0) != 0) continue;
    flag.section = alias.section;
    flag.key = alias.key;
    flag.value = std::string(text.substr(prefix.size()));
    return flag;
  }
  if (!is_override_flag(text))
    fail(flag.text, "not a config override; overrides look like --section.key=value");
  std::string_view name = text.substr(2);
  if (const std::size_t equals = name.find('='); equals != std::string_view::npos) {
    flag.value = std::string(name.substr(equals + 1));
    name = name.substr(0, equals);
  }
  const std::size_t dot = name.find('.');
  flag.section = std::string(name.substr(0, dot));
  flag.key = std::string(name.substr(dot + 1));
  if (flag.section.empty() || flag.key.empty() || flag.key.find('.') != std::string::npos)
    fail(flag.text, "an override names one section and one key: --section.key=value");
  return flag;
}

// The whole text as a number: the number, or the error (invalid_argument when
// it is no number of this type, result_out_of_range when it is too large).
template <class Number>
std::pair<Number, std::errc> parse_number(std::string_view text) {
  Number number{};
  // from_chars does not take a leading '+'; a user may well write one.
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (text.empty() || (error == std::errc() && end != text.data() + text.size()))
    return {number, std::errc::invalid_argument};
  return {number, error};
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::size_t start = 0;
  for (std::size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
    items.push_back(text.substr(start, comma - start));
  items.push_back(text.substr(start));
  return items;
}

std::string value_hint(const KeySpec& key) {
  switch (key.type) {
    case ValueType::kBool: return "true|false";
    case ValueType::kInt: return key.keyword.empty() ? "<integer>" : "<integer>|" + std::string(key.keyword);
    case ValueType::kFloat: return "<float>";
    case ValueType::kString: return "<text>";
    case ValueType::kStringList: return "<a,b,...>";
  }
  return "<value>";
}

Value parse_value(const KeySpec& key, const Flag& flag) {
  if (!flag.value) {
    if (key.type == ValueType::kBool) return true;
    fail(flag.text, key.subject() + " needs a value: --" + key.dotted_name() + "=" + value_hint(key));
  }
  const std::string& text = *flag.value;
  const auto wrong_type = [&]() {
    return ConfigError(flag.text, 0, 0,
                       key.subject() + " must be " + key.type_text() + "; got " +
                           (text.empty() ? std::string("nothing") : format_value(text)));
  };
  switch (key.type) {
    case ValueType::kBool:
      if (text == "true") return true;
      if (text == "false") return false;
      throw wrong_type();
    case ValueType::kInt: {
      if (!key.keyword.empty() && text == key.keyword) return text;
      const auto [i, error] = parse_number<std::int64_t>(text);
      if (error == std::errc::result_out_of_range)
        fail(flag.text, key.subject() + " is too large for a 64-bit integer; got " + text);
      if (error != std::errc()) throw wrong_type();
      return i;
    }
    case ValueType::kFloat: {
      const auto [x, error] = parse_number<double>(text);
      if (error == std::errc::result_out_of_range)
        fail(flag.text, key.subject() + " is out of the range of a double; got " + text);
      if (error != std::errc()) throw wrong_type();
      return x;
    }
    case ValueType::kString: return text;
    case ValueType::kStringList: return split_commas(text);
  }
  throw wrong_type();
}

}  // namespace

bool is_override_flag(std::string_view arg) {
  if (arg.substr(0, 2) != "--") return false;
  std::string_view name = arg.substr(2);
  name = name.substr(0, name.find('='));  // the whole rest when there is no '='
  return name.find('.') != std::string_view::npos;
}

void apply_override(std::string_view text, ResolvedConfig& resolved) {
  const Flag flag = split_flag(text);
  if (!schema().find_section(flag.section)) fail(flag.text, unknown_section_message(flag.section));
  const KeySpec* key = schema().find_key(flag.section, flag.key);
  if (!key) fail(flag.text, unknown_key_message(flag.section, flag.key));
  const Value value = parse_value(*key, flag);
  if (const auto problem = check_value(*key, value)) fail(flag.text, problem->message);
  resolved.set(*key, value, SourceLocation{flag.text, 0, 0});
}

}  // namespace flashtrain::config
