// Solving a Problem: propagation to a fixpoint, then depth-first search in the
// problem's search order, each variable's values in its value order. The result
// is deterministic: solutions come in that (lexicographic) order.
//
//   SolveResult all = solve_all(problem);
//   SolveResult best = solve_best(problem);  // needs problem.objective()
//   if (!best.satisfiable()) std::cerr << explain(problem, *best.conflict);
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "flashrnn/tune/problem.h"

namespace flashrnn::tune {

// One value per variable of the problem, parameters included.
using Assignment = std::vector<int64_t>;

struct SolveOptions {
  // Stop after this many solutions (solve_all) or search nodes.
  uint64_t max_solutions = std::numeric_limits<uint64_t>::max();
  uint64_t max_nodes = std::numeric_limits<uint64_t>::max();
};

// Why a problem has no solution.
struct Conflict {
  static constexpr int kObjectiveBound = -2;
  // The constraint that emptied a domain (index into problem.constraints()).
  // When search was needed, the constraint that closed the most branches.
  int constraint = -1;
  int variable = -1;         // whose domain became empty; -1: the constraint as a whole failed
  bool before_search = true;  // false: propagation alone did not prove it
  uint64_t branches = 0;      // during search: how many branches this constraint closed
};

struct SolveStats {
  uint64_t nodes = 0;     // search nodes (value assignments tried, plus the root)
  uint64_t failures = 0;  // nodes where propagation failed
  double seconds = 0;
};

struct SolveResult {
  std::vector<Assignment> solutions;  // solve_best: the best alone
  std::optional<int64_t> objective;   // solve_best: its objective value
  bool complete = true;               // false: a limit stopped the search early
  std::optional<Conflict> conflict;   // set when no solution was found by a complete search
  SolveStats stats;

  bool satisfiable() const { return !solutions.empty(); }
};

// Every solution, in search order. Throws ProblemError for an unsolvable
// statement (unset parameter, expressions that can overflow).
SolveResult solve_all(const Problem& problem, const SolveOptions& options = {});
// The solution with the best objective value; among equals, the first in search
// order. Throws ProblemError if the problem has no objective.
SolveResult solve_best(const Problem& problem, const SolveOptions& options = {});

// "constraint 'smem_fits' (line 40): smem_bytes <= smem_per_block emptied the
// domain of k_smem before search".
std::string explain(const Problem& problem, const Conflict& conflict);

}  // namespace flashrnn::tune
