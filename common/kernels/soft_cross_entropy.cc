// Dispatch of soft-target cross-entropy to its single-source row kernels.
#include "common/kernels/soft_cross_entropy.h"

#include "common/kernels/launch.h"
#include "common/kernels/soft_cross_entropy_ops.h"

namespace course {

namespace {

void check_targets(const Tensor& logits, const Tensor& targets) {
  COURSE_CHECK(logits.dim() == 2 && logits.size(1) > 0,
               "soft-target cross-entropy needs (N, C) logits, got ", logits.str());
  COURSE_CHECK(targets.dtype() == DType::kF32 && targets.shape() == logits.shape(),
               "soft-target cross-entropy needs f32 targets shaped like the logits ", logits.str(),
               ", got ", targets.str());
  COURSE_CHECK(targets.device() == logits.device(), "targets on ", targets.device().str(),
               ", logits on ", logits.device().str());
}

}  // namespace

CrossEntropyOutput soft_target_cross_entropy(const Tensor& logits, const Tensor& targets) {
  check_targets(logits, targets);
  const int64_t rows = logits.size(0), classes = logits.size(1);
  CrossEntropyOutput out{Tensor::empty({1}, DType::kF32, logits.device()),
                         Tensor::empty(logits.shape(), DType::kF32, logits.device())};
  Tensor losses = Tensor::empty({rows}, DType::kF32, logits.device());
  visit_floating(logits.dtype(), "soft-target cross-entropy", [&]<class T>() {
    for_each_row(logits.device(), rows, classes,
                 ops::SoftTargetCrossEntropyRow<T>{logits.data_as<T>(), targets.data_as<float>(),
                                                   out.probs.data_as<float>(),
                                                   losses.data_as<float>(), classes});
  });
  for_each_row(logits.device(), 1, rows,
               ops::MeanOfRow{losses.data_as<float>(), rows, out.loss.data_as<float>()});
  return out;
}

Tensor soft_target_cross_entropy_backward(const CrossEntropyOutput& forward, const Tensor& targets,
                                          DType dtype, float grad_loss) {
  const Tensor& probs = forward.probs;
  check_targets(probs, targets);
  const int64_t rows = probs.size(0);
  Tensor grad = Tensor::empty(probs.shape(), dtype, probs.device());
  const float scale = rows > 0 ? grad_loss / static_cast<float>(rows) : 0.0f;
  visit_floating(dtype, "soft-target cross-entropy backward", [&]<class T>() {
    for_each_index(probs.device(), probs.numel(),
                   ops::SoftTargetCrossEntropyBackward<T>{
                       probs.data_as<float>(), targets.data_as<float>(), grad.data_as<T>(), scale});
  });
  return grad;
}

}  // namespace course
