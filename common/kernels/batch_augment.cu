// Flip, translation, brightness and contrast of a normalised image batch, per sample, on the
// training device: the bodies (one for the CPU and the GPU), their dispatch and their GPU
// instantiations. Pixels are taken back to [0, 1] with the channel's mean and deviation, moved
// (the uncovered area is black), scaled by the brightness factor and clamped, blended with the
// sample's mean grey level by the contrast factor and clamped, and normalised again. The mean grey
// level (0.299 R + 0.587 G + 0.114 B, or the one channel) of the brightened image comes from a
// first kernel, one sample per index.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/batch_augment.h"
#include "common/kernels/index4.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

inline constexpr int kMaxAugmentChannels = 3;

// Per sample: flip, dx, dy (i32) and brightness, contrast (f32).
struct SampleMoves {
  const int32_t* geometry;  // (N, 3)
  const float* factors;     // (N, 2)
  float mean[kMaxAugmentChannels], std[kMaxAugmentChannels];
  int64_t channels, height, width;

  // Sample i's brightened pixel (channel c, row y, column x) in [0, 1], read from `x`.
  template <class T>
  COURSE_HD float brightened(const T* x, const Strides4& s, int64_t i, int64_t c, int64_t y,
                             int64_t col) const {
    const int32_t* g = geometry + 3 * i;
    const int64_t moved_x = col - g[1], source_y = y - g[2];  // the flipped image, moved
    if (moved_x < 0 || moved_x >= width || source_y < 0 || source_y >= height) return 0.0f;
    const int64_t source_x = g[0] ? width - 1 - moved_x : moved_x;
    const float raw = static_cast<float>(x[s.at(i, c, source_y, source_x)]) * std[c] + mean[c];
    const float lit = raw * factors[2 * i];
    return lit < 0.0f ? 0.0f : (lit > 1.0f ? 1.0f : lit);
  }
};

template <class T>
struct MeanGrey {
  const T* x;
  Strides4 strides;
  SampleMoves moves;
  float* grey;  // (N,)

  COURSE_HD void operator()(int64_t i) const {
    const float weights[3] = {0.299f, 0.587f, 0.114f};
    float total = 0.0f;
    for (int64_t y = 0; y < moves.height; ++y) {
      for (int64_t col = 0; col < moves.width; ++col) {
        if (moves.channels == 1) {
          total += moves.brightened(x, strides, i, 0, y, col);
          continue;
        }
        for (int64_t c = 0; c < 3; ++c) {
          total += weights[c] * moves.brightened(x, strides, i, c, y, col);
        }
      }
    }
    grey[i] = total / static_cast<float>(moves.height * moves.width);
  }
};

// One index per image row (sample, channel, row), the columns in a loop: the index arithmetic
// (integer divisions) is paid per row, not per pixel.
template <class T>
struct AugmentPixels {
  const T* x;
  T* out;
  Strides4 strides;  // of both x and out
  SampleMoves moves;
  const float* grey;  // (N,)

  COURSE_HD void operator()(int64_t row_index) const {
    const int64_t y = row_index % moves.height;
    const int64_t c = row_index / moves.height % moves.channels;
    const int64_t i = row_index / (moves.height * moves.channels);
    const float contrast = moves.factors[2 * i + 1];
    const float offset = (1.0f - contrast) * grey[i];
    const float mean = moves.mean[c], inverse_std = 1.0f / moves.std[c];
    for (int64_t col = 0; col < moves.width; ++col) {
      float p = contrast * moves.brightened(x, strides, i, c, y, col) + offset;
      p = p < 0.0f ? 0.0f : (p > 1.0f ? 1.0f : p);
      out[strides.at(i, c, y, col)] = T((p - mean) * inverse_std);
    }
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

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

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define BATCH_AUGMENT(T) \
  COURSE_INSTANTIATE_FOR_EACH(ops::MeanGrey<T>) COURSE_INSTANTIATE_FOR_EACH(ops::AugmentPixels<T>)
COURSE_FLOAT_TYPES(BATCH_AUGMENT)

}  // namespace course
