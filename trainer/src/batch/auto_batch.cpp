#include "flashtrain/trainer/batch/auto_batch.h"

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "step/token_loss.h"
#include "flashtrain/data/tasks.h"
#include "flashtrain/distributed/collectives.h"
#include "flashtrain/trainer/batch/batch_probe.h"
#include "flashtrain/trainer/step/device_step.h"
#include "flashtrain/trainer/step/graph_capture.h"
#include "flashtrain/trainer/run/model_factory.h"
#include "flashtrain/trainer/batch/task_setup.h"

namespace flashtrain::trainer {
namespace {

namespace allocator = c10::cuda::CUDACachingAllocator;

// A synthetic batch of the run's shape: token ids count up (mod the
// vocabulary), so no generator is touched.
std::pair<torch::Tensor, torch::Tensor> synthetic_batch(torch::Device device, std::int64_t batch,
                                                        std::int64_t context, std::int64_t vocab_size) {
  const torch::Tensor tokens = torch::arange(batch * (context + 1), torch::TensorOptions(torch::kLong).device(device))
                                   .remainder(vocab_size)
                                   .reshape({batch, context + 1});
  return {tokens.narrow(1, 0, context).contiguous(), tokens.narrow(1, 1, context).contiguous()};
}

// One forward and backward pass of the training step (Trainer's step, with
// the same autocast and loss) on a synthetic batch, on the current stream.
void forward_backward(models::LanguageModelImpl& model, const torch::Tensor& inputs, const torch::Tensor& targets,
                      bool bf16) {
  summed_token_loss(forward_logits(model, inputs, bf16), targets).backward();
}

// The eager pass's peak bytes allocated on the GPU, or nullopt when it ran
// out of memory. Leaves no gradients and an empty cache behind.
std::optional<std::int64_t> measure_eager_peak(models::LanguageModelImpl& model, torch::Device device, bool bf16,
                                               std::int64_t batch, std::int64_t context, std::int64_t vocab_size) {
  const c10::DeviceIndex index = device.index();
  std::optional<std::int64_t> peak;
  allocator::emptyCache();
  allocator::resetPeakStats(index);
  try {
    const auto [inputs, targets] = synthetic_batch(device, batch, context, vocab_size);
    forward_backward(model, inputs, targets, bf16);
    torch::cuda::synchronize(index);
    peak = allocator::getDeviceStats(index).allocated_bytes[0].peak;  // [0]: all pools
  } catch (const c10::Error& e) {
    if (!is_out_of_memory(e)) throw;
  }
  model.zero_grad(/*set_to_none=*/true);  // the gradients live in the graph's pool, released with them
  allocator::emptyCache();
  return peak;
}

// The captured pass (training.cuda_graph): what stays allocated outside the
// graph (the model, the batch) plus the private pool its capture reserved,
// as DeviceStep holds them while it replays; nullopt when it ran out of
// memory. Call after an eager pass on the same stream (the warm-up a capture
// needs: cuBLAS handles, the kernels' one-time setup).
std::optional<std::int64_t> measure_graphed_peak(models::LanguageModelImpl& model, torch::Device device, bool bf16,
                                                 std::int64_t batch, std::int64_t context, std::int64_t vocab_size) {
  std::optional<std::int64_t> peak;
  allocator::emptyCache();
  try {
    const auto [inputs, targets] = synthetic_batch(device, batch, context, vocab_size);
    const std::int64_t outside = allocator::getDeviceStats(device.index()).allocated_bytes[0].current;
    at::cuda::CUDAGraph graph;
    peak = outside + capture_graph(graph, [&] { forward_backward(model, inputs, targets, bf16); });
  } catch (const c10::Error& e) {
    if (!is_out_of_memory(e)) throw;
  }
  model.zero_grad(/*set_to_none=*/true);
  allocator::emptyCache();
  return peak;
}

struct GpuProbe {
  std::optional<ProbeResult> result;  // none: even a batch of 1 does not fit
  std::string error;                  // why not
  ProbeBudget budget;
};

GpuProbe probe_gpu(const config::ResolvedConfig& resolved, torch::Device device, std::int64_t vocab_size,
                   std::int64_t per_rank) {
  const config::Config& c = resolved.config;
  const bool bf16 = c.training.mixed_precision == "bf16";
  const std::int64_t context = train_context(c);
  const bool graphed = step_is_graphed(c, device);
  const c10::cuda::CUDAGuard guard(device);
  // A capture needs a stream other than the default one; the eager pass runs
  // there too, as DeviceStep's warm-up steps do.
  const c10::cuda::CUDAStreamGuard on_side_stream(c10::cuda::getStreamFromPool(false, device.index()));
  GpuProbe probe;
  {
    models::LanguageModel model = build_model(resolved, vocab_size, device);
    model->train();
    std::int64_t parameters = 0;
    for (const torch::Tensor& p : model->parameters()) parameters += p.numel();
    probe.budget.optimizer_state_bytes = 2 * parameters * std::int64_t(sizeof(float));  // AdamW's two fp32 moments

    allocator::emptyCache();
    std::size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
      throw std::runtime_error("training.local_batch_size = auto: cudaMemGetInfo failed on " + device.str());
    // What this process can have: the free memory and what its allocator holds
    // now (the throwaway model's parameters, which the measured peak includes).
    probe.budget.available_bytes =
        std::int64_t(free_bytes) + allocator::getDeviceStats(device.index()).reserved_bytes[0].current;

    try {
      probe.result = probe_local_batch(per_rank, kMaxProbedBatch, probe.budget, [&](std::int64_t batch) {
        // The warm-up steps run eagerly, the rest as the graph: the larger of the two.
        std::optional<std::int64_t> peak = measure_eager_peak(*model, device, bf16, batch, context, vocab_size);
        if (peak && graphed) {
          const std::optional<std::int64_t> graph = measure_graphed_peak(*model, device, bf16, batch, context,
                                                                         vocab_size);
          peak = graph ? std::max(*peak, *graph) : graph;
        }
        return peak;
      });
    } catch (const std::runtime_error& e) {
      probe.error = e.what();
    }
  }
  allocator::emptyCache();  // the throwaway model's memory
  return probe;
}

}  // namespace

std::int64_t resolve_auto_local_batch(const config::ResolvedConfig& resolved, const World& world,
                                      std::int64_t vocab_size, std::int64_t saved_local_batch, std::ostream& log) {
  const std::int64_t per_rank = global_batch_per_rank(resolved.config, world.size);
  const std::string per_rank_text =
      per_rank > 0 ? "the global batch per rank, " + std::to_string(per_rank) : "no bound: global_batch_size = 0";

  if (!world.device.is_cuda()) {
    // The same on every rank once they know rank 0's saved size.
    std::int64_t saved = saved_local_batch;
    if (world.distributed())
      saved = distributed::max_over_ranks(*world.comm, {world.is_rank0() ? saved_local_batch : 0})[0];
    const std::int64_t fallback = cpu_auto_local_batch(per_rank);
    const std::int64_t batch = prefer_saved_local_batch(fallback, saved, per_rank);
    log << "local batch: auto -> " << batch << " (on the CPU nothing is probed: the largest power of two <= "
        << kCpuAutoBatchCap << " that divides " << per_rank_text << ", is " << fallback << ")"
        << (batch != fallback ? "; kept the checkpoint's " + std::to_string(batch) + " to resume with its layout" : "")
        << std::endl;
    return batch;
  }

  const GpuProbe probe = probe_gpu(resolved, world.device, vocab_size, per_rank);
  std::int64_t agreed = probe.result ? probe.result->batch : 0;  // 0: does not fit
  std::int64_t saved = saved_local_batch;
  if (world.distributed()) {
    // The smallest over ranks (as the maximum of the negatives) and rank 0's saved size.
    const std::vector<std::int64_t> over_ranks =
        distributed::max_over_ranks(*world.comm, {-agreed, world.is_rank0() ? saved_local_batch : 0});
    agreed = -over_ranks[0];
    saved = over_ranks[1];
  }
  if (agreed == 0)
    throw std::runtime_error(!probe.error.empty() ? probe.error
                                                  : "training.local_batch_size = auto: even a batch of 1 does not fit "
                                                    "the GPU of another rank (its error names the memory)");
  const std::int64_t batch = prefer_saved_local_batch(agreed, saved, per_rank);
  char margin[16];
  std::snprintf(margin, sizeof margin, "%g", probe.budget.margin);
  log << "local batch: auto -> " << batch << " (probe on " << world.device.str() << " with "
      << format_gib(probe.budget.available_bytes) << " available, optimizer state "
      << format_gib(probe.budget.optimizer_state_bytes) << ", margin " << margin << ", candidates dividing "
      << per_rank_text << ": " << describe_probe(*probe.result, probe.budget) << ")";
  if (agreed != probe.result->batch) log << "; " << agreed << ", the smallest over " << world.size << " ranks";
  if (batch != agreed)
    log << "; kept the checkpoint's " << batch << ", which fits, to resume with its layout";
  log << std::endl;
  return batch;
}

}  // namespace flashtrain::trainer
