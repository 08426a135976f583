// Runs a Python script of the repository from a test: the interpreter is
// $FLASHTRAIN_SAFETENSORS_PYTHON, else the one CMake was given
// (FLASHTRAIN_PYTHON: scripts/setup.sh's .venv). Scripts exit with
// kPythonMissingPackages (77) when numpy or safetensors cannot be imported;
// the tests then skip, saying so.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "scratch_dir.h"

namespace flashtrain::trainer::testing {

inline constexpr int kPythonMissingPackages = 77;

inline std::string python_interpreter() {
  const char* python = std::getenv("FLASHTRAIN_SAFETENSORS_PYTHON");
  return python ? python : FLASHTRAIN_PYTHON;
}

struct PythonRun {
  int status = -1;     // the exit status; -1 when it did not exit normally
  std::string output;  // stdout and stderr
};

// Runs `script` (relative to the source tree) with `args`; output goes to `log`.
inline PythonRun run_python_script(const std::string& script, const std::vector<std::string>& args,
                                   const std::filesystem::path& log) {
  std::string command = "'" + python_interpreter() + "' '" FLASHTRAIN_SOURCE_DIR "/" + script + "'";
  for (const std::string& arg : args) command += " '" + arg + "'";
  command += " > '" + log.string() + "' 2>&1";
  const int status = std::system(command.c_str());
  PythonRun run;
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  run.output = read_file(log);
  return run;
}

}  // namespace flashtrain::trainer::testing
