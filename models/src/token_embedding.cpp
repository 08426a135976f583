#include "token_embedding.h"

#include <torch/autograd.h>
#include <torch/torch.h>

namespace flashtrain::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

class OneHotGradientEmbedding : public torch::autograd::Function<OneHotGradientEmbedding> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& weight, const torch::Tensor& tokens) {
    ctx->save_for_backward({tokens});
    ctx->saved_data["vocab"] = weight.size(0);
    return at::embedding(weight, tokens);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const torch::Tensor tokens = ctx->get_saved_variables()[0].reshape({-1, 1});
    const int64_t vocab = ctx->saved_data["vocab"].toInt();
    const torch::Tensor dy = grads[0].reshape({tokens.size(0), -1});
    // In dY's own precision, as ATen's embedding backward: no autocast here.
    const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
    const torch::Tensor one_hot = tokens.eq(torch::arange(vocab, tokens.options())).to(dy.scalar_type());
    return {one_hot.t().mm(dy), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor embed_tokens(const torch::Tensor& weight, const torch::Tensor& tokens) {
  if (weight.size(0) > kOneHotGradientVocab || !weight.requires_grad() || !torch::GradMode::is_enabled())
    return at::embedding(weight, tokens);
  return OneHotGradientEmbedding::apply(weight, tokens);
}

}  // namespace flashtrain::models
