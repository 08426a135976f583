// The LM: step-by-step equals full sequence, gradients, parameter names and
// counts, FLOPs, bad input, and that a tiny model can fit a fixed batch.
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>

#include "flashtrain/models/errors.h"
#include "flashtrain/models/language_model.h"
#include "flashtrain/models/parameter_groups.h"
#include "model_test_util.h"
#include "token_embedding.h"

namespace flashtrain::models::testing {
namespace {

// vocab 11, d_model 8, one block of every kind, 2 heads of 4 where there are heads.
LanguageModelOptions every_kind(bool tie_embeddings) {
  LanguageModelOptions o;
  o.vocab_size = 11;
  o.model.dim = 8;
  set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kSlstm, BlockKind::kLinearScan, BlockKind::kTransformer,
                            BlockKind::kGru, BlockKind::kElman});
  o.model.tie_embeddings = tie_embeddings;
  o.model.n_heads = 2;
  return o;
}

torch::Tensor random_tokens(int64_t batch, int64_t steps, int64_t vocab) {
  return torch::randint(0, vocab, {batch, steps}, torch::kLong);
}

// A small vocabulary's embedding gradient comes from one GEMM (token_embedding.h):
// the same lookup and, up to summation order, the same gradient as ATen's
// embedding; a large vocabulary keeps ATen's.
TEST(TokenEmbedding, SmallVocabularyGradientIsATensOneHotGemm) {
  torch::manual_seed(21);
  for (const int64_t vocab : {int64_t(5), kOneHotGradientVocab, kOneHotGradientVocab + 1}) {
    const torch::Tensor tokens = torch::randint(vocab, {4, 9}, torch::kLong);
    const torch::Tensor dy = torch::randn({4, 9, 6});
    torch::Tensor ours = torch::randn({vocab, 6}).requires_grad_(true);
    torch::Tensor theirs = ours.detach().clone().requires_grad_(true);
    const torch::Tensor y = embed_tokens(ours, tokens);
    EXPECT_TRUE(y.equal(at::embedding(theirs, tokens).detach())) << "vocab " << vocab;
    (y * dy).sum().backward();
    (at::embedding(theirs, tokens) * dy).sum().backward();
    EXPECT_TRUE(torch::allclose(ours.grad(), theirs.grad(), 1e-6, 1e-6)) << "vocab " << vocab;
    EXPECT_EQ(y.grad_fn()->name().find("OneHotGradientEmbedding") != std::string::npos,
              vocab <= kOneHotGradientVocab) << y.grad_fn()->name();
  }
}

TEST(LanguageModel, LogitsShape) {
  LanguageModel model(every_kind(true));
  const torch::Tensor logits = model(random_tokens(3, 5, 11));
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 5, 11}));
  EXPECT_EQ(model(random_tokens(2, 4, 11).to(torch::kInt)).size(1), 4);  // int32 ids too
}

TEST(LanguageModel, StepByStepEqualsFullSequence) {
  for (bool tied : {true, false}) {
    torch::manual_seed(1);
    LanguageModel model(every_kind(tied));
    model->to(torch::kDouble);
    perturb_parameters(*model, 0.2);
    const int64_t batch = 2, steps = 9;
    const torch::Tensor tokens = random_tokens(batch, steps, 11);
    const torch::Tensor full = model(tokens);
    ModelState state = model->initial_state(batch);
    ASSERT_EQ(state.size(), 6u);
    for (int64_t t = 0; t < steps; ++t) {
      ModelStepOutput step = model->forward_step(tokens.select(1, t), state);
      EXPECT_LT(max_abs_diff(step.logits, full.select(1, t)), 1e-12)
          << "tied " << tied << " step " << t;
      state = std::move(step.state);
    }
  }
}

// A chunk from any state (a prompt's prefill, then more of it) equals stepping
// through its tokens: the last logits and every block's state.
TEST(LanguageModel, AChunkEqualsSteppingThroughIt) {
  torch::manual_seed(4);
  LanguageModelOptions o = every_kind(true);
  o.model.conv_kernel = 3;  // the carried convolution window too
  LanguageModel model(o);
  model->to(torch::kDouble);
  perturb_parameters(*model, 0.2);
  const int64_t batch = 2;
  const torch::Tensor tokens = random_tokens(batch, 10, 11);
  ModelState stepped = model->initial_state(batch);
  ModelStepOutput last;
  for (int64_t t = 0; t < 10; ++t) {
    last = model->forward_step(tokens.select(1, t), stepped);
    stepped = last.state;
  }
  // 4 tokens, then 6 more from the state the first 4 left.
  const ModelStepOutput first = model->forward_chunk(tokens.narrow(1, 0, 4), model->initial_state(batch));
  const ModelStepOutput rest = model->forward_chunk(tokens.narrow(1, 4, 6), first.state);
  EXPECT_LT(max_abs_diff(rest.logits, last.logits), 1e-12);
  EXPECT_LT(max_abs_diff(first.logits, model(tokens.narrow(1, 0, 4)).select(1, 3)), 1e-12);
  ASSERT_EQ(rest.state.size(), stepped.size());
  for (std::size_t i = 0; i < stepped.size(); ++i) {
    ASSERT_EQ(rest.state[i].size(), stepped[i].size()) << "block " << i;
    for (const auto& [key, value] : stepped[i])
      EXPECT_LT(max_abs_diff(rest.state[i].at(key), value), 1e-12) << "block " << i << " " << key;
  }
}

