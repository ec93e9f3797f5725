// The jitter in two places: per sample on u8 pixels in the loader's workers (OpenCV) and on the
// whole normalised batch on the training device. With the same draws the two agree to within
// the workers' rounding to whole levels; the draws span their ranges; bad options are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <opencv2/core.hpp>
#include <set>

#include "common/data/batch_augment.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using JitterTest = testing::DeviceTest;

TEST_P(JitterTest, DeviceBatchMatchesTheWorkersOnTheSameDraws) {
  const int n = 16, side = 9;
  for (const int channels : {1, 3}) {
    const std::vector<float> mean(channels, 0.45f), std(channels, 0.25f);
    std::mt19937 rng(channels);
    std::vector<cv::Mat> images;
    std::vector<JitterDraw> draws;
    std::vector<float> normalised, expected;
    const JitterOptions options{.max_translate = 3, .brightness = 0.4f, .contrast = 0.4f};
    // Planar (C, H, W) floats of a u8 image, normalised.
    const auto append_planar = [&](const cv::Mat& image, std::vector<float>& out) {
      for (int c = 0; c < channels; ++c) {
        for (int y = 0; y < side; ++y) {
          for (int x = 0; x < side; ++x) {
            const uint8_t level = image.ptr<uint8_t>(y)[x * channels + c];
            out.push_back((level / 255.0f - mean[c]) / std[c]);
          }
        }
      }
    };
    for (int i = 0; i < n; ++i) {
      cv::Mat image(side, side, CV_8UC(channels));
      cv::randu(image, 0, 256);
      draws.push_back(draw_jitter(options, true, rng));
      append_planar(image, normalised);
      append_planar(apply_jitter(image, draws.back()), expected);
    }
    const Tensor batch = Tensor::from_vector(normalised, {n, channels, side, side}).to(device());
    const std::vector<float> actual =
        jitter_batch(batch, draws, mean, std).to(Device::cpu()).to_vector<float>();
    // The workers round to whole levels after the brightness and after the contrast, and take
    // the mean grey level of rounded pixels: at most 1.5 levels apart, far less on average.
    double total = 0;
    for (size_t k = 0; k < actual.size(); ++k) {
      const double levels = std::abs(actual[k] - expected[k]) * std[0] * 255.0;
      ASSERT_LE(levels, 1.5) << "channels " << channels << ", element " << k;
      total += levels;
    }
    EXPECT_LT(total / actual.size(), 0.5) << "channels " << channels;
  }
}

TEST(Jitter, DrawsSpanTheirRanges) {
  std::mt19937 rng(3);
  const JitterOptions options{.max_translate = 2, .brightness = 0.5f, .contrast = 0.25f};
  std::set<int> shifts;
  int flips = 0;
  float lowest = 2, highest = 0;
  for (int i = 0; i < 2000; ++i) {
    const JitterDraw d = draw_jitter(options, true, rng);
    shifts.insert(d.dx);
    shifts.insert(d.dy);
    flips += d.flip;
    lowest = std::min(lowest, d.brightness);
    highest = std::max(highest, d.brightness);
    ASSERT_GE(d.contrast, 0.75f);
    ASSERT_LE(d.contrast, 1.25f);
  }
  EXPECT_EQ(shifts, (std::set<int>{-2, -1, 0, 1, 2}));
  EXPECT_NEAR(flips, 1000, 120);
  EXPECT_LT(lowest, 0.51f);
  EXPECT_GT(highest, 1.49f);
  EXPECT_FALSE(draw_jitter({}, false, rng).flip);
}

TEST(Jitter, BadOptionsAreRefused) {
  EXPECT_NE(
      testing::error_of([] { validate(JitterOptions{.max_translate = -1}); }).find("--translate"),
      std::string::npos);
  EXPECT_NE(testing::error_of([] { validate(JitterOptions{.contrast = 1.5f}); }).find("[0, 1]"),
            std::string::npos);
}

COURSE_INSTANTIATE_DEVICE_TESTS(JitterTest);

}  // namespace
}  // namespace course
