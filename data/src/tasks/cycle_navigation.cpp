// Cycle navigation: actions stay / +1 / -1 (tokens 1, 2, 3) on a cycle of 5
// positions starting at 0; the answer is the final position p, token 4 + p.
#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

constexpr int kPositions = 5;
constexpr std::int32_t kStay = 1;
constexpr std::int32_t kForward = 2;
constexpr std::int32_t kBackward = 3;
constexpr std::int32_t kFirstPosition = 4;

Vocabulary vocabulary(const TaskOptions&) {
  Vocabulary v{{"<pad>", "stay", "+1", "-1"}, 0, {}};
  for (int p = 0; p < kPositions; ++p) {
    v.names.push_back("p" + std::to_string(p));
    v.classes.push_back(kFirstPosition + p);
  }
  return v;
}

Tokens draw_actions(Rng& rng, int length, const TaskOptions&) {
  Tokens actions(static_cast<std::size_t>(length - 1));
  for (auto& a : actions) a = kStay + static_cast<std::int32_t>(rng.below(3));
  return actions;
}

std::int32_t answer(const Tokens& inputs, const TaskOptions&) {
  if (inputs.empty()) throw DataError("cycle_navigation: no actions");
  int position = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    switch (inputs[i]) {
      case kStay: break;
      case kForward: position = (position + 1) % kPositions; break;
      case kBackward: position = (position + kPositions - 1) % kPositions; break;
      default: throw bad_token("cycle_navigation", inputs[i], i, "an action (1, 2 or 3)");
    }
  }
  return kFirstPosition + position;
}

}  // namespace

const TaskDefinition& cycle_navigation_task() {
  static const TaskDefinition task{Task::kCycleNavigation, "cycle_navigation",
                                   TaskFormat::kAnswerLast, 2, false, vocabulary, draw_actions,
                                   answer, nullptr};
  return task;
}

}  // namespace flashtrain::data::tasks