// The chunk as a wavefront (from a state other than the initial one) gives the
// block-after-block chunk's logits and states, for every block kind.
TEST(LanguageModel, AChunkAsAWavefrontEqualsBlockAfterBlock) {
  torch::manual_seed(5);
  LanguageModelOptions o = every_kind(true);
  o.model.conv_kernel = 3;
  LanguageModel model(o);
  model->to(torch::kDouble);
  perturb_parameters(*model, 0.2);
  torch::NoGradGuard no_grad;
  const torch::Tensor tokens = random_tokens(2, 13, 11);
  const ModelState after_three = model->forward_chunk(tokens.narrow(1, 0, 3), model->initial_state(2)).state;
  const ModelStepOutput blockwise = model->forward_chunk(tokens.narrow(1, 3, 10), after_three, 0);
  for (int64_t chunks : {2, 4, 10, 16}) {
    const ModelStepOutput waved = model->forward_chunk(tokens.narrow(1, 3, 10), after_three, chunks);
    EXPECT_LT(max_abs_diff(waved.logits, blockwise.logits), 1e-12) << chunks << " chunks";
    ASSERT_EQ(waved.state.size(), blockwise.state.size());
    for (std::size_t i = 0; i < blockwise.state.size(); ++i)
      for (const auto& [key, value] : blockwise.state[i])
        EXPECT_LT(max_abs_diff(waved.state[i].at(key), value), 1e-12) << chunks << " chunks, block " << i << " " << key;
  }
  EXPECT_THROW(model->forward_chunk(tokens, model->initial_state(2), -1), InputError);
}

// recompute_layers changes where the ops' buffers come from, not a bit of the
// logits or the gradients.
TEST(LanguageModel, RecomputingLayersChangesNoResult) {
  const int64_t recomputed[] = {0, 2, 6};
  std::vector<torch::Tensor> results[3];
  for (int k = 0; k < 3; ++k) {
    const int64_t layers = recomputed[k];
    torch::manual_seed(2);
    LanguageModelOptions o = every_kind(true);
    o.model.recompute_layers = layers;
    LanguageModel model(o);
    model->to(torch::kDouble);
    perturb_parameters(*model, 0.2);
    const torch::Tensor tokens = random_tokens(2, 7, 11);
    const torch::Tensor logits = model(tokens);
    torch::nn::functional::cross_entropy(logits.flatten(0, 1), tokens.flatten()).backward();
    std::vector<torch::Tensor>& r = results[k];
    r.push_back(logits.detach());
    for (const torch::Tensor& p : model->parameters()) r.push_back(p.grad());
  }
  for (int k : {1, 2})
    for (std::size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(results[0][i].equal(results[k][i])) << "recompute set " << k << ", tensor " << i;
}

// Dropout: off in eval (the same logits as without it), on in training (other
// logits each call, drawn from torch's generator: a reseed repeats them), and
// each sublayer output kept is scaled by 1 / (1 - p): a block's mixer output
// with p = 0.5 is 0 or twice itself, element by element.
TEST(LanguageModel, DropoutActsInTrainingOnly) {
  const auto model_with = [](double p, Structure structure) {
    torch::manual_seed(2);
    LanguageModelOptions o = every_kind(true);
    if (structure == Structure::kPlain) {
      set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kGru});
      o.model.n_heads = 1;
    }
    o.model.structure = to_string(structure);
    o.model.dropout = p;
    return LanguageModel(o);
  };
  const torch::Tensor tokens = random_tokens(2, 9, 11);
  for (Structure structure : {Structure::kResidual, Structure::kPlain}) {
    LanguageModel plain = model_with(0.0, structure), dropping = model_with(0.3, structure);
    plain->eval();
    dropping->eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor reference = plain(tokens);
    EXPECT_TRUE(dropping(tokens).equal(reference)) << "eval: no dropout";
    dropping->train();
    torch::manual_seed(7);
    const torch::Tensor first = dropping(tokens);
    EXPECT_FALSE(first.equal(reference));
    EXPECT_FALSE(dropping(tokens).equal(first)) << "another draw";
    torch::manual_seed(7);
    EXPECT_TRUE(dropping(tokens).equal(first)) << "the same seed, the same draw";
  }
  // One block's sublayer output, kept or dropped element by element.
  torch::manual_seed(3);
  BlockContext context{8, 1, 1e-5, Structure::kPlain, 0.5};
  BlockOptions options;
  options.recurrent.num_heads = 2;
  ResidualBlock block(BlockKind::kLstm, context, options);
  const torch::Tensor x = torch::randn({3, 5, 8});
  block->eval();
  const torch::Tensor whole = block->forward(x).detach();
  block->train();
  const torch::Tensor out = block->forward(x).detach();
  const torch::Tensor kept = out.ne(0);
  EXPECT_TRUE(torch::allclose(out.masked_select(kept), 2 * whole.masked_select(kept)));
  const double kept_share = kept.to(torch::kDouble).mean().item<double>();
  EXPECT_GT(kept_share, 0.3);
  EXPECT_LT(kept_share, 0.7);
}

