// flashtrain-prepare: text documents -> train/val token shards (and, with
// --train-tokenizer, a SentencePiece model first). See data/README.md; the
// command line is prepare_command.h's, shared with `flashtrain prepare`.
#include <iostream>
#include <string>
#include <vector>

#include "flashtrain/data/prepare_command.h"

int main(int argc, char** argv) {
  return flashtrain::data::run_prepare_command(std::vector<std::string>(argv + 1, argv + argc), "flashtrain-prepare",
                                               std::cout, std::cerr);
}
