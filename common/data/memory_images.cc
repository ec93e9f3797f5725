// In-memory images, handed out in the (H, W, C) layout of decoded files.
#include "common/data/memory_images.h"

namespace course {

MemoryImages::MemoryImages(LabelledImages data, int64_t num_classes)
    : data_(std::move(data)), num_classes_(num_classes) {
  COURSE_CHECK(data_.images.dim() == 4 && data_.images.dtype() == DType::kU8 &&
                   data_.images.device().is_cpu(),
               "in-memory images must be (N, C, H, W) u8 on the CPU, got ", data_.images.str());
  COURSE_CHECK(data_.labels.numel() == data_.images.size(0) && data_.labels.dtype() == DType::kI64,
               "in-memory images need one i64 label per image");
  const int64_t* labels = data_.labels.data_as<int64_t>();
  for (int64_t i = 0; i < data_.labels.numel(); ++i) {
    COURSE_CHECK(labels[i] >= 0 && labels[i] < num_classes, "label ", labels[i], " of sample ", i,
                 " is outside [0, ", num_classes, ")");
  }
}

int64_t MemoryImages::label(int64_t index) const { return data_.labels.data_as<int64_t>()[index]; }

Tensor MemoryImages::image(int64_t index) const {
  const int64_t c = channels(), h = data_.images.size(2), w = data_.images.size(3);
  const Tensor planar = data_.images.slice(index, index + 1);
  if (c == 1) return planar.view({h, w, 1});
  Tensor interleaved = Tensor::empty({h, w, c}, DType::kU8);
  const uint8_t* src = planar.data_as<uint8_t>();
  uint8_t* dst = interleaved.data_as<uint8_t>();
  for (int64_t p = 0; p < h * w; ++p) {
    for (int64_t k = 0; k < c; ++k) dst[p * c + k] = src[k * h * w + p];
  }
  return interleaved;
}

}  // namespace course
