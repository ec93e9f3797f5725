// Dispatch of the crop-resize-normalise kernel (body in crop_resize_ops.h).
#include "common/kernels/crop_resize.h"

#include "common/kernels/crop_resize_ops.h"
#include "common/kernels/launch.h"

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
