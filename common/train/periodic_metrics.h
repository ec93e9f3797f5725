// Training loss and accuracy over every rank, synchronised and reported every N optimizer steps
// (the course's --metric-step): one all-reduce per report, not per step. Rank 0 prints the line
// on stderr and appends it to the metrics file (JSON lines).
#pragma once

#include <string>

#include "common/parallel/communicator.h"
#include "common/tensor/tensor.h"

namespace course::train {

class PeriodicMetrics {
 public:
  PeriodicMetrics(int64_t every, std::string metrics_path, int64_t global_batch,
                  parallel::Communicator& comm);
  // Adds optimizer step `step` (its mean loss, logits and labels); reports on every N-th step.
  void add(int64_t step, float loss, const Tensor& logits, const Tensor& labels, float lr);

 private:
  int64_t every_;
  std::string path_;
  int64_t global_batch_;
  parallel::Communicator& comm_;
  double loss_sum_ = 0;
  int64_t correct_ = 0, samples_ = 0;
};

}  // namespace course::train
