// A model's step under data parallelism (one process, DDP, ZeRO 1-3, FSDP's
// strategies: data_parallel_model.h, or a lab's own DataParallelStep): the step's batch run as
// its micro-batches one after the other, their gradients added up (DDP reduces only after the
// last, as PyTorch's no_sync), the loss of each scaled by 1 / micro-batches so the sum is the
// whole batch's mean's gradient.
#pragma once

#include <cmath>
#include <memory>
#include <optional>

#include "common/parallel/data_parallel/data_parallel_model.h"
#include "common/parallel/training_parallelism.h"

namespace course::parallel {

class DataParallelTraining : public TrainingParallelism {
 public:
  // `step` runs over the ranks of `comm`; `compute`: autocast's dtype in the forward passes
  // (none: f32).
  DataParallelTraining(std::unique_ptr<DataParallelStep> step, std::shared_ptr<Communicator> comm,
                       int micro_batches, std::optional<DType> compute);

  std::vector<std::pair<std::string, nn::Parameter*>> optimized() override {
    return step_->optimized();
  }
  int data_rank() const override { return comm_->rank(); }
  int data_ranks() const override { return comm_->size(); }
  int micro_batches() const override { return micro_batches_; }
  Tensor forward_backward(const NextTokenBatch& batch,
                          const std::function<void(Phase)>& mark) override;
  void keep_gradients_local_while(std::function<bool()> local) override {
    step_->keep_gradients_local_while(std::move(local));
  }
  std::vector<std::vector<size_t>> gradient_groups() override { return step_->gradient_groups(); }
  void when_gradients_final(std::function<void(size_t group)> final) override {
    step_->when_gradients_final(std::move(final));
  }
  void after_step() override { step_->after_step(); }
  // DDP's averaged gradient on every rank, or a sharded mode's shards summed over a copy.
  Tensor squared_gradient_norm() override { return step_->squared_gradient_norm(); }
  // The wrapper: a sharded model gathers its blocks itself.
  nn::Module& whole_model() override { return step_->net(); }
  nlohmann::json checkpoint_layout() const override;
  std::string describe() const override { return step_->describe(); }
  double bytes_sent() const override { return step_->bytes_sent(); }
  double exposed_communication_seconds() override { return step_->exposed_communication_seconds(); }

 private:
  std::unique_ptr<DataParallelStep> step_;
  std::shared_ptr<Communicator> comm_;
  int micro_batches_;
  std::optional<DType> compute_;
};

}  // namespace course::parallel
