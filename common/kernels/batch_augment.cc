// Dispatch of the batch augmentation kernels (bodies in batch_augment_ops.h).
#include "common/kernels/batch_augment.h"

#include "common/kernels/batch_augment_ops.h"
#include "common/kernels/launch.h"

namespace course {

Tensor augment_batch_on_device(const Tensor& images, const Tensor& geometry, const Tensor& factors,
                               const std::vector<float>& mean, const std::vector<float>& std) {
  const Dims4 d = dims4(images, "batch augmentation");
  COURSE_CHECK(d.c <= ops::kMaxAugmentChannels && mean.size() == static_cast<size_t>(d.c) &&
                   std.size() == mean.size(),
               "batch augmentation takes up to 3 channels with a mean and deviation each, got ",
               images.str(), " with ", mean.size(), " means and ", std.size(), " deviations");
  COURSE_CHECK(geometry.dtype() == DType::kI32 && geometry.shape() == (Shape{d.n, 3}) &&
                   factors.dtype() == DType::kF32 && factors.shape() == (Shape{d.n, 2}),
               "batch augmentation needs (", d.n, ", 3) i32 moves and (", d.n,
               ", 2) f32 factors, got ", geometry.str(), " and ", factors.str());
  COURSE_CHECK(geometry.device() == images.device() && factors.device() == images.device(),
               "batch augmentation's moves and factors must be on the images' device ",
               images.device().str());
  ops::SampleMoves moves{
      geometry.data_as<int32_t>(), factors.data_as<float>(), {}, {}, d.c, d.h, d.w};
  for (int64_t c = 0; c < d.c; ++c) {
    COURSE_CHECK(std[c] > 0, "batch augmentation needs positive deviations, got ", std[c]);
    moves.mean[c] = mean[c];
    moves.std[c] = std[c];
  }
  Tensor grey = Tensor::empty({d.n}, DType::kF32, images.device());
  Tensor out =
      Tensor::empty(images.shape(), images.dtype(), images.device(), images.memory_format());
  visit_floating(images.dtype(), "batch augmentation", [&]<class T>() {
    for_each_index(images.device(), d.n,
                   ops::MeanGrey<T>{images.data_as<T>(), d.strides, moves, grey.data_as<float>()},
                   d.c * d.h * d.w);
    for_each_index(images.device(), d.n * d.c * d.h,
                   ops::AugmentPixels<T>{images.data_as<T>(), out.data_as<T>(), d.strides, moves,
                                         grey.data_as<float>()},
                   d.w);
  });
  return out;
}

}  // namespace course
