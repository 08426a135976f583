// The command line of shard preparation, shared by the flashtrain-prepare tool
// and `flashtrain prepare`: parses the options into PrepareOptions, runs
// prepare_shards() and prints its report.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace flashtrain::data {

// `args` are the arguments after the program name; `program` names it in the
// usage text and in messages ("flashtrain-prepare", "flashtrain prepare").
// Returns the exit status: 0 done (or --help), 1 the preparation failed,
// 2 a usage error (the message, then the usage text, on `err`).
int run_prepare_command(const std::vector<std::string>& args, const std::string& program, std::ostream& out,
                        std::ostream& err);

// The --help text.
std::string prepare_usage(const std::string& program);

}  // namespace flashtrain::data
