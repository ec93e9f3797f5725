// The classifier every lab trains: the network its flags name, sized for its dataset, and the
// forward and backward halves of its training step: the logits and the label-smoothed
// (or, for a mixed batch, the soft-target) cross-entropy under the lab's autocast, then the
// backward pass adding into the gradients (scaled by the loss scale with f16, and by a
// micro-batch's share with --accumulate).
#pragma once

#include <memory>

#include "common/data/batch.h"
#include "common/data/dataset.h"
#include "common/kernels/cross_entropy.h"
#include "common/nn/module.h"
#include "common/train/lab_flags.h"

namespace course::train {

// --model with the dataset's channels and classes, initialised from --seed, on `device`.
std::unique_ptr<nn::Module> make_classifier(const TrainingFlags& flags, const Dataset& data,
                                            Device device);

// The batch in the memory format the run trains in (--channels-last).
Batch in_training_layout(Batch batch, const RunFlags& flags);

// The multiply-adds of one sample's forward through `model`, counted by running it once in
// evaluation mode on a zero image of `channels` x --image-size^2 under the lab's autocast
// (common/kernels/multiply_adds.h): what MFU's training FLOPs are 6 times (model_flops.h).
double classifier_multiply_adds(nn::Module& model, int64_t channels, const TrainingFlags& flags,
                                Device device);

struct ClassifierForward {
  Tensor logits;            // (B, classes)
  CrossEntropyOutput loss;  // the batch's mean loss, on the device
};

ClassifierForward classifier_forward(nn::Module& model, const Batch& batch,
                                     const TrainingFlags& flags);

// Back-propagates (loss * grad_scale * loss_scale), adding to the gradients
// (gradient_accumulation.h zeroes them once per step). `loss_scale`, when defined, is the loss
// scaler's (1,) f32 on the device: the logits' gradient is multiplied by it in f32 there.
void classifier_backward(nn::Module& model, const ClassifierForward& forward, const Tensor& labels,
                         const TrainingFlags& flags, float grad_scale = 1.0f,
                         const Tensor& loss_scale = Tensor());

// The forward half on a mixed batch (MixUp, CutMix): the cross-entropy against its soft
// targets (batch.targets).
ClassifierForward soft_target_forward(nn::Module& model, const Batch& batch,
                                      const TrainingFlags& flags);

// Back-propagates the logits' gradient (f32; multiplied by `loss_scale`, when defined, as in
// classifier_backward; cast to the dtype of `forward`'s logits), adding to the gradients.
void backward_from_logits(nn::Module& model, const ClassifierForward& forward, Tensor logits_grad,
                          const TrainingFlags& flags, const Tensor& loss_scale = Tensor());

}  // namespace course::train
