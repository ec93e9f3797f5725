// Synchronised training metrics.
#include "common/train/periodic_metrics.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/parallel/ddp.h"
#include "common/train/training_state.h"

namespace course::train {

PeriodicMetrics::PeriodicMetrics(int64_t every, std::string metrics_path, int64_t global_batch,
                                 parallel::Communicator& comm)
    : every_(every), path_(std::move(metrics_path)), global_batch_(global_batch), comm_(comm) {
  COURSE_CHECK(every > 0, "--metric-step must be positive, got ", every);
}

void PeriodicMetrics::add(int64_t step, float loss, const Tensor& logits, const Tensor& labels,
                          float lr) {
  loss_sum_ += static_cast<double>(loss) * labels.numel();
  correct_ += count_correct(logits, labels);
  samples_ += labels.numel();
  if (step % every_ != 0) return;
  const std::vector<float> sums = parallel::allreduce_sum(
      {static_cast<float>(loss_sum_), static_cast<float>(correct_), static_cast<float>(samples_)},
      comm_);
  loss_sum_ = 0;
  correct_ = samples_ = 0;
  if (comm_.rank() != 0) return;
  const float mean_loss = sums[0] / sums[2], accuracy = sums[1] / sums[2];
  if (!path_.empty()) {
    std::ofstream(path_, std::ios::app) << nlohmann::json{{"step", step},
                                                          {"images", step * global_batch_},
                                                          {"train_loss", mean_loss},
                                                          {"train_accuracy", accuracy},
                                                          {"lr", lr}}
                                               .dump()
                                        << "\n";
  }
  std::fprintf(
      stderr, "step %lld: training loss %.4f, accuracy %.2f%% (all ranks, last %lld steps)\n",
      static_cast<long long>(step), mean_loss, 100 * accuracy, static_cast<long long>(every_));
}

}  // namespace course::train
