// compress prune's masks: global magnitude pruning by hand (layers lose different shares), the
// 2:4 masks of a whole network (TP4.17's solution; rows that do not divide by 4 stay dense),
// and the masks applied and measured.
#include "day4_large_models/compression/pruning.h"

#include <gtest/gtest.h>

#include "common/nn/models.h"

namespace day4 {
namespace {

using namespace course;

TEST(Pruning, GlobalMagnitudeTakesTheSmallestOverAllLayers) {
  // Magnitudes 0.1, 5, 0.3, 2 and 0.2, 0.05, 4, 0.25: the 4 smallest of the 8 are 0.05, 0.1, 0.2
  // and 0.25, so the first weight loses 1 of 4 and the second 3 of 4.
  nn::Parameter a(Tensor::from_vector(std::vector<float>{0.1f, -5, 0.3f, 2}, Shape{2, 2}));
  nn::Parameter b(Tensor::from_vector(std::vector<float>{-0.2f, 0.05f, 4, -0.25f}, Shape{1, 4}));
  std::vector<PrunedWeight> weights = {{"a", &a, {}}, {"b", &b, {}}};
  mask_by_global_magnitude(weights, 0.5);
  EXPECT_EQ(weights[0].mask.to_vector<float>(), (std::vector<float>{0, 1, 1, 1}));
  EXPECT_EQ(weights[1].mask.to_vector<float>(), (std::vector<float>{0, 0, 1, 0}));
  EXPECT_EQ(measured_sparsity(weights), 0.0) << "masks alone change nothing";
  apply_masks(weights);
  EXPECT_EQ(a.value.to_vector<float>(), (std::vector<float>{0, -5, 0.3f, 2}));
  EXPECT_EQ(b.value.to_vector<float>(), (std::vector<float>{0, 0, 4, 0}));
  EXPECT_EQ(measured_sparsity(weights), 0.5);
  EXPECT_THROW(mask_by_global_magnitude(weights, 1.0), Error);
}

TEST(Pruning, TwoOfFourOverANetworkLeavesIndivisibleRowsDense) {
  // tinynet: conv 1 -> 8 (rows of 9 inputs: dense), conv 8 -> 16 and 16 -> 32 (rows of 72 and
  // 144), linear 32 -> 10: half of every divisible weight is pruned.
  auto net = nn::make_model({.name = "tinynet", .in_channels = 1, .num_classes = 10, .seed = 5},
                            Device::cpu());
  std::vector<PrunedWeight> weights = prunable_weights(*net);
  ASSERT_EQ(weights.size(), 4u);
  mask_two_of_four(weights);
  EXPECT_TRUE(weights[0].dense);
  int64_t pruned = 0, total = 0;
  for (const PrunedWeight& w : weights) {
    int64_t zeros = 0;
    for (const float m : w.mask.to_vector<float>()) zeros += m == 0.0f;
    EXPECT_EQ(zeros, w.dense ? 0 : w.weight->value.numel() / 2) << w.name;
    pruned += zeros;
    total += w.weight->value.numel();
  }
  EXPECT_EQ(pruned, (16 * 8 * 9 + 32 * 16 * 9 + 10 * 32) / 2);
  apply_masks(weights);
  EXPECT_DOUBLE_EQ(measured_sparsity(weights),
                   static_cast<double>(pruned) / static_cast<double>(total));
}

}  // namespace
}  // namespace day4
