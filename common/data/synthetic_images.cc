// Seeded random images.
#include "common/data/synthetic_images.h"

#include <random>

namespace course {

LabelledImages synthetic_images(int64_t count, int64_t channels, int64_t side, int64_t classes,
                                uint32_t seed) {
  COURSE_CHECK(count > 0 && channels > 0 && side > 0 && classes > 0,
               "synthetic images need positive sizes");
  std::mt19937 rng(seed);
  LabelledImages data{Tensor::empty_pinned({count, channels, side, side}, DType::kU8),
                      Tensor::empty_pinned({count}, DType::kI64)};
  uint8_t* pixels = data.images.data_as<uint8_t>();
  for (int64_t i = 0; i < data.images.numel(); ++i) pixels[i] = static_cast<uint8_t>(rng() & 0xff);
  int64_t* labels = data.labels.data_as<int64_t>();
  for (int64_t i = 0; i < count; ++i) labels[i] = static_cast<int64_t>(rng() % classes);
  return data;
}

}  // namespace course
