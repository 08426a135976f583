#include "toml_reader.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "unknown_names.h"

namespace flashtrain::config {
namespace {

// Reads one file and throws at the first problem, naming its position.
class TomlReader {
 public:
  TomlReader(const std::string& file, ResolvedConfig& into) : file_(file), into_(into) {}

  void read(std::string_view text) {
    toml::table root;
    try {
      root = toml::parse(text, std::string_view(file_));
    } catch (const toml::parse_error& e) {
      fail(e.source(), "invalid TOML: " + describe_parse_error(e.description()));
    }
    for (const auto& [name, node] : in_file_order(root)) read_section(*name, *node);
  }

 private:
  using Entry = std::pair<const toml::key*, const toml::node*>;

  // TOML++ tables iterate by name; report problems in the order of the file.
  static std::vector<Entry> in_file_order(const toml::table& table) {
    std::vector<Entry> entries;
    for (const auto& [key, node] : table) entries.emplace_back(&key, &node);
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      const toml::source_position& pa = a.first->source().begin;
      const toml::source_position& pb = b.first->source().begin;
      return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
    });
    return entries;
  }

  // "Error while parsing key-value pair: cannot redefine existing integer 'a'"
  // -> "cannot redefine existing integer 'a' (while parsing a key-value pair)".
  static std::string describe_parse_error(std::string_view description) {
    constexpr std::string_view prefix = "Error while parsing ";
    const std::size_t colon = description.find(": ");
    if (description.substr(0, prefix.size()) != prefix || colon == std::string_view::npos)
      return std::string(description);
    const std::string_view what = description.substr(prefix.size(), colon - prefix.size());
    return std::string(description.substr(colon + 2)) + " (while parsing " + std::string(what) + ")";
  }

  void read_section(const toml::key& name, const toml::node& node) {
    if (!schema().find_section(name.str())) {
      if (node.is_table() || node.is_array_of_tables())
        fail(name.source(), unknown_section_message(name.str()));
      fail(name.source(), key_outside_sections_message(name.str()));
    }
    if (node.is_array_of_tables())
      fail(name.source(), "[[" + std::string(name.str()) + "]] is an array of tables; write [" +
                              std::string(name.str()) + "] once");
    const toml::table* table = node.as_table();
    if (!table)
      fail(node.source(), "'" + std::string(name.str()) + "' is a section and must be a table ([" +
                              std::string(name.str()) + "]); got " + describe_node(node));
    for (const auto& [key, value] : in_file_order(*table)) read_key(name.str(), *key, *value);
  }

  void read_key(std::string_view section, const toml::key& name, const toml::node& node) {
    const KeySpec* key = schema().find_key(section, name.str());
    if (!key) fail(name.source(), unknown_key_message(section, name.str()));
    Value value = convert(*key, node);
    if (const auto problem = check_value(*key, value)) {
      const toml::node* where = &node;
      if (problem->element) where = node.as_array() ? node.as_array()->get(*problem->element) : &node;
      fail(where->source(), problem->message);
    }
    const toml::source_position& begin = node.source().begin;
    into_.set(*key, value,
              SourceLocation{file_, static_cast<int>(begin.line), static_cast<int>(begin.column)});
  }

  // The node as a Value of the key's type; integers are accepted for floats,
  // an integer key's keyword ("auto") for the integer.
  Value convert(const KeySpec& key, const toml::node& node) {
    switch (key.type) {
      case ValueType::kBool:
        if (const auto* b = node.as_boolean()) return b->get();
        break;
      case ValueType::kInt:
        if (const auto* i = node.as_integer()) return i->get();
        if (const auto* s = node.as_string(); s && !key.keyword.empty() && s->get() == key.keyword)
          return s->get();
        break;
      case ValueType::kFloat:
        if (const auto* x = node.as_floating_point()) return x->get();
        if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
        break;
      case ValueType::kString:
        if (const auto* s = node.as_string()) return s->get();
        break;
      case ValueType::kStringList:
        if (const auto* s = node.as_string()) return std::vector<std::string>{s->get()};
        if (const auto* array = node.as_array()) return convert_list(key, *array);
        break;
    }
    fail(node.source(), key.subject() + " must be " + key.type_text() + "; got " +
                            describe_node(node));
  }

  std::vector<std::string> convert_list(const KeySpec& key, const toml::array& array) {
    std::vector<std::string> items;
    for (std::size_t i = 0; i < array.size(); ++i) {
      const auto* s = array[i].as_string();
      if (!s)
        fail(array[i].source(), "element " + std::to_string(i + 1) + " of " + key.subject() +
                                    " must be a string; got " + describe_node(array[i]));
      items.push_back(s->get());
    }
    return items;
  }

  // "a string ('100')", "a float (3.0)", "a table".
  static std::string describe_node(const toml::node& node) {
    if (const auto* s = node.as_string()) return "a string (" + format_value(s->get()) + ")";
    if (const auto* i = node.as_integer()) return "an integer (" + format_value(i->get()) + ")";
    if (const auto* x = node.as_floating_point()) return "a float (" + to_toml_literal(x->get()) + ")";
    if (const auto* b = node.as_boolean()) return std::string("a boolean (") + (b->get() ? "true)" : "false)");
    if (node.is_array()) return "an array";
    if (node.is_table()) return "a table";
    if (node.is_date()) return "a date";
    if (node.is_time()) return "a time";
    return "a date-time";
  }

  [[noreturn]] void fail(const toml::source_region& where, std::string message) const {
    throw ConfigError(file_, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column),
                      std::move(message));
  }

  const std::string& file_;
  ResolvedConfig& into_;
};

}  // namespace

void read_toml(std::string_view text, const std::string& file, ResolvedConfig& into) {
  TomlReader(file, into).read(text);
}

}  // namespace flashtrain::config