// The wavefront over time chunks (wavefront.h) gives forward over the whole
// sequence: logits and every gradient, for every block kind, in float64 (up to
// summation order: a chunk's matmuls are other GEMMs than the whole's).
TEST(LanguageModel, WavefrontOverChunksEqualsTheWholeSequence) {
  std::vector<torch::Tensor> results[3];
  const int64_t chunks[] = {0, 3, 40};  // 40 > T: as many chunks as steps
  for (int c = 0; c < 3; ++c) {
    torch::manual_seed(2);
    LanguageModelOptions o = every_kind(true);
    o.model.wavefront_chunks = chunks[c];
    LanguageModel model(o);
    model->to(torch::kDouble);
    perturb_parameters(*model, 0.2);
    torch::manual_seed(5);
    const torch::Tensor tokens = random_tokens(2, 11, 11);
    const torch::Tensor logits = model(tokens);
    torch::nn::functional::cross_entropy(logits.flatten(0, 1), tokens.flatten()).backward();
    results[c].push_back(logits.detach());
    for (const torch::Tensor& p : model->parameters()) results[c].push_back(p.grad());
  }
  for (int c : {1, 2})
    for (std::size_t i = 0; i < results[0].size(); ++i)
      EXPECT_TRUE(torch::allclose(results[0][i], results[c][i], 1e-9, 1e-12))
          << chunks[c] << " chunks, tensor " << i << ": max difference "
          << (results[0][i] - results[c][i]).abs().max().item<double>();
}

// On a GPU, with a CUDA stream per block, eagerly and captured in a CUDA graph
// (forward and backward, as the training step is): the same logits and
// gradients as block after block.
TEST(LanguageModel, WavefrontOnAGpuEqualsBlockAfterBlockEagerAndCaptured) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const auto run = [](int64_t chunks, bool captured) {
    LanguageModelOptions o;
    o.vocab_size = 32;
    o.model.dim = 64;
    set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kSlstm, BlockKind::kLinearScan, BlockKind::kLstm});
    o.model.n_heads = 1;
    o.model.wavefront_chunks = chunks;
    torch::manual_seed(3);
    LanguageModel model(o);
    model->to(torch::kCUDA);
    torch::manual_seed(4);
    const torch::Tensor tokens = random_tokens(4, 96, 32).to(torch::kCUDA);
    const auto step = [&] {
      for (const torch::Tensor& p : model->parameters()) p.mutable_grad() = torch::Tensor();
      const torch::Tensor logits = model(tokens);
      torch::nn::functional::cross_entropy(logits.flatten(0, 1).to(torch::kFloat), tokens.flatten()).backward();
      return logits;
    };
    std::vector<torch::Tensor> out;
    if (!captured) {
      out.push_back(step().detach().clone());
    } else {
      const c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool());
      step();  // warm-up outside the capture
      at::cuda::CUDAGraph graph;
      graph.capture_begin(/*pool=*/{0, 0}, cudaStreamCaptureModeThreadLocal);  // as the training step
      const torch::Tensor logits = step();
      graph.capture_end();
      graph.replay();
      torch::cuda::synchronize();
      out.push_back(logits.detach().clone());
    }
    for (const torch::Tensor& p : model->parameters()) out.push_back(p.grad().clone());
    torch::cuda::synchronize();
    return out;
  };
  const std::vector<torch::Tensor> whole = run(0, false);
  for (bool captured : {false, true}) {
    const std::vector<torch::Tensor> waved = run(4, captured);
    ASSERT_EQ(waved.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i)
      EXPECT_TRUE(torch::allclose(whole[i], waved[i], 1e-4, 1e-5))
          << (captured ? "captured" : "eager") << ", tensor " << i << ": max difference "
          << (whole[i] - waved[i]).abs().max().item<double>();
  }
}

