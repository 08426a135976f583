#include "flashtrain/trainer/run/world_rules.h"

#include <stdexcept>

namespace flashtrain::trainer {

std::string choose_rank_device(const std::string& setting, int local_rank, int gpu_count) {
  if (setting == "cpu") return "cpu";
  if (setting == "auto" && gpu_count == 0) return "cpu";
  if (setting == "auto" || setting == "cuda") {
    if (local_rank >= gpu_count)
      throw std::invalid_argument("LOCAL_RANK=" + std::to_string(local_rank) + " needs GPU " +
                                  std::to_string(local_rank) + ", but " + std::to_string(gpu_count) +
                                  " GPU(s) are visible; start at most one rank per GPU");
    return "cuda:" + std::to_string(local_rank);
  }
  throw std::invalid_argument("training.device = " + setting +
                              " names one device, but every rank needs its own; use auto or cuda (rank r "
                              "takes cuda:LOCAL_RANK) or cpu");
}

bool should_launch_ranks(std::int64_t nproc, const distributed::Environment& env) {
  return nproc > 1 && env.launcher != distributed::Launcher::torchrun && !env.is_distributed();
}

void check_nproc_fits(std::int64_t nproc, const distributed::Environment& env) {
  if (nproc <= 1 || nproc == env.world_size) return;
  throw std::invalid_argument("parallelism.nproc = " + std::to_string(nproc) + ", but " +
                              distributed::launcher_name(env.launcher) + " started " +
                              std::to_string(env.world_size) + " rank(s); under a launcher keep parallelism.nproc = 1");
}

std::vector<std::string> plan_resume_layout(const BatchLayout& saved, const BatchLayout& now,
                                            std::optional<std::int64_t> position) {
  std::vector<std::string> notes;
  const std::int64_t row = now.world_size * now.local_batch_size;
  if (position && *position % row != 0) {
    std::string fits;
    for (std::int64_t w = 1; w <= 64; ++w)
      if (*position % (w * now.local_batch_size) == 0 && saved.global_batch() % (w * now.local_batch_size) == 0)
        fits += (fits.empty() ? "" : ", ") + std::to_string(w);
    throw std::runtime_error(
        "cannot continue the checkpoint's data stream on " + std::to_string(now.world_size) + " rank(s): it stopped at " +
        std::to_string(*position) + " windows into the epoch, not a multiple of world size x local_batch_size = " +
        std::to_string(now.world_size) + " x " + std::to_string(now.local_batch_size) + " = " + std::to_string(row) +
        (fits.empty() ? "" : "; world sizes that fit: " + fits));
  }
  if (saved.world_size != now.world_size)
    notes.push_back("the checkpoint was written by " + std::to_string(saved.world_size) + " rank(s), this run has " +
                    std::to_string(now.world_size) + ": the data continues at the same global sample, re-sharded");
  if (saved.global_batch() != now.global_batch())
    notes.push_back("the global batch changes from " + std::to_string(saved.global_batch()) + " to " +
                    std::to_string(now.global_batch()) +
                    " sequences per step (set training.global_batch_size to keep it); the schedule counts steps, "
                    "not samples");
  else if (saved.world_size != now.world_size)
    notes.push_back("global batch kept at " + std::to_string(now.global_batch()) + " sequences: " +
                    std::to_string(now.world_size) + " rank(s) x " + std::to_string(now.local_batch_size) + " x " +
                    std::to_string(now.accumulation) + " accumulation (was " + std::to_string(saved.world_size) +
                    " x " + std::to_string(saved.local_batch_size) + " x " + std::to_string(saved.accumulation) + ")");
  return notes;
}

}  // namespace flashtrain::trainer
