// Mini-batches: every sample exactly once per epoch, the same order for the same seed and
// epoch, normalisation and resizing against direct computations, and bad options.
#include "common/data/image_batches.h"

#include <gtest/gtest.h>

#include <set>

namespace course {
namespace {

LabelledImages numbered(int64_t count) {
  std::vector<uint8_t> pixels(count * 4 * 4);
  std::vector<int64_t> labels(count);
  for (int64_t i = 0; i < count; ++i) {
    labels[i] = i;  // the label names the sample
    for (int k = 0; k < 16; ++k) pixels[i * 16 + k] = static_cast<uint8_t>(i * 16 + k);
  }
  return {Tensor::from_vector(pixels, {count, 1, 4, 4}), Tensor::from_vector(labels, {count})};
}

std::vector<int64_t> epoch_labels(ImageBatches& batches, int64_t epoch) {
  batches.set_epoch(epoch);
  std::vector<int64_t> out;
  for (int64_t b = 0; b < batches.size(); ++b) {
    for (int64_t l : batches.batch(b).labels.to_vector<int64_t>()) out.push_back(l);
  }
  return out;
}

TEST(ImageBatches, EverySampleOncePerEpochInASeededOrder) {
  ImageBatches a(numbered(10), {.batch_size = 4, .image_size = 4, .seed = 7}, Device::cpu());
  ImageBatches b(numbered(10), {.batch_size = 4, .image_size = 4, .seed = 7}, Device::cpu());
  EXPECT_EQ(a.size(), 3);
  const auto first = epoch_labels(a, 0);
  EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), 10u);
  EXPECT_EQ(first, epoch_labels(b, 0));
  EXPECT_NE(first, epoch_labels(a, 1));
  ImageBatches dropping(numbered(10), {.batch_size = 4, .image_size = 4, .drop_last = true},
                        Device::cpu());
  EXPECT_EQ(dropping.size(), 2);
}

TEST(ImageBatches, NormalisesAndResizes) {
  ImageBatches plain(numbered(2), {.batch_size = 2, .image_size = 4, .shuffle = false},
                     Device::cpu());
  const auto values = plain.batch(0).images.to_vector<float>();
  EXPECT_NEAR(values[5], (5 / 255.0f - 0.2860f) / 0.3530f, 1e-6);
  ImageBatches bigger(numbered(2), {.batch_size = 2, .image_size = 8, .shuffle = false},
                      Device::cpu());
  const Batch b = bigger.batch(0);
  EXPECT_EQ(b.images.shape(), (Shape{2, 1, 8, 8}));
  // Bilinear upsampling keeps values within the source's range.
  for (float v : b.images.to_vector<float>()) {
    EXPECT_GE(v, (0 - 0.2860f * 255) / (255 * 0.3530f) - 1e-5);
    EXPECT_LE(v, (31 - 0.2860f * 255) / (255 * 0.3530f) + 1e-5);
  }
}

TEST(ImageBatches, BadOptionsAreErrors) {
  EXPECT_THROW(ImageBatches(numbered(3), {.batch_size = 0}, Device::cpu()), Error);
  EXPECT_THROW(ImageBatches(numbered(3), {.image_size = 0}, Device::cpu()), Error);
  EXPECT_THROW(ImageBatches(numbered(3), {.batch_size = 4, .drop_last = true}, Device::cpu()),
               Error);
}

TEST(SyntheticImages, HaveTheRequestedShapeAndLabelRange) {
  const LabelledImages data = synthetic_images(5, 3, 8, 4, 1);
  EXPECT_EQ(data.images.shape(), (Shape{5, 3, 8, 8}));
  for (int64_t l : data.labels.to_vector<int64_t>()) EXPECT_LT(l, 4);
}

}  // namespace
}  // namespace course