// On a GPU the per-step buffers go: each recomputing layer holds less after
// the forward, the first ones first.
TEST(LanguageModel, RecomputingLayersHoldsLessAfterTheForward) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no GPU";
  const auto held_after_forward = [](int64_t layers) {
    LanguageModelOptions o;
    o.vocab_size = 32;
    o.model.dim = 64;
    set_layer_kinds(o.model, {BlockKind::kSlstm, BlockKind::kLstm, BlockKind::kSlstm});
    o.model.n_heads = 2;
    o.model.recompute_layers = layers;
    torch::manual_seed(3);
    LanguageModel model(o);
    model->to(torch::kCUDA, torch::kBFloat16);
    const torch::Tensor tokens = random_tokens(8, 64, 32).to(torch::kCUDA);
    torch::cuda::synchronize();
    const int64_t before = c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current;
    const torch::Tensor logits = model(tokens);
    torch::cuda::synchronize();
    return c10::cuda::CUDACachingAllocator::getDeviceStats(0).allocated_bytes[0].current - before;
  };
  // One layer's per-step buffers, float32 states and gate values [T, B, R + C, d]
  // (R + C = 2 + 4 for sLSTM, 1 + 4 for LSTM) and bf16 h [T, B, d], less the
  // gate inputs the op keeps instead, bf16 [T, B, 4, d].
  const auto per_step_buffers = [](int64_t slots) { return 64 * 8 * 64 * (slots * 4 + 2 - 4 * 2); };
  const int64_t slstm_bytes = per_step_buffers(6), lstm_bytes = per_step_buffers(5);
  const int64_t held[] = {held_after_forward(0), held_after_forward(1), held_after_forward(2),
                          held_after_forward(3)};
  EXPECT_GE(held[0] - held[1], slstm_bytes) << held[0] << " " << held[1];
  EXPECT_GE(held[1] - held[2], lstm_bytes) << held[1] << " " << held[2];
  EXPECT_GE(held[2] - held[3], slstm_bytes) << held[2] << " " << held[3];
}

TEST(LanguageModel, GradientsReachEveryParameter) {
  for (bool tied : {true, false}) {
    torch::manual_seed(2);
    LanguageModel model(every_kind(tied));
    model->to(torch::kDouble);
    perturb_parameters(*model, 0.2);
    const torch::Tensor tokens = random_tokens(2, 7, 11);
    torch::nn::functional::cross_entropy(model(tokens).flatten(0, 1), tokens.flatten()).backward();
    for (const auto& item : model->named_parameters()) {
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_GT(item.value().grad().abs().max().item<double>(), 0.0) << item.key();
    }
  }
}

// The checkpoint and export keys. Changing one breaks every saved checkpoint:
// change this list only together with a conversion.
TEST(LanguageModel, ParameterNamesAreStable) {
  const std::vector<std::string> want = {
      "embedding.weight",
      "blocks.0.mixer_norm.weight",
      "blocks.0.mixer.r",
      "blocks.0.mixer.b",
      "blocks.0.mixer.wx.weight",
      "blocks.0.mixer.out_proj.weight",
      "blocks.0.ffn_norm.weight",
      "blocks.0.ffn.gate.weight",
      "blocks.0.ffn.up.weight",
      "blocks.0.ffn.down.weight",
      "blocks.1.mixer_norm.weight",
      "blocks.1.mixer.r",
      "blocks.1.mixer.b",
      "blocks.1.mixer.conv.weight",
      "blocks.1.mixer.conv.bias",
      "blocks.1.mixer.igate.weight",
      "blocks.1.mixer.fgate.weight",
      "blocks.1.mixer.zgate.weight",
      "blocks.1.mixer.ogate.weight",
      "blocks.1.mixer.group_norm.weight",
      "blocks.1.ffn_norm.weight",
      "blocks.1.ffn.gate.weight",
      "blocks.1.ffn.up.weight",
      "blocks.1.ffn.down.weight",
      "blocks.2.mixer_norm.weight",
      "blocks.2.mixer.gate_bias",
      "blocks.2.mixer.in_proj.weight",
      "blocks.2.mixer.out_proj.weight",
      "blocks.2.ffn_norm.weight",
      "blocks.2.ffn.gate.weight",
      "blocks.2.ffn.up.weight",
      "blocks.2.ffn.down.weight",
      "blocks.3.mixer_norm.weight",
      "blocks.3.mixer.wq.weight",
      "blocks.3.mixer.wk.weight",
      "blocks.3.mixer.wv.weight",
      "blocks.3.mixer.wo.weight",
      "blocks.3.ffn_norm.weight",
      "blocks.3.ffn.gate.weight",
      "blocks.3.ffn.up.weight",
      "blocks.3.ffn.down.weight",
      "blocks.4.mixer_norm.weight",
      "blocks.4.mixer.r",
      "blocks.4.mixer.b",
      "blocks.4.mixer.wx.weight",
      "blocks.4.mixer.out_proj.weight",
      "blocks.4.ffn_norm.weight",
      "blocks.4.ffn.gate.weight",
      "blocks.4.ffn.up.weight",
      "blocks.4.ffn.down.weight",
      "blocks.5.mixer_norm.weight",
      "blocks.5.mixer.r",
      "blocks.5.mixer.b",
      "blocks.5.mixer.wx.weight",
      "blocks.5.mixer.out_proj.weight",
      "blocks.5.ffn_norm.weight",
      "blocks.5.ffn.gate.weight",
      "blocks.5.ffn.up.weight",
      "blocks.5.ffn.down.weight",
      "final_norm.weight",
      "head.weight",
  };
  LanguageModel model(every_kind(/*tie_embeddings=*/false));
  EXPECT_EQ(parameter_names(*model), want);
  LanguageModel tied(every_kind(/*tie_embeddings=*/true));
  EXPECT_EQ(parameter_names(*tied), std::vector<std::string>(want.begin(), want.end() - 1));
}

