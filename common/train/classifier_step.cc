// Forward and backward of a classifier under autocast.
#include "common/train/classifier_step.h"

#include "common/kernels/device_factor.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/kernels/multiply_adds.h"
#include "common/kernels/soft_cross_entropy.h"
#include "common/models/models.h"
#include "common/nn/autocast.h"

namespace course::train {

Batch in_training_layout(Batch batch, const RunFlags& flags) {
  if (flags.channels_last) {
    batch.images = to_memory_format(batch.images, MemoryFormat::kChannelsLast);
  }
  return batch;
}

std::unique_ptr<nn::Module> make_classifier(const TrainingFlags& f, const Dataset& data,
                                            Device device) {
  return nn::make_model({.name = f.model,
                         .in_channels = data.channels(),
                         .num_classes = data.num_classes(),
                         .seed = f.seed,
                         .image_size = f.image_size},
                        device);
}

double classifier_multiply_adds(nn::Module& model, int64_t channels, const TrainingFlags& f,
                                Device device) {
  const Tensor image = zeros({1, channels, f.image_size, f.image_size}, DType::kF32, device);
  const bool training = model.training();
  model.set_training(false);  // no batch statistics, no dropout: the model's state unchanged
  MultiplyAddCount count;
  {
    nn::Autocast autocast(f.amp_dtype, f.amp);
    model.forward(image);
  }
  model.set_training(training);
  return count.total();
}

ClassifierForward classifier_forward(nn::Module& model, const Batch& batch,
                                     const TrainingFlags& f) {
  nn::Autocast autocast(f.amp_dtype, f.amp);
  ClassifierForward out;
  out.logits = model.forward(batch.images);
  out.loss = softmax_cross_entropy(out.logits, batch.labels, f.label_smoothing);
  return out;
}

void classifier_backward(nn::Module& model, const ClassifierForward& forward, const Tensor& labels,
                         const TrainingFlags& f, float grad_scale, const Tensor& loss_scale) {
  nn::Autocast autocast(f.amp_dtype, f.amp);
  model.backward_to_parameters(scaled_cross_entropy_backward(
      forward.loss, labels, f.label_smoothing, forward.logits.dtype(), grad_scale, loss_scale));
}

ClassifierForward soft_target_forward(nn::Module& model, const Batch& batch,
                                      const TrainingFlags& f) {
  nn::Autocast autocast(f.amp_dtype, f.amp);
  ClassifierForward out;
  out.logits = model.forward(batch.images);
  out.loss = soft_target_cross_entropy(out.logits, batch.targets);
  return out;
}

void backward_from_logits(nn::Module& model, const ClassifierForward& forward, Tensor logits_grad,
                          const TrainingFlags& f, const Tensor& loss_scale) {
  if (loss_scale.defined()) scale_by_(logits_grad, loss_scale);
  nn::Autocast autocast(f.amp_dtype, f.amp);
  const DType dtype = forward.logits.dtype();
  model.backward_to_parameters(logits_grad.dtype() == dtype ? logits_grad
                                                            : cast(logits_grad, dtype));
}

}  // namespace course::train
