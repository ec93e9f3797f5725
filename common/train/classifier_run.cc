// The image labs' run assembled from their flags (classifier_run.h).
#include "common/train/classifier_run.h"

#include "common/train/classifier_step.h"
#include "common/train/loss_scaling.h"
#include "common/train/model_flops.h"

namespace course::train {

ClassifierRun::ClassifierRun(const TrainingFlags& flags, optim::OptimizerKind kind,
                             const Dataset& train, Device device)
    : ClassifierRun(
          flags,
          [&flags, kind](nn::Module& model) {
            return optim::make_optimizer(optimizer_flags(flags, kind), model.state().parameters);
          },
          train, device) {}

ClassifierRun::ClassifierRun(const TrainingFlags& flags, const MakeOptimizer& make_optimizer,
                             const Dataset& train, Device device)
    : flags(flags),
      device(device),
      model(make_classifier(flags, train, device)),
      params(model->parameters()),
      optimizer(make_optimizer(*model)),
      clipping(flags.clip_grad_norm),
      scaler(make_loss_scaler(flags)) {}

LoopConfig ClassifierRun::loop_config(int64_t channels) {
  return {
      .device = device,
      .model = model.get(),
      .optimizer = optimizer.get(),
      .flops_per_unit = training_flops(classifier_multiply_adds(*model, channels, flags, device)),
      .identity = {{"model", flags.model}},
      .clipping = &clipping,
      .scaler = scaler.get()};
}

Tensor ClassifierRun::loss_scale() { return scaler ? scaler->scale_tensor(device) : Tensor(); }

void ClassifierRun::clip_and_step(parallel::Communicator* agree_over) {
  clipping.apply_to_whole(params, loss_scale());
  if (!scaler) {
    optimizer->step();
    return;
  }
  optimizer->step(unscale_and_agree(*scaler, params, agree_over));
  scaler->update();
}

}  // namespace course::train
