// Cross-entropy against soft targets (a distribution per row: MixUp's and CutMix's mixed
// labels), and its gradient: loss = sum_c q_c (logsumexp(x) - x_c) = logsumexp(x) - sum_c q_c x_c
// for targets q summing to 1; the gradient of the batch-mean loss is (softmax(x) - q) / N. The
// row kernels (one for the CPU and the GPU), their dispatch and their GPU instantiations.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/cross_entropy_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/row_lanes_cuda.cuh"
#include "common/kernels/soft_cross_entropy.h"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

template <class T>
struct SoftTargetCrossEntropyRow {
  const T* logits;
  const float* targets;  // (N, C)
  float* probs;
  float* losses;
  int64_t classes;

  template <class Lanes>
  COURSE_HD void operator()(int64_t row, const Lanes& lanes) const {
    const T* x = logits + row * classes;
    const float* q = targets + row * classes;
    const float log_sum_exp = softmax_row(lanes, x, probs + row * classes, classes);
    const FloatPair target = lanes.sum_pair(classes, [&](int64_t c) {
      return FloatPair{q[c] * static_cast<float>(x[c]), q[c]};
    });
    if (lanes.first()) losses[row] = target.second * log_sum_exp - target.first;
  }
};

// dlogits[i] = (probs[i] - targets[i]) * scale, element by element over the (N, C) matrix.
template <class T>
struct SoftTargetCrossEntropyBackward {
  const float* probs;
  const float* targets;
  T* dlogits;
  float scale;

  COURSE_HD void operator()(int64_t i) const { dlogits[i] = T((probs[i] - targets[i]) * scale); }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

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

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define SOFT_CROSS_ENTROPY(T)                                        \
  COURSE_INSTANTIATE_FOR_EACH_ROW(ops::SoftTargetCrossEntropyRow<T>) \
  COURSE_INSTANTIATE_FOR_EACH(ops::SoftTargetCrossEntropyBackward<T>)
COURSE_FLOAT_TYPES(SOFT_CROSS_ENTROPY)

}  // namespace course
