// The training loop: AdamW over decayed and undecayed groups, the learning
// rate schedule, gradient accumulation to the global batch with the loss
// normalised by the scored tokens of the whole batch, global-norm clipping,
// the NaN/Inf guard, validation, progress lines and JSON-lines metrics,
// checkpoints (keep-last-k, resume, stop on request or signal).
//
//   Trainer trainer(resolved, std::cout);   // builds everything, resumes
//   TrainResult result = trainer.run();
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>

#include "flashtrain/config/resolved_config.h"
#include "flashtrain/models/language_model.h"
#include "flashtrain/trainer/run/evaluator.h"
#include "flashtrain/trainer/run/world.h"

namespace flashtrain::trainer {

struct StepReport {
  std::int64_t step = 0;
  double loss = 0.0;       // mean over the scored tokens of the global batch
  double lr = 0.0;
  double grad_norm = 0.0;  // before clipping
  bool skipped = false;    // non-finite loss or gradient: no update
  std::int64_t tokens_seen = 0;
};

enum class TrainStatus {
  kFinished,   // reached training.steps
  kStopped,    // request_stop() or SIGINT/SIGTERM: checkpoint saved
  kNonfinite,  // training.max_nonfinite_steps non-finite steps in a row
  kReachedTarget,  // the training loss fell to training.target_loss: validated and saved
};

struct TrainResult {
  TrainStatus status = TrainStatus::kFinished;
  std::int64_t step = 0;
  int stop_signal = 0;  // the signal behind kStopped, 0 for request_stop()
  std::optional<EvalResult> last_validation;
  std::filesystem::path last_checkpoint;  // empty if none was written
};

class Trainer {
 public:
  // Builds the model, optimizer, data and schedule, and resumes as
  // checkpoint.resume says. Writes the start-up report to `log`. Throws
  // ConfigError for settings it cannot honour, std::runtime_error otherwise.
  Trainer(const config::ResolvedConfig& resolved, std::ostream& log);
  // One rank of a data-parallel run (world.h): gradients are averaged over the
  // ranks, every rank reads its own slice of the data, only rank 0 writes
  // metrics and checkpoints (give the other ranks a log that discards).
  // Collectives that cannot complete throw distributed::CommunicationError.
  Trainer(const config::ResolvedConfig& resolved, std::ostream& log, World world);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Trains until training.steps, a stop request or signal, or the NaN/Inf guard gives up.
  TrainResult run();

  // Called after every optimizer step (tests, tools).
  void set_step_callback(std::function<void(const StepReport&)> callback);
  // Stop after the current step, save a checkpoint and return, as on SIGINT.
  void request_stop();

  models::LanguageModelImpl& model();
  std::int64_t step() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace flashtrain::trainer
