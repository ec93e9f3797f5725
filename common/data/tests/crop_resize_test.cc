// The crop-resize kernel of day 3's GPU data path against OpenCV's crop, INTER_LINEAR resize and
// flip on boxes of every kind (whole image, one pixel, upscaled, downscaled, exactly halved, on
// the right and bottom edges), 1 and 3 channels, f32 and bf16, NCHW and channels-last: at most
// one level of 255 apart (OpenCV's fixed-point weights), bf16 adding its 8 bits.
#include "common/kernels/crop_resize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "common/data/transforms.h"
#include "common/kernels/elementwise.h"
#include "common/kernels/layout.h"
#include "common/testing/devices.h"

namespace course {
namespace {

// The CPU path of one image: crop, resize, flip, normalise, as planar floats.
std::vector<float> opencv_reference(const cv::Mat& image, const CropBox& box, bool flip, int size,
                                    const std::vector<float>& mean, const std::vector<float>& std) {
  cv::Mat resized;
  const cv::Mat crop = image(cv::Rect(box.x, box.y, box.width, box.height));
  if (box.width == size && box.height == size) {
    resized = crop.clone();
  } else {
    cv::resize(crop, resized, cv::Size(size, size), 0, 0, cv::INTER_LINEAR);
  }
  if (flip) cv::flip(resized, resized, 1);
  std::vector<float> out;
  for (int c = 0; c < image.channels(); ++c) {
    for (int y = 0; y < size; ++y) {
      for (int x = 0; x < size; ++x) {
        out.push_back((resized.ptr<uint8_t>(y)[x * image.channels() + c] / 255.0f - mean[c]) /
                      std[c]);
      }
    }
  }
  return out;
}

using CropResizeTest = testing::DeviceCaseTest<DType, MemoryFormat>;

TEST_P(CropResizeTest, MatchesOpenCvOnEveryKindOfBox) {
  const DType dtype = value<0>();
  const MemoryFormat format = value<1>();
  const int size = 16;
  for (const int channels : {1, 3}) {
    const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, std = {0.229f, 0.224f, 0.225f};
    const std::vector<float> m(mean.begin(), mean.begin() + channels),
        s(std.begin(), std.begin() + channels);
    // Each image's width and height, and its box: x, y, width, height.
    const std::vector<std::pair<cv::Size, CropBox>> cases = {
        {{37, 29}, {0, 0, 37, 29}},   // the whole image, downscaled unevenly
        {{5, 9}, {2, 3, 1, 1}},       // one pixel, upscaled
        {{11, 7}, {1, 2, 5, 5}},      // upscaled, the box on the bottom edge
        {{64, 40}, {32, 8, 32, 32}},  // exactly halved, on the right edge
        {{16, 16}, {0, 0, 16, 16}},   // the size itself: a copy
        {{200, 3}, {150, 0, 50, 3}},  // a thin strip
        {{97, 61}, {3, 5, 94, 56}},   // downscaled by a ratio that is not whole
    };
    std::vector<uint8_t> pixels;
    std::vector<int64_t> images;
    std::vector<int32_t> crops;
    std::vector<float> expected;
    cv::RNG rng(channels);
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto& [shape, box] = cases[i];
      cv::Mat image(shape.height, shape.width, CV_8UC(channels));
      rng.fill(image, cv::RNG::UNIFORM, 0, 256);
      const bool flip = i % 2 == 1;
      images.insert(images.end(), {static_cast<int64_t>(pixels.size()), shape.height, shape.width});
      pixels.insert(pixels.end(), image.data, image.data + image.total() * channels);
      crops.insert(crops.end(), {box.x, box.y, box.width, box.height, flip ? 1 : 0});
      const std::vector<float> one = opencv_reference(image, box, flip, size, m, s);
      expected.insert(expected.end(), one.begin(), one.end());
    }
    const int64_t n = static_cast<int64_t>(cases.size());
    const Tensor out = crop_resize_normalize(
        Tensor::from_vector(pixels, {static_cast<int64_t>(pixels.size())}).to(device()),
        Tensor::from_vector(images, {n, 3}).to(device()),
        Tensor::from_vector(crops, {n, 5}).to(device()), channels, size, m, s, dtype, format);
    ASSERT_EQ(out.shape(), (Shape{n, channels, size, size}));
    ASSERT_EQ(out.memory_format(), format);
    ASSERT_EQ(out.dtype(), dtype);
    const std::vector<float> actual =
        cast(to_memory_format(out, MemoryFormat::kContiguous), DType::kF32)
            .to(Device::cpu())
            .to_vector<float>();
    // f32: at most one level of 255 (OpenCV's 11-bit fixed-point weights); bf16 adds its 8 bits.
    for (size_t k = 0; k < actual.size(); ++k) {
      const double bound =
          1.01 / (255.0 * 0.224) + (dtype == DType::kF32 ? 0.0 : std::abs(expected[k]) / 128.0);
      ASSERT_NEAR(actual[k], expected[k], bound) << "channels " << channels << ", element " << k;
    }
  }
}

COURSE_INSTANTIATE_DEVICE_CASES(CropResizeTest, ::testing::Values(DType::kF32, DType::kBF16),
                                ::testing::Values(MemoryFormat::kContiguous,
                                                  MemoryFormat::kChannelsLast));

}  // namespace
}  // namespace course
