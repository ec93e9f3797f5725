// 1-bit Adam (Tang et al. 2021) and 1-bit LAMB (Li et al. 2021), DeepSpeed's "OneBitAdam" and
// "OneBitLamb": optimizers that cut the communication of data parallelism about 32-fold once
// training is stable.
//   warm-up (the first freeze_step steps): plain Adam or LAMB on the gradients data parallelism
//     averaged (bit for bit optim::AdamW without bias correction, DeepSpeed's OnebitAdam
//     update exp_avg / (sqrt(exp_avg_sq) + eps) + weight_decay w, and optim::Lamb);
//   compressed stage: the variance is frozen (and 1-bit LAMB's trust ratios, at their values of
//     the last warm-up step); the gradients stay on their rank (the optimizer asks data
//     parallelism to stop reducing them), each rank moves its momentum with its own gradient,
//     and the momentum is averaged over the ranks by the compressed all-reduce
//     (compressed_allreduce.h), one sign bit per element with error feedback; then the AdamW
//     (or LAMB) step from the averaged momentum and the frozen variance.
// The moments live in one flat buffer each (what the all-reduce sends, each tensor padded as
// DeepSpeed pads it), the warm-up optimizer's own state tensors pointed at its slices. The carried
// errors are in its state: each rank checkpoints its own (keeps_rank_state), so a resumed run
// goes on as if uninterrupted, where DeepSpeed starts them again from zero.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/nn/module.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/data_parallel/compressed_allreduce.h"

namespace course::parallel {

enum class OneBitBase { kAdam, kLamb };

struct OneBitOptions {
  OneBitBase base = OneBitBase::kAdam;
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
  int64_t freeze_step = 100;  // steps of plain AdamW / LAMB before the compressed stage
};

class OneBitOptimizer : public optim::Optimizer {
 public:
  // The momentum is averaged over the ranks of `comm` (data parallelism's).
  OneBitOptimizer(std::vector<std::pair<std::string, nn::Parameter*>> params,
                  const OneBitOptions& options, std::shared_ptr<Communicator> comm);
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  bool keeps_rank_state() const override { return ranks_ > 1; }
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;
  // From the step that counts freeze_step on: the gradients stay local, the momentum travels.
  bool compressed() const { return steps_ >= options_.freeze_step; }
  const CompressedAllreduce& allreduce() const { return allreduce_; }

 private:
  std::vector<float> step_scalars() const override;
  AdamWHyper hyper() const;
  void compressed_update();

  OneBitOptions options_;
  int ranks_;
  std::unique_ptr<optim::Optimizer> warmup_;  // its moments pointed into the flat buffers
  CompressedAllreduce allreduce_;
  Tensor momentum_, variance_;                     // flat (padded), one slice per parameter
  std::vector<Tensor> momentum_of_, variance_of_;  // those slices, shaped as the parameters
  std::vector<Tensor> moved_;                      // 1-bit LAMB: w moved by the direction
  Tensor frozen_trust_;                            // 1-bit LAMB: (P,) ratios of the warm-up's end
  std::vector<Tensor> frozen_trust_slots_;         // (1,) views of frozen_trust_
  UpdateTable momentum_table_, frozen_table_, step_table_;
};

// How a caller's data parallelism is told to keep the gradients local while `local` holds
// (TrainingParallelism::keep_gradients_local_while, DistributedDataParallel's).
using KeepGradientsLocal = std::function<void(std::function<bool()> local)>;

// The optimizer of `flags.kind` over `params`: a 1-bit one, averaging over `comm` (required) and
// keeping the gradients local after its warm-up through `keep_local`, or optim::make_optimizer's
// (`comm` unused, may be null).
std::unique_ptr<optim::Optimizer> make_parallel_optimizer(
    const optim::OptimizerFlags& flags, std::vector<std::pair<std::string, nn::Parameter*>> params,
    std::shared_ptr<Communicator> comm, const KeepGradientsLocal& keep_local);

}  // namespace course::parallel
