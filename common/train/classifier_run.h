// What every image lab's run is assembled from, built once from its flags: the classifier on
// the run's device, its parameters, the optimizer the flags name, the clipping of
// --clip-grad-norm, f16's loss scaler, the update that follows the backward passes, and the
// training loop's settings that follow from them (the model's FLOPs
// per image for TFLOP/s and MFU, the checkpoint's identity, the clipping's log). A lab adds what
// its lesson decides: the schedule, the steps per epoch, the global batch, the communicator.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "common/data/dataset.h"
#include "common/nn/module.h"
#include "common/optim/gradient_clipping.h"
#include "common/optim/loss_scaler.h"
#include "common/optim/make_optimizer.h"
#include "common/parallel/comm/communicator.h"
#include "common/train/lab_flags.h"
#include "common/train/training_loop.h"

namespace course::train {

struct ClassifierRun {
  // The optimizer of a model (a lab that wraps the model first, as day 3's DDP for a 1-bit
  // optimizer, makes it here).
  using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(nn::Module& model)>;

  // The optimizer of --lr, --mom and --wd for `kind`.
  ClassifierRun(const TrainingFlags& flags, optim::OptimizerKind kind, const Dataset& train,
                Device device);
  ClassifierRun(const TrainingFlags& flags, const MakeOptimizer& make_optimizer,
                const Dataset& train, Device device);

  // The loop's settings of this run: its device, model, optimizer, FLOPs per image (the
  // dataset's `channels`), identity ({"model": --model}) and clipping.
  LoopConfig loop_config(int64_t channels);

  // What the loss gradient is multiplied by: the scaler's scale on the device with f16 (a (1,)
  // f32), else none.
  Tensor loss_scale();
  // The update after backward: the clip of --clip-grad-norm (measured unscaled), then the
  // optimizer's step; with f16, the gradients unscaled first, the step skipped after an overflow
  // and the scale updated. Ranks whose gradients are averaged skip alike; those whose gradients
  // stay their own (a 1-bit optimizer after its freeze) pass `agree_over`, over which the
  // overflow flag is all-reduced (max) before any of them steps.
  void clip_and_step(parallel::Communicator* agree_over = nullptr);

  const TrainingFlags& flags;
  Device device;
  std::unique_ptr<nn::Module> model;
  std::vector<nn::Parameter*> params;
  std::unique_ptr<optim::Optimizer> optimizer;
  optim::GradientClipping clipping;
  std::unique_ptr<optim::LossScaler> scaler;  // --amp --amp-dtype f16 only
};

}  // namespace course::train
