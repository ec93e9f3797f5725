// Mini-batch assembly: gather, resize (OpenCV), normalise, copy to the device.
#include "common/data/image_batches.h"

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <random>

#include "common/data/permutation.h"

namespace course {

ImageBatches::ImageBatches(LabelledImages data, const BatchOptions& options, Device device)
    : data_(std::move(data)), options_(options), device_(device) {
  COURSE_CHECK(options.batch_size > 0, "--batch-size must be positive, got ", options.batch_size);
  COURSE_CHECK(options.image_size > 0, "--image-size must be positive, got ", options.image_size);
  COURSE_CHECK(data_.images.dim() == 4 && data_.images.dtype() == DType::kU8,
               "image batches need (N, C, H, W) u8 images, got ", data_.images.str());
  COURSE_CHECK(data_.labels.numel() == data_.images.size(0), "images and labels differ in count");
  COURSE_CHECK(size() > 0, "no complete batch of ", options.batch_size, " in ", samples(),
               " samples (lower --batch-size or turn off --drop-last)");
  set_epoch(0);
}

int64_t ImageBatches::size() const {
  const int64_t n = samples(), b = options_.batch_size;
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void ImageBatches::set_epoch(int64_t epoch) {
  order_ =
      options_.shuffle ? epoch_permutation(samples(), options_.seed, epoch) : in_order(samples());
}

Batch ImageBatches::batch(int64_t index) const {
  COURSE_CHECK(index >= 0 && index < size(), "batch ", index, " of ", size());
  const int64_t begin = index * options_.batch_size;
  const int64_t count = std::min(options_.batch_size, samples() - begin);
  const int64_t channels = data_.images.size(1), h = data_.images.size(2), w = data_.images.size(3);
  const int64_t side = options_.image_size;
  Tensor images = Tensor::empty({count, channels, side, side}, DType::kF32);
  Tensor labels = Tensor::empty({count}, DType::kI64);
  const uint8_t* src = data_.images.data_as<uint8_t>();
  const int64_t* all_labels = data_.labels.data_as<int64_t>();
  float* dst = images.data_as<float>();
  const float scale = 1.0f / (255.0f * options_.std), shift = -options_.mean / options_.std;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const int64_t sample = order_[begin + i];
    labels.data_as<int64_t>()[i] = all_labels[sample];
    for (int64_t c = 0; c < channels; ++c) {
      const cv::Mat plane(static_cast<int>(h), static_cast<int>(w), CV_8UC1,
                          const_cast<uint8_t*>(src + (sample * channels + c) * h * w));
      cv::Mat out(static_cast<int>(side), static_cast<int>(side), CV_32FC1,
                  dst + (i * channels + c) * side * side);
      if (side == h && side == w) {
        plane.convertTo(out, CV_32F, scale, shift);
      } else {
        cv::Mat resized;
        cv::resize(plane, resized, cv::Size(static_cast<int>(side), static_cast<int>(side)), 0, 0,
                   cv::INTER_LINEAR);
        resized.convertTo(out, CV_32F, scale, shift);
      }
    }
  }
  return {images.to(device_), labels.to(device_)};
}

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
