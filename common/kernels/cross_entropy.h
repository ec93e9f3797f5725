// Softmax cross-entropy with label smoothing, the loss of every classifier in the course.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct CrossEntropyOutput {
  float loss;    // mean over the batch
  Tensor probs;  // (N, C) f32 softmax, kept for the backward pass
};

// logits (N, C) of any floating dtype, labels (N,) i64 in [0, C).
CrossEntropyOutput softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                         float label_smoothing = 0.0f);

// Gradient of `grad_loss` * (mean loss) with respect to the logits, in `dtype`.
Tensor softmax_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& labels,
                                      float label_smoothing, DType dtype, float grad_loss = 1.0f);

}  // namespace course