// d_model 8, 2 heads of D = 4, feed-forwards 64 wide, vocab 11:
//   lstm      wx 4*2*4*8 + r 4*2*4*4 + b 4*2*4 + out 8*8        = 480
//   slstm     conv 8*4+8 + gates 4*2*4*4 + r 128 + b 32 + norm 8 = 336
//   scan      in 3*8*8 + gate_bias 8 + out 8*8                  = 264
//   attention 4*8*8                                             = 256
//   gru       wx 3*2*4*8 + r 3*2*4*4 + b 4*2*4 + out 64         = 384
//   elman     wx 8*8 + r 2*4*4 + b 8 + out 64                   = 168
//   ffn 6 * 3*8*64 = 9216, norms 6*2*8 + 8 = 104, embedding = head = 88.
TEST(ParameterGroups, MatchHandCount) {
  LanguageModel model(every_kind(/*tie_embeddings=*/false));
  const std::vector<ParameterGroup> groups = count_parameters_by_group(*model);
  const std::vector<std::pair<std::string, int64_t>> want = {{"embedding", 88},
                                                             {"lstm mixers", 480},
                                                             {"slstm mixers", 336},
                                                             {"linear_scan mixers", 264},
                                                             {"transformer mixers", 256},
                                                             {"gru mixers", 384},
                                                             {"elman mixers", 168},
                                                             {"feed-forward", 9216},
                                                             {"norms", 104},
                                                             {"head", 88}};
  ASSERT_EQ(groups.size(), want.size());
  int64_t total = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(groups[i].name, want[i].first);
    EXPECT_EQ(groups[i].count, want[i].second) << want[i].first;
    total += groups[i].count;
  }
  int64_t numel = 0;
  for (const torch::Tensor& p : model->parameters()) numel += p.numel();
  EXPECT_EQ(total, numel);
  EXPECT_EQ(total, 11384);

  const std::string table = format_parameter_counts(groups);
  EXPECT_NE(table.find("lstm mixers"), std::string::npos) << table;
  EXPECT_NE(table.find("11,384"), std::string::npos) << table;
  EXPECT_NE(table.find("11,296"), std::string::npos) << table;  // without the embedding

  // Tied: no head group, and a kind used twice is one group.
  LanguageModelOptions o = every_kind(true);
  set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kLstm});
  const std::vector<ParameterGroup> tied = count_parameters_by_group(*LanguageModel(o));
  ASSERT_EQ(tied.size(), 4u);
  EXPECT_EQ(tied[1].name, "lstm mixers");
  EXPECT_EQ(tied[1].count, 2 * 480);
  EXPECT_EQ(tied.back().name, "norms");
}

// AdamW's split: biases, norm weights and the embedding go undecayed.
TEST(ParameterGroups, WeightDecaySkipsBiasesNormsAndEmbedding) {
  LanguageModel model(every_kind(/*tie_embeddings=*/false));
  std::vector<std::string> undecayed;
  for (const std::string& name : parameter_names(*model))
    if (!takes_weight_decay(name)) undecayed.push_back(name);
  const std::vector<std::string> want = {
      "embedding.weight",           "blocks.0.mixer_norm.weight",
      "blocks.0.mixer.b",           "blocks.0.ffn_norm.weight",
      "blocks.1.mixer_norm.weight", "blocks.1.mixer.b",
      "blocks.1.mixer.conv.bias",   "blocks.1.mixer.group_norm.weight",
      "blocks.1.ffn_norm.weight",   "blocks.2.mixer_norm.weight",
      "blocks.2.mixer.gate_bias",   "blocks.2.ffn_norm.weight",
      "blocks.3.mixer_norm.weight", "blocks.3.ffn_norm.weight",
      "blocks.4.mixer_norm.weight", "blocks.4.mixer.b",
      "blocks.4.ffn_norm.weight",   "blocks.5.mixer_norm.weight",
      "blocks.5.mixer.b",           "blocks.5.ffn_norm.weight",
      "final_norm.weight"};
  EXPECT_EQ(undecayed, want);
  EXPECT_TRUE(takes_weight_decay("head.weight"));
  EXPECT_TRUE(takes_weight_decay("blocks.0.mixer.r"));
}

