// Softmax over the last dimension: a model's output distribution (sampling from a language
// model, the soft targets of distillation). Attention has its own fused online softmax
// (attention.h) and the classifier loss its own (cross_entropy.h).
#pragma once

#include "common/tensor/tensor.h"

namespace course {

// x (..., C) contiguous, any floating dtype; y like x.
Tensor softmax_forward(const Tensor& x);

// dx like y, from the forward's output y.
Tensor softmax_backward(const Tensor& dy, const Tensor& y);

}  // namespace course
