// The schema: every section and key of the config, with its type, doc string,
// check and default (the default is the key's value in a default-constructed
// Config). The loader, the overrides, print-config, the hash and the JSON
// export all walk this one table, so a key added here is everywhere.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flashtrain/config/config.h"
#include "flashtrain/config/value.h"

namespace flashtrain::config {

// What a value must satisfy besides its type. For a string list it applies to
// every element.
class Constraint {
 public:
  static Constraint none() { return Constraint(); }
  static Constraint int_range(std::int64_t min, std::int64_t max);  // inclusive
  static Constraint at_least(std::int64_t min);
  // Finite floats in the interval; open ends exclude the bound.
  static Constraint float_range(double min, bool min_open, double max, bool max_open);
  static Constraint positive();  // a finite float > 0
  static Constraint non_negative();  // a finite float >= 0
  static Constraint one_of(std::vector<std::string> choices, bool empty_allowed = false);
  static Constraint non_empty();  // a string that is not ""

  // "" when `value` (of the key's type; a list element for lists) satisfies
  // the constraint, else what is wrong: "must be >= 1; got 0".
  std::string problem(const Value& value) const;
  // For print-config: ">= 1", "in [0, 1)", "one of: cosine, wsd, constant"; "" for none.
  std::string describe() const;

 private:
  enum class Kind { kNone, kIntRange, kFloatRange, kChoice, kNonEmpty };
  Kind kind_ = Kind::kNone;
  std::int64_t int_min_ = 0, int_max_ = 0;
  double float_min_ = 0, float_max_ = 0;
  bool min_open_ = false, max_open_ = false;
  std::vector<std::string> choices_;
  bool empty_allowed_ = false;
};

struct KeySpec {
  std::string_view section;
  std::string_view name;
  ValueType type;
  std::string_view doc;  // one line
  Constraint constraint;
  // Names other tools use for this key ("learning_rate" for lr). Not
  // accepted; only used to suggest this key for a typo of them.
  std::vector<std::string_view> aliases;
  std::function<Value(const Config&)> get;
  std::function<void(Config&, const Value&)> set;  // the value has this key's type
  // An integer key that also takes this one string (training.local_batch_size
  // = "auto"); "" for none. Its Value is then that string, and the Config
  // member holds 0 (which the constraint must exclude as a number).
  std::string_view keyword;
  // [model] keys: whether the key decides what the parameters are (their
  // names and shapes). The others (how the op runs, how parameters start,
  // which a checkpoint replaces) may differ when a run resumes.
  bool shapes_parameters = true;

  std::string dotted_name() const;  // "optimizer.lr"
  // "'lr' in [optimizer]", the subject of every message about this key.
  std::string subject() const;
  // What a value must be, for messages: "an integer", or with a keyword
  // 'an integer or "auto"'.
  std::string type_text() const;
  // The allowed values for print-config: the constraint's description, with
  // the keyword: 'in [1, 16777216] or "auto"'; "" for none.
  std::string allowed() const;
  // Whether `value` is this key's keyword (a string equal to it).
  bool is_keyword(const Value& value) const;
};

struct SectionSpec {
  std::string_view name;
  std::string_view doc;  // one line
};

// A value that breaks its key's constraint: the message and, for lists, the
// 0-based index of the offending element.
struct ValueProblem {
  std::string message;  // "'lr' in [optimizer] must be > 0; got -1"
  std::optional<std::size_t> element;
};

class Schema {
 public:
  Schema(std::vector<SectionSpec> sections, std::vector<KeySpec> keys);

  const std::vector<SectionSpec>& sections() const { return sections_; }
  const std::vector<KeySpec>& keys() const { return keys_; }  // in section order
  const SectionSpec* find_section(std::string_view name) const;
  const KeySpec* find_key(std::string_view section, std::string_view name) const;
  std::vector<const KeySpec*> keys_of(std::string_view section) const;

 private:
  std::vector<SectionSpec> sections_;
  std::vector<KeySpec> keys_;
};

const Schema& schema();

// Checks `value` (of the key's type, or its keyword) against the key's constraint.
std::optional<ValueProblem> check_value(const KeySpec& key, const Value& value);

// The block kinds of [model] kind, and the ones built on the multi-head
// recurrent op (which need n_heads x head_dim == dim).
const std::vector<std::string>& model_kinds();
bool is_multihead_rnn_kind(std::string_view kind);

}  // namespace flashtrain::config
