// Weight masks: global magnitude pruning by hand (layers lose different shares), the masks
// applied and measured.
#include "common/nn/weight_pruning.h"

#include <gtest/gtest.h>

namespace course::nn {
namespace {

TEST(WeightPruning, GlobalMagnitudeTakesTheSmallestOverAllLayers) {
  // Magnitudes 0.1, 5, 0.3, 2 and 0.2, 0.05, 4, 0.25: the 4 smallest of the 8 are 0.05, 0.1, 0.2
  // and 0.25, so the first weight loses 1 of 4 and the second 3 of 4.
  Parameter a(Tensor::from_vector(std::vector<float>{0.1f, -5, 0.3f, 2}, Shape{2, 2}));
  Parameter b(Tensor::from_vector(std::vector<float>{-0.2f, 0.05f, 4, -0.25f}, Shape{1, 4}));
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

}  // namespace
}  // namespace course::nn
