// The two scan backends behind one interface (scan.cpp picks one). Tensors are
// already validated; x0, dx and dlast may be undefined (zeros). Both return
// tensors in the storage dtype of a.
#pragma once

#include <ATen/Tensor.h>

#include "flashrnn/scan.h"

namespace flashrnn::scan_backends {

struct Problem {
  ScanLayout layout = ScanLayout::kBDT;
  bool reverse = false;
};

struct Forward {
  at::Tensor x;     // like a
  at::Tensor last;  // [B, D]
};

struct Gradients {
  at::Tensor da, db;
  at::Tensor dx0;  // undefined when x0 is
};

// vanilla: torch ops on the tensors' device (scan_vanilla.cpp).
Forward vanilla_forward(const Problem& p, const at::Tensor& a, const at::Tensor& b,
                        const at::Tensor& x0);
Gradients vanilla_backward(const Problem& p, const at::Tensor& a, const at::Tensor& x,
                           const at::Tensor& x0, const at::Tensor& dx, const at::Tensor& dlast);

// cuda: the kernels on the current stream (scan_cuda_dispatch.cpp).
Forward cuda_forward(const Problem& p, const at::Tensor& a, const at::Tensor& b,
                     const at::Tensor& x0);
Gradients cuda_backward(const Problem& p, const at::Tensor& a, const at::Tensor& x,
                        const at::Tensor& x0, const at::Tensor& dx, const at::Tensor& dlast);

}  // namespace flashrnn::scan_backends
