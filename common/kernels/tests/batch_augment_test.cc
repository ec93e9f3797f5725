// The device batch augmentation against images worked out by hand: flip, moves with a black
// fill, brightness clamped, contrast around the brightened image's mean grey level (RGB weights
// included), any normalisation, both memory formats; bad shapes are clear errors.
#include "common/kernels/batch_augment.h"

#include <gtest/gtest.h>

#include "common/kernels/layout.h"
#include "common/testing/devices.h"
#include "common/testing/errors_and_files.h"

namespace course {
namespace {

using BatchAugmentTest = testing::DeviceTest;

// Sample 0 of 1 x 2 x 3 pixels in [0, 1]: 0.1 0.2 0.3 / 0.4 0.5 0.6.
const std::vector<float> kPixels = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};

// kPixels, normalised with (mean, std), after (flip, dx, dy) and (brightness, contrast); back in
// [0, 1].
std::vector<float> jittered(Device device, std::vector<int32_t> geometry,
                            std::vector<float> factors, float mean = 0, float std = 1,
                            MemoryFormat format = MemoryFormat::kContiguous) {
  std::vector<float> normalised;
  for (float p : kPixels) normalised.push_back((p - mean) / std);
  const Tensor x =
      to_memory_format(Tensor::from_vector(normalised, {1, 1, 2, 3}).to(device), format);
  const Tensor out =
      augment_batch_on_device(x, Tensor::from_vector(geometry, {1, 3}).to(device),
                              Tensor::from_vector(factors, {1, 2}).to(device), {mean}, {std});
  EXPECT_EQ(out.memory_format(), format);
  std::vector<float> v =
      to_memory_format(out, MemoryFormat::kContiguous).to(Device::cpu()).to_vector<float>();
  for (float& p : v) p = p * std + mean;
  return v;
}

void expect_near(const std::vector<float>& actual, const std::vector<float>& expected) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) EXPECT_NEAR(actual[i], expected[i], 1e-6f) << i;
}

TEST_P(BatchAugmentTest, MovesByHand) {
  expect_near(jittered(device(), {0, 0, 0}, {1, 1}), kPixels);
  expect_near(jittered(device(), {1, 0, 0}, {1, 1}), {0.3f, 0.2f, 0.1f, 0.6f, 0.5f, 0.4f});
  expect_near(jittered(device(), {0, 1, 0}, {1, 1}), {0, 0.1f, 0.2f, 0, 0.4f, 0.5f});
  expect_near(jittered(device(), {0, -2, 1}, {1, 1}), {0, 0, 0, 0.3f, 0, 0});
  // Flip, then move: the flipped row 0.3 0.2 0.1 moved one to the right.
  expect_near(jittered(device(), {1, 1, 0}, {1, 1}), {0, 0.3f, 0.2f, 0, 0.6f, 0.5f});
  // The black fill is black under any normalisation.
  expect_near(jittered(device(), {0, 1, 0}, {1, 1}, 0.5f, 0.25f), {0, 0.1f, 0.2f, 0, 0.4f, 0.5f});
  expect_near(jittered(device(), {1, 0, 0}, {1, 1}, 0.5f, 0.25f, MemoryFormat::kChannelsLast),
              {0.3f, 0.2f, 0.1f, 0.6f, 0.5f, 0.4f});
}

TEST_P(BatchAugmentTest, ColourByHand) {
  expect_near(jittered(device(), {0, 0, 0}, {2, 1}), {0.2f, 0.4f, 0.6f, 0.8f, 1, 1});
  // Contrast 0: every pixel the mean, 0.35; contrast 2: 2 p - 0.35, clamped.
  expect_near(jittered(device(), {0, 0, 0}, {1, 0}), std::vector<float>(6, 0.35f));
  expect_near(jittered(device(), {0, 0, 0}, {1, 2}), {0, 0.05f, 0.25f, 0.45f, 0.65f, 0.85f});
  // The mean is the brightened image's: (0.2 + 0.4 + 0.6 + 0.8 + 1 + 1) / 6 = 0.6667.
  expect_near(jittered(device(), {0, 0, 0}, {2, 0}, 0.5f, 0.25f), std::vector<float>(6, 4 / 6.0f));
  // ... and the moved image's: two black pixels count.
  expect_near(jittered(device(), {0, 1, 0}, {1, 0}), std::vector<float>(6, 1.2f / 6));
}

TEST_P(BatchAugmentTest, GreyLevelWeighsTheColours) {
  // One red and one blue pixel; contrast 0 gives every channel of both the mean grey level.
  const Tensor x = Tensor::from_vector<float>({1, 0, 0, 0, 0, 1}, {1, 3, 1, 2}).to(device());
  const Tensor out = augment_batch_on_device(
      x, Tensor::from_vector<int32_t>({0, 0, 0}, {1, 3}).to(device()),
      Tensor::from_vector<float>({1, 0}, {1, 2}).to(device()), {0, 0, 0}, {1, 1, 1});
  for (float p : out.to(Device::cpu()).to_vector<float>()) {
    EXPECT_NEAR(p, (0.299f + 0.114f) / 2, 1e-6f);
  }
}

TEST_P(BatchAugmentTest, BadShapesAreClearErrors) {
  const Tensor x = Tensor::empty({2, 1, 2, 2}, DType::kF32, device());
  const Tensor moves = Tensor::empty({2, 3}, DType::kI32, device());
  const Tensor factors = Tensor::empty({2, 2}, DType::kF32, device());
  EXPECT_NE(testing::error_of([&] {
              augment_batch_on_device(x, moves, factors, {0, 0}, {1, 1});
            }).find("a mean and deviation each"),
            std::string::npos);
  EXPECT_NE(
      testing::error_of([&] {
        augment_batch_on_device(x, Tensor::empty({1, 3}, DType::kI32, device()), factors, {0}, {1});
      }).find("(2, 3) i32 moves"),
      std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              augment_batch_on_device(x, moves, factors, {0}, {0});
            }).find("positive deviations"),
            std::string::npos);
}

COURSE_INSTANTIATE_DEVICE_TESTS(BatchAugmentTest);

}  // namespace
}  // namespace course