TEST(LanguageModel, FlopsAreBlocksPlusHead) {
  LanguageModel model(every_kind(true));
  double blocks = 0;
  for (const ResidualBlock& block : model->blocks()) blocks += block->forward_flops_per_token(64);
  EXPECT_DOUBLE_EQ(model->forward_flops_per_token(64), blocks + 2.0 * 8 * 11);
  EXPECT_DOUBLE_EQ(model->training_flops_per_token(64), 3 * model->forward_flops_per_token(64));
}

TEST(LanguageModel, FinalNormFollowsTheLastBlockUnlessSet) {
  const auto final_norm_kind = [](const LanguageModelOptions& o) {
    LanguageModel model(o);
    return std::dynamic_pointer_cast<NormImpl>(model->named_children()["final_norm"])->kind();
  };
  LanguageModelOptions o = every_kind(true);
  set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kTransformer});
  EXPECT_EQ(final_norm_kind(o), NormKind::kRmsNorm);
  set_layer_kinds(o.model, {BlockKind::kTransformer, BlockKind::kLstm});
  EXPECT_EQ(final_norm_kind(o), NormKind::kLayerNorm);
  o.final_norm = NormKind::kRmsNorm;
  EXPECT_EQ(final_norm_kind(o), NormKind::kRmsNorm);
}

TEST(LanguageModel, RejectsBadOptionsAndInput) {
  LanguageModelOptions o = every_kind(true);
  o.vocab_size = 0;
  expect_error<OptionsError>([&] { LanguageModel{o}; },
                             "model: vocab_size must be positive, got 0");
  o = every_kind(true);
  o.model.n_layers = 0;
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "model: n_layers must be positive, got 0");
  o = every_kind(true);
  o.model.kind = {"lstm", "gru"};
  expect_error<OptionsError>([&] { LanguageModel{o}; },
                             "model: kind lists 2 kinds for 6 layers; give one kind (every layer) or one per layer");
  o.model.kind = {"lstm", "gru", "lstm", "lstm", "lstm", "rnn"};
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "unknown block kind 'rnn'");
  o = every_kind(true);
  o.model.structure = "flat";
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "model: structure must be residual or plain, got 'flat'");
  o = every_kind(true);
  o.model.backend = "fast";
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "model: flashrnn: unknown backend 'fast'");
  o = every_kind(true);
  o.model.recompute_layers = -1;
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "model: recompute_layers must not be negative, got -1");
  o = every_kind(true);
  o.model.dropout = 1.0;
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "model: dropout must lie in [0, 1), got 1");
  o = every_kind(true);
  o.model.wavefront_chunks = -2;
  expect_error<OptionsError>([&] { LanguageModel{o}; }, "model: wavefront_chunks must not be negative, got -2");

  LanguageModel model(every_kind(true));
  expect_error<InputError>(
      [&] {
        model(torch::zeros({2, 3}));
      },
      "tokens must be int64 or int32 [batch, time], got Float [2, 3]");
  expect_error<InputError>([&] { model(torch::zeros({6}, torch::kLong)); }, "got Long [6]");
  expect_error<InputError>(
      [&] {
        model(torch::full({1, 2}, 11, torch::kLong));
      },
      "token ids must lie in [0, 11), got 11");
  expect_error<InputError>([&] { model(torch::full({1, 2}, -1, torch::kLong)); }, "got -1");
  expect_error<InputError>([&] { model->forward_step(torch::zeros({2}, torch::kLong), {}); },
                           "the state has 0 entries for 6 blocks");
  expect_error<InputError>(
      [&] {
        model->forward_step(torch::zeros({2, 1}, torch::kLong), model->initial_state(2));
      },
      "tokens_t must be int64 or int32 [batch]");
}

// Autocast to bfloat16 on one device type for as long as it lives (the
// trainer's mixed precision); `enabled` false turns it off for a while.
class Bfloat16Autocast {
 public:
  explicit Bfloat16Autocast(at::DeviceType device, bool enabled = true)
      : device_(device),
        was_enabled_(at::autocast::is_autocast_enabled(device)),
        old_dtype_(at::autocast::get_autocast_dtype(device)) {
    at::autocast::set_autocast_dtype(device_, at::kBFloat16);
    at::autocast::set_autocast_enabled(device_, enabled);
  }
  ~Bfloat16Autocast() {
    at::autocast::set_autocast_enabled(device_, was_enabled_);
    at::autocast::set_autocast_dtype(device_, old_dtype_);
    at::autocast::clear_cache();
  }

 private:
  at::DeviceType device_;
  bool was_enabled_;
  at::ScalarType old_dtype_;
};

