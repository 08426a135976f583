// Deletes a directory tree (or a file) with POSIX nftw.
//
// Why not std::filesystem::remove_all: the torch wheels (2.5 and later, also
// 2.11) export a statically linked copy of libstdc++'s std::filesystem
// (pytorch/pytorch#133437); in a program linked with libtorch those copies
// win, and their remove_all crashes (a call through a null pointer). The
// other std::filesystem functions we use work.
#pragma once

#include <filesystem>

namespace flashtrain::trainer {

// Removes `path` and everything below it without following symlinks. A
// missing path is not an error; throws std::runtime_error naming what could
// not be removed.
void remove_tree(const std::filesystem::path& path);

}  // namespace flashtrain::trainer
