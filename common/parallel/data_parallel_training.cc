// Accumulated micro-batches through a data-parallel mode.
#include "common/parallel/data_parallel_training.h"

#include <nlohmann/json.hpp>

#include "common/core/error.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/elementwise.h"
#include "common/nn/autocast.h"

namespace course::parallel {

DataParallelTraining::DataParallelTraining(std::unique_ptr<DataParallelStep> step,
                                           std::shared_ptr<Communicator> comm, int micro_batches,
                                           std::optional<DType> compute)
    : step_(std::move(step)),
      comm_(std::move(comm)),
      micro_batches_(micro_batches),
      compute_(compute) {
  COURSE_CHECK(micro_batches_ >= 1, "a step needs at least one micro-batch, got ", micro_batches_);
}

Tensor DataParallelTraining::forward_backward(const NextTokenBatch& batch,
                                              const std::function<void(Phase)>& mark) {
  const float share = 1.0f / static_cast<float>(micro_batches_);
  nn::Module& net = step_->net();
  Tensor loss = zeros({1}, DType::kF32, batch.inputs.device());
  for (int micro = 0; micro < micro_batches_; ++micro) {
    mark(Phase::kForward);
    if (micro == 0) net.zero_grad();
    const auto [inputs, targets] = micro_batch_of(batch, micro, micro_batches_);
    step_->set_sync(micro + 1 == micro_batches_);
    Tensor logits;
    CrossEntropyOutput cross_entropy;
    {
      nn::Autocast autocast(compute_.value_or(DType::kBF16), compute_.has_value());
      logits = net.forward(inputs);
      cross_entropy =
          softmax_cross_entropy(logits.view({targets.numel(), logits.shape().back()}), targets);
    }
    axpy_(share, cross_entropy.loss, loss);
    mark(Phase::kBackward);
    net.backward(scaled_cross_entropy_backward(cross_entropy, targets, 0.0f, logits.dtype(), share,
                                               loss_scale())
                     .view(logits.shape()));
  }
  step_->finish_backward();
  return loss;
}

nlohmann::json DataParallelTraining::checkpoint_layout() const {
  return parallel::checkpoint_layout(*step_);
}

}  // namespace course::parallel
