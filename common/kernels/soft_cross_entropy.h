// Softmax cross-entropy against soft targets: the loss of a batch mixed by MixUp or CutMix,
// whose label is a weighted pair of classes (common/data/batch_mix.h).
#pragma once

#include "common/kernels/cross_entropy.h"

namespace course {

// logits (N, C) of any floating dtype; targets (N, C) f32 on the same device, each row a
// distribution (non-negative, summing to 1: not checked on the device). The output's loss is
// the mean over the rows.
CrossEntropyOutput soft_target_cross_entropy(const Tensor& logits, const Tensor& targets);

// Gradient of `grad_loss` * (mean loss) with respect to the logits, in `dtype`.
Tensor soft_target_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& targets,
                                          DType dtype, float grad_loss = 1.0f);

}  // namespace course