// bf16 autocast over float32 parameters, on the CPU and (where present) a GPU:
// the recurrent op then sees bf16 Wx next to float32 R, b and initial states
// (autocast does not reach custom ops; the op takes them as they are). The loss
// stays near float32's, every parameter gets a float32 gradient, step-by-step
// mode runs and its carried states stay float32 and near those of float32.
TEST(LanguageModel, RunsUnderBfloat16Autocast) {
  std::vector<at::DeviceType> devices{at::kCPU};
  if (torch::cuda::is_available()) devices.push_back(at::kCUDA);
  for (const at::DeviceType device : devices) {
    SCOPED_TRACE(c10::DeviceTypeName(device));
    torch::manual_seed(4);
    LanguageModel model(every_kind(false));
    model->to(device);
    const torch::Tensor tokens = random_tokens(2, 8, 11).to(device);
    const auto loss_of = [&] {
      return torch::nn::functional::cross_entropy(model(tokens).flatten(0, 1).to(torch::kFloat),
                                                  tokens.flatten());
    };
    const double float32_loss = loss_of().item<double>();
    Bfloat16Autocast autocast(device);
    const torch::Tensor loss = loss_of();
    EXPECT_NEAR(loss.item<double>(), float32_loss, 0.05 * float32_loss);
    loss.backward();
    for (const auto& item : model->named_parameters()) {
      const torch::Tensor& grad = item.value().grad();
      ASSERT_TRUE(grad.defined()) << item.key();
      EXPECT_EQ(grad.scalar_type(), torch::kFloat) << item.key();
      EXPECT_TRUE(grad.isfinite().all().item<bool>()) << item.key();
    }
    torch::NoGradGuard no_grad;
    ModelState state = model->initial_state(2);
    for (int64_t t = 0; t < 3; ++t) state = model->forward_step(tokens.select(1, t), state).state;
    ASSERT_EQ(state.size(), 6u);
    ModelState float32_state = model->initial_state(2);
    {
      Bfloat16Autocast off(device, false);
      for (int64_t t = 0; t < 3; ++t)
        float32_state = model->forward_step(tokens.select(1, t), float32_state).state;
    }
    for (size_t block = 0; block < state.size(); ++block) {
      for (const auto& [name, tensor] : state[block]) {
        if (name != "states") continue;  // the recurrent mixers' (the KV cache is bf16)
        EXPECT_EQ(tensor.scalar_type(), torch::kFloat) << "block " << block << " " << name;
        const torch::Tensor& exact = float32_state[block].at(name);
        EXPECT_LT((tensor - exact).abs().max().item<double>(), 0.1 * (exact.abs().max().item<double>() + 1))
            << "block " << block << " " << name;
      }
    }
  }
}

// A tiny LM of mixed blocks memorises one fixed batch: the loss falls from
// about log(vocab) by a large factor within a few seconds on the CPU.
TEST(LanguageModel, TinyModelFitsAFixedBatch) {
  torch::manual_seed(3);
  LanguageModelOptions o;
  o.vocab_size = 16;
  o.model.dim = 32;
  set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kTransformer});
  o.model.n_heads = 2;
  LanguageModel model(o);
  const torch::Tensor batch = random_tokens(4, 33, o.vocab_size);
  const torch::Tensor inputs = batch.narrow(1, 0, 32), targets = batch.narrow(1, 1, 32);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-2));
  const auto start = std::chrono::steady_clock::now();
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(model(inputs).flatten(0, 1), targets.flatten());
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NEAR(first, std::log(16.0), 0.3);
  EXPECT_LT(last, first / 10) << "first " << first << " last " << last;
  RecordProperty("seconds", std::to_string(seconds));
  std::printf("fit a fixed batch: loss %.3f -> %.3f in %.1f s\n", first, last, seconds);
}

// --- the plain structure: bare recurrent layers, no norms -------------------------------

// vocab 11, d_model 8, an lstm, a gru and an elman layer of 2 heads x 4.
LanguageModelOptions plain_layers(bool tie_embeddings) {
  LanguageModelOptions o;
  o.vocab_size = 11;
  o.model.dim = 8;
  set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kGru, BlockKind::kElman});
  o.model.structure = "plain";
  o.model.tie_embeddings = tie_embeddings;
  o.model.n_heads = 2;
  return o;
}

TEST(PlainLanguageModel, HasOnlyTheRecurrentLayersEmbeddingAndHead) {
  LanguageModel model(plain_layers(/*tie_embeddings=*/false));
  const std::vector<std::string> want = {
      "embedding.weight",         "blocks.0.mixer.r", "blocks.0.mixer.b",
      "blocks.0.mixer.wx.weight", "blocks.1.mixer.r", "blocks.1.mixer.b",
      "blocks.1.mixer.wx.weight", "blocks.2.mixer.r", "blocks.2.mixer.b",
      "blocks.2.mixer.wx.weight", "head.weight"};
  EXPECT_EQ(parameter_names(*model), want);
  for (const ResidualBlock& block : model->blocks()) {
    EXPECT_TRUE(block->is_plain());
    EXPECT_FALSE(block->has_feed_forward());
  }
  EXPECT_EQ(model(random_tokens(3, 5, 11)).sizes(), (std::vector<int64_t>{3, 5, 11}));
  LanguageModel tied(plain_layers(/*tie_embeddings=*/true));
  EXPECT_EQ(parameter_names(*tied), std::vector<std::string>(want.begin(), want.end() - 1));
}

