// compress prune's 2:4 masks of a whole network (TP4.21's solution; rows that do not divide by 4
// stay dense), applied and measured.
#include "day4_large_models/compression/pruning.h"

#include <gtest/gtest.h>

#include "common/models/models.h"

namespace day4 {
namespace {

using namespace course;

TEST(Pruning, TwoOfFourOverANetworkLeavesIndivisibleRowsDense) {
  // tinynet: conv 1 -> 8 (rows of 9 inputs: dense), conv 8 -> 16 and 16 -> 32 (rows of 72 and
  // 144), linear 32 -> 10: half of every divisible weight is pruned.
  auto net = nn::make_model({.name = "tinynet", .in_channels = 1, .num_classes = 10, .seed = 5},
                            Device::cpu());
  std::vector<nn::PrunedWeight> weights = nn::prunable_weights(*net);
  ASSERT_EQ(weights.size(), 4u);
  mask_two_of_four(weights);
  EXPECT_TRUE(weights[0].dense);
  int64_t pruned = 0, total = 0;
  for (const nn::PrunedWeight& w : weights) {
    int64_t zeros = 0;
    for (const float m : w.mask.to_vector<float>()) zeros += m == 0.0f;
    EXPECT_EQ(zeros, w.dense ? 0 : w.weight->value.numel() / 2) << w.name;
    pruned += zeros;
    total += w.weight->value.numel();
  }
  EXPECT_EQ(pruned, (16 * 8 * 9 + 32 * 16 * 9 + 10 * 32) / 2);
  nn::apply_masks(weights);
  EXPECT_DOUBLE_EQ(nn::measured_sparsity(weights),
                   static_cast<double>(pruned) / static_cast<double>(total));
}

}  // namespace
}  // namespace day4
