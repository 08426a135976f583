// Timing on the current CUDA stream with CUDA events, and the device's copy
// bandwidth (the ceiling a memory-bound kernel is measured against).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>

namespace scanbench {

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
};

// Runs fn `warmup` times untimed, then `reps` times between pairs of events. The
// host does not wait between repetitions, so its launch overhead overlaps the
// previous repetition's GPU work, as in a training step.
template <class Fn>
Timing time_on_gpu(Fn&& fn, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<at::cuda::CUDAEvent> starts, ends;
  starts.reserve(reps);
  ends.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    starts.emplace_back(cudaEventDefault);
    ends.emplace_back(cudaEventDefault);
  }
  const auto stream = at::cuda::getCurrentCUDAStream();
  for (int i = 0; i < reps; ++i) {
    starts[i].record(stream);
    fn();
    ends[i].record(stream);
  }
  ends.back().synchronize();
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) ms.push_back(starts[i].elapsed_time(ends[i]));
  std::sort(ms.begin(), ms.end());
  Timing t;
  t.reps = reps;
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  t.median_ms = ms[ms.size() / 2];
  return t;
}

// Device-to-device copy of a 2 GiB buffer; bytes read plus bytes written per
// second. The untimed copies first (about half a second) bring an idle GPU's
// clocks up before anything is timed.
inline double copy_bandwidth_bytes_per_s() {
  const int64_t bytes = int64_t(2) << 30;
  const auto options = at::TensorOptions().device(at::kCUDA).dtype(at::kByte);
  at::Tensor src = at::randint(0, 255, {bytes}, options), dst = at::empty({bytes}, options);
  const Timing t = time_on_gpu([&] { dst.copy_(src); }, 500, 20);
  return 2.0 * double(bytes) / (t.median_ms * 1e-3);
}

}  // namespace scanbench