// Two one-head plain LSTM layers and an untied head are torch's two-layer
// nn.LSTM on the embeddings followed by a linear map: no norm, residual add or
// projection anywhere.
TEST(PlainLanguageModel, TwoOneHeadLstmLayersAreTorchLstmAndALinearHead) {
  torch::manual_seed(5);
  LanguageModelOptions o = plain_layers(/*tie_embeddings=*/false);
  set_layer_kinds(o.model, {BlockKind::kLstm, BlockKind::kLstm});
  o.model.n_heads = 1;
  LanguageModel model(o);
  model->to(torch::kDouble);
  perturb_parameters(*model, 0.3);
  auto ours = model->named_parameters();

  torch::nn::LSTM lstm(torch::nn::LSTMOptions(8, 8).num_layers(2).batch_first(true));
  lstm->to(torch::kDouble);
  {
    torch::NoGradGuard no_grad;
    for (int layer = 0; layer < 2; ++layer) {
      const std::string ours_prefix = "blocks." + std::to_string(layer) + ".mixer.";
      const std::string suffix = "_l" + std::to_string(layer);
      lstm->named_parameters()["weight_ih" + suffix].copy_(ours[ours_prefix + "wx.weight"]);
      lstm->named_parameters()["weight_hh" + suffix].copy_(ours[ours_prefix + "r"].view({32, 8}));
      lstm->named_parameters()["bias_ih" + suffix].copy_(ours[ours_prefix + "b"].flatten());
      lstm->named_parameters()["bias_hh" + suffix].zero_();
    }
  }
  const torch::Tensor tokens = random_tokens(2, 9, 11);
  const torch::Tensor h = std::get<0>(lstm(ours["embedding.weight"].index({tokens})));
  const torch::Tensor want = torch::linear(h, ours["head.weight"]);
  EXPECT_LT(max_abs_diff(model(tokens), want), 1e-12);
}

TEST(PlainLanguageModel, StepByStepEqualsFullSequence) {
  for (bool tied : {true, false}) {
    torch::manual_seed(6);
    LanguageModel model(plain_layers(tied));
    model->to(torch::kDouble);
    perturb_parameters(*model, 0.2);
    const int64_t batch = 2, steps = 9;
    const torch::Tensor tokens = random_tokens(batch, steps, 11);
    const torch::Tensor full = model(tokens);
    ModelState state = model->initial_state(batch);
    ASSERT_EQ(state.size(), 3u);
    for (int64_t t = 0; t < steps; ++t) {
      ModelStepOutput step = model->forward_step(tokens.select(1, t), state);
      EXPECT_LT(max_abs_diff(step.logits, full.select(1, t)), 1e-12)
          << "tied " << tied << " step " << t;
      state = std::move(step.state);
    }
  }
}

// A plain lstm layer of 2 heads x 4 on d_model 8: input projection
// 2 * 8 * 4*2*4 = 512 and recurrent matmul 2 * 4*2*4*4 = 256, no output projection.
TEST(PlainLanguageModel, FlopsHaveNoOutputProjection) {
  LanguageModelOptions o = plain_layers(false);
  set_layer_kinds(o.model, {BlockKind::kLstm});
  LanguageModel model(o);
  EXPECT_DOUBLE_EQ(model->blocks().front()->forward_flops_per_token(64), 512.0 + 256.0);
  EXPECT_DOUBLE_EQ(model->forward_flops_per_token(64), 768.0 + 2.0 * 8 * 11);
}

TEST(PlainLanguageModel, RejectsOtherKindsAndHeadsThatDoNotMakeTheWidth) {
  for (BlockKind kind : {BlockKind::kSlstm, BlockKind::kLinearScan, BlockKind::kTransformer}) {
    LanguageModelOptions o = plain_layers(true);
    set_layer_kinds(o.model, {BlockKind::kLstm, kind});
    expect_error<OptionsError>([&] { LanguageModel{o}; },
                               std::string(to_string(kind)) +
                                   " block: the plain structure stacks lstm, gru and elman layers "
                                   "only; use the residual structure for " +
                                   std::string(to_string(kind)));
  }
  LanguageModelOptions o = plain_layers(true);
  o.model.head_dim = 3;
  expect_error<OptionsError>([&] { LanguageModel{o}; },
                             "plain lstm layer: num_heads x head_dim = 2 x 3 = 6 must equal "
                             "d_model (8)");
}

}  // namespace
}  // namespace flashtrain::models::testing
