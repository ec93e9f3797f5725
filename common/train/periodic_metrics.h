// Training loss and accuracy over every rank, synchronised and reported every N optimizer steps
// (the course's --metric-step): one all-reduce per report, not per step. The sums stay on the
// training device between reports (the host reads them once per report, never in a step).
// Rank 0 prints the line on stderr and appends it to the metrics file (JSON lines).
#pragma once

#include <string>

#include "common/parallel/comm/communicator.h"
#include "common/tensor/tensor.h"

namespace course::train {

class PeriodicMetrics {
 public:
  PeriodicMetrics(int64_t every, std::string metrics_path, int64_t global_batch,
                  parallel::Communicator& comm, Device device);
  // Adds a batch of the current step (its (1,) mean loss, logits and labels, on the device):
  // the whole step's, or each of its micro-batches.
  void add_samples(const Tensor& loss, const Tensor& logits, const Tensor& labels);
  // After optimizer step `step`: reports on every N-th step.
  void end_step(int64_t step, float lr);

 private:
  int64_t every_;
  std::string path_;
  int64_t global_batch_;
  parallel::Communicator& comm_;
  Tensor loss_and_correct_;  // (2,) f32 on the device: the sum of loss x samples, correct rows
  int64_t samples_ = 0;
};

}  // namespace course::train
