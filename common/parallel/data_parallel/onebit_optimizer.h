// 1-bit Adam (Tang et al. 2021) and 1-bit LAMB (Li et al. 2021), DeepSpeed's "OneBitAdam" and
// "OneBitLamb": optimizers that cut the communication of data parallelism about 32-fold once
// training is stable.
//   warm-up (the first freeze_step steps): plain Adam or LAMB on the gradients data parallelism
//     averaged, without bias correction as DeepSpeed's (1-bit Adam: exp_avg / (sqrt(exp_avg_sq)
//     + eps) + weight_decay w, bit for bit optim::AdamW with bias_correction off; 1-bit LAMB:
//     onebit_lamb.h);
//   compressed stage: the variance is frozen; the gradients stay on their rank (the optimizer asks
//     data parallelism to stop reducing them), each rank moves its momentum with its own gradient,
//     and the momentum is averaged over the ranks by the compressed all-reduce
//     (compressed_allreduce.h), one sign bit per element with error feedback, then masked where
//     `exp_avg_mask`; then the step from the averaged momentum and the frozen variance.
// DeepSpeed's first call only allocates its buffers and moves nothing, so its freeze_step N
// trains N - 1 warm-up steps; here the warm-up is N steps that all move the weights.
// The moments live in one flat buffer each (what the all-reduce sends: 1-bit Adam pads each
// tensor as DeepSpeed does, 1-bit LAMB the whole model once). The carried errors are in the
// state: each rank checkpoints its own (keeps_rank_state), so a resumed run goes on as if
// uninterrupted, where DeepSpeed starts them again from zero.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/kernels/device_factor.h"
#include "common/kernels/optimizer_kernels.h"
#include "common/nn/module.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/data_parallel/compressed_allreduce.h"

namespace course::parallel {

struct OneBitOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f, beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 1e-2f;
  int64_t freeze_step = 100;  // steps of plain Adam / LAMB before the compressed stage
  // DeepSpeed's exp_avg_mask, made at the freeze: 0 for the elements whose warm-up variance is
  // exactly 0 (never given a gradient, as the rows of an embedding no input uses), so the
  // compressed momentum, which cannot carry an exact zero, gives them nothing.
  bool exp_avg_mask = false;
  OneBitLambCoefficients lamb;           // 1-bit LAMB's clamps and factor (DeepSpeed's defaults)
  WorkerCompression worker_compression;  // unset: the library's (compressed_allreduce.h)
};

// What both 1-bit optimizers share: the flat moments, the compressed all-reduce of the
// momentum with its mask, and the state (the moments and each rank's errors).
class OneBitOptimizer : public optim::Optimizer {
 public:
  std::vector<std::pair<std::string, Tensor*>> state_tensors() override;
  bool keeps_rank_state() const override { return ranks_ > 1; }
  // f16's overflowed steps are skipped on the host and not counted, as DeepSpeed's: the freeze
  // comes after freeze_step steps taken (a warm-up of skipped steps froze a variance never
  // updated), and the schedule waits too. After the freeze the momentum travels compressed
  // before the update, which could not skip on the device.
  bool skips_on_device() const override { return false; }
  bool counts_skipped_steps() const override { return false; }
  // From the step that counts freeze_step on: the gradients stay local, the momentum travels.
  bool compressed() const { return steps_ >= options_.freeze_step; }
  const CompressedAllreduce& allreduce() const { return allreduce_; }

 protected:
  // How the momentum enters the compressed all-reduce: tensor by tensor, each padded and
  // scaled by its own root mean square (1-bit Adam), or the whole model as one (1-bit LAMB).
  enum class Fusion { kPerTensor, kWholeModel };
  OneBitOptimizer(std::vector<std::pair<std::string, nn::Parameter*>> params,
                  const OneBitOptions& options, std::shared_ptr<Communicator> comm, Fusion fusion);
  AdamWHyper hyper() const;
  // The momentum averaged over the ranks, compressed, then masked where exp_avg_mask.
  void average_momentum_();
  // A flat buffer of momentum_'s layout cut into its parameters' slices, shaped as they are.
  std::vector<Tensor> slices_of(const Tensor& flat) const;

  OneBitOptions options_;
  Tensor momentum_, variance_;                     // flat (padded), one slice per parameter
  std::vector<Tensor> momentum_of_, variance_of_;  // those slices, shaped as the parameters

 private:
  int ranks_;
  CompressedAllreduce allreduce_;
  std::vector<int64_t> offsets_;  // each parameter's first element in the flat buffers
  Tensor mask_;  // exp_avg_mask: made at the first compressed step from the frozen variance
  UpdateTable mask_table_;
};

class OneBitAdam : public OneBitOptimizer {
 public:
  // The momentum is averaged over the ranks of `comm` (data parallelism's).
  OneBitAdam(std::vector<std::pair<std::string, nn::Parameter*>> params,
             const OneBitOptions& options, std::shared_ptr<Communicator> comm);
  void apply_update(const Tensor& skip_if, const std::vector<size_t>& indices,
                    UpdateTable& table) override;

 private:
  std::vector<float> step_scalars() const override { return {lr_, 1.0f, 1.0f}; }
  void compressed_update();

  std::unique_ptr<optim::Optimizer> warmup_;  // optim::AdamW, its moments the flat slices
  UpdateTable momentum_table_, frozen_table_;
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
