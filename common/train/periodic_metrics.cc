// Synchronised training metrics.
#include "common/train/periodic_metrics.h"

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/kernels/elementwise.h"
#include "common/kernels/reduce.h"
#include "common/parallel/data_parallel/ddp.h"

namespace course::train {

PeriodicMetrics::PeriodicMetrics(int64_t every, std::string metrics_path, int64_t global_batch,
                                 parallel::Communicator& comm, Device device)
    : every_(every),
      path_(std::move(metrics_path)),
      global_batch_(global_batch),
      comm_(comm),
      loss_and_correct_(zeros({2}, DType::kF32, device)) {
  COURSE_CHECK(every > 0, "--metric-step must be positive, got ", every);
}

void PeriodicMetrics::add_samples(const Tensor& loss, const Tensor& logits, const Tensor& labels) {
  Tensor loss_sum = loss_and_correct_.slice(0, 1), correct = loss_and_correct_.slice(1, 2);
  axpy_(static_cast<float>(labels.numel()), loss.view({1}), loss_sum);
  add_correct_(logits, labels, correct);
  samples_ += labels.numel();
}

void PeriodicMetrics::end_step(int64_t step, float lr) {
  if (step % every_ != 0) return;
  const std::vector<float> mine = loss_and_correct_.to_vector<float>();
  const std::vector<float> sums =
      parallel::allreduce_sum({mine[0], mine[1], static_cast<float>(samples_)}, comm_);
  fill_(loss_and_correct_, 0.0);
  samples_ = 0;
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
