// Softmax cross-entropy with label smoothing, the loss of every classifier in the course.
#pragma once

#include "common/tensor/tensor.h"

namespace course {

struct CrossEntropyOutput {
  Tensor loss;   // (1,) f32 on the logits' device: the mean over the batch
  Tensor probs;  // (N, C) f32 softmax, kept for the backward pass
  float host_loss() const { return loss.to_vector<float>()[0]; }  // waits for the GPU
};

// Throws unless every label is in [0, classes) (i64 labels on any device).
void check_class_labels(const Tensor& labels, int64_t classes);

// logits (N, C) of any floating dtype, labels (N,) i64 in [0, C). During a graph capture the
// label values are not read (that needs the host): check them when filling the graph's input.
CrossEntropyOutput softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                         float label_smoothing = 0.0f);

// Gradient of `grad_loss` * (mean loss) with respect to the logits, in `dtype`.
Tensor softmax_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& labels,
                                      float label_smoothing, DType dtype, float grad_loss = 1.0f);
// The same multiplied by a loss scale that stays on the device (`loss_scale` (1,) f32: mixed
// precision's dynamic loss scaler, common/optim/loss_scaler.h), in f32 before the cast to
// `dtype`, so a small f16 gradient is scaled before it can flush to zero; undefined: unscaled.
Tensor scaled_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& labels,
                                     float label_smoothing, DType dtype, float grad_loss,
                                     const Tensor& loss_scale);

}  // namespace course
