// Word problems (Format 2): inputs are uniform random group elements; the
// target at position t is the product of inputs 0..t.
//   S5: the 120 permutations of {0..4} as tokens 0..119 in lexicographic
//       order (0 = identity); PAD = 120. The running product is
//       p_t = x_t ∘ p_{t-1}, i.e. p_t(i) = x_t(p_{t-1}(i)): apply the
//       permutations in reading order.
//   Z60: elements 0..59 as tokens 0..59, addition mod 60; PAD = 60.
#include <algorithm>
#include <array>

#include "task_definition.h"

namespace flashtrain::data::tasks {
namespace {

constexpr int kS5Order = 120;
constexpr int kZ60Order = 60;

using Permutation = std::array<int, 5>;

struct S5Table {
  std::array<Permutation, kS5Order> permutations{};
  std::array<std::array<std::int32_t, kS5Order>, kS5Order> compose{};  // [x][p] = x ∘ p
};

int base5(const Permutation& p) {
  int code = 0;
  for (const int v : p) code = code * 5 + v;
  return code;
}

const S5Table& s5_table() {
  static const S5Table table = [] {
    S5Table t;
    Permutation p = {0, 1, 2, 3, 4};
    std::array<std::int32_t, 3125> index_of{};
    int n = 0;
    do {
      index_of[static_cast<std::size_t>(base5(p))] = n;
      t.permutations[static_cast<std::size_t>(n++)] = p;
    } while (std::next_permutation(p.begin(), p.end()));
    for (int x = 0; x < kS5Order; ++x) {
      for (int q = 0; q < kS5Order; ++q) {
        Permutation r{};
        for (int i = 0; i < 5; ++i) r[i] = t.permutations[x][t.permutations[q][i]];
        t.compose[x][q] = index_of[static_cast<std::size_t>(base5(r))];
      }
    }
    return t;
  }();
  return table;
}

Vocabulary s5_vocabulary(const TaskOptions&) {
  Vocabulary v{{}, kS5Order, {}};
  for (const Permutation& p : s5_table().permutations) {
    std::string name;
    for (const int e : p) name += static_cast<char>('0' + e);
    v.names.push_back(name);
    v.classes.push_back(static_cast<std::int32_t>(v.classes.size()));
  }
  v.names.push_back("<pad>");
  return v;
}

Vocabulary z60_vocabulary(const TaskOptions&) {
  Vocabulary v{{}, kZ60Order, {}};
  for (int e = 0; e < kZ60Order; ++e) {
    v.names.push_back(std::to_string(e));
    v.classes.push_back(e);
  }
  v.names.push_back("<pad>");
  return v;
}

template <int kOrder>
Tokens draw_elements(Rng& rng, int length, const TaskOptions&) {
  Tokens t(static_cast<std::size_t>(length));
  for (auto& e : t) e = static_cast<std::int32_t>(rng.below(kOrder));
  return t;
}

void check_elements(std::string_view task, const Tokens& inputs, int order) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] < 0 || inputs[i] >= order) {
      throw bad_token(task, inputs[i], i, "a group element (0.." + std::to_string(order - 1) + ")");
    }
  }
}

Tokens s5_targets(const Tokens& inputs) {
  check_elements("s5", inputs, kS5Order);
  const S5Table& table = s5_table();
  Tokens products(inputs.size());
  std::int32_t product = 0;  // identity
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    product = table.compose[static_cast<std::size_t>(inputs[t])][static_cast<std::size_t>(product)];
    products[t] = product;
  }
  return products;
}

Tokens z60_targets(const Tokens& inputs) {
  check_elements("z60", inputs, kZ60Order);
  Tokens sums(inputs.size());
  std::int32_t sum = 0;
  for (std::size_t t = 0; t < inputs.size(); ++t) {
    sum = (sum + inputs[t]) % kZ60Order;
    sums[t] = sum;
  }
  return sums;
}

}  // namespace

const TaskDefinition& s5_task() {
  static const TaskDefinition task{Task::kS5, "s5", TaskFormat::kPerPosition, 1, false,
                                   s5_vocabulary, draw_elements<kS5Order>, nullptr, s5_targets};
  return task;
}

const TaskDefinition& z60_task() {
  static const TaskDefinition task{Task::kZ60, "z60", TaskFormat::kPerPosition, 1, false,
                                   z60_vocabulary, draw_elements<kZ60Order>, nullptr, z60_targets};
  return task;
}

}  // namespace flashtrain::data::tasks
