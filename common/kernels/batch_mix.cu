// MixUp and CutMix of a batch with its flipped self (sample i with sample N-1-i, as timm does),
// and the mixed soft targets: the bodies (one for the CPU and the GPU), their dispatch and their
// GPU instantiations. One kernel does both: sample i's pixels inside its box come from the
// partner (CutMix), the others are w_i x_i + (1 - w_i) x_partner (MixUp; w = 1 leaves them as
// they are, exactly). A sample that is not mixed has w = 1 and an empty box.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/batch_mix.h"
#include "common/kernels/cross_entropy.h"
#include "common/kernels/cross_entropy_ops.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

template <class T>
struct MixWithFlipped {
  const T* x;
  T* out;
  const float* weights;  // (N,)
  const int32_t* boxes;  // (N, 4): rows [y0, y1), columns [x0, x1)
  int64_t samples, channels, height, width;
  bool channels_last;

  COURSE_HD void operator()(int64_t index) const {
    const int64_t per_sample = channels * height * width;
    const int64_t i = index / per_sample, e = index % per_sample;
    const int64_t pixel = channels_last ? e / channels : e % (height * width);
    const int64_t row = pixel / width, column = pixel % width;
    const int32_t* box = boxes + 4 * i;
    const float own = static_cast<float>(x[index]);
    const float other = static_cast<float>(x[(samples - 1 - i) * per_sample + e]);
    const bool inside = row >= box[0] && row < box[1] && column >= box[2] && column < box[3];
    const float w = weights[i];
    out[index] = T(inside ? other : w * own + (1.0f - w) * other);
  }
};

// targets (N, K): lambda_i smooth(y_i) + (1 - lambda_i) smooth(y_{N-1-i}), element by element.
struct MixedSoftTargets {
  const int64_t* labels;
  const float* lambdas;
  float* targets;
  int64_t samples, classes;
  float smoothing;

  COURSE_HD void operator()(int64_t index) const {
    const int64_t i = index / classes, c = index % classes;
    const float lambda = lambdas[i];
    const int64_t own = labels[i], partner = labels[samples - 1 - i];
    if (own < 0 || own >= classes || partner < 0 || partner >= classes) {
      targets[index] = std::numeric_limits<float>::quiet_NaN();  // the loss shows it
      return;
    }
    targets[index] = lambda * smoothed_target(c, own, classes, smoothing) +
                     (1.0f - lambda) * smoothed_target(c, partner, classes, smoothing);
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

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
  // made, and a bad one gives NaN targets (no host wait every step), as in cross_entropy.cu.
  if (labels.device().is_cpu()) check_class_labels(labels, classes);
  Tensor targets = Tensor::empty({n, classes}, DType::kF32, labels.device());
  for_each_index(labels.device(), n * classes,
                 ops::MixedSoftTargets{labels.data_as<int64_t>(), lambdas.data_as<float>(),
                                       targets.data_as<float>(), n, classes, smoothing});
  return targets;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define BATCH_MIX(T) COURSE_INSTANTIATE_FOR_EACH(ops::MixWithFlipped<T>)
COURSE_FLOAT_TYPES(BATCH_MIX)
COURSE_INSTANTIATE_FOR_EACH(ops::MixedSoftTargets)

}  // namespace course
