// Crop, resize and normalise on the device: the body (one for the CPU and the GPU), its
// dispatch and its GPU instantiations. One index per output element, numbered in the output's
// memory order (NCHW or channels-last), so a GPU warp's writes are contiguous; the reads gather
// from the box. Source coordinates follow OpenCV's INTER_LINEAR: x_src = (x + 0.5) * box_w /
// size - 0.5, clamped to the box's first and last pixel with the weight of the outer one 0.
#include <cstdint>

#include "common/core/host_device.h"
#include "common/kernels/crop_resize.h"
#include "common/kernels/launch.h"
#include "common/kernels/launch_cuda.cuh"
#include "common/kernels/type_lists.cuh"

namespace course::ops {

inline constexpr int kMaxCropChannels = 3;

// One axis of the resize: the first source pixel and the weight of the next one.
struct Tap {
  int64_t first;
  float next_weight;
};

COURSE_HD inline Tap resize_tap(int64_t out, int64_t out_size, int64_t box_start,
                                int64_t box_size) {
  const float scale = static_cast<float>(box_size) / static_cast<float>(out_size);
  const float source = (static_cast<float>(out) + 0.5f) * scale - 0.5f;
  int64_t first = static_cast<int64_t>(source >= 0.0f ? source : source - 1.0f);  // floor
  float weight = source - static_cast<float>(first);
  if (first < 0) {
    first = 0;
    weight = 0.0f;
  }
  if (first >= box_size - 1) {
    first = box_size - 1;
    weight = 0.0f;
  }
  return {box_start + first, weight};
}

template <class T>
struct CropResizeElements {
  const uint8_t* pixels;
  const int64_t* images;  // (N, 3): offset, height, width
  const int32_t* crops;   // (N, 5): x, y, width, height, flip
  T* out;                 // dense, in channels-last order when `channels_last`
  bool channels_last;
  int64_t channels, size;
  float scale[kMaxCropChannels], shift[kMaxCropChannels];  // p * scale + shift normalises

  COURSE_HD void operator()(int64_t index) const {
    int64_t i, c, y, x;
    if (channels_last) {
      c = index % channels;
      x = index / channels % size;
      y = index / (channels * size) % size;
      i = index / (channels * size * size);
    } else {
      x = index % size;
      y = index / size % size;
      c = index / (size * size) % channels;
      i = index / (size * size * channels);
    }
    const int64_t* image = images + 3 * i;
    const int32_t* box = crops + 5 * i;
    const int64_t width = image[2];
    const uint8_t* base = pixels + image[0] + c;
    const Tap row = resize_tap(y, size, box[1], box[3]);
    const Tap col = resize_tap(box[4] ? size - 1 - x : x, size, box[0], box[2]);
    const int64_t next_row = row.next_weight > 0.0f ? row.first + 1 : row.first;
    const int64_t next_col = col.next_weight > 0.0f ? col.first + 1 : col.first;
    const auto at = [&](int64_t r, int64_t k) {
      return static_cast<float>(base[(r * width + k) * channels]);
    };
    const float upper = at(row.first, col.first) * (1.0f - col.next_weight) +
                        at(row.first, next_col) * col.next_weight;
    const float lower = at(next_row, col.first) * (1.0f - col.next_weight) +
                        at(next_row, next_col) * col.next_weight;
    const float level =
        static_cast<float>(static_cast<int>(upper + (lower - upper) * row.next_weight + 0.5f));
    out[index] = T(level * scale[c] + shift[c]);
  }
};

}  // namespace course::ops

#ifndef __CUDACC__  // the host side: nvcc compiles only the GPU instantiations below

namespace course {

Tensor crop_resize_normalize(const Tensor& pixels, const Tensor& images, const Tensor& crops,
                             int64_t channels, int64_t size, const std::vector<float>& mean,
                             const std::vector<float>& std, DType dtype, MemoryFormat format) {
  const int64_t n = images.dim() == 2 ? images.size(0) : -1;
  COURSE_CHECK(pixels.dtype() == DType::kU8 && pixels.dim() == 1,
               "crop-resize needs every image's u8 bytes in one 1-D tensor, got ", pixels.str());
  COURSE_CHECK(n > 0 && images.dtype() == DType::kI64 && images.shape() == (Shape{n, 3}) &&
                   crops.dtype() == DType::kI32 && crops.shape() == (Shape{n, 5}),
               "crop-resize needs (N, 3) i64 images and (N, 5) i32 crops, got ", images.str(),
               " and ", crops.str());
  COURSE_CHECK(images.device() == pixels.device() && crops.device() == pixels.device(),
               "crop-resize's tables must be on the pixels' device ", pixels.device().str());
  COURSE_CHECK(channels >= 1 && channels <= ops::kMaxCropChannels && size > 0 &&
                   mean.size() == static_cast<size_t>(channels) && std.size() == mean.size(),
               "crop-resize takes 1 to 3 channels with a mean and deviation each and a positive "
               "size, got ",
               channels, " channels, size ", size, ", ", mean.size(), " means");
  for (int64_t c = 0; c < channels; ++c) {
    COURSE_CHECK(std[c] > 0, "crop-resize needs positive deviations, got ", std[c]);
  }
  Tensor out = Tensor::empty({n, channels, size, size}, dtype, pixels.device(), format);
  visit_floating(dtype, "crop-resize", [&]<class T>() {
    ops::CropResizeElements<T> elements{pixels.data_as<uint8_t>(),
                                        images.data_as<int64_t>(),
                                        crops.data_as<int32_t>(),
                                        out.data_as<T>(),
                                        format == MemoryFormat::kChannelsLast,
                                        channels,
                                        size,
                                        {},
                                        {}};
    for (int64_t c = 0; c < channels; ++c) {
      elements.scale[c] = 1.0f / (255.0f * std[c]);
      elements.shift[c] = -mean[c] / std[c];
    }
    for_each_index(pixels.device(), out.numel(), elements);
  });
  return out;
}

}  // namespace course

#endif  // __CUDACC__

// The GPU kernels launched above, instantiated by nvcc (launch_cuda.cuh).
namespace course {

#define CROP_RESIZE(T) COURSE_INSTANTIATE_FOR_EACH(ops::CropResizeElements<T>)
COURSE_FLOAT_TYPES(CROP_RESIZE)

}  // namespace course
