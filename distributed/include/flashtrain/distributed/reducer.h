#pragma once
// Data-parallel gradient reduction. The Reducer owns one flat buffer per
// bucket (see bucket_plan.h); each parameter's .grad is a view into its
// bucket, so autograd accumulates straight into the buffers. A hook after each
// parameter's gradient accumulation marks it ready; a bucket's all-reduce
// starts as soon as all its parameters are ready (buckets launch in plan
// order, the same on every rank). Gradients are divided by the world size
// before the sum, so the buffers end up holding the mean.
//
// Per optimizer step:
//   reducer.zero_grad();                       // not optimizer.zero_grad()
//   for each micro-step i of n:
//     reducer.prepare_for_backward(/*sync=*/i == n - 1);
//     loss.backward();
//   reducer.wait_all();                        // then clip, optimizer.step()
//
// A CUDA graph of the step (trainer/device_step.h) calls wait_all_on_device()
// instead, which the graph captures: the hooks' all-reduces overlap backward
// as above. Or it accumulates every micro-step with sync=false inside a graph
// and all-reduces between graphs: reduce_all_now(), then wait_all_on_device().
#include "flashtrain/distributed/bucket_plan.h"
#include "flashtrain/distributed/communicator.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace flashtrain::distributed {

// Where the communication time went, summed over the sync steps since the
// last take_stats(). wait_seconds is the exposed part: time wait_all spent
// blocked on all-reduces after the backward pass had finished on the device
// (Communicator::synchronize_compute first). comm_seconds is the all-reduces'
// own duration (the GPU time of each NCCL collective), where the backend
// measures it. overlap = 1 - wait/comm: the share hidden behind backward.
struct ReducerStats {
  std::int64_t sync_steps = 0;
  std::int64_t collectives = 0;
  double wait_seconds = 0.0;
  double backward_tail_seconds = 0.0;  // waiting for the device to finish backward
  double comm_seconds = 0.0;
  std::int64_t timed_collectives = 0;  // those with a measured duration
  std::int64_t bytes = 0;

  // nullopt until some duration was measured.
  std::optional<double> overlap() const;
};

class Reducer {
 public:
  // params: leaf tensors requiring grad, in registration order; names label errors.
  Reducer(std::vector<torch::Tensor> params, std::vector<std::string> names,
          std::shared_ptr<Communicator> comm, BucketOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // sync=false: a non-final accumulation micro-step, no communication.
  void prepare_for_backward(bool sync = true);
  // Blocks until every bucket of a sync step is reduced. Throws, naming the
  // parameters, when some never received a gradient in the sync backward.
  void wait_all();
  // As wait_all(), but the host does not wait: work queued after it on the
  // current CUDA stream reads the sums. Keeps no timing statistics (the host
  // never sees the collectives end).
  void wait_all_on_device();
  // Starts the all-reduce of every bucket now, as a sync backward would have
  // (the gradients were accumulated by backwards with sync=false).
  void reduce_all_now();
  // Zeroes the bucket buffers (and so every .grad).
  void zero_grad();
  // Makes the gradient accumulators (and the hooks on them) again, on the
  // current CUDA stream. Autograd accumulates a leaf's gradient on the stream
  // that was current when its accumulator was made (here: the constructor's);
  // a step that runs on another stream, as a CUDA graph's capture does, calls
  // this under that stream, else its backward reaches back to the old one.
  void accumulate_on_current_stream();

  const BucketPlan& plan() const { return plan_; }
  Communicator& communicator() const { return *comm_; }
  const std::vector<ParamSpec>& specs() const { return specs_; }
  const torch::Tensor& bucket_buffer(std::size_t b) const { return buffers_.at(b); }
  // Buckets in the order their all-reduce launched since prepare_for_backward.
  const std::vector<std::size_t>& launch_order() const { return launch_order_; }
  // All-reduces launched in total (all steps).
  std::int64_t launches() const { return launches_; }
  // The statistics since the last call, and reset them.
  ReducerStats take_stats();

  // Called from the autograd hooks (public for the hook type only).
  void mark_ready(std::size_t param);

 private:
  void bind_grads();
  void add_hooks();
  void remove_hooks();
  void launch_ready_buckets();
  // False for a step without communication; throws naming the parameters
  // without a gradient when a sync step left a bucket unlaunched.
  bool all_buckets_launched();

  std::vector<torch::Tensor> params_;
  std::vector<ParamSpec> specs_;
  std::shared_ptr<Communicator> comm_;
  BucketPlan plan_;
  std::vector<torch::Tensor> buffers_;
  std::vector<torch::Tensor> views_;  // per parameter
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::uintptr_t> hook_keys_;

  bool sync_ = true;
  bool prepared_ = false;
  std::vector<bool> ready_;
  std::vector<std::size_t> pending_;  // per bucket: parameters not yet ready
  std::size_t next_bucket_ = 0;
  std::vector<std::size_t> launch_order_;
  std::vector<std::shared_ptr<Work>> works_;
  std::int64_t launches_ = 0;
  ReducerStats stats_;
};

}  // namespace flashtrain::distributed
