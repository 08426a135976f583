// flashtune: solves problem files and explains the tensor-core kernels'
// configuration.
//
//   flashtune PROBLEM.txt [name=value ...] [--limit N]
//   flashtune --tc cell=lstm heads=12 head_dim=64 batch=16 device=h200 [dtype=bf16]
//   flashtune --device h100|a100|h200|l4|cuda[:N]
//
// Exit status: 0 solved (or a configuration chosen, or the tensor-core kernels
// run), 1 no solution (the op would fall back to the alternating backend), 2 bad
// usage or input.
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "flashrnn/tune/device_query.h"
#include "flashrnn/tune/errors.h"
#include "flashrnn/tune/problem_parser.h"
#include "flashrnn/tune/solver.h"
#include "flashrnn/tune/tc_explain.h"
#include "flashrnn/tune/tc_select.h"

namespace flashrnn::tune {
namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  flashtune PROBLEM.txt [name=value ...] [--limit N]\n"
    "      solve a problem file; name=value sets a parameter. Prints the best solution when\n"
    "      the problem has an objective, else every solution (at most N, default 100).\n"
    "  flashtune --tc cell=lstm heads=12 head_dim=64 batch=16 device=h200 [dtype=bf16]\n"
    "      whether the tensor-core fused kernels (the ones the fused backend runs) take the\n"
    "      case: their tiling and resources, or every limit it breaks. cell: lstm slstm gru\n"
    "      elman; heads 1 and batch 16 unless given; dtype: bf16 fp16 fp32; device: a100 h100\n"
    "      h200 l4 (published properties) or cuda, cuda:N (a live device).\n"
    "  flashtune --device NAME\n"
    "      print a device's properties.\n";

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

int64_t parse_integer(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  throw UsageError(what + " must be an integer, got '" + text + "'");
}

// name=value arguments; anything else is a usage error.
std::map<std::string, std::string> key_values(const std::vector<std::string>& args) {
  std::map<std::string, std::string> out;
  for (const std::string& a : args) {
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("expected name=value, got '" + a + "'");
    out[a.substr(0, eq)] = a.substr(eq + 1);
  }
  return out;
}

int solve_file(const std::string& path, const std::vector<std::string>& args) {
  uint64_t limit = 100;
  std::vector<std::string> assignments;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--limit") {
      if (i + 1 == args.size()) throw UsageError("--limit needs a number");
      const int64_t n = parse_integer(args[++i], "--limit");
      if (n < 1) throw UsageError("--limit must be at least 1");
      limit = uint64_t(n);
    } else {
      assignments.push_back(args[i]);
    }
  }
  Problem problem = load_problem(path);
  for (const auto& [name, value] : key_values(assignments))
    problem.set_parameter(name, parse_integer(value, name));
  try {
    problem.check_parameters_set();
  } catch (const ProblemError& e) {
    throw UsageError(std::string(e.what()) + " (give name=value on the command line)");
  }

  const bool optimize = problem.objective().has_value();
  SolveOptions options;
  options.max_solutions = limit;
  const SolveResult result = optimize ? solve_best(problem, options) : solve_all(problem, options);
  const std::vector<std::string> names = problem.names();
  for (size_t k = 0; k < result.solutions.size(); ++k) {
    std::cout << (optimize ? "best:" : "solution " + std::to_string(k + 1) + ":");
    for (size_t i = 0; i < names.size(); ++i)
      if (!problem.variables()[i].is_parameter)
        std::cout << " " << names[i] << "=" << result.solutions[k][i];
    std::cout << "\n";
  }
  if (optimize && result.objective) std::cout << "objective: " << *result.objective << "\n";
  std::printf("%zu solution%s%s, %llu nodes, %.3f ms\n", result.solutions.size(),
              result.solutions.size() == 1 ? "" : "s",
              result.complete ? "" : " (stopped at the limit; --limit N for more)",
              static_cast<unsigned long long>(result.stats.nodes), result.stats.seconds * 1e3);
  if (!result.satisfiable() && result.conflict) {
    std::cout << "unsatisfiable: " << explain(problem, *result.conflict) << "\n";
    return 1;
  }
  return result.satisfiable() ? 0 : 1;
}

struct ShapeOnDevice {
  FusedShape shape;
  DeviceProps device;
};

// cell=, heads=, head_dim=, batch=, dtype=, device= of --tc.
ShapeOnDevice parse_shape(const std::vector<std::string>& pairs) {
  const std::string mode = "--tc";
  std::map<std::string, std::string> kv = key_values(pairs);
  auto take = [&](const std::string& key, const char* fallback) {
    auto it = kv.find(key);
    if (it == kv.end()) {
      if (!fallback) throw UsageError(mode + " needs " + key + "=...");
      return std::string(fallback);
    }
    std::string value = it->second;
    kv.erase(it);
    return value;
  };
  FusedShape shape;
  shape.cell = parse_cell(take("cell", "lstm"));
  shape.heads = int(parse_integer(take("heads", "1"), "heads"));
  shape.head_dim = int(parse_integer(take("head_dim", nullptr), "head_dim"));
  shape.batch = int(parse_integer(take("batch", "16"), "batch"));
  shape.dtype = parse_dtype(take("dtype", "bf16"));
  const DeviceProps device = device_by_name(take("device", nullptr));
  if (!kv.empty())
    throw UsageError("unknown setting '" + kv.begin()->first + "'; " + mode +
                     " takes cell, heads, head_dim, batch, dtype, device");
  return {shape, device};
}

// The tensor-core kernels the fused backend runs: the tiling they were compiled
// with, checked against the device (models/tc_tiling.txt).
int explain_tc(const std::vector<std::string>& args) {
  const auto [shape, device] = parse_shape(args);
  std::cout << explain_tc_choice(device, shape);
  return select_tc_config(device, shape).config ? 0 : 1;
}

int run(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--tc") return explain_tc({args.begin() + 1, args.end()});
  if (args[0] == "--device") {
    if (args.size() != 2) throw UsageError("--device takes one name");
    std::cout << describe(device_by_name(args[1]));
    return 0;
  }
  if (args[0].rfind("--", 0) == 0) throw UsageError("unknown option '" + args[0] + "'");
  return solve_file(args[0], {args.begin() + 1, args.end()});
}

}  // namespace
}  // namespace flashrnn::tune

int main(int argc, char** argv) {
  using namespace flashrnn::tune;
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "flashtune: " << e.what() << "\n" << kUsage;
  } catch (const std::exception& e) {  // ParseError, ProblemError, DeviceQueryError
    std::cerr << "flashtune: " << e.what() << "\n";
  }
  return 2;
}
