// Dispatch of the batch-mixing kernels (bodies in batch_mix_ops.h).
#include "common/kernels/batch_mix.h"

#include "common/kernels/batch_mix_ops.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/launch.h"

namespace course {

Tensor mix_with_flipped(const Tensor& images, const Tensor& weights, const Tensor& boxes) {
  COURSE_CHECK(images.dim() == 4, "batch mixing needs (N, C, H, W) images, got ", images.str());
  const int64_t n = images.size(0);
  COURSE_CHECK(weights.dtype() == DType::kF32 && weights.shape() == Shape{n},
               "batch mixing needs (", n, ",) f32 weights, got ", weights.str());
  COURSE_CHECK(boxes.dtype() == DType::kI32 && boxes.shape() == (Shape{n, 4}),
               "batch mixing needs (", n, ", 4) i32 boxes, got ", boxes.str());
  COURSE_CHECK(weights.device() == images.device() && boxes.device() == images.device(),
               "batch mixing's weights and boxes must be on the images' device ",
               images.device().str());
  Tensor out =
      Tensor::empty(images.shape(), images.dtype(), images.device(), images.memory_format());
  visit_floating(images.dtype(), "batch mixing", [&]<class T>() {
    for_each_index(images.device(), images.numel(),
                   ops::MixWithFlipped<T>{images.data_as<T>(), out.data_as<T>(),
                                          weights.data_as<float>(), boxes.data_as<int32_t>(), n,
                                          images.size(1), images.size(2), images.size(3),
                                          images.memory_format() == MemoryFormat::kChannelsLast});
  });
  return out;
}

Tensor mixed_soft_targets(const Tensor& labels, const Tensor& lambdas, int64_t classes,
                          float smoothing) {
  const int64_t n = labels.numel();
  COURSE_CHECK(labels.dim() == 1 && lambdas.dtype() == DType::kF32 && lambdas.shape() == Shape{n},
               "mixed targets need (N,) labels and (N,) f32 lambdas, got ", labels.str(), " and ",
               lambdas.str());
  COURSE_CHECK(labels.device() == lambdas.device(), "labels on ", labels.device().str(),
               ", lambdas on ", lambdas.device().str());
  COURSE_CHECK(smoothing >= 0.0f && smoothing < 1.0f, "label smoothing must be in [0, 1), got ",
               smoothing);
  // Labels in host memory are checked here; an accelerator's were checked where the batch was
  // made, and a bad one gives NaN targets (no host wait every step), as in cross_entropy.cc.
  if (labels.device().is_cpu()) check_class_labels(labels, classes);
  Tensor targets = Tensor::empty({n, classes}, DType::kF32, labels.device());
  for_each_index(labels.device(), n * classes,
                 ops::MixedSoftTargets{labels.data_as<int64_t>(), lambdas.data_as<float>(),
                                       targets.data_as<float>(), n, classes, smoothing});
  return targets;
}

}  // namespace course
