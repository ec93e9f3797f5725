// In-memory image source.
#include "common/data/image_source.h"

#include <vector>

namespace course {

MemoryImages::MemoryImages(LabelledImages data, int64_t num_classes)
    : data_(std::move(data)), num_classes_(num_classes) {
  COURSE_CHECK(data_.images.dim() == 4 && data_.images.dtype() == DType::kU8 &&
                   data_.images.device().is_cpu(),
               "in-memory images must be (N, C, H, W) u8 on the CPU, got ", data_.images.str());
  COURSE_CHECK(data_.labels.numel() == data_.images.size(0) && data_.labels.dtype() == DType::kI64,
               "in-memory images need one i64 label per image");
}

int64_t MemoryImages::label(int64_t index) const { return data_.labels.data_as<int64_t>()[index]; }

cv::Mat MemoryImages::image(int64_t index) const {
  const int h = static_cast<int>(data_.images.size(2)), w = static_cast<int>(data_.images.size(3));
  const int64_t c = channels();
  uint8_t* first = data_.images.data_as<uint8_t>() + index * c * h * w;
  std::vector<cv::Mat> planes;
  for (int64_t p = 0; p < c; ++p) planes.emplace_back(h, w, CV_8UC1, first + p * h * w);
  if (c == 1) return planes[0];
  cv::Mat interleaved;
  cv::merge(planes, interleaved);
  return interleaved;
}

}  // namespace course
