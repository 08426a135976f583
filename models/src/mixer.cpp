#include "flashtrain/models/mixer.h"

#include <torch/torch.h>

#include <vector>

namespace flashtrain::models {

ChunkOutput Mixer::forward_chunk(const torch::Tensor& x, const BlockState& state) {
  std::vector<torch::Tensor> ys;
  ys.reserve(x.size(1));
  BlockState carried = state;
  for (int64_t t = 0; t < x.size(1); ++t) {
    StepOutput step = forward_step(x.select(1, t), carried);
    ys.push_back(std::move(step.y));
    carried = std::move(step.state);
  }
  return {torch::stack(ys, 1), std::move(carried)};
}

}  // namespace flashtrain::models
