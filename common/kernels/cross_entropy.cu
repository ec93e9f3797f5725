// Softmax cross-entropy: its single-source row kernels (cross_entropy_ops.h) dispatched, and
// their GPU instantiations.
#include "common/kernels/cross_entropy.h"
#include "common/kernels/cross_entropy_ops.h"
#include "common/kernels/device_factor.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/type_lists.cuh"

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

namespace {

void check_labels(const Tensor& logits, const Tensor& labels, float smoothing) {
  COURSE_CHECK(logits.dim() == 2 && logits.size(1) > 0, "cross-entropy needs (N, C) logits, got ",
               logits.str());
  COURSE_CHECK(
      labels.dtype() == DType::kI64 && labels.dim() == 1 && labels.size(0) == logits.size(0),
      "cross-entropy needs (N,) i64 labels for ", logits.str(), ", got ", labels.str());
  COURSE_CHECK(labels.device() == logits.device(), "labels on ", labels.device().str(),
               ", logits on ", logits.device().str());
  COURSE_CHECK(smoothing >= 0.0f && smoothing < 1.0f, "label smoothing must be in [0, 1), got ",
               smoothing);
  // Labels in host memory are checked here, by the host, with no device involved; a GPU's
  // labels were checked where the batch was made (the datasets check theirs at load), and a
  // bad one gives a NaN loss, never a read out of bounds (and no host wait every step).
  if (labels.device().is_cpu() && !capturing()) {
    const int64_t* values = labels.data_as<int64_t>();
    int64_t bad = 0;
    for (int64_t i = 0; i < labels.numel(); ++i)
      bad += values[i] < 0 || values[i] >= logits.size(1);
    COURSE_CHECK(bad == 0, bad, " label(s) outside [0, ", logits.size(1), ")");
  }
}

}  // namespace

void check_class_labels(const Tensor& labels, int64_t classes) {
  COURSE_CHECK(labels.dtype() == DType::kI64, "class labels must be i64, got ", labels.str());
  const int64_t bad = reduce_index(labels.device(), labels.numel(),
                                   ops::LabelsOutOfRange{labels.data_as<int64_t>(), classes});
  COURSE_CHECK(bad == 0, bad, " label(s) outside [0, ", classes, ")");
}

CrossEntropyOutput softmax_cross_entropy(const Tensor& logits, const Tensor& labels,
                                         float label_smoothing) {
  check_labels(logits, labels, label_smoothing);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  CrossEntropyOutput out{Tensor::empty({1}, DType::kF32, logits.device()),
                         Tensor::empty(logits.shape(), DType::kF32, logits.device())};
  Tensor losses = Tensor::empty({rows}, DType::kF32, logits.device());
  visit_floating(logits.dtype(), "cross-entropy", [&]<class T>() {
    for_each_row(logits.device(), rows, classes,
                 ops::SoftmaxCrossEntropyRow<T>{logits.data_as<T>(), labels.data_as<int64_t>(),
                                                out.probs.data_as<float>(), losses.data_as<float>(),
                                                classes, label_smoothing});
  });
  for_each_row(logits.device(), 1, rows,
               ops::MeanOfRow{losses.data_as<float>(), rows, out.loss.data_as<float>()});
  return out;
}

Tensor softmax_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& labels,
                                      float label_smoothing, DType dtype, float grad_loss) {
  const Tensor& probs = forward.probs;
  check_labels(probs, labels, label_smoothing);
  const int64_t rows = probs.size(0), classes = probs.size(1);
  Tensor grad = Tensor::empty(probs.shape(), dtype, probs.device());
  const float scale = rows > 0 ? grad_loss / static_cast<float>(rows) : 0.0f;
  visit_floating(dtype, "cross-entropy backward", [&]<class T>() {
    for_each_index(
        probs.device(), probs.numel(),
        ops::CrossEntropyBackward<T>{probs.data_as<float>(), labels.data_as<int64_t>(),
                                     grad.data_as<T>(), classes, label_smoothing, scale});
  });
  return grad;
}

Tensor scaled_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& labels,
                                     float label_smoothing, DType dtype, float grad_loss,
                                     const Tensor& loss_scale) {
  if (!loss_scale.defined()) {
    return softmax_cross_entropy_backward(forward, labels, label_smoothing, dtype, grad_loss);
  }
  Tensor scaled =
      softmax_cross_entropy_backward(forward, labels, label_smoothing, DType::kF32, grad_loss);
  scale_by_(scaled, loss_scale);
  return dtype == DType::kF32 ? scaled : cast(scaled, dtype);
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define CROSS_ENTROPY(T)                                          \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::SoftmaxCrossEntropyRow<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::CrossEntropyBackward<T>)
COURSE_FLOAT_TYPES(CROSS_ENTROPY)
COURSE_INSTANTIATE_FOR_EACH_ROW(ops::MeanOfRow)
COURSE_INSTANTIATE_REDUCE(ops::LabelsOutOfRange)

}  // namespace course
