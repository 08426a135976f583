#include <cmath>
#include <limits>

#include "flashtrain/config/schema.h"
#include "suggest.h"

namespace flashtrain::config {
namespace {

constexpr std::int64_t kNoIntMax = std::numeric_limits<std::int64_t>::max();

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (std::size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

}  // namespace

Constraint Constraint::int_range(std::int64_t min, std::int64_t max) {
  Constraint c;
  c.kind_ = Kind::kIntRange;
  c.int_min_ = min;
  c.int_max_ = max;
  return c;
}

Constraint Constraint::at_least(std::int64_t min) { return int_range(min, kNoIntMax); }

Constraint Constraint::float_range(double min, bool min_open, double max, bool max_open) {
  Constraint c;
  c.kind_ = Kind::kFloatRange;
  c.float_min_ = min;
  c.float_max_ = max;
  c.min_open_ = min_open;
  c.max_open_ = max_open;
  return c;
}

Constraint Constraint::positive() {
  return float_range(0, true, std::numeric_limits<double>::infinity(), true);
}

Constraint Constraint::non_negative() {
  return float_range(0, false, std::numeric_limits<double>::infinity(), true);
}

Constraint Constraint::one_of(std::vector<std::string> choices, bool empty_allowed) {
  Constraint c;
  c.kind_ = Kind::kChoice;
  c.choices_ = std::move(choices);
  c.empty_allowed_ = empty_allowed;
  return c;
}

Constraint Constraint::non_empty() {
  Constraint c;
  c.kind_ = Kind::kNonEmpty;
  return c;
}

std::string Constraint::describe() const {
  switch (kind_) {
    case Kind::kNone: return "";
    case Kind::kIntRange:
      if (int_max_ == kNoIntMax) return ">= " + std::to_string(int_min_);
      return "in [" + std::to_string(int_min_) + ", " + std::to_string(int_max_) + "]";
    case Kind::kFloatRange: {
      const std::string min = format_value(float_min_);
      if (std::isinf(float_max_)) return (min_open_ ? "> " : ">= ") + min;
      return std::string(min_open_ ? "in (" : "in [") + min + ", " + format_value(float_max_) +
             (max_open_ ? ")" : "]");
    }
    case Kind::kChoice:
      return "one of: " + join(choices_, ", ") + (empty_allowed_ ? "; or \"\"" : "");
    case Kind::kNonEmpty: return "not empty";
  }
  return "";
}

std::string Constraint::problem(const Value& value) const {
  if (const auto* x = std::get_if<double>(&value); x && !std::isfinite(*x))
    return "must be a finite number; got " + format_value(*x);
  switch (kind_) {
    case Kind::kNone: return "";
    case Kind::kIntRange: {
      const std::int64_t i = std::get<std::int64_t>(value);
      if (i < int_min_ || i > int_max_) return "must be " + describe() + "; got " + std::to_string(i);
      return "";
    }
    case Kind::kFloatRange: {
      const double x = std::get<double>(value);
      const bool below = min_open_ ? x <= float_min_ : x < float_min_;
      const bool above = max_open_ ? x >= float_max_ : x > float_max_;
      if (below || above) return "must be " + describe() + "; got " + format_value(x);
      return "";
    }
    case Kind::kChoice: {
      const std::string& s = std::get<std::string>(value);
      if (s.empty() && empty_allowed_) return "";
      for (const std::string& choice : choices_)
        if (s == choice) return "";
      std::string text = "must be one of " + join(choices_, ", ") +
                         (empty_allowed_ ? " or \"\"" : "") + "; got " + format_value(s);
      std::vector<Candidate> candidates;
      for (const std::string& choice : choices_) candidates.push_back({choice, choice});
      if (const auto guess = closest_match(s, candidates)) text += "; did you mean '" + *guess + "'?";
      return text;
    }
    case Kind::kNonEmpty:
      if (std::get<std::string>(value).empty()) return "must not be empty";
      return "";
  }
  return "";
}

}  // namespace flashtrain::config
