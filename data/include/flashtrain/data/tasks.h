// State-tracking tasks (docs/TASKS.md defines each one; data/README.md): samples
// are generated on the fly and are a pure function of (task, seed, index).
//
// Format 1 (causal-LM, answer last): parity, even pairs, cycle navigation,
//   modular arithmetic without and with brackets, majority, majority count,
//   missing duplicate, solve equation. A sequence of `length` tokens whose last
//   token is the answer; token 0 is PAD.
// Format 2 (per-position targets): the S5 word problem and Z60. `length` input
//   tokens, and a target at every position (the running product / sum).
// Format 3 (output tape): bucket sort. The inputs, a separator, then an output
//   of several tokens, each one a target; `length` counts all of them.
//
//   TaskSpec spec{Task::kParity, {}, {3, 40}};
//   TaskBatch batch = make_task_batch(spec, /*seed=*/1, /*first_index=*/0, 256, 256);
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace flashtrain::data {

enum class Task {
  kParity,
  kEvenPairs,
  kCycleNavigation,
  kModularArithmetic,          // no brackets, normal precedence
  kModularArithmeticBrackets,  // fully bracketed
  kMajority,                   // the most frequent symbol
  kMajorityCount,              // its count
  kS5,                         // word problem of the symmetric group S5
  kZ60,                        // word problem of the cyclic group Z60
  kBucketSort,                 // Format 3: the inputs sorted
  kMissingDuplicate,           // the token a doubled string lost
  kSolveEquation,              // x of a bracketed equation mod 5
};

enum class TaskFormat {
  kAnswerLast,   // Format 1
  kPerPosition,  // Format 2
  kOutputTape,   // Format 3
};

const std::vector<Task>& all_tasks();
std::string_view to_string(Task task);  // "parity", "even_pairs", ..., "s5", "z60"
// Throws std::invalid_argument listing the valid names.
Task parse_task(std::string_view name);
TaskFormat task_format(Task task);
// Shortest valid sequence in tokens (answer included in Format 1).
int task_min_length(Task task);

inline constexpr int kMaxMajorityAlphabet = 63;

// Options that change the tasks; train and evaluation must agree on them.
struct TaskOptions {
  // Longest sequence any split will draw.
  int max_length = 256;
  // Majority / majority count: number of symbols (2..kMaxMajorityAlphabet).
  int majority_alphabet = kMaxMajorityAlphabet;
  // Modular arithmetic with brackets: '*' joins '+' and '-' (Delétang et
  // al.'s task has it; false is a variant without).
  bool brackets_multiplication = true;
};

// Lengths in tokens, answer included, drawn uniformly from [min_len, max_len]
// (modular arithmetic without brackets: uniformly among the odd ones).
struct LengthRange {
  int min_len = 3;
  int max_len = 40;
};

struct TaskSpec {
  Task task = Task::kParity;
  TaskOptions options{};
  LengthRange lengths{};
};

struct Vocabulary {
  std::vector<std::string> names;   // token id -> printable name
  std::int32_t pad_id = 0;
  std::vector<std::int32_t> classes;  // the C answer (Format 1) / target (Format 2) tokens

  int size() const { return static_cast<int>(names.size()); }
  int num_classes() const { return static_cast<int>(classes.size()); }
  // Id of a token name; throws std::invalid_argument if there is none.
  std::int32_t id(std::string_view name) const;
  // Ids of names separated by spaces, e.g. "3 + 4 * 2 - 1 =".
  std::vector<std::int32_t> ids(std::string_view spaced_names) const;
  // Names of `tokens` joined by `separator`.
  std::string render(const std::vector<std::int32_t>& tokens, std::string_view separator = " ") const;
};

Vocabulary task_vocabulary(Task task, const TaskOptions& options = {});

struct TaskSample {
  // Format 1: the sequence, answer last. Format 2: the inputs. Format 3: the
  // inputs, the separator and the output. No padding.
  std::vector<std::int32_t> tokens;
  // Format 2: the target at each position. Formats 1 and 3: empty.
  std::vector<std::int32_t> targets;
  // Formats 1 and 3: how many of the last tokens are the answer (1 in Format 1).
  int answer_tokens = 0;
};

// The sample number `index` of the stream `seed`; throws std::invalid_argument
// for a length range the task cannot produce or that exceeds options.max_length.
TaskSample generate_sample(const TaskSpec& spec, std::uint64_t seed, std::uint64_t index);

// The reference solutions, which the generators use for their answers.
// Format 1: the answer token for `inputs` (the sequence without its answer).
// Throws DataError naming the offending position for malformed inputs (and,
// for majority, for a tie, which has no answer).
std::int32_t task_answer(Task task, const TaskOptions& options, const std::vector<std::int32_t>& inputs);
// Format 2: the target tokens for `inputs`.
std::vector<std::int32_t> task_targets(Task task, const std::vector<std::int32_t>& inputs);
// Format 3: the output tape for `inputs` (the inputs and their separator).
std::vector<std::int32_t> task_outputs(Task task, const TaskOptions& options,
                                       const std::vector<std::int32_t>& inputs);

// torch's cross_entropy ignores this target by default (ignore_index=-100).
inline constexpr std::int32_t kIgnoreTarget = -100;

// A batch as plain row-major int32 buffers for the trainer to wrap in tensors.
struct TaskBatch {
  std::int64_t batch_size = 0;
  std::int64_t context = 0;
  std::vector<std::int32_t> input;   // [B, context]; PAD after each sequence
  std::vector<std::int32_t> target;  // [B, context]; kIgnoreTarget where no loss is taken
  std::vector<std::int32_t> length;  // [B]; tokens of each sequence
};

// Samples first_index .. first_index + batch_size - 1 of stream `seed`.
// Formats 1 and 3 with mask_answer (the default): the answer tokens are
// replaced by PAD in the input and are the only targets, at their own
// positions. Without mask_answer the input keeps the answer and each answer
// token is the target of the position before it (plain next-token prediction,
// scored on the answer only).
// Format 2: targets at every position of the sequence from
// first_scored_position on (a test of length generalisation scores only the
// positions beyond the training lengths); the other formats ignore it.
TaskBatch make_task_batch(const TaskSpec& spec, std::uint64_t seed, std::uint64_t first_index,
                          std::int64_t batch_size, std::int64_t context, bool mask_answer = true,
                          std::int64_t first_scored_position = 0);

}  // namespace flashtrain::data
